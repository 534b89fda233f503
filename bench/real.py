#!/usr/bin/env python3
"""Real models on a GPU: tensorc CUDA bundles against eager PyTorch, torch.compile and
torch.compile(mode="reduce-overhead"), side by side in one run (the suite is bench/suite.py).

Run on the GPU machine, where torch, torchvision and transformers are installed, with the
compiler there (../shared/tools/compiler-kit.sh packs it; `.kit/unpack.sh` gives `.kit/tc`):

    bench/real.py prepare --out WORK --tensorc .kit/tc [--models ...] [--dtypes f32,f16] [--jobs 16]
                          [--batch 1]
    bench/real.py run WORK --runner .kit/tensorc-run [--models ...] [--jobs 6] [--json out.json]
    bench/real.py table out1.json [out2.json ...]

`prepare` exports every (model, dtype) with the dynamo exporter (at batch --batch, default 1: images
or sequences of suite.SEQ tokens per run; `run` takes the batch from the export) and compiles it with
`--target cuda -O reduce-overhead` (in parallel, --jobs processes), recording export and compile
times and the fallbacks the compiler reports. `run` checks each bundle on the same weights and
inputs against eager PyTorch run one precision wider (f16 models in f32, f32 models in f64):
tensorc's relative L2 error must be within 1e-5 (f32) / 5e-3 (f16) or at most 3x that of eager
PyTorch at the model's own precision (the table shows both errors), then times eager,
torch.compile, reduce-overhead and tensorc (plain and replayed as a CUDA graph). Cases are
handled in waves of --jobs worker processes: every worker of a wave first compiles its torch
variants (the slow part, in parallel), then the workers take turns on the GPU, one at a time, so
no timing shares the GPU or the CPU with another. Times are medians of --iterations runs after
warm-up, host-timed from launch to stream completion, inputs already on the GPU for everyone
(tensorc-run --iterations times the kernels or the graph, no host copies). f32 keeps torch in
strict fp32 (no TF32 in cuBLAS or cuDNN), as tensorc's default f32 precision is; `run --tf32`
lets both use TF32 tensor cores (prepare those bundles with `--compile-args --matmul-precision
high`).
"""
import argparse
import copy
import json
import os
import re
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "models"))
sys.path.insert(0, os.path.join(REPO, "bench"))
import safetensors_np  # noqa: E402
import suite  # noqa: E402

MIN_ITERATIONS = 30
TOLERANCE = {"f32": 1e-5, "f16": 5e-3, "bf16": 2e-2}  # relative L2 error against the reference
CNNS = ("resnet50", "resnext50", "mobilenet_v3", "efficientnet_b0", "regnet_y", "densenet121",
        "convnext_t")


def log(message):
    print(f"real: {message}", file=sys.stderr, flush=True)


def cases(models, dtypes):
    names = list(suite.SUITE) if not models else models.split(",")
    for name in names:
        if name not in suite.SUITE:
            raise SystemExit(f"real: unknown model '{name}' (models: {', '.join(suite.SUITE)})")
    return [(m, d) for m in names for d in dtypes.split(",")]


def case_dir(work, model, dtype):
    return os.path.join(work, f"{model}_{dtype}")


def tail(text, lines=3):
    return " | ".join(line for line in text.strip().splitlines()[-lines:])


# --- prepare -------------------------------------------------------------------------------------

