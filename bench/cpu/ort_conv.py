#!/usr/bin/env python3
"""Per-layer convolution speed: tensorc's generated kernels (tensorc-bench-conv) against
onnxruntime's Conv on the same layer, batch 1, one thread by default.

    python3 bench/cpu/ort_conv.py [--bench build/bench/cpu/tensorc-bench-conv] [--reps N]
                                  [--threads N] [--layers a,b] [--variant x86_64-avx512]
                                  [--cold MIB]

onnxruntime runs each layer as a one-node model (weights an initializer) with ORT_ENABLE_ALL, so
on AVX2/AVX-512 hosts it converts the Conv to its NCHWc kernels and adds reorders of the input and
output around it; its profiler gives the time of the convolution node alone, which is what is
compared (the reorders are counted separately). Both sides report the best of --reps runs of
the whole layer: on a busy machine the least disturbed run, the same statistic for both.
--cold MIB writes that many MiB before each run on both sides, so that weights and input come
from memory, as a model's do at batch 1 (tensorc-bench-conv --cold).
"""
import argparse
import json
import os
import subprocess
import tempfile

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


def layers(bench):
    out = subprocess.run([bench, "--print-layers"], check=True, capture_output=True, text=True)
    result = []
    for line in out.stdout.split("\n"):
        if line.strip():
            name, *numbers = line.split()
            c, h, w, oc, k, stride, pad, groups = (int(x) for x in numbers)
            result.append(dict(name=name, c=c, h=h, w=w, oc=oc, k=k, stride=stride, pad=pad,
                               groups=groups))
    return result


def flops(layer):
    oh = (layer["h"] + 2 * layer["pad"] - layer["k"]) // layer["stride"] + 1
    ow = (layer["w"] + 2 * layer["pad"] - layer["k"]) // layer["stride"] + 1
    return 2.0 * oh * ow * layer["oc"] * layer["k"] ** 2 * layer["c"] // layer["groups"]


def conv_model(layer):
    rng = np.random.default_rng(3)
    w = rng.uniform(-1, 1, (layer["oc"], layer["c"] // layer["groups"], layer["k"], layer["k"]))
    node = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[layer["k"]] * 2,
                            strides=[layer["stride"]] * 2, pads=[layer["pad"]] * 4,
                            group=layer["groups"])
    graph = helper.make_graph(
        [node], "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                       [1, layer["c"], layer["h"], layer["w"]])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w.astype(np.float32), "w")])
    # IR version 8 (opset 17's own): a newer onnx package writes its latest by default, which an
    # older onnxruntime refuses ("Unsupported model IR version").
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def ort_times(layer, threads, reps, cold_mib):
    """Best ms of the Conv node alone, and median ms of the reorder nodes around it (profiler)."""
    with tempfile.TemporaryDirectory() as tmp:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.enable_profiling = True
        options.profile_file_prefix = os.path.join(tmp, "ort")
        sess = ort.InferenceSession(conv_model(layer).SerializeToString(), options,
                                    providers=["CPUExecutionProvider"])
        x = np.random.default_rng(1).uniform(
            -1, 1, (1, layer["c"], layer["h"], layer["w"])).astype(np.float32)
        for _ in range(3):
            sess.run(None, {"x": x})
        evict = np.zeros(cold_mib << 20, np.uint8) if cold_mib else None
        for _ in range(reps):
            if evict is not None:
                evict[::64] += 1
            sess.run(None, {"x": x})
        with open(sess.end_profiling()) as f:
            events = json.load(f)
    conv, other, kinds = [], [], set()
    for event in events:
        if event.get("cat") != "Node" or not event["name"].endswith("_kernel_time"):
            continue
        op = event.get("args", {}).get("op_name", "")
        (conv if "Conv" in op else other).append(event["dur"] / 1e3)
        kinds.add(op)
    # The last `reps` runs: one conv event per run.
    conv = sorted(conv[-reps:])
    best = conv[0]
    per_run_other = len(other) // (reps + 3) if other else 0
    other = sorted(sum(other[i:i + per_run_other]) for i in
                   range(len(other) - reps * per_run_other, len(other), per_run_other or 1)) \
        if per_run_other else [0.0]
    return best, other[len(other) // 2], ",".join(sorted(kinds))


def tensorc_times(bench, variant, threads, reps, names, cold_mib):
    cmd = [bench, "--csv", "--variants", variant, "--threads", str(threads), "--reps", str(reps)]
    if cold_mib:
        cmd += ["--cold", str(cold_mib)]
    if names:
        cmd += ["--layers", ",".join(names)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.split("\n")
    header = out[0].split(",")
    rows = {}
    for line in out[1:]:
        if line.strip():
            row = dict(zip(header, line.split(",")))
            rows[(row["layer"], row["layout"])] = row
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", default="build/bench/cpu/tensorc-bench-conv")
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--layers", default="")
    parser.add_argument("--variant", default="x86_64-avx512")
    parser.add_argument("--cold", type=int, default=0, metavar="MIB",
                        help="write MIB MiB before each run (operands from memory)")
    args = parser.parse_args()
    wanted = [x for x in args.layers.split(",") if x]
    all_layers = [l for l in layers(args.bench) if not wanted or l["name"] in wanted]
    ours = tensorc_times(args.bench, args.variant, args.threads, args.reps,
                         [l["name"] for l in all_layers], args.cold)
    print("onnxruntime %s, %d thread(s)%s; ms per layer (GFLOP/s)" %
          (ort.__version__, args.threads, ", cold (%d MiB written before each run)" % args.cold
           if args.cold else ""))
    print("%-20s %17s %17s %17s %9s %9s %9s" % ("layer", "ORT conv node", "tensorc NHWC",
                                               "tensorc NCHW16c", "ORT/NHWC", "reorders",
                                               "ORT ops"))
    ratios = []
    for layer in all_layers:
        f = flops(layer)
        ort_ms, reorder_ms, kinds = ort_times(layer, args.threads, args.reps, args.cold)
        cells = []
        for layout in ("NHWC", "NCHW16c"):
            row = ours.get((layer["name"], layout))
            if not row:
                cells.append("%17s" % "-")
                continue
            ms = float(row["best_ms"])
            cells.append("%8.3f (%6.1f)" % (ms, f / ms * 1e-6))
        nhwc = ours.get((layer["name"], "NHWC"))
        nhwc_ms = float(nhwc["best_ms"])
        ratios.append(ort_ms / nhwc_ms)
        print("%-20s %8.3f (%6.1f) %s %s %9.2f %9.3f %s" % (layer["name"], ort_ms, f / ort_ms * 1e-6,
                                                          cells[0], cells[1], ratios[-1],
                                                          reorder_ms, kinds))
    print("geometric mean ORT/NHWC: %.2f" % float(np.exp(np.mean(np.log(ratios)))))


if __name__ == "__main__":
    main()
