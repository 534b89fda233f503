#!/usr/bin/env python3
"""Benchmarks tensorc bundles against onnxruntime on the CPU: one table, one JSON file.

For each model: compile it with `tensorc compile` (timed), make one fixed input, check that the
bundle's outputs match onnxruntime's (before any timing), then time both at each thread count.
Both are timed in this process by default (time.perf_counter around onnxruntime's session.run and
the runtime's tc_model_run, loaded from libtensorc_rt.so with ctypes) in alternating blocks of a
few runs, so that a machine whose speed shifts every few seconds shifts under both; --timing
processes times tensorc inside `tensorc-run --iterations` (a separate process) after each
onnxruntime round instead.

    bench/run.py --suite cpu [--models mlp,seed003,resnet50,mobilenetv2,bert,gpt2] [--batch 64]
                 [--iterations 50] [--rounds 3] [--check-only] [--timing interleaved|processes]
                 [--threads 1,all] [--build-dir build] [--runtime-lib LIB] [--json out.json]

See bench/README.md for what is measured and the caveats.
"""
import argparse
import datetime
import json
import math
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "models"))
import make_onnx_models  # noqa: E402
import make_zoo  # noqa: E402
import safetensors_np  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "bench"))
import inprocess  # noqa: E402
import suite  # noqa: E402

MIN_ITERATIONS = 30
# Where a CMake build puts each binary, relative to the build directory.
BINARIES = {"tensorc": ["tools/tensorc/tensorc"],
            "tensorc-run": ["runtime/tensorc-run", "runtime/tools/tensorc-run"]}
# fp32 tolerances: |a - b| <= atol * max(1, max |b|) + rtol * |b|. The absolute term scales with
# the output's largest magnitude: a sum's rounding error follows the size of its terms, not of the
# result, so an output near zero in a tensor of values near 1e3 (the zoo's ResNet-50 at batch 64,
# random weights) differs by ~1e-4 in any correct order of summation.
TOLERANCES = {"f32": (1e-3, 1e-4)}


class BenchError(Exception):
    """A setup problem worth a one-line message (missing binary, failed compile...)."""


def log(message):
    print(f"bench: {message}", file=sys.stderr, flush=True)


def cache_dir():
    return os.environ.get("TENSORC_CACHE") or os.path.join(os.path.expanduser("~"), ".cache",
                                                           "tensorc")


def find_binaries(build_dir, tensorc=None, runner=None, runtime_lib=None, need_lib=False):
    """tensorc and tensorc-run: the paths given (a compiler kit's `tc` and `tensorc-run`), else
    the build directory's; with need_lib, libtensorc_rt.so too (interleaved timing)."""
    found = {"runtime-lib": None}
    if need_lib:
        lib = runtime_lib or inprocess.runtime_library(build_dir)
        if not os.path.isfile(lib):
            raise BenchError(
                f"interleaved timing loads the runtime library, and there is none at {lib}: "
                f"build it (cmake --build {build_dir}), give --runtime-lib, or use --timing "
                f"processes")
        found["runtime-lib"] = os.path.abspath(lib)
    given = {"tensorc": tensorc, "tensorc-run": runner}
    for name, candidates in BINARIES.items():
        if given[name]:
            if not (os.path.isfile(given[name]) and os.access(given[name], os.X_OK)):
                raise BenchError(f"{name}: {given[name]} is not an executable file")
            found[name] = os.path.abspath(given[name])
            continue
        paths = [os.path.join(build_dir, c) for c in candidates]
        hit = next((p for p in paths if os.path.isfile(p) and os.access(p, os.X_OK)), None)
        if hit is None:
            raise BenchError(
                f"no {name} binary under --build-dir {build_dir} (looked for "
                f"{', '.join(paths)}). Build it first:\n"
                f"  cmake -S {REPO} -B {build_dir} -G Ninja -DCMAKE_BUILD_TYPE=Release\n"
                f"  cmake --build {build_dir} --target tensorc tensorc-run")
        found[name] = hit
    return found


