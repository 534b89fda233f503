#!/usr/bin/env python3
"""`--profile` on `tensorc run` and `tensorc-run`: the trace is valid Chrome trace-event JSON with
one complete ("X") event per launch (CPU kernels: one per thread chunk, the chunks of a launch
covering its parallel range exactly once), checked against the bundle's manifest; costs.json's
estimates for the GEMM and convolution kernels are checked against the model's shapes; the table
lists every launch; bench/layers.py --per-layer pairs a residual block's convolutions with
onnxruntime's.

    check_profile.py --tensorc build/tools/tensorc/tensorc --runner build/runtime/tensorc-run

With --model M the same trace checks run on that model alone (compiled for --device's target, run
once by tensorc-run with --dim s0=...): on the GPU machine, with --device cuda, one event per
launch (CUDA events around each).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BATCH = 4


def run(args):
    result = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(args)}\n{result.stdout}{result.stderr}")
    return result.stdout


def evaluate(expr, symbols):
    """A manifest size expression (SymInt text: + - * // % and symbols) in Python."""
    if not re.fullmatch(r"[\w\s+\-*/%()]*", expr):
        raise ValueError(f"unexpected size expression {expr!r}")
    return eval(expr, {"__builtins__": {}}, dict(symbols))  # noqa: S307 (checked above)


def check_trace(path, manifest, runs, single_thread, symbols=None):
    with open(path) as f:
        trace = json.load(f)
    events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    symbols = symbols or {s: BATCH for s in manifest["symbols"]}
    launches = manifest["launches"]
    for event in events:
        for key, kind in (("name", str), ("ts", (int, float)), ("dur", (int, float)),
                          ("pid", int), ("tid", int)):
            assert isinstance(event[key], kind), f"{path}: event {event} lacks {key}"
        assert event["dur"] >= 0, f"{path}: negative duration in {event}"
    by_launch = {}
    for event in events:
        by_launch.setdefault((event["args"]["run"], event["args"]["launch"]), []).append(event)
    expected_keys = {(r, i) for r in range(runs) for i in range(len(launches))}
    assert set(by_launch) == expected_keys, \
        f"{path}: events for {sorted(by_launch)}, expected every launch of {runs} run(s)"
    for (r, i), chunk_events in by_launch.items():
        launch = launches[i]
        for event in chunk_events:
            assert event["name"] == launch["name"], f"{path}: {event['name']} is launch {i}"
        if launch["kind"] != "kernel":
            assert len(chunk_events) == 1, f"{path}: {launch['name']} has {len(chunk_events)}"
            continue
        extent = evaluate(launch["range"], symbols)
        chunks = sorted((e["args"]["begin"], e["args"]["end"]) for e in chunk_events)
        covered = 0
        for begin, end in chunks:
            assert begin == covered and end > begin, \
                f"{path}: {launch['name']} run {r} chunks {chunks} do not tile [0, {extent})"
            covered = end
        assert covered == extent, f"{path}: {launch['name']} covers {covered} of {extent}"
        if single_thread:
            assert len(chunks) == 1, f"{path}: one thread ran {launch['name']} in {chunks}"
    if single_thread:
        assert len(events) == runs * len(launches), \
            f"{path}: {len(events)} events for {runs} x {len(launches)} launches"
    return len(events)


def check_costs(bundle, manifest):
    """The estimates of the templates against the convnet's shapes (models/convnet.fx)."""
    with open(os.path.join(bundle, "costs.json")) as f:
        costs = json.load(f)
    assert [c["name"] for c in costs["launches"]] == [l["name"] for l in manifest["launches"]]
    symbols = {s: BATCH for s in manifest["symbols"]}
    buffers = manifest["buffers"]
    dtype_bytes = {"f32": 4, "f16": 2, "bf16": 2, "i64": 8, "i32": 4, "bool": 1}
    convolutions = 0  # conv1 is the first convolution launched, conv2 the second
    for launch, cost in zip(manifest["launches"], costs["launches"]):
        flops = evaluate(cost["flops"], symbols)
        moved = evaluate(cost["bytes"], symbols)
        if launch["kind"] == "kernel":
            # Every argument buffer once.
            expected = 0
            for arg in launch["args"]:
                numel = 1
                for dim in buffers[arg]["shape"]:
                    numel *= evaluate(str(dim), symbols)
                expected += numel * dtype_bytes[buffers[arg]["dtype"]]
            assert moved == expected, f"{launch['name']}: bytes {moved}, expected {expected}"
        n = BATCH
        if launch["name"].startswith("tem_convolution"):
            convolutions += 1
        if launch["name"].startswith("tem_convolution") and convolutions == 1:
            # conv1: 3 -> 16 channels, 3x3, 32x32; epilogue bias + relu per output element
            # (the bias and relu may instead be fused into the max pool that reads it)
            macs = n * 16 * 32 * 32 * 3 * 3 * 3
            epilogue = 2 * n * 16 * 32 * 32 if "relu" in launch["name"] else 0
            assert flops == 2 * macs + epilogue, f"conv1 flops {flops}"
        elif launch["name"].startswith("tem_convolution"):
            # conv2: 16 -> 32 channels, 3x3, stride 2 -> 8x8
            macs = n * 32 * 8 * 8 * 16 * 3 * 3
            assert flops == 2 * macs + 2 * n * 32 * 8 * 8, f"conv2 flops {flops}"
        elif launch["name"].startswith("tem_mm"):
            assert flops == 2 * n * 10 * 32 + n * 10, f"fc flops {flops}"  # GEMM + bias
        elif launch["kind"] != "kernel":
            assert flops == 0, f"{launch['name']}: a fallback has unknown flops, got {flops}"


def check_model(args):
    name, value = args.dim.split("=")
    with tempfile.TemporaryDirectory() as tmp:
        bundle = os.path.join(tmp, "bundle")
        target = ["--target", "cuda", "--cuda-arch", args.cuda_arch] if args.device == "cuda" else []
        run([args.tensorc, "compile", args.model, "-o", bundle] + target)
        with open(os.path.join(bundle, "manifest.json")) as f:
            manifest = json.load(f)
        trace = os.path.join(tmp, "trace.json")
        out = run([args.runner, bundle, "--device", args.device, "--dim", args.dim,
                   "--profile", trace] + (["--threads", "1"] if args.device == "cpu" else []))
        print(out)
        events = check_trace(trace, manifest, runs=1, single_thread=True,
                             symbols={name: int(value)})
        print(f"{args.model} on {args.device}: {events} events for "
              f"{len(manifest['launches'])} launches; the trace is valid")
    return 0


def check_layers(args, tmp):
    """bench/layers.py --per-layer on a residual block exported as ONNX (conv 3x3 + relu, conv 1x1,
    add, relu): both convolutions paired with onnxruntime's, a paired total printed."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper, save
    sys.path.insert(0, os.path.join(ROOT, "models"))
    import safetensors_np
    rng = np.random.default_rng(5)
    weights = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) * 0.1, name)
               for name, shape in (("w1", (16, 8, 3, 3)), ("b1", (16,)), ("w2", (16, 16, 1, 1)))]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["y"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["y"], ["r"]),
             helper.make_node("Conv", ["r", "w2"], ["p"]),
             helper.make_node("Add", ["p", "r"], ["s"]),
             helper.make_node("Relu", ["s"], ["out"])]
    graph = helper.make_graph(
        nodes, "block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 12, 12])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 16, 12, 12])], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx_path = os.path.join(tmp, "block.onnx")
    save(model, onnx_path)
    bundle = os.path.join(tmp, "block")
    run([args.tensorc, "compile", onnx_path, "-o", bundle, "--target", "cpu", "--no-cache"])
    inputs = os.path.join(tmp, "block.inputs.safetensors")
    safetensors_np.save(inputs, {"x": rng.standard_normal((1, 8, 12, 12)).astype(np.float32)})
    out = run([sys.executable, os.path.join(ROOT, "bench", "layers.py"), bundle, "--inputs", inputs,
               "--onnx", onnx_path, "--threads", "1", "--runs", "2", "--per-layer",
               "--runner", args.runner])
    paired = [line for line in out.splitlines() if re.match(r"\s+\d+ conv [13]x[13] ", line)]
    assert len(paired) == 2 and "paired total: tensorc" in out and "without" not in out, out
    print(f"layers.py --per-layer: {len(paired)} convolutions paired with onnxruntime's")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tensorc", required=True)
    parser.add_argument("--runner", required=True)
    parser.add_argument("--model", help="check this model's trace only")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--cuda-arch", default="sm_90")
    parser.add_argument("--dim", default=f"s0={BATCH}", help="NAME=VALUE of the model's symbol")
    args = parser.parse_args()
    if args.model:
        return check_model(args)
    with tempfile.TemporaryDirectory() as tmp:
        bundle = os.path.join(tmp, "convnet")
        run([args.tensorc, "compile", os.path.join(ROOT, "models", "convnet.fx"), "-o", bundle])
        with open(os.path.join(bundle, "manifest.json")) as f:
            manifest = json.load(f)
        check_costs(bundle, manifest)

        trace = os.path.join(tmp, "run.json")
        out = run([args.tensorc, "run", bundle, "--random-inputs", "1", "--dim", f"s0={BATCH}",
                   "--profile", trace, "--threads", "1"])
        events = check_trace(trace, manifest, runs=1, single_thread=True)
        for launch in manifest["launches"]:
            assert launch["name"] in out, f"the table lacks {launch['name']}:\n{out}"
        assert "roofline peaks" in out and "measured" in out, out
        shares = [float(m) for m in re.findall(r"\s(\d+\.\d)%\s", out)]
        assert abs(sum(shares) - 100.0) < 1.0, f"shares {shares} do not add up to 100%"

        # The runtime-only tool: the first run and two timed runs, the pool's chunks.
        trace2 = os.path.join(tmp, "runner.json")
        out2 = run([args.runner, bundle, "--dim", f"s0={BATCH}", "--iterations", "2",
                    "--profile", trace2, "--peak-gbps", "10", "--peak-gflops", "100",
                    "--threads", "2"])
        events2 = check_trace(trace2, manifest, runs=3, single_thread=False)
        assert "--peak-gbps and --peak-gflops" in out2, out2
        print(f"profile: {events} events for {len(manifest['launches'])} launches (1 thread), "
              f"{events2} events over 3 runs (2 threads); costs match the model's shapes")
        check_layers(args, tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
