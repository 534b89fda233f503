#!/usr/bin/env python3
"""Issue 18's must-show items on the model zoo (models/make_zoo.py; the files are ~100-340 MB, so
they live in a cache directory and this test is skipped, exit 77, where they were not made):

- `tensorc minify` with `relu:compile-error` (TENSORC_INJECT_BUG, testing only) reduces
  ResNet-50 (175 nodes) to at most 3 nodes, a valid ONNX model (onnx.checker, full check) that
  still fails to compile with the planted bug and compiles without it;
- `--profile` on the zoo BERT on the CPU (tensorc-run, one thread): the trace is valid Chrome
  trace-event JSON with one complete event per launch of the manifest
  (check_profile.py --model; on the GPU machine the same with --device cuda).

    check_debug_zoo.py --tensorc build/tools/tensorc/tensorc --runner build/runtime/tensorc-run
                       [--zoo DIR]   (default $TENSORC_CACHE/models or ~/.cache/tensorc/models)
"""
import argparse
import os
import subprocess
import sys
import tempfile

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "models"))
from make_onnx_models import default_out_dir  # noqa: E402


def run(args, env=None, expect=0):
    result = subprocess.run(args, capture_output=True, text=True, timeout=1200,
                            env={**os.environ, **(env or {})})
    if (expect == 0) != (result.returncode == 0):
        raise SystemExit(f"FAIL: {' '.join(args)} exited {result.returncode}\n"
                         f"{result.stdout}{result.stderr}")
    return result.stdout + result.stderr


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tensorc", required=True)
    parser.add_argument("--runner", required=True)
    parser.add_argument("--zoo", default=default_out_dir())
    args = parser.parse_args()
    resnet = os.path.join(args.zoo, "resnet50.onnx")
    bert = os.path.join(args.zoo, "bert.onnx")
    if not (os.path.exists(resnet) and os.path.exists(bert)):
        print(f"skipped: no resnet50.onnx and bert.onnx in {args.zoo} "
              f"(python3 models/make_zoo.py --models resnet50,bert)")
        return 77
    bug = {"TENSORC_INJECT_BUG": "relu:compile-error"}
    with tempfile.TemporaryDirectory() as tmp:
        reduced = os.path.join(tmp, "min_resnet50.onnx")
        out = run([args.tensorc, "minify", resnet, "--check", "compile", "-o", reduced], env=bug)
        model = onnx.load(reduced)
        onnx.checker.check_model(model, full_check=True)
        ops = [node.op_type for node in model.graph.node]
        assert 1 <= len(ops) <= 3 and "Relu" in ops, f"reduced to {ops}:\n{out}"
        failed = run([args.tensorc, "compile", reduced, "-o", os.path.join(tmp, "bad")], env=bug,
                     expect=1)
        assert "injected bug" in failed, failed
        run([args.tensorc, "compile", reduced, "-o", os.path.join(tmp, "clean")])
        print(next(l for l in out.splitlines() if l.startswith("wrote ")))
        print(f"  {ops}: valid ONNX, fails with the planted bug, compiles without it")
    profiled = subprocess.run([sys.executable, os.path.join(HERE, "check_profile.py"), "--tensorc",
                               args.tensorc, "--runner", args.runner, "--model", bert, "--dim",
                               "s0=1"], capture_output=True, text=True, timeout=1200)
    if profiled.returncode:
        raise SystemExit(f"FAIL: the BERT profile\n{profiled.stdout}{profiled.stderr}")
    print(profiled.stdout.strip().splitlines()[-1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