def children_cpu_s():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_checked(cmd, what):
    """Runs cmd; returns (its output, the CPU seconds it used, all its threads together)."""
    cpu_before = children_cpu_s()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    cpu_s = children_cpu_s() - cpu_before
    if proc.returncode != 0:
        raise BenchError(f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}\n"
                         f"{proc.stdout.strip()}")
    return proc.stdout, cpu_s


def compile_model(tensorc, model_path, bundle_dir):
    """Runs `tensorc compile` into a fresh directory; returns (wall s, CPU s, its output)."""
    if os.path.exists(bundle_dir):
        shutil.rmtree(bundle_dir)
    start = time.perf_counter()
    output, cpu_s = run_checked([tensorc, "compile", model_path, "-o", bundle_dir],
                                "tensorc compile")
    return time.perf_counter() - start, cpu_s, output


def export_real(name, exports=None, batch=1):
    """--suite real: the model exported by bench/suite.py (dynamo exporter, f32, `batch` fixed in
    the export) into the cache, once, or the f32 export a `bench/real.py prepare --out EXPORTS
    [--batch N]` left in EXPORTS/<name>_f32; returns its directory (model.onnx,
    inputs.safetensors)."""
    if exports:
        out = os.path.join(exports, f"{name}_f32")
        record = os.path.join(out, "export.json")
        if not os.path.exists(record):
            raise BenchError(f"{name}: no f32 export in {out} (bench/real.py prepare --out "
                             f"{exports} --models {name} --dtypes f32 --batch {batch} exports it)")
        with open(record) as f:
            exported = json.load(f).get("batch", 1)
        if exported != batch:
            raise BenchError(f"{name}: {out} holds an export at batch {exported}, not {batch}")
        return out
    out = os.path.join(cache_dir(), "real", name if batch == 1 else f"{name}_b{batch}")
    if not os.path.exists(os.path.join(out, "export.json")):
        log(f"{name}: exporting with torch at batch {batch} (bench/suite.py)")
        run_checked([sys.executable, os.path.join(REPO, "bench", "suite.py"), "export", name,
                     "f32", out, "--batch", str(batch)], f"export of {name}")
    return out


def make_inputs(name, session, batch, seed, suite_name="cpu", exports=None):
    """Fixed inputs, in the model's order. Real models (--suite real) take the inputs their export
    wrote; zoo models get theirs from make_zoo.example_inputs (token ids in the vocabulary, a
    realistic attention mask); the others uniform in [-1, 1), symbolic dims set to the batch."""
    if suite_name == "real":
        saved = safetensors_np.load(os.path.join(export_real(name, exports, batch),
                                                 "inputs.safetensors"))
        return {info.name: saved[info.name] for info in session.get_inputs()}
    if name in make_zoo.MODELS:
        feeds = make_zoo.example_inputs(name, batch, seed)
        expected = [info.name for info in session.get_inputs()]
        if list(feeds) != expected:
            raise BenchError(f"{name}: make_zoo.example_inputs gives {list(feeds)}, the model "
                             f"takes {expected}")
        return feeds
    rng = np.random.default_rng(seed)
    feeds = {}
    for info in session.get_inputs():
        if info.type != "tensor(float)":
            raise BenchError(f"input '{info.name}' is {info.type}; the CPU suite feeds fp32 only")
        shape = [d if isinstance(d, int) else batch for d in info.shape]
        feeds[info.name] = rng.uniform(-1.0, 1.0, shape).astype(np.float32)
    return feeds


def ort_session(model_path, threads):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])


def time_ort(session, feeds, warmup, iterations):
    for _ in range(warmup):
        session.run(None, feeds)
    times = []
    cpu_start = time.process_time()
    for _ in range(iterations):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - start) * 1e3)
    result = summarize(times)
    result["cpu_ms_per_run"] = (time.process_time() - cpu_start) * 1e3 / iterations
    return result


# Runs per block of interleaved timing, and the pause before each block: long enough for the
# other side's worker threads to stop spinning and sleep, so that neither block shares the cores
# with them. onnxruntime's keep spinning for tens of milliseconds after a run: after a 10 ms
# pause, MobileNetV2 at 2 threads ran in 12.3 ms against 6.0 ms with no onnxruntime blocks in
# between (20 ms: 11.0 against 9.2; 100 ms: 6.1 against 6.3). tensorc's spin for 200 us.
INTERLEAVE_BLOCK = 5
INTERLEAVE_PAUSE_S = 0.1


