#!/usr/bin/env python3
"""GPU microbenchmark of the CUDA kernel library (lib/Codegen/CUDA/Kernels) against PyTorch:
GEMMs against F.linear (cuBLAS), convolutions against F.conv2d on channels_last tensors (cuDNN),
in f16, bf16, strict f32 (TF32 off on both sides) and TF32 (on on both sides).

Two steps. Here (where NVRTC is; no GPU needed), render and compile the kit:

    bench/cuda_kernels.py prepare --tool build/bench/cuda_kernels/tensorc-cuda-kernels \
        --out build/cuda-kernels-kit [--sms 132] [--arch sm_90a] [--cases PATTERN]

(sm_90a, the default, enables the Hopper wgmma kernel; its TMA tensor maps are encoded on the
GPU machine with the driver's cuTensorMapEncodeTiled through ctypes, and its barrier waits trap
after --watchdog milliseconds (2000) instead of hanging.)

On the GPU machine (python3 with torch; the kernels are loaded with the driver API through
ctypes, no compiler needed):

    python3 bench/cuda_kernels.py run build/cuda-kernels-kit [--cases PATTERN] [--json OUT.json]
        [--table OUT.txt] [--budget 420] [--case-timeout 90]

The script needs nothing else from the repository: a copy of it beside the kit runs anywhere.

Every kernel is first checked against torch (float64 reference on the GPU; the output is
poisoned with NaN before, so unwritten elements fail): ||ours - ref|| / ||ref|| must stay under
1e-2 (f16/bf16), 2e-3 (TF32), 1e-5 (f32). Then both sides are timed the same way: a CUDA graph
of 20 launches (no launch overhead on either side), replayed after warm-up, timed with CUDA
events, median of 15 replays; inputs rotate over enough copies to exceed the L2 cache, so
weights come from device memory as they would in a model. The table: ours and torch in ms per
call, speedup = torch / ours, our TFLOP/s and GB/s (the fewest bytes the op must move: inputs
read once, output written once). Printed last: geometric-mean speedups per group and the
slowest cases (the table itself too, unless --table writes it to a file), then every failure.
Cases run in child processes: a case that faults (a lost CUDA context) or hangs (no progress for
--case-timeout seconds: the child is killed) costs that case, not the run; after --max-lost such
cases of one kernel kind (wgmma, mma, depthwise) the rest of that kind is skipped; the whole run
stops at --budget seconds and lists the cases it did not reach. --json is rewritten after every case.

Cases: square GEMMs (1024, 4096), batch-1 GEMMs (M = 1, 8, 16; N, K in 768..4096), BERT/GPT-2
b1 s128 GEMMs, ResNet-50 b1 convolutions (every distinct layer), MobileNetV3 / EfficientNet-B0
depthwise layers and ConvNeXt-T's 7x7 depthwise layers; `mma_*`: the GEMMs and pointwise
convolutions that take the Hopper kernel, on the mma.sync kernel instead (the sm_80 path, and
run 1's kernel); `probe_*`: tiny problems that show the fixed cost of a launch; and `sweep_*`:
other tile, stage and split-K choices than the heuristic's for a few of those shapes (tuning
data; `sweep_wg_*` on the Hopper kernel, `sweep_cv_*` with the maximum shared-memory carveout).
Run 3's sweeps (WG_SWEEPS_RUN3, WG_CONV_SWEEPS_RUN3, WG_CARVEOUT_SWEEPS) test the hypotheses in
bench/cuda_kernels/NOTES.md and launch a block per unit instead of a persistent grid. The cases
and the prepare step are in cuda_kernel_cases.py.
"""
import argparse
import ctypes
import fnmatch
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time


def select(cases, pattern):
    """The cases (dicts with a "name") matching any of the comma-separated fnmatch patterns."""
    if not pattern:
        return cases
    patterns = pattern.split(",")
    return [c for c in cases if any(fnmatch.fnmatch(c["name"], p) for p in patterns)]


# ---- running on the GPU ----