def prepare_case(args, model, dtype):
    out = case_dir(args.out, model, dtype)
    os.makedirs(out, exist_ok=True)
    record = {"model": model, "dtype": dtype, "batch": args.batch, "status": "ok"}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, os.path.join(REPO, "bench", "suite.py"), "export", model,
                           dtype, out, "--batch", str(args.batch)], capture_output=True, text=True)
    record["export_s"] = time.perf_counter() - start
    if proc.returncode != 0:
        record.update(status="export failed", message=tail(proc.stderr))
    else:
        bundle = os.path.join(out, "bundle")
        cmd = [args.tensorc, "compile", os.path.join(out, "model.onnx"), "-o", bundle, "--target",
               "cuda", "--cuda-arch", args.cuda_arch, "-O", args.mode,
               # A model with fallbacks still compiles and is timed; the table lists them.
               "--fallback=allow"] + args.compile_args
        if args.mode == "max-autotune":  # tuned one case at a time afterwards (prepare)
            cmd.append("--no-tune")
        start = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        record["compile_s"] = time.perf_counter() - start
        text = proc.stdout + proc.stderr
        match = re.search(r"\((\d+) kernels, (\d+) fallback op types", text)
        if match:
            record["kernels"], record["fallback_types"] = int(match.group(1)), int(match.group(2))
        match = re.search(r"fallbacks \(run by the runtime's reference kernels\): (.*)", text)
        record["fallbacks"] = match.group(1).strip() if match else ""
        if proc.returncode != 0:
            record.update(status="compile failed", message=tail(text))
    with open(os.path.join(out, "prepare.json"), "w") as f:
        json.dump(record, f, indent=1)
    log(f"{model} {dtype}: {record['status']} (export {record['export_s']:.1f} s"
        + (f", compile {record['compile_s']:.1f} s" if "compile_s" in record else "") + ")"
        + (f": {record['message']}" if "message" in record else ""))
    return record


def prepare(args):
    todo = cases(args.models, args.dtypes)
    with ThreadPoolExecutor(args.jobs) as pool:
        records = list(pool.map(lambda c: prepare_case(args, *c), todo))
    if args.mode == "max-autotune":
        # Tuning times kernels on the GPU: one case at a time, after every compile.
        for r in records:
            if r["status"] != "ok":
                continue
            out = case_dir(args.out, r["model"], r["dtype"])
            start = time.perf_counter()
            proc = subprocess.run([args.tensorc, "tune", os.path.join(out, "bundle"), "--inputs",
                                   os.path.join(out, "inputs.safetensors")],
                                  capture_output=True, text=True)
            r["tune_s"] = time.perf_counter() - start
            with open(os.path.join(out, "tune.txt"), "w") as f:
                f.write(proc.stdout + proc.stderr)
            match = re.search(r"(\d+) of (\d+) GEMMs to cuBLASLt", proc.stdout)
            r["tuned"] = f"{match.group(1)}/{match.group(2)}" if match else "-"
            if proc.returncode != 0:
                r.update(status="tune failed", message=tail(proc.stdout + proc.stderr))
            log(f"{r['model']} {r['dtype']}: tuned {r['tuned']} GEMMs to cuBLASLt "
                f"({r['tune_s']:.1f} s){': ' + r['message'] if 'message' in r else ''}")
            with open(os.path.join(out, "prepare.json"), "w") as f:
                json.dump(r, f, indent=1)
    print(f"{'case':<22} {'status':<16} {'export s':>8} {'compile s':>9} {'kernels':>7}  fallbacks")
    for r in records:
        print(f"{r['model'] + ' ' + r['dtype']:<22} {r['status']:<16} {r['export_s']:8.1f} "
              f"{r.get('compile_s', float('nan')):9.1f} {r.get('kernels', 0):7d}  "
              f"{r.get('fallbacks') or '-'}")
    return 0 if all(r["status"] == "ok" for r in records) else 1


# --- run -----------------------------------------------------------------------------------------

def time_torch(torch, fn, inputs, iterations, warmup=10):
    for _ in range(warmup):
        fn(*inputs)
    torch.cuda.synchronize()
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        fn(*inputs)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def time_tensorc(runner, bundle, inputs_path, iterations, graphs):
    cmd = [runner, bundle, "--device", "cuda", "--inputs", inputs_path, "--iterations",
           str(iterations), "--cuda-graphs", "on" if graphs else "off"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    match = re.search(r"median ([0-9.]+) ms", out)
    if not match:
        raise RuntimeError(f"no timing in tensorc-run output: {out}")
    return float(match.group(1)), out


def accurate(tensorc_error, torch_error, dtype):
    """tensorc's error against the wider reference is within the tolerance or at most three
    times PyTorch's own at the same precision (deep f16 networks amplify rounding well past any
    fixed tolerance, PyTorch's result too)."""
    return tensorc_error <= max(TOLERANCE[dtype], 3 * torch_error)


def relative_l2(got, want):
    g, w = got.astype(np.float64).ravel(), want.astype(np.float64).ravel()
    if not np.isfinite(g).all():
        return float("inf")
    return float(np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30))


