#!/usr/bin/env python3
"""Makes a GPU training kit: seed-003 (models/ln_silu.fx) training steps compiled with
`--target cuda`, for test/gpu/check_training.py to run against PyTorch autograd on a GPU.

Per dtype (f32, f16) the kit holds:
  <dtype>/grads/    `--train --optimizer none`: one step returns the loss and every gradient
  <dtype>/step/     `--train --optimizer sgd -O reduce-overhead`: the timed training step
  <dtype>/data.safetensors     x [batch, 128] and label [batch, 128] in that dtype
  <dtype>/weights.safetensors  the parameters in that dtype (PyTorch loads the same values)
plus the runtime-only tensorc-run and kit.json (batch, learning rate). MSE loss in f32.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "models"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np  # noqa: E402
from make_model_kit import cast_model  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tensorc", required=True)
    parser.add_argument("--runner", required=True, help="tensorc-run to copy into the kit")
    parser.add_argument("--out", required=True)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--cuda-arch", default="sm_90")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    shutil.copy(args.runner, os.path.join(args.out, "tensorc-run"))
    model = os.path.join(ROOT, "models", "ln_silu.fx")
    rng = np.random.default_rng(11)
    x = rng.standard_normal((args.batch, 128)).astype(np.float32)
    label = np.tanh(x * 0.5).astype(np.float32)
    for dtype in ("f32", "f16"):
        folder = os.path.join(args.out, dtype)
        os.makedirs(folder, exist_ok=True)
        source = model
        if dtype != "f32":
            source = os.path.join(folder, f"seed003_{dtype}.fx")
            cast_model(model, source, dtype)
        np_dtype = np.float32 if dtype == "f32" else np.float16
        safetensors_np.save(os.path.join(folder, "data.safetensors"),
                            {"x": x.astype(np_dtype), "label": label.astype(np_dtype)})
        weights = safetensors_np.load(source[:-3] + ".safetensors")
        safetensors_np.save(os.path.join(folder, "weights.safetensors"), weights)
        common = ["--target", "cuda", "--cuda-arch", args.cuda_arch, "--train", "--fallback=allow"]
        for name, extra in (("grads", ["--optimizer", "none"]),
                            ("step", ["--optimizer", "sgd", "--lr", str(args.lr),
                                      "-O", "reduce-overhead"])):
            bundle = os.path.join(folder, name)
            shutil.rmtree(bundle, ignore_errors=True)
            subprocess.run([args.tensorc, "compile", source, "-o", bundle] + common + extra,
                           check=True, stderr=subprocess.DEVNULL)
            shutil.rmtree(os.path.join(bundle, "src"), ignore_errors=True)
        for leftover in os.listdir(folder):
            if leftover.startswith("seed003_"):
                os.remove(os.path.join(folder, leftover))
        print(f"{dtype}: ready")
    json.dump({"batch": args.batch, "lr": args.lr}, open(os.path.join(args.out, "kit.json"), "w"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