class Driver:
    """The few driver API calls the kit needs, through ctypes (torch owns the context)."""

    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")
        self.lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [
            ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
        self.lib.cuTensorMapEncodeTiled.argtypes = [
            ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p,
            ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64),
            ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint32), ctypes.c_int,
            ctypes.c_int, ctypes.c_int, ctypes.c_int]

    def check(self, result, what):
        if result != 0:
            name = ctypes.c_char_p()
            self.lib.cuGetErrorName(result, ctypes.byref(name))
            raise RuntimeError(f"{what}: {name.value.decode() if name.value else result}")

    def tensor_map(self, spec, address):
        """A TMA tensor map (the library's TensorMapSpec, evaluated in the manifest) over the
        buffer at `address`: rank 3, 128-byte swizzle, 256-byte L2 promotion, zero fill."""
        tmap = TensorMap.aligned()
        dtype = {"f16": 6, "bf16": 9, "f32": 7, "tf32": 11}[spec["dtype"]]  # CUtensorMapDataType
        dims = (ctypes.c_uint64 * 3)(*spec["dims"])
        strides = (ctypes.c_uint64 * 2)(*spec["strides"])
        box = (ctypes.c_uint32 * 3)(*spec["box"])
        ones = (ctypes.c_uint32 * 3)(1, 1, 1)
        # interleave none (0), swizzle 128B (3), L2 promotion 256B (3), OOB fill zeros (0)
        self.check(self.lib.cuTensorMapEncodeTiled(ctypes.byref(tmap), dtype, 3,
                                                   ctypes.c_void_p(address), dims, strides, box,
                                                   ones, 0, 3, 3, 0),
                   f"cuTensorMapEncodeTiled {spec}")
        return tmap

    def load(self, path, name, smem, carveout=None):
        module, function = ctypes.c_void_p(), ctypes.c_void_p()
        data = open(path, "rb").read()
        self.check(self.lib.cuModuleLoadData(ctypes.byref(module), data), f"load {path}")
        self.check(self.lib.cuModuleGetFunction(ctypes.byref(function), module, name.encode()),
                   f"function {name}")
        # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        self.check(self.lib.cuFuncSetAttribute(function, 8, ctypes.c_int(smem)),
                   f"{name}: {smem} bytes of dynamic shared memory")
        if carveout is not None:  # CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
            self.check(self.lib.cuFuncSetAttribute(function, 9, ctypes.c_int(carveout)),
                       f"{name}: carveout {carveout}")
        return function

    def launch(self, function, grid, block, smem, stream, args):
        values = [a if isinstance(a, TensorMap) else ctypes.c_void_p(a) if isinstance(a, Pointer)
                  else ctypes.c_longlong(a) for a in args]
        params = (ctypes.c_void_p * len(values))(
            *[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in values])
        self.check(self.lib.cuLaunchKernel(function, grid, 1, 1, block, 1, 1, smem, stream, params,
                                           None), "launch")


class Pointer(int):
    """A device pointer argument (so it is passed as a pointer, not a long long)."""


class TensorMap(ctypes.Structure):
    """CUtensorMap: 128 opaque bytes, passed by value; 64-byte aligned like the C type."""
    _fields_ = [("opaque", ctypes.c_uint64 * 16)]

    @classmethod
    def aligned(cls):
        raw = ctypes.create_string_buffer(ctypes.sizeof(cls) + 64)
        tmap = cls.from_address((ctypes.addressof(raw) + 63) & ~63)
        tmap.keep = raw  # the memory lives as long as the map
        return tmap