def worker(work, model, dtype, runner, iterations, peers, messages, go, tf32):
    """One case in its own process: check, compile torch's variants, then time when told to."""
    record = {"model": model, "dtype": dtype}
    try:
        import torch
        # Strict fp32, as tensorc's default (--matmul-precision highest); with --tf32 both sides
        # take TF32 tensor cores (bundles prepared with --compile-args --matmul-precision high).
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        torch.set_float32_matmul_precision("high" if tf32 else "highest")
        out = case_dir(work, model, dtype)
        with open(os.path.join(out, "export.json")) as f:
            exported = json.load(f)
        with open(os.path.join(out, "prepare.json")) as f:
            record.update({k: v for k, v in json.load(f).items() if k not in ("status",)})
        record["batch"] = exported.get("batch", 1)
        module, inputs = suite.build(torch, model, dtype, batch=record["batch"])
        if suite.weights_digest(torch, module) != exported["weights_sha256"]:
            raise RuntimeError("the weights differ from the exported model's (another torch?)")
        module = module.cuda()
        args = [v.cuda() for v in inputs.values()]
        bundle = os.path.join(out, "bundle")
        inputs_path = os.path.join(out, "inputs.safetensors")
        outputs_path = os.path.join(out, "outputs.safetensors")
        with torch.no_grad():
            want = module(*args).float().cpu().numpy()
            proc = subprocess.run([runner, bundle, "--device", "cuda", "--inputs", inputs_path,
                                   "--outputs", outputs_path], capture_output=True, text=True)
            if proc.returncode != 0:
                raise RuntimeError(f"tensorc-run failed: {tail(proc.stderr)}")
            got = list(safetensors_np.load(outputs_path).values())[0]
            record["rel_l2"] = relative_l2(got, want)
            record["max_abs_diff"] = float(np.abs(got.astype(np.float64) - want).max())
            # Two results at one precision differ by both errors; which one is off shows against
            # the same weights and inputs computed wider (f16 -> f32, f32 -> f64).
            wide = torch.float32 if dtype == "f16" else torch.float64
            reference = copy.deepcopy(module).to(wide)
            truth = reference(*[a.to(wide) if a.is_floating_point() else a for a in args])
            truth = truth.double().cpu().numpy()
            del reference
            record["tensorc_error"] = relative_l2(got, truth)
            record["torch_error"] = relative_l2(want, truth)
            record["match"] = accurate(record["tensorc_error"], record["torch_error"], dtype)
            variants = {"eager": module}
            if "compile" in peers:
                variants["compile"] = torch.compile(module)
            if "reduce-overhead" in peers:
                variants["reduce-overhead"] = torch.compile(module, mode="reduce-overhead")
            start = time.perf_counter()
            for fn in variants.values():  # compile and warm up before taking a turn
                for _ in range(3):
                    fn(*args)
            torch.cuda.synchronize()
            record["torch_compile_s"] = time.perf_counter() - start
            messages.put(("ready", model, dtype, None))
            go.wait()
            for peer, fn in variants.items():
                record[f"{peer}_ms"] = time_torch(torch, fn, args, iterations)
        record["tensorc_ms"], _ = time_tensorc(runner, bundle, inputs_path, iterations, False)
        record["tensorc_graphs_ms"], _ = time_tensorc(runner, bundle, inputs_path, iterations,
                                                         True)
    except Exception as error:  # reported in the table, the other cases go on
        record["error"] = f"{type(error).__name__}: {error}"
        messages.put(("ready", model, dtype, None))
    messages.put(("done", model, dtype, record))


