#!/usr/bin/env python3
"""Where a CPU bundle's time goes, next to onnxruntime's, layer class by layer class.

    python3 bench/layers.py BUNDLE --inputs IN.safetensors [--onnx MODEL.onnx] [--threads N]
        [--runs 9] [--runner tensorc-run] [--per-layer]

tensorc: `tensorc-run --profile` over --runs runs; each kernel's best run (a kernel's time in a
run is its span: first task start to last task end over all threads). Kernels are grouped by
what their template computes (from the bundle's src/fuse.txt and src/lower.txt): convolutions
by kernel size (depthwise apart), GEMMs, and everything else; FLOPs count a multiply-add as two.
Then the timeline of the median run: its wall time, the kernels' spans, the gaps between
kernels, and how long the threads were busy (the sum of every task's time / threads): a wall far
above the busy time means idle threads (too few or unequal tasks), not slow kernels.

onnxruntime (with --onnx, when it is installed): its own profiler over the same number of runs at
the same thread count, each node's best run, grouped by op type, convolutions by kernel size with
their GFLOP/s from the shapes the profiler records. With --per-layer, every convolution of both
sides side by side (tensorc's in launch order, each with onnxruntime's next one of the same kind,
FLOPs and output shape) with both best times and their ratio.

Needs numpy (the inputs are read with models/safetensors_np.py) and, for the peer, onnxruntime.
"""
import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "models"))

CONV = re.compile(r"template conv2d (\S+) n=\S+ c=(\S+) h=\S+ w=\S+ oc=(\S+) "
                  r"kernel=\[(\S+), (\S+)\] out=\[(\S+), (\S+)\].* groups=(\S+)")
GEMM = re.compile(r"template gemm (\S+) batch=(\S+) m=(\S+) n=(\S+) k=(\S+)")


def symbols_of(bundle, inputs_path):
    """The bundle's symbolic dims (s0, ...) bound from the shapes of the inputs file."""
    import safetensors_np
    with open(os.path.join(bundle, "manifest.json")) as f:
        manifest = json.load(f)
    arrays = safetensors_np.load(inputs_path)
    symbols = {}
    for desc in manifest.get("inputs", []):
        array = arrays.get(desc["name"])
        if array is None:
            continue
        for dim, size in zip(desc["shape"], array.shape):
            if isinstance(dim, str) and re.fullmatch(r"[A-Za-z_]\w*", dim):
                symbols[dim] = int(size)
    return symbols


def evaluate(expr, symbols):
    """A size from lower.txt (an integer or SymInt text: + - * // % ( ) and symbols), or None."""
    if not re.fullmatch(r"[\w\s+\-*/%()]*", expr):
        return None
    try:
        return int(eval(expr, {"__builtins__": {}}, dict(symbols)))  # noqa: S307 (checked above)
    except Exception:  # an unbound symbol: no FLOP count for this template
        return None