def time_interleaved(onnx_path, feeds, runtime_lib, bundle, threads, tc_threads_arg, args):
    """Times onnxruntime and the bundle (through the C ABI) in this process, alternating blocks
    of INTERLEAVE_BLOCK runs, args.iterations runs of each per round; returns the per-round
    summaries of each side (CPU time per run: this process's, during that side's blocks)."""
    session = ort_session(onnx_path, threads)
    try:
        model = inprocess.InProcessModel(runtime_lib, bundle, tc_threads_arg)
    except (OSError, inprocess.InProcessError) as error:
        raise BenchError(f"loading {bundle} in process: {error}")
    try:
        model.set_inputs(list(feeds.values()))
        sides = [lambda: session.run(None, feeds), model.run]
        for run in sides:
            for _ in range(args.warmup):
                run()
        rounds = ([], [])
        for r in range(args.rounds):
            times, cpu = ([], []), [0.0, 0.0]
            order = (0, 1) if r % 2 == 0 else (1, 0)
            while any(len(t) < args.iterations for t in times):
                for side in order:
                    count = min(INTERLEAVE_BLOCK, args.iterations - len(times[side]))
                    if count <= 0:
                        continue
                    time.sleep(INTERLEAVE_PAUSE_S)
                    sides[side]()  # untimed: wakes the side's threads
                    cpu_start = time.process_time()
                    for _ in range(count):
                        start = time.perf_counter()
                        sides[side]()
                        times[side].append((time.perf_counter() - start) * 1e3)
                    cpu[side] += time.process_time() - cpu_start
            for side in (0, 1):
                result = summarize(times[side])
                result["cpu_ms_per_run"] = cpu[side] * 1e3 / len(times[side])
                rounds[side].append(result)
        return rounds
    except inprocess.InProcessError as error:
        raise BenchError(f"running {bundle} in process: {error}")
    finally:
        model.close()
        del session


def summarize(times_ms):
    return {"median_ms": statistics.median(times_ms), "min_ms": min(times_ms),
            "max_ms": max(times_ms), "runs": len(times_ms)}


MEDIAN_RE = re.compile(r"median ([0-9.]+) ms per run over (\d+) runs \(min ([0-9.]+), "
                       r"max ([0-9.]+)\)")
HEADER_RE = re.compile(r"variant (\S+), (\d+) threads")


def run_tensorc(tensorc_run, bundle, inputs_path, threads, iterations=0, outputs_path=None):
    """Runs tensorc-run; returns its variant, thread count, the process's CPU seconds and (with
    iterations) its timing."""
    cmd = [tensorc_run, bundle, "--inputs", inputs_path, "--threads", str(threads)]
    if outputs_path:
        cmd += ["--outputs", outputs_path]
    if iterations:
        cmd += ["--iterations", str(iterations)]
    output, cpu_s = run_checked(cmd, "tensorc-run")
    result = {"process_cpu_s": cpu_s}
    header = HEADER_RE.search(output)
    if header:
        result["variant"], result["threads"] = header.group(1), int(header.group(2))
    if iterations:
        match = MEDIAN_RE.search(output)
        if not match:
            raise BenchError(f"no 'median ... ms' line in tensorc-run's output:\n{output}")
        result.update(median_ms=float(match.group(1)), runs=int(match.group(2)),
                      min_ms=float(match.group(3)), max_ms=float(match.group(4)))
    return result