def run(args):
    import multiprocessing as mp

    context = mp.get_context("spawn")
    todo = []
    for model, dtype in cases(args.models, args.dtypes):
        path = os.path.join(case_dir(args.work, model, dtype), "prepare.json")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            prepared = json.load(f)
        if prepared["status"] != "ok":
            log(f"{model} {dtype}: skipped ({prepared['status']}: {prepared.get('message', '')})")
            continue
        todo.append((model, dtype))
    peers = args.peers.split(",")
    # Inductor compiles with a worker pool per process: share the cores among a wave's workers.
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS",
                          str(max(1, (os.cpu_count() or 1) // max(1, args.jobs))))
    import torch
    device = torch.cuda.get_device_name()
    result = {"device": device, "torch": torch.__version__, "iterations": args.iterations,
              "records": []}
    for first in range(0, len(todo), args.jobs):
        wave = todo[first:first + args.jobs]
        messages = context.Queue()
        gos = {case: context.Event() for case in wave}
        procs = [context.Process(target=worker, args=(args.work, m, d, args.runner,
                                                      args.iterations, peers, messages, gos[(m, d)],
                                                      args.tf32))
                 for m, d in wave]
        for p in procs:
            p.start()
        ready, records = set(), {}
        while len(ready) < len(wave):  # everyone compiled (or failed) before any timing
            kind, model, dtype, record = messages.get()
            if kind == "ready":
                ready.add((model, dtype))
            else:
                records[(model, dtype)] = record
        for case in wave:  # one at a time on the GPU
            gos[case].set()
            while case not in records:
                kind, model, dtype, record = messages.get()
                if kind == "done":
                    records[(model, dtype)] = record
            r = records[case]
            log(f"{case[0]} {case[1]}: " + (r["error"] if "error" in r else
                f"rel L2 {r['rel_l2']:.2e}, tensorc {min(r['tensorc_ms'], r['tensorc_graphs_ms']):.3f}"
                f" ms, reduce-overhead {r.get('reduce-overhead_ms', float('nan')):.3f} ms"))
        for p in procs:
            p.join()
        result["records"] += [records[c] for c in wave]
        if args.json:  # after every wave, so a run cut short keeps what it measured
            with open(args.json, "w") as f:
                json.dump(result, f, indent=1)
    print_table(result)
    return 0 if all("error" not in r and r.get("match") for r in result["records"]) else 1


def geomean(values):
    return float(np.exp(np.mean(np.log(values)))) if values else float("nan")


def error_cell(r):
    """Relative L2 errors of tensorc and PyTorch against the wider reference (older records:
    tensorc against PyTorch)."""
    if "tensorc_error" in r:
        text = f"{r['tensorc_error']:.1e} / {r['torch_error']:.1e}"
    else:
        text = f"{r['rel_l2']:.1e} vs torch"
    return text + ("" if r["match"] else " (too large)")


def print_table(result):
    records = result["records"]
    batches = sorted({r.get("batch", 1) for r in records})
    print(f"device: {result['device']}; torch {result['torch']}; "
          f"batch {'/'.join(map(str, batches))}, seq "
          f"{suite.SEQ}, image {suite.IMAGE}; medians of {result['iterations']} runs; ratio = peer"
          " ms / tensorc's best ms (> 1: tensorc faster)")
    print(f"| model | dtype | eager | compile | reduce-overhead | tensorc | tensorc graphs | "
          f"vs eager | vs compile | vs r-o | error tensorc / torch | fallbacks |")
    print("| --- " * 12 + "|")
    ratios = {}
    for r in records:
        if "error" in r:
            print(f"| {r['model']} | {r['dtype']} | error: {r['error']} |")
            continue
        best = min(r["tensorc_ms"], r["tensorc_graphs_ms"])
        cells = []
        for peer in ("eager", "compile", "reduce-overhead"):
            ms = r.get(f"{peer}_ms")
            cells.append(ms / best if ms else None)
            if ms:
                kind = "cnn" if r["model"] in CNNS else suite.SUITE[r["model"]][1]
                for key in (("all", r["dtype"]), (kind, r["dtype"])):
                    ratios.setdefault((peer,) + key, []).append(ms / best)
        fmt = lambda v, spec: "-" if v is None else format(v, spec)  # noqa: E731
        name = r["model"] + (f" b{r.get('batch', 1)}" if len(batches) > 1 else "")
        print(f"| {name} | {r['dtype']} | {fmt(r.get('eager_ms'), '.3f')} | "
              f"{fmt(r.get('compile_ms'), '.3f')} | {fmt(r.get('reduce-overhead_ms'), '.3f')} | "
              f"{r['tensorc_ms']:.3f} | {r['tensorc_graphs_ms']:.3f} | {fmt(cells[0], '.2f')} | "
              f"{fmt(cells[1], '.2f')} | {fmt(cells[2], '.2f')} | {error_cell(r)} | "
              f"{r.get('fallbacks') or '-'} |")
    for key in sorted({k[1:] for k in ratios}):
        line = ", ".join(f"vs {peer} {geomean(ratios[(peer,) + key]):.2f}"
                         for peer in ("eager", "compile", "reduce-overhead")
                         if (peer,) + key in ratios)
        print(f"geomean {key[0]} {key[1]} ({len(ratios.get(('eager',) + key, []))} models): {line}")


def table(args):
    merged = None
    for path in args.json:
        with open(path) as f:
            result = json.load(f)
        if merged is None:
            merged = result
        elif (result["device"], result["torch"]) != (merged["device"], merged["torch"]):
            raise SystemExit(f"real: {path} is from {result['device']} / torch {result['torch']}")
        else:
            merged["records"] += result["records"]
    print_table(merged)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare", help="export and compile the suite (needs torch and tensorc)")
    p.add_argument("--out", required=True)
    p.add_argument("--tensorc", required=True, help="the tensorc driver (or the kit's tc)")
    p.add_argument("--models", help=f"comma-separated (default: all of {', '.join(suite.SUITE)})")
    p.add_argument("--dtypes", default="f32,f16")
    p.add_argument("--cuda-arch", default="sm_90")
    p.add_argument("--mode", default="reduce-overhead", choices=["reduce-overhead", "max-autotune"],
                   help="tensorc's -O (max-autotune: then `tensorc tune` each case, one at a time)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--batch", type=int, default=suite.BATCH,
                   help="images or sequences per run, fixed in the export (default 1)")
    p.add_argument("--compile-args", nargs=argparse.REMAINDER, default=[],
                   help="further tensorc compile arguments (last on the line)")
    r = sub.add_parser("run", help="check and time a prepared suite on the GPU (needs torch)")
    r.add_argument("work")
    r.add_argument("--runner", required=True, help="tensorc-run")
    r.add_argument("--models")
    r.add_argument("--dtypes", default="f32,f16")
    r.add_argument("--iterations", type=int, default=50)
    r.add_argument("--jobs", type=int, default=6, help="cases per wave")
    r.add_argument("--tf32", action="store_true",
                   help="PyTorch's f32 matmuls and convolutions on TF32 too (for bundles prepared "
                        "with --compile-args --matmul-precision high; the accuracy check then "
                        "compares against PyTorch's TF32 error)")
    r.add_argument("--peers", default="compile,reduce-overhead",
                   help="torch.compile variants to time besides eager")
    r.add_argument("--json")
    t = sub.add_parser("table", help="one table from the JSON files of several runs")
    t.add_argument("json", nargs="+")
    args = parser.parse_args()
    if args.command == "prepare" and args.batch < 1:
        parser.error("--batch must be positive")
    if args.command == "run" and args.iterations < MIN_ITERATIONS:
        parser.error(f"--iterations must be at least {MIN_ITERATIONS}")
    return {"prepare": prepare, "run": run, "table": table}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