def template_classes(bundle, symbols):
    """kernel name -> (class, FLOPs, output (channels, height, width) or None) for the bundle's
    template kernels (FLOPs 0 where a size stays symbolic)."""
    templates = {}
    with open(os.path.join(bundle, "src", "lower.txt")) as f:
        for line in f:
            if m := CONV.match(line):
                sizes = [evaluate(x, symbols) for x in m.groups()[1:]]
                c, oc, kh, kw, oh, ow, groups = sizes
                if None in (c, groups, kh, kw):
                    continue
                kind = "depthwise" if groups > 1 and groups == c else f"conv {kh}x{kw}"
                flops = 2 * oc * oh * ow * (c // groups) * kh * kw if None not in sizes else 0
                templates[m.group(1)] = (kind, flops, (oc, oh, ow))
            elif m := GEMM.match(line):
                sizes = [evaluate(x, symbols) for x in m.groups()[1:]]
                b, mm, n, k = sizes
                templates[m.group(1)] = ("gemm", 2 * b * mm * n * k if None not in sizes else 0,
                                         None)
    classes = {}
    with open(os.path.join(bundle, "src", "fuse.txt")) as f:
        lines = f.read().splitlines()
    for i, line in enumerate(lines[:-1]):
        if line.startswith("tem_"):
            node = lines[i + 1].split()[1]
            if node in templates:
                classes[line.split()[0]] = templates[node]
    return classes


def tensorc_profile(args):
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "trace.json")
        subprocess.run([args.runner, args.bundle, "--inputs", args.inputs, "--threads",
                        str(args.threads), "--iterations", str(args.runs), "--profile", trace],
                       check=True, stdout=subprocess.DEVNULL)
        with open(trace) as f:
            events = [e for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel"]
    runs = collections.defaultdict(lambda: collections.defaultdict(list))
    for e in events:
        runs[e["args"]["run"]][e["args"]["launch"]].append(e)
    return runs


def report_tensorc(args):
    runs = tensorc_profile(args)
    classes = template_classes(args.bundle, symbols_of(args.bundle, args.inputs))
    best = {}
    names = {}
    for launches in runs.values():
        for launch, tasks in launches.items():
            span = max(t["ts"] + t["dur"] for t in tasks) - min(t["ts"] for t in tasks)
            best[launch] = min(best.get(launch, span), span)
            names[launch] = tasks[0]["name"]
    groups = collections.defaultdict(lambda: [0.0, 0])
    for launch, us in best.items():
        kind, flops, _ = classes.get(names[launch], ("other", 0, None))
        groups[kind][0] += us
        groups[kind][1] += flops
    print(f"tensorc, {args.threads} thread(s): kernels' best spans sum to "
          f"{sum(best.values()) / 1e3:.2f} ms over {len(best)} kernels")
    for kind, (us, flops) in sorted(groups.items(), key=lambda g: -g[1][0]):
        rate = f"{flops / us / 1e3:7.1f} GFLOP/s" if flops else ""
        print(f"  {kind:18s} {us / 1e3:8.2f} ms {rate}")
    # The median run's timeline.
    rows = []
    for launches in runs.values():
        order = sorted(launches)
        wall = (max(t["ts"] + t["dur"] for t in launches[order[-1]]) -
                min(t["ts"] for t in launches[order[0]]))
        spans = gaps = busy = 0.0
        end = None
        for launch in order:
            tasks = launches[launch]
            start = min(t["ts"] for t in tasks)
            finish = max(t["ts"] + t["dur"] for t in tasks)
            spans += finish - start
            if end is not None:
                gaps += max(0.0, start - end)
            end = finish
            busy += sum(t["dur"] for t in tasks)
        rows.append((wall, spans, gaps, busy / args.threads))
    wall, spans, gaps, busy = sorted(rows)[len(rows) // 2]
    print(f"  median run: wall {wall / 1e3:.2f} ms = kernel spans {spans / 1e3:.2f} + gaps "
          f"{gaps / 1e3:.2f}; threads busy {busy / 1e3:.2f} ms each on average "
          f"({100 * busy / wall:.0f}% of the wall)")
    slowest = sorted(best.items(), key=lambda b: -b[1])[:args.top]
    for launch, us in slowest:
        kind, flops, _ = classes.get(names[launch], ("other", 0, None))
        rate = f"{flops / us / 1e3:7.1f} GFLOP/s" if flops else ""
        print(f"    {us / 1e3:7.3f} ms {rate:15s} {names[launch]}")
    # Convolutions in launch order, for --per-layer: (kind, FLOPs, output, best us, kernel name).
    return [classes[names[launch]] + (best[launch], names[launch]) for launch in sorted(best)
            if classes.get(names[launch], ("other",))[0].startswith(("conv", "depthwise"))]


def report_onnxruntime(args):
    try:
        import onnxruntime as ort
    except ImportError:
        print("onnxruntime: not installed")
        return
    import safetensors_np
    feeds = safetensors_np.load(args.inputs)
    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.enable_profiling = True
    with tempfile.TemporaryDirectory() as tmp:
        options.profile_file_prefix = os.path.join(tmp, "ort")
        session = ort.InferenceSession(args.onnx, options, providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        missing = [n for n in names if n not in feeds]
        if missing:
            print(f"onnxruntime: {args.inputs} has no tensor for input(s) {', '.join(missing)}")
            return
        feed = {n: feeds[n] for n in names}
        walls = []
        for _ in range(args.runs):
            start = time.perf_counter()
            session.run(None, feed)
            walls.append(time.perf_counter() - start)
        with open(session.end_profiling()) as f:
            events = json.load(f)
    nodes = collections.defaultdict(list)
    info = {}
    first_seen = {}  # node -> its first run's start: onnxruntime's execution order
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            nodes[e["name"]].append(e["dur"])
            info[e["name"]] = (e["args"].get("op_name", "?"), e["args"].get("input_type_shape"),
                               e["args"].get("output_type_shape"))
            first_seen.setdefault(e["name"], e["ts"])
    best = {name: min(durations) for name, durations in nodes.items()}
    convs = []
    print(f"onnxruntime, {args.threads} thread(s): median run {statistics.median(walls) * 1e3:.2f} "
          f"ms; nodes' best times sum to {sum(best.values()) / 1e3:.2f} ms")
    groups = collections.defaultdict(lambda: [0.0, 0])
    for name, us in best.items():
        op, inputs, outputs = info[name]
        kind, flops = op, 0
        if op in ("Conv", "FusedConv") and inputs and len(inputs) > 1 and outputs:
            weight = list(inputs[1].values())[0]
            out = list(outputs[0].values())[0]
            if len(weight) == 4 and len(out) == 4:
                groups_count = list(inputs[0].values())[0][1] // weight[1]
                kind = ("depthwise" if groups_count > 1 and weight[1] == 1
                        else f"conv {weight[2]}x{weight[3]}")
                flops = 2 * out[0] * out[1] * out[2] * out[3] * weight[1] * weight[2] * weight[3]
                convs.append((first_seen[name], kind, flops, (out[1], out[2], out[3]), us,
                              name[:-len("_kernel_time")]))
        groups[kind][0] += us
        groups[kind][1] += flops
    for kind, (us, flops) in sorted(groups.items(), key=lambda g: -g[1][0]):
        rate = f"{flops / us / 1e3:7.1f} GFLOP/s" if flops else ""
        print(f"  {kind:18s} {us / 1e3:8.2f} ms {rate}")
    return [c[1:] for c in sorted(convs)]


def report_per_layer(ours, theirs):
    """Both sides' convolutions, tensorc's in launch order, each paired with onnxruntime's next
    unpaired one of the same kind, FLOPs and output shape (in onnxruntime's execution order)."""
    print("convolutions side by side (best times; ratio = onnxruntime / tensorc, > 1: tensorc "
          "faster):")
    print(f"  {'#':>3} {'kind':10s} {'output':>14} {'MFLOP':>7} {'tensorc ms':>10} {'ort ms':>8} "
          f"{'ratio':>6}  tensorc kernel / onnxruntime node")
    pending = collections.defaultdict(collections.deque)
    for kind, flops, out, us, node in theirs:
        pending[(kind, flops, tuple(out))].append((us, node))
    totals = [0.0, 0.0]
    unmatched = 0
    for i, (kind, flops, out, us, name) in enumerate(ours):
        queue = pending.get((kind, flops, tuple(out)))
        if not queue:
            unmatched += 1
            continue
        ort_us, node = queue.popleft()
        totals[0] += us
        totals[1] += ort_us
        shape = "x".join(str(x) for x in out)
        print(f"  {i:3d} {kind:10s} {shape:>14} {flops / 1e6:7.1f} {us / 1e3:10.3f} "
              f"{ort_us / 1e3:8.3f} {ort_us / us:6.2f}  {name} / {node}")
    if totals[0]:
        print(f"  paired total: tensorc {totals[0] / 1e3:.2f} ms, onnxruntime "
              f"{totals[1] / 1e3:.2f} ms, ratio {totals[1] / totals[0]:.2f}")
    if unmatched:
        print(f"  ({unmatched} tensorc convolution(s) without an onnxruntime one of that kind, "
              f"size and output shape)")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("bundle")
    p.add_argument("--inputs", required=True, help="the inputs, .safetensors")
    p.add_argument("--onnx", help="the same model for onnxruntime")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--runs", type=int, default=9)
    p.add_argument("--top", type=int, default=10, help="slowest kernels listed")
    p.add_argument("--per-layer", action="store_true",
                   help="with --onnx: every convolution of both sides, side by side in order")
    p.add_argument("--runner", default=os.path.join(ROOT, "build", "runtime", "tensorc-run"))
    args = p.parse_args()
    if args.per_layer and not args.onnx:
        p.error("--per-layer compares with onnxruntime: give the model with --onnx")
    for path in (args.bundle, args.inputs, args.runner) + ((args.onnx,) if args.onnx else ()):
        if not os.path.exists(path):
            sys.exit(f"layers.py: {path}: no such file or directory")
    ours = report_tensorc(args)
    if args.onnx:
        theirs = report_onnxruntime(args)
        if args.per_layer and theirs is not None:
            report_per_layer(ours, theirs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