def compare(actual, expected, dtype):
    rtol, atol = TOLERANCES[dtype]
    if actual.shape != expected.shape:
        return {"ok": False, "error": f"shape {list(actual.shape)} != {list(expected.shape)}"}
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    diff = np.abs(a - e)
    finite = bool(np.isfinite(a).all())
    scale = max(1.0, float(np.abs(e[np.isfinite(e)]).max())) if e.size and np.isfinite(e).any() \
        else 1.0
    ok = finite and bool(np.all(diff <= atol * scale + rtol * np.abs(e)))
    return {"ok": ok, "max_abs_diff": float(diff.max()) if diff.size else 0.0,
            "max_rel_diff": float((diff / np.maximum(np.abs(e), 1e-30)).max()) if diff.size
            else 0.0, "rtol": rtol, "atol": atol, "atol_scale": scale, "finite": finite}


def tc_threads(label, threads):
    """tensorc-run's --threads: 0 asks the runtime for one thread per core, as 'all' means."""
    return 0 if label == "all" else threads


def bench_model(name, args, bins, work_dir, thread_counts):
    """Compiles, checks and times one model; returns its JSON record (rows included)."""
    if args.suite == "real":
        onnx_path = os.path.join(export_real(name, args.exports, args.batch), "model.onnx")
    elif name in make_zoo.MODELS:
        onnx_path = make_zoo.build([name], os.path.join(cache_dir(), "models"))[name]
    else:
        onnx_path = make_onnx_models.build([name], os.path.join(cache_dir(), "models"))[name]
    source = onnx_path
    if args.frontend == "fx" and name in make_onnx_models.MODELS:
        source = os.path.join(REPO, "models", make_onnx_models.MODELS[name][1] + ".fx")
    bundle = os.path.join(work_dir, f"{name}.bundle")
    log(f"{name}: tensorc compile {source}")
    compile_s, compile_cpu_s, compile_log = compile_model(bins["tensorc"], source,
                                                          bundle)
    with open(os.path.join(bundle, "manifest.json")) as f:
        manifest = json.load(f)
    record = {"model": name, "onnx": onnx_path, "tensorc_source": source,
              "compile_s": compile_s, "compile_cpu_s": compile_cpu_s,
              "compile_log": compile_log.strip().splitlines(),
              "kernels": [launch["name"] for launch in manifest.get("launches", [])],
              "batch": args.batch, "dtype": "f32", "rows": []}

    # One fixed input, written for tensorc-run under the bundle's own input name.
    session = ort_session(onnx_path, thread_counts[0][1])
    feeds = make_inputs(name, session, args.batch, args.seed, args.suite, args.exports)
    if len(manifest["inputs"]) != len(feeds):
        raise BenchError(f"{name}: the bundle takes {len(manifest['inputs'])} inputs, the ONNX "
                         f"model {len(feeds)}")
    inputs_path = os.path.join(work_dir, f"{name}.inputs.safetensors")
    # The bundle's inputs are the ONNX inputs in order (names may be sanitized).
    safetensors_np.save(inputs_path, {desc["name"]: array for desc, array in
                                      zip(manifest["inputs"], feeds.values())})
    del session

    # Correctness first, at every thread count, against onnxruntime at the same thread count.
    record["correctness"] = []
    headers = {}  # per thread count: the variant and threads tensorc-run reported
    for label, threads in thread_counts:
        session = ort_session(onnx_path, threads)
        expected = session.run(None, feeds)
        del session
        outputs_path = os.path.join(work_dir, f"{name}.outputs.t{label}.safetensors")
        headers[label] = run_tensorc(bins["tensorc-run"], bundle, inputs_path,
                                     tc_threads(label, threads), outputs_path=outputs_path)
        produced = safetensors_np.load(outputs_path)
        for out_desc, want in zip(manifest["outputs"], expected):
            check = compare(produced[out_desc["name"]], want, "f32")
            check.update(threads=label, output=out_desc["name"])
            record["correctness"].append(check)
            log(f"{name}: threads {label}: output '{out_desc['name']}' max |diff| "
                f"{check.get('max_abs_diff', float('nan')):.3g} -> "
                f"{'ok' if check['ok'] else 'MISMATCH'}")
    record["correct"] = all(c["ok"] for c in record["correctness"])
    if not record["correct"]:
        log(f"{name}: outputs differ from onnxruntime; not timing it")
        return record
    if args.check_only:
        return record

    # Timing. interleaved: both in this process, in alternating blocks of a few runs (the first
    # side of each round alternating too), so that a machine whose speed shifts every few seconds
    # shifts under both; processes: onnxruntime in this process, then a tensorc-run process.
    # Either way --rounds rounds per thread count; each side reports the median of its per-round
    # medians.
    for label, threads in thread_counts:
        if args.timing == "interleaved":
            peer_rounds, our_rounds = time_interleaved(
                onnx_path, feeds, bins["runtime-lib"], bundle, threads,
                tc_threads(label, threads), args)
            for r in our_rounds:
                r.update(variant=headers[label].get("variant"),
                         threads=headers[label].get("threads"))
        else:
            peer_rounds, our_rounds = [], []
            for _ in range(args.rounds):
                session = ort_session(onnx_path, threads)
                peer_rounds.append(time_ort(session, feeds, args.warmup, args.iterations))
                del session
                our_rounds.append(run_tensorc(bins["tensorc-run"], bundle, inputs_path,
                                              tc_threads(label, threads),
                                              iterations=args.iterations))
            # CPU time per run, robust to other processes sharing the cores: a one-run
            # tensorc-run (load + warm-up run) measures the fixed cost to subtract from each
            # timed process.
            fixed = run_tensorc(bins["tensorc-run"], bundle, inputs_path,
                                tc_threads(label, threads))
            for r in our_rounds:
                used_s = r["process_cpu_s"] - fixed["process_cpu_s"]
                r["cpu_ms_per_run"] = used_s * 1e3 / r["runs"]
        peer_ms = statistics.median(r["median_ms"] for r in peer_rounds)
        ours_ms = statistics.median(r["median_ms"] for r in our_rounds)
        row = {"threads": label, "threads_used": our_rounds[0].get("threads", threads),
               "variant": our_rounds[0].get("variant"), "peer_ms": peer_ms,
               "tensorc_ms": ours_ms, "ratio": peer_ms / ours_ms,
               "peer_cpu_ms": statistics.median(r["cpu_ms_per_run"] for r in peer_rounds),
               "tensorc_cpu_ms": statistics.median(r["cpu_ms_per_run"] for r in our_rounds),
               "peer_rounds": peer_rounds,
               "tensorc_rounds": [{k: v for k, v in r.items() if k not in ("variant", "threads")}
                                  for r in our_rounds]}
        record["rows"].append(row)
        per_round = lambda rounds: ", ".join(f"{r['median_ms']:.3f}" for r in rounds)  # noqa
        log(f"{name}: threads {label}: onnxruntime {peer_ms:.3f} ms, tensorc {ours_ms:.3f} ms "
            f"(rounds: {per_round(peer_rounds)} vs {per_round(our_rounds)})")
    return record


