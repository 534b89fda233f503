#!/usr/bin/env python3
"""`tensorc minify` on ONNX and FX-text models with bugs planted by TENSORC_INJECT_BUG (testing
only): the reduced ONNX model passes onnx.checker's full check, has at most 3 nodes, still fails
the same way, compiles cleanly without the planted bug, and means what the original meant there
(onnxruntime and tensorc's interpreter agree on it); a run-time crash reduces too (FX-text).

    check_minify.py --tensorc build/tools/tensorc/tensorc
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "models"))
import safetensors_np  # noqa: E402


def run(args, env=None, expect=0):
    result = subprocess.run(args, capture_output=True, text=True, timeout=900,
                            env={**os.environ, **(env or {})})
    if (expect == 0) != (result.returncode == 0):
        raise SystemExit(f"FAIL: {' '.join(args)} exited {result.returncode}\n"
                         f"{result.stdout}{result.stderr}")
    return result.stdout + result.stderr


def small_cnn(path):
    """Conv -> BatchNorm -> Relu -> Add(skip) -> Relu -> GlobalAveragePool -> Flatten -> Gemm,
    plus a Sigmoid output, batch symbolic."""
    rng = np.random.default_rng(5)
    inits = {
        "w1": rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3,
        "b1": rng.standard_normal(8).astype(np.float32) * 0.1,
        "scale": rng.uniform(0.5, 1.5, 8).astype(np.float32),
        "bias": rng.standard_normal(8).astype(np.float32) * 0.1,
        "mean": rng.standard_normal(8).astype(np.float32) * 0.1,
        "var": rng.uniform(0.5, 1.5, 8).astype(np.float32),
        "w2": rng.standard_normal((8, 8, 3, 3)).astype(np.float32) * 0.2,
        "fc_w": rng.standard_normal((4, 8)).astype(np.float32) * 0.3,
        "fc_b": rng.standard_normal(4).astype(np.float32) * 0.1,
    }
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "scale", "bias", "mean", "var"], ["bn1"],
                         name="bn1"),
        helper.make_node("Relu", ["bn1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "r1"], ["s1"], name="skip"),
        helper.make_node("Relu", ["s1"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["p"], name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flat"),
        helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["logits"], name="fc", transB=1),
        helper.make_node("Sigmoid", ["logits"], ["probs"], name="sigmoid"),
    ]
    graph = helper.make_graph(
        nodes, "small_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 4]),
         helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 4])],
        [numpy_helper.from_array(value, name) for name, value in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)


def check_reduced_onnx(args, path, planted, tmp):
    """The reduced model is valid ONNX of at most 3 nodes, fails with the planted bug only, and
    onnxruntime and tensorc's interpreter agree on its values."""
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    ops = [node.op_type for node in model.graph.node]
    assert 1 <= len(ops) <= 3, f"{path}: {ops}"
    assert "Relu" in ops, f"{path}: the reduced model lost the relu: {ops}"
    run([args.tensorc, "compile", path, "-o", os.path.join(tmp, "clean")])
    if planted.endswith("compile-error"):
        out = run([args.tensorc, "compile", path, "-o", os.path.join(tmp, "bad")],
                  env={"TENSORC_INJECT_BUG": planted}, expect=1)
        assert "injected bug" in out, out
    try:
        import onnxruntime as ort
    except ImportError:
        return ops
    rng = np.random.default_rng(1)
    feeds = {}
    for value in model.graph.input:
        dims = [d.dim_value if d.HasField("dim_value") else 2
                for d in value.type.tensor_type.shape.dim]
        feeds[value.name] = rng.uniform(-1, 1, dims).astype(np.float32)
    expected = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
    inputs = os.path.join(tmp, "inputs.safetensors")
    outputs = os.path.join(tmp, "outputs.safetensors")
    safetensors_np.save(inputs, feeds)
    run([args.tensorc, "run", path, "--interp", "--inputs", inputs, "--outputs", outputs])
    got = safetensors_np.load(outputs)
    for value, want in zip(model.graph.output, expected):
        np.testing.assert_allclose(got[value.name], want, rtol=1e-3, atol=1e-5)
    return ops


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tensorc", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "small_cnn.onnx")
        small_cnn(model)
        for check, planted in (("compile", "relu:compile-error"), ("accuracy", "relu:accuracy")):
            reduced = os.path.join(tmp, f"min_{check}.onnx")
            out = run([args.tensorc, "minify", model, "--check", check, "-o", reduced],
                      env={"TENSORC_INJECT_BUG": planted})
            assert f"wrote {reduced}: 10 -> " in out, out
            ops = check_reduced_onnx(args, reduced, planted, tmp)
            print(f"onnx --check {check} ({planted}): 10 -> {len(ops)} nodes {ops}")

        # A crash at run time, on FX-text: the reduced model still crashes, and writes its
        # weights beside it.
        # Under the sanitizer build the crash must stay a signal: ASan's own SIGSEGV handler
        # would turn it into 'exited with status 1'.
        crash_env = {"TENSORC_INJECT_BUG": "relu:crash",
                     "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":handle_segv=0",
                     "UBSAN_OPTIONS": os.environ.get("UBSAN_OPTIONS", "") + ":handle_segv=0"}
        reduced = os.path.join(tmp, "min_run.fx")
        out = run([args.tensorc, "minify", os.path.join(ROOT, "models", "convnet.fx"),
                   "--check", "run", "-o", reduced], env=crash_env)
        assert "still fails: killed by signal 11" in out, out
        run([args.tensorc, "compile", reduced, "-o", os.path.join(tmp, "crash")], env=crash_env)
        crashed = subprocess.run([args.tensorc, "run", os.path.join(tmp, "crash"),
                                  "--random-inputs", "0", "--dim", "s0=2"], capture_output=True,
                                 env={**os.environ, **crash_env})
        assert crashed.returncode < 0 or crashed.returncode >= 128, crashed
        with open(reduced) as f:
            text = f.read()
        assert "aten.relu" in text and text.count("call_function") <= 3, text
        print(f"fx --check run (relu:crash): {out.splitlines()[-2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
