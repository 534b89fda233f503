#!/usr/bin/env python3
"""onnxruntime's MatMul (MLAS SGEMM, B a constant initializer so MLAS packs it once, as tensorc
packs weights at compile time) on the shapes of tensorc-bench-gemm: GFLOP/s per thread count.

    python3 bench/cpu/ort_gemm.py [--shapes 1024x1024x1024,128x768x768] [--threads 1,2] [--reps N]

Per case: best and median wall time of --reps runs of session.run, GFLOP/s of the best, and with
one thread GFLOP/s of the median process CPU time (preemption on a busy machine does not count).
"""
import argparse
import os
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

DEFAULT_SHAPES = "1024x1024x1024,512x512x512,128x768x768,128x3072x768,128x768x3072,1x768x768," \
                 "1x1000x2048,16x768x768"


def matmul_model(m, n, k):
    rng = np.random.default_rng(7)
    weight = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "w"], ["c"])], "gemm",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [m, k])],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, [m, n])],
        [numpy_helper.from_array(weight, "w")])
    # IR version 8 (opset 17's own): a newer onnx package writes its latest by default, which an
    # older onnxruntime refuses ("Unsupported model IR version").
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def session(model, threads):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def time_runs(run, reps):
    run()
    wall, cpu = [], []
    for _ in range(reps):
        c0, w0 = time.process_time(), time.perf_counter()
        run()
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
    wall.sort()
    cpu.sort()
    return wall[0], wall[len(wall) // 2], cpu[len(cpu) // 2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=DEFAULT_SHAPES)
    parser.add_argument("--threads", default="1,%d" % os.cpu_count())
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()
    print("onnxruntime %s" % ort.__version__)
    print("%-16s %3s %9s %9s %8s %9s" % ("shape", "thr", "best ms", "median ms", "GFLOP/s",
                                          "cpu GF/s"))
    for item in args.shapes.split(","):
        m, n, k = (int(x) for x in item.split("x"))
        flops = 2.0 * m * n * k
        a = np.random.default_rng(1).uniform(-1, 1, (m, k)).astype(np.float32)
        for threads in (int(t) for t in args.threads.split(",")):
            sess = session(matmul_model(m, n, k), threads)
            best, median, cpu = time_runs(lambda: sess.run(None, {"a": a}), args.reps)
            line = "%-16s %3d %9.3f %9.3f %8.1f" % (item, threads, best * 1e3, median * 1e3,
                                                    flops / best * 1e-9)
            if threads == 1:
                line += " %9.1f" % (flops / cpu * 1e-9)
            print(line)


if __name__ == "__main__":
    main()