def print_table(records, args, cores):
    header = ["model", "batch", "dtype", "threads", "peer (onnxruntime) ms", "tensorc ms",
              "ratio (peer/tensorc)"]
    rows = []
    for rec in records:
        if not rec["correct"]:
            rows.append([rec["model"], str(rec["batch"]), rec["dtype"], "-", "-", "-",
                         "MISMATCH"])
        for row in rec["rows"]:
            threads = row["threads"] if row["threads"] != "all" else f"all ({row['threads_used']})"
            rows.append([rec["model"], str(rec["batch"]), rec["dtype"], threads,
                         f"{row['peer_ms']:.3f}", f"{row['tensorc_ms']:.3f}",
                         f"{row['ratio']:.2f}"])
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(header)]
    line = lambda cells: "  ".join(c.rjust(w) if i > 0 else c.ljust(w)  # noqa: E731
                                   for i, (c, w) in enumerate(zip(cells, widths)))
    print(line(header))
    print(line(["-" * w for w in widths]))
    for r in rows:
        print(line(r))
    ratios = [row["ratio"] for rec in records for row in rec["rows"]]
    geomean = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else None
    if geomean is not None:
        print(f"geometric mean of ratios: {geomean:.3f}  (>1: tensorc faster)")
    if args.timing == "interleaved":
        print(f"ms = median of {args.rounds} rounds' medians, {args.iterations} runs of each side "
              f"per round, both in this process (perf_counter around session.run and "
              f"tc_model_run, {args.warmup} warm-up runs each) in alternating blocks of "
              f"{INTERLEAVE_BLOCK} runs. {cores} cores.")
    else:
        print(f"ms = median of {args.rounds} alternating rounds' medians, {args.iterations} runs "
              f"each; onnxruntime timed in-process (perf_counter around session.run, "
              f"{args.warmup} warm-up runs), tensorc timed inside tensorc-run --iterations (a "
              f"separate process; 1 warm-up run). {cores} cores.")
    cpu_rows = [(rec["model"], row) for rec in records for row in rec["rows"]]
    if cpu_rows:
        print("CPU time per run in ms (all threads summed, spinning included; less sensitive to "
              "other processes on the cores than wall time):")
        for model, row in cpu_rows:
            # tensorc's figure is a difference of two process totals: for models that run in
            # well under a millisecond it drowns in the process start-up noise.
            if row['tensorc_cpu_ms'] <= 0.05 * row['tensorc_ms']:
                print(f"  {model:8s} threads {row['threads']:>3s}: onnxruntime "
                      f"{row['peer_cpu_ms']:.3f}, tensorc below the resolution of this method")
                continue
            print(f"  {model:8s} threads {row['threads']:>3s}: onnxruntime "
                  f"{row['peer_cpu_ms']:.3f}, tensorc {row['tensorc_cpu_ms']:.3f}, ratio "
                  f"{row['peer_cpu_ms'] / row['tensorc_cpu_ms']:.2f}")
    print("compile time (tensorc compile):")
    for rec in records:
        print(f"  {rec['model']}: {rec['compile_s']:.2f} s wall, {rec['compile_cpu_s']:.2f} s CPU  "
              f"({os.path.basename(rec['tensorc_source'])}, kernels: {', '.join(rec['kernels'])})")
    return geomean