def tensors_for(torch, case, device):
    """Inputs (torch layout), our buffers by role, the reference function, flops and bytes."""
    import torch.nn.functional as F
    dt = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[case["dtype"]]
    gen = torch.Generator(device=device).manual_seed(1234)

    def rand(*shape):
        return (torch.rand(*shape, generator=gen, device=device) * 2 - 1).to(dt)

    op = case["op"]
    if op == "gemm":
        m, n, k = case["m"], case["n"], case["k"]
        a, w = rand(m, k), rand(n, k)
        ins = {"A": a, "B": w}
        peer = lambda t: F.linear(t["A"], t["B"])  # noqa: E731
        ref = lambda t: (t["A"].double() @ t["B"].double().t())  # noqa: E731
        out_shape, flops = (m, n), 2 * m * n * k
    elif op == "conv":
        nb, h, c, oc, kk = case["n"], case["h"], case["c"], case["oc"], case["kh"]
        s, p, g = case["stride"][0], case["pad"][0], case["groups"]
        x = rand(nb, c, h, h).to(memory_format=torch.channels_last)
        w = rand(oc, c // g, kk, kk).to(memory_format=torch.channels_last)
        ins = {"input": x, "weight": w}
        peer = lambda t: F.conv2d(t["input"], t["weight"], None, s, p, 1, g)  # noqa: E731
        ref = lambda t: F.conv2d(t["input"].double(), t["weight"].double(), None, s, p, 1, g)  # noqa
        oh, ow = case["oh"], case["ow"]
        out_shape, flops = (nb, oh, ow, oc), 2 * nb * oh * ow * oc * (c // g) * kk * kk
    else:
        nb, h, c, kk = case["n"], case["h"], case["c"], case["kh"]
        s, p = case["stride"][0], case["pad"][0]
        x = rand(nb, c, h, h).to(memory_format=torch.channels_last)
        w = rand(c, 1, kk, kk)
        ins = {"input": x, "weight": w}
        peer = lambda t: F.conv2d(t["input"], t["weight"], None, s, p, 1, c)  # noqa: E731
        ref = lambda t: F.conv2d(t["input"].double(), t["weight"].double(), None, s, p, 1, c)  # noqa
        oh, ow = case["oh"], case["ow"]
        out_shape, flops = (nb, oh, ow, c), 2 * nb * oh * ow * c * kk * kk
    nbytes = sum(t.numel() * t.element_size() for t in ins.values())
    nbytes += math.prod(out_shape) * torch.tensor([], dtype=dt).element_size()
    return ins, peer, ref, out_shape, flops, nbytes, dt


def ours_buffers(torch, case, ins):
    """Our memory layouts: GEMM as is (A [M][K], B = W [N][K]); convolutions NHWC input and
    [OC][KH][KW][C/g] (depthwise [KH][KW][C]) weights."""
    if case["op"] == "gemm":
        return {"A": ins["A"].contiguous(), "B": ins["B"].contiguous()}
    x = ins["input"].permute(0, 2, 3, 1).contiguous()
    if case["op"] == "conv":
        return {"input": x, "weight": ins["weight"].permute(0, 2, 3, 1).contiguous()}
    return {"input": x, "weight": ins["weight"][:, 0].permute(1, 2, 0).contiguous()}


def run(args):
    """Runs the selected cases in child processes (run_child), each going on until a case loses
    the CUDA context; the next child starts after that case. A child that makes no progress for
    --case-timeout seconds (a hang the watchdog missed) is killed and charged to its unfinished
    case; a child that dies without saying which case killed it, likewise. The run stops at
    --budget seconds; cases not reached are listed as not run."""
    manifest = json.load(open(os.path.join(args.kit, "manifest.json")))
    todo = [e["name"] for e in select(manifest["kernels"], args.cases)]
    kind = {e["name"]: (e.get("config") or {}).get("kernel", e["op"]) for e in manifest["kernels"]}
    if not todo:
        print(f"no case of {args.kit} matches --cases '{args.cases}'")
        return 1
    # The kit whole (a partial copy fails here, not case by case on the GPU).
    broken = [f"{e['name']}: {why}" for e in manifest["kernels"] if e["name"] in todo
              for why in kit_problems(args.kit, e)]
    if broken:
        print(f"{args.kit} is broken ({len(broken)} problems):\n  " + "\n  ".join(broken[:20]))
        return 1
    print(f"kit {args.kit}: {len(todo)} cases for {manifest['arch']}, watchdog "
          f"{manifest.get('watchdog_ms', 0)} ms; budget {args.budget:.0f} s", flush=True)
    started = time.time()
    deadline = started + args.budget
    results, info, not_run = [], {}, "not run: the time budget ran out"
    with tempfile.TemporaryDirectory() as tmp:
        names, part = os.path.join(tmp, "names.txt"), os.path.join(tmp, "part.json")
        while todo and time.time() < deadline:
            with open(names, "w") as f:
                f.write("\n".join(todo))
            if os.path.exists(part):
                os.remove(part)
            command = [sys.executable, os.path.abspath(__file__), "run", args.kit, "--child",
                       "--names-file", names, "--json", part, "--repeats", str(args.repeats),
                       "--rotate-mb", str(args.rotate_mb)] + (["--verbose"] if args.verbose else [])
            why = watch_child(command, part, deadline, args.case_timeout)
            got = read_part(part)
            if got is None:  # it never reached its first case: no GPU, no torch, a bad kit
                print(f"stopping: the child process failed before its first case ({why})",
                      flush=True)
                not_run = f"not run: the child process failed before its first case ({why})"
                break
            info = {k: v for k, v in got.items() if k not in ("results", "stopped")} or info
            results += got["results"]
            done = {r["name"] for r in got["results"]}
            left = [n for n in todo if n not in done]
            if left and not got.get("stopped") and time.time() < deadline:
                # Died or hung without a word: charge the case it was on.
                results.append({"name": left[0], "error": f"no result: {why}", "fatal": True})
                print(f"{left[0]}: no result: {why}", flush=True)
                left = left[1:]
            # A kernel kind that keeps losing the context (a systematic hang or fault) would
            # spend the budget on restarts: skip the rest of it.
            lost = {}
            for r in results:
                if r.get("fatal"):
                    lost[kind[r["name"]]] = lost.get(kind[r["name"]], 0) + 1
            for k, count in lost.items():
                if count >= args.max_lost and any(kind[n] == k for n in left):
                    why_skip = f"skipped: {count} {k} cases lost the CUDA context or hung"
                    print(f"{why_skip}; skipping the other {k} cases", flush=True)
                    results += [{"name": n, "error": why_skip} for n in left if kind[n] == k]
                    left = [n for n in left if kind[n] != k]
            todo = left
            write_results(args, info, results)
    for name in todo:
        results.append({"name": name, "error": not_run})
    write_results(args, info, results)
    table = format_table(results)
    if args.table:
        with open(args.table, "w") as f:
            f.write(table + "\n")
    print(summary(results, table if not args.table else None))
    print(f"{sum('error' not in r for r in results)} of {len(results)} cases timed in "
          f"{time.time() - started:.0f} s; {info.get('device', 'no device')}, torch "
          f"{info.get('torch', '?')}, kit for {manifest['arch']}")
    return 1 if any("error" in r or not r.get("ok") for r in results) else 0


def kit_problems(kit, entry):
    """What keeps a manifest entry from running: a missing cubin, tensor maps without roles."""
    path = os.path.join(kit, entry.get("cubin", ""))
    if not entry.get("cubin") or not os.path.isfile(path):
        yield f"no cubin {entry.get('cubin')}"
    elif open(path, "rb").read(4) != b"\x7fELF":
        yield f"{entry['cubin']} is not a cubin"
    if sum(r.startswith("map:") for r in entry["roles"]) != len(entry.get("tensor_maps", [])):
        yield "tensor maps and map roles differ in number"


def read_part(path):
    """The child's results so far (None before it started its first case)."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):  # absent, or caught mid-write
        return None


def watch_child(command, part, deadline, case_timeout):
    """Runs a child to its end, killing it at the deadline or when its result file has not
    changed for `case_timeout` seconds; returns why it ended, in words."""
    child = subprocess.Popen(command)
    last, changed = None, time.time()
    while True:
        try:
            code = child.wait(timeout=1.0)
            return f"the child process exited with {code}"
        except subprocess.TimeoutExpired:
            pass
        now = time.time()
        try:
            stamp = os.stat(part).st_mtime_ns
        except OSError:
            stamp = None
        if stamp != last:
            last, changed = stamp, now
        stalled = now - changed > case_timeout
        if now >= deadline or stalled:
            child.kill()
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:  # stuck in the driver: leave it, go on
                pass
            return (f"no progress for {case_timeout:.0f} s (a hang?); killed" if stalled else
                    "the run's time budget ran out; killed")


def write_results(args, info, results):
    if args.json:
        write_json(args.json, {**info, "results": results})


def write_json(path, value):
    """Whole or not at all (the parent may read it while a child writes)."""
    with open(path + ".tmp", "w") as f:
        json.dump(value, f, indent=1)
    os.replace(path + ".tmp", path)


def run_child(args):
    """Checks and times the named cases in order, rewriting --json after each; stops (with
    "stopped": true) when a case loses the CUDA context."""
    import torch

    torch.backends.cudnn.benchmark = True
    device = torch.device("cuda")
    props = torch.cuda.get_device_properties(device)
    manifest = json.load(open(os.path.join(args.kit, "manifest.json")))
    print(f"device: {props.name}, {props.multi_processor_count} SMs, torch {torch.__version__}; "
          f"kit for {manifest['arch']}, {manifest['sms']} SMs", flush=True)
    wanted = open(args.names_file).read().split()
    by_name = {e["name"]: e for e in manifest["kernels"]}
    driver = Driver()
    info = {"device": props.name, "torch": torch.__version__, "arch": manifest["arch"]}
    results, stopped = [], False
    # Started: the parent tells a bad case from a bad setup.
    write_json(args.json, {**info, "stopped": False, "results": results})
    for name in wanted:
        try:
            row = bench_one(torch, driver, args, by_name[name])
        except Exception as error:  # one broken case must not hide the others' numbers
            row = {"name": name, "error": str(error)[:300]}
            try:
                torch.cuda.synchronize()
            except Exception:  # a fault poisons the context: nothing after it can run here
                stopped = row["fatal"] = True
        results.append(row)
        if args.verbose or "error" in row or not row.get("ok"):
            print(short_line(row), flush=True)
        write_json(args.json, {**info, "stopped": stopped, "results": results})
        if stopped:
            print(f"{name}: the CUDA context is lost; the next cases run in a new process",
                  flush=True)
            return 1
    return 0


def short_line(r):
    if "error" in r:
        return f"{r['name']}: ERROR {r['error']}"
    return (f"{r['name']}: ours {r['ours_ms']:.4f} ms, torch {r['torch_ms']:.4f} ms, "
            f"x{r['speedup']:.2f}, err {r['err']:.1e}{'' if r['ok'] else ' WRONG'}")


def bench_one(torch, driver, args, entry):
    case = dict(entry)
    tf32 = entry["math"] == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    ins, peer, ref, out_shape, flops, nbytes, dt = tensors_for(torch, case, torch.device("cuda"))
    function = driver.load(os.path.join(args.kit, entry["cubin"]), entry["name"], entry["smem"],
                           entry.get("carveout"))
    partials = torch.empty(max(entry["partial_floats"], 1), dtype=torch.float32, device="cuda")
    counters = torch.zeros(max(entry["counter_count"], 1), dtype=torch.int32, device="cuda")
    # Enough input sets to overflow L2, for both sides.
    copies = max(1, min(32, math.ceil(args.rotate_mb * 2**20 / nbytes)))
    sets = [ins] + [{k: v.clone() for k, v in ins.items()} for _ in range(copies - 1)]
    ours_sets = [ours_buffers(torch, case, s) for s in sets]
    outs = [torch.empty(out_shape, dtype=dt, device="cuda") for _ in range(copies)]
    # Tensor maps (Hopper kernels) per input set, in the order of the map roles.
    map_roles = [r for r in entry["roles"] if r.startswith("map:")]
    specs = entry.get("tensor_maps", [])
    assert len(map_roles) == len(specs), "a tensor map per map role"
    maps = [{r: driver.tensor_map(t, b[r[4:]].data_ptr()) for r, t in zip(map_roles, specs)}
            for b in ours_sets]
    grid = entry.get("grid", entry["units"])

    def launch(i):
        b, o = ours_sets[i % copies], outs[i % copies]
        pointers = {"out": o, "partials": partials, "counters": counters, **b}
        driver.launch(function, grid, entry["threads"], entry["smem"],
                      torch.cuda.current_stream().cuda_stream,
                      [maps[i % copies][r] if r.startswith("map:") else
                       Pointer(pointers[r].data_ptr()) for r in entry["roles"]])

    # Check first: poisoned output, float64 reference.
    outs[0].fill_(float("nan"))
    launch(0)
    torch.cuda.synchronize()
    want = ref(ins)
    if entry["op"] != "gemm":
        want = want.permute(0, 2, 3, 1)
    got = outs[0].double()
    err = float((got - want).norm() / want.norm())
    tol = {"f16": 1e-2, "bf16": 1e-2}.get(entry["dtype"], 2e-3 if tf32 else 1e-5)
    ok = math.isfinite(err) and err <= tol
    peer_out = peer(ins).double()
    if entry["op"] != "gemm":
        peer_out = peer_out.permute(0, 2, 3, 1)
    peer_err = float((peer_out - want).norm() / want.norm())

    ours_ms = time_graph(torch, lambda i: launch(i), args)
    peer_ms = time_graph(torch, lambda i: peer(sets[i % copies]), args)
    return {"name": entry["name"], "ok": ok, "err": err, "torch_err": peer_err, "ours_ms": ours_ms,
            "torch_ms": peer_ms, "speedup": peer_ms / ours_ms, "tflops": flops / ours_ms / 1e9,
            "gbs": nbytes / ours_ms / 1e6, "config": entry.get("config", entry.get("tile")),
            "units": entry["units"], "grid": grid, "threads": entry["threads"],
            "smem": entry["smem"]}


def time_graph(torch, step, args, per_graph=20):
    """Median ms per call: a CUDA graph of `per_graph` calls, replayed and timed with events."""
    for i in range(3):
        step(i)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    capture = torch.cuda.Stream()
    capture.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(capture):
        step(0)  # warm-up on the capture stream (cuBLAS workspaces)
        torch.cuda.synchronize()
        with torch.cuda.graph(graph, stream=capture):
            for i in range(per_graph):
                step(i)
    torch.cuda.current_stream().wait_stream(capture)
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(args.repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / per_graph)
    return statistics.median(times)


def format_table(results):
    lines = [f"{'case':44} {'ours ms':>9} {'torch ms':>9} {'speedup':>7} {'TFLOP/s':>8} "
             f"{'GB/s':>7} {'err':>8}  config"]
    for r in results:
        if "error" in r:
            lines.append(f"{r['name']:44} ERROR {r['error']}")
            continue
        cfg = r["config"] or {}
        short = (("wg " if cfg.get("kernel") == "wgmma" else "") +
                 "x".join(str(cfg.get(k, "")) for k in ("bm", "bn", "bk")) +
                 f" s{cfg.get('stages', '')} k{cfg.get('split_k', '')}" +
                 (f" e{cfg.get('epi_cols')}" if cfg.get("kernel") == "wgmma" else "")) \
            if "bm" in cfg else f"{cfg.get('h')}x{cfg.get('w')}x{cfg.get('c')} r{cfg.get('rows')}"
        lines.append(f"{r['name']:44} {r['ours_ms']:9.4f} {r['torch_ms']:9.4f} {r['speedup']:7.2f} "
                     f"{r['tflops']:8.1f} {r['gbs']:7.0f} {r['err']:8.1e}"
                     f"{'' if r['ok'] else ' BAD'}  {short} u{r['units']}"
                     f"{'' if r.get('grid', r['units']) == r['units'] else ' g' + str(r['grid'])}")
    return "\n".join(lines)


GROUPS = [("square GEMMs", "mm[0-9]*"), ("batch-1 GEMMs", "b1_*"), ("BERT/GPT-2 s128", "bert_*"),
          ("LM head / fc", "*lmhead*,resnet_fc*"), ("ResNet-50 f16", "r50_*_f16"),
          ("ResNet-50 f32", "r50_*_f32"), ("ResNet-50 TF32", "r50_*_tf32"),
          ("depthwise", "dw_*"), ("mma.sync refs", "mma_*"), ("probes", "probe_*"),
          ("sweeps", "sweep_*")]


def summary(results, table):
    """Per-group geometric-mean speedups (torch / ours) and the worst cases; the whole table
    too when it was not written to a file."""
    out = [table, ""] if table else []
    good = [r for r in results if "error" not in r]
    for label, pattern in GROUPS:
        rs = select(good, pattern)
        if rs:
            geo = math.exp(sum(math.log(r["speedup"]) for r in rs) / len(rs))
            out.append(f"{label:18} {len(rs):3} cases  geomean speedup {geo:6.3f}  "
                       f"min {min(r['speedup'] for r in rs):6.3f}  max "
                       f"{max(r['speedup'] for r in rs):6.3f}  wrong {sum(not r['ok'] for r in rs)}")
    main = [r for r in good if not r["name"].startswith(("sweep_", "mma_", "probe_"))]
    if main:
        geo = math.exp(sum(math.log(r["speedup"]) for r in main) / len(main))
        out.append(f"all but sweeps, refs, probes: {len(main)} cases, geomean speedup {geo:.3f}; "
                   f"{sum(not r['ok'] for r in main)} wrong; {len(results) - len(good)} errors")
        out.append("slowest against torch:")
        for r in sorted(main, key=lambda r: r["speedup"])[:12]:
            out.append("  " + short_line(r))
    # Every failure, last (the GPU tool returns only the output's tail); cases the run did not
    # reach as one line.
    unrun = ("not run", "skipped")
    bad = [r for r in results if ("error" in r and not r["error"].startswith(unrun)) or
           ("error" not in r and not r["ok"])]
    out.append(f"failures: {len(bad)}" + (":" if bad else ""))
    out += ["  " + short_line(r) for r in bad]
    for why in dict.fromkeys(r["error"] for r in results if r.get("error", "").startswith(unrun)):
        rs = [r for r in results if r.get("error") == why]
        out.append(f"{why}: {len(rs)} cases, from {rs[0]['name']}")
    return "\n".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare", help="render and compile the kit (no GPU)")
    p.add_argument("--tool", default="build/bench/cuda_kernels/tensorc-cuda-kernels")
    p.add_argument("--out", default="build/cuda-kernels-kit")
    p.add_argument("--arch", default="sm_90a")
    p.add_argument("--watchdog", type=int, default=2000,
                   help="milliseconds a Hopper kernel's barrier wait may take before it traps "
                        "(0: wait forever)")
    p.add_argument("--sms", type=int, default=132)
    p.add_argument("--cases", default="", help="comma-separated name patterns (fnmatch)")
    r = sub.add_parser("run", help="check and time the kit against torch (GPU)")
    r.add_argument("kit")
    r.add_argument("--cases", default="")
    r.add_argument("--repeats", type=int, default=15)
    r.add_argument("--rotate-mb", type=float, default=120.0,
                   help="input copies to rotate through (MiB), to keep L2 from holding them")
    r.add_argument("--json", default="", help="write every result here")
    r.add_argument("--table", default="", help="write the full table here (else printed)")
    r.add_argument("--verbose", action="store_true", help="a line per case as it runs")
    r.add_argument("--budget", type=float, default=420.0,
                   help="seconds for the whole run (children are stopped after it)")
    r.add_argument("--case-timeout", type=float, default=60.0,
                   help="seconds a case may run before its child is killed as hung")
    r.add_argument("--max-lost", type=int, default=3,
                   help="after this many cases of one kernel kind (wgmma; mma: mma.sync and "
                        "SIMT; depthwise) lose the context or hang, skip the rest of that kind")
    r.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    r.add_argument("--names-file", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.command == "prepare":
        import cuda_kernel_cases  # the cases: only this step needs them
        return cuda_kernel_cases.prepare(args)
    return run_child(args) if args.child else run(args)


if __name__ == "__main__":
    sys.exit(main())