def environment():
    import onnxruntime
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
        cpu = re.search(r"model name\s*:\s*(.*)", text).group(1)
        flags = re.search(r"flags\s*:\s*(.*)", text).group(1).split()
        isa = [f for f in ("avx2", "fma", "avx512f") if f in flags]
    except (OSError, AttributeError):
        isa = []
    commit = subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    return {"cpu": cpu, "isa": isa, "cores": os.cpu_count(), "machine": platform.machine(),
            "python": platform.python_version(), "numpy": np.__version__,
            "onnxruntime": onnxruntime.__version__, "tensorc_commit": commit or None,
            "tensorc_tree_modified": bool(dirty.strip()) if commit else None,
            "loadavg_start": os.getloadavg()}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", choices=["cpu", "real", "gpu"], default="cpu",
                        help="cpu: the seed and zoo models; real: bench/suite.py's exports "
                             "(torch + transformers/torchvision, f32, the batch fixed in the "
                             "export)")
    parser.add_argument("--models", default="mlp,seed003",
                        help="comma-separated, from "
                             f"{sorted(make_onnx_models.MODELS) + sorted(make_zoo.MODELS)} "
                             f"(--suite real: {sorted(suite.SUITE)})")
    parser.add_argument("--batch", type=int,
                        help="value of the symbolic batch dim (default 64); --suite real: the "
                             "batch the models are exported at (default 1)")
    parser.add_argument("--iterations", type=int, default=50,
                        help=f"timed runs per measurement (at least {MIN_ITERATIONS})")
    parser.add_argument("--warmup", type=int, default=5, help="onnxruntime warm-up runs")
    parser.add_argument("--rounds", type=int, default=3,
                        help="alternating onnxruntime/tensorc rounds per measurement")
    parser.add_argument("--threads", default="1,all",
                        help="comma-separated thread counts; 'all' = every core")
    parser.add_argument("--build-dir", default=os.path.join(REPO, "build"),
                        help="CMake build directory holding tensorc and tensorc-run")
    parser.add_argument("--tensorc", help="the tensorc driver to use instead of --build-dir's "
                        "(on the GPU machine: a compiler kit's .kit/tc)")
    parser.add_argument("--runner", help="tensorc-run to use instead of --build-dir's")
    parser.add_argument("--timing", choices=["interleaved", "processes"], default="interleaved",
                        help="interleaved: onnxruntime and the bundle (through the runtime's C "
                             "ABI) in this process, in alternating blocks of "
                             f"{INTERLEAVE_BLOCK} runs; processes: onnxruntime in this process, "
                             "then tensorc-run --iterations, once per round")
    parser.add_argument("--runtime-lib", help="libtensorc_rt.so for interleaved timing "
                        "(default: --build-dir's package/lib/libtensorc_rt.so)")
    parser.add_argument("--exports", help="--suite real: take each model's f32 export from "
                        "EXPORTS/<model>_f32, as `bench/real.py prepare --out EXPORTS` wrote it, "
                        "instead of exporting it again")
    parser.add_argument("--frontend", choices=["onnx", "fx"], default="onnx",
                        help="what tensorc compiles: the same .onnx as the peer (default) or "
                             "the .fx twin")
    parser.add_argument("--work-dir", default=os.path.join(cache_dir(), "bench"),
                        help="bundles, inputs and outputs go here")
    parser.add_argument("--seed", type=int, default=0, help="input generator seed")
    parser.add_argument("--check-only", action="store_true",
                        help="compile and check against onnxruntime, time nothing")
    parser.add_argument("--json", help="result file (default: WORK_DIR/results-SUITE.json)")
    args = parser.parse_args()
    if args.iterations < MIN_ITERATIONS:
        parser.error(f"--iterations must be at least {MIN_ITERATIONS} (medians need enough runs)")
    if args.rounds < 1:
        parser.error("--rounds must be positive")
    if args.batch is None:
        args.batch = 1 if args.suite == "real" else 64
    if args.batch < 1:
        parser.error("--batch must be positive")
    return args


def main():
    args = parse_args()
    if args.suite == "gpu":
        print("bench: --suite gpu is not implemented yet (CPU only for now)", file=sys.stderr)
        return 2
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        print("bench: the peer needs onnxruntime: pip install onnxruntime onnx", file=sys.stderr)
        return 2
    cores = os.cpu_count()
    thread_counts = []
    for t in args.threads.split(","):
        if t == "all":
            thread_counts.append(("all", cores))  # tensorc-run gets --threads 0 (one per core)
        elif t.isdigit() and int(t) > 0:
            thread_counts.append((t, int(t)))
        else:
            print(f"bench: --threads: expected positive integers or 'all', got '{t}'",
                  file=sys.stderr)
            return 2
    try:
        bins = find_binaries(os.path.abspath(args.build_dir), args.tensorc, args.runner,
                             args.runtime_lib, need_lib=args.timing == "interleaved")
        os.makedirs(args.work_dir, exist_ok=True)
        env = environment()
        records = [bench_model(name, args, bins, args.work_dir, thread_counts)
                   for name in args.models.split(",")]
    except BenchError as error:
        print(f"bench: error: {error}", file=sys.stderr)
        return 1
    env["loadavg_end"] = os.getloadavg()
    geomean = print_table(records, args, cores)
    result = {"suite": args.suite, "date": datetime.datetime.now().isoformat(timespec="seconds"),
              "iterations": args.iterations, "rounds": args.rounds,
              "ort_warmup": args.warmup,
              "timing": args.timing,
              "tensorc_timing": ("median of time.perf_counter() around tc_model_run, in-process, "
                                 f"blocks of {INTERLEAVE_BLOCK} runs alternating with the peer's"
                                 if args.timing == "interleaved" else
                                 "median inside tensorc-run --iterations (separate process)"),
              "peer_timing": "median of time.perf_counter() around session.run, in-process",
              "frontend": args.frontend, "environment": env, "models": records,
              "geomean_ratio": geomean}
    json_path = args.json or os.path.join(args.work_dir, f"results-{args.suite}.json")
    with open(json_path, "w") as f:
        json.dump(result, f, indent=2)
    print(f"wrote {json_path}")
    return 0 if all(rec["correct"] for rec in records) else 1


if __name__ == "__main__":
    sys.exit(main())
