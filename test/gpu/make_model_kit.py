#!/usr/bin/env python3
"""Makes a GPU test kit of the models in models/ and of input-only FX models given with
--fx-cases (see verify_kit.py, which runs the kit on a GPU).

For each model and dtype: random inputs (fixed seed), the reference interpreter's outputs
(`tensorc run --interp`, always on the f32 model) and a bundle compiled with `--target cuda`.
f16/bf16 cases rewrite the f32 model's FX-text and weights to that dtype and are compared with
the f32 reference at rtol/atol 1e-2. The runtime-only `tensorc-run` is copied into the kit, so
the kit is all a GPU machine needs besides numpy.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "models"))
import safetensors_np  # noqa: E402

SHAPES = {"mlp": (4, 1024), "ln_silu": (32, 128), "convnet": (4, 3, 32, 32)}


def to_bf16_bits(x):
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def cast_model(src_fx, dst_fx, dtype):
    """The model with every f32 tensor (inputs, weights, results) as `dtype`."""
    text = open(src_fx).read().replace("f32[", f"{dtype}[").replace("f32,", f"{dtype},")
    open(dst_fx, "w").write(text)
    weights_path = src_fx[:-3] + ".safetensors"
    if not os.path.exists(weights_path):
        return None  # an input-only model
    weights = safetensors_np.load(weights_path)
    if dtype == "f16":
        cast = {k: v.astype(np.float16) for k, v in weights.items()}
    else:
        cast = {k: to_bf16_bits(v) for k, v in weights.items()}
    path = dst_fx[:-3] + ".safetensors"
    safetensors_np.save(path, cast, bf16=cast.keys() if dtype == "bf16" else ())
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tensorc", required=True)
    parser.add_argument("--runner", required=True, help="tensorc-run to copy into the kit")
    parser.add_argument("--out", required=True)
    parser.add_argument("--models", default="ln_silu,convnet")
    parser.add_argument("--dtypes", default="f32,f16")
    parser.add_argument("--cuda-arch", default="sm_90")
    parser.add_argument("--compile-args", default="", help="extra `tensorc compile` arguments")
    parser.add_argument("--fx-cases", default="",
                        help="comma-separated input-only .fx models (static f32 and bool inputs) "
                             "to add, compiled with --no-fuse-attention and again as "
                             "<name>_fused with --fuse-attention")
    args = parser.parse_args()
    os.makedirs(os.path.join(args.out, "cases", "models"), exist_ok=True)
    shutil.copy(args.runner, os.path.join(args.out, "tensorc-run"))
    work = os.path.join(args.out, "work")
    os.makedirs(work, exist_ok=True)
    models = [(n, os.path.join(ROOT, "models", f"{n}.fx")) for n in args.models.split(",") if n]
    models = [(n, p, []) for n, p in models]
    for p in args.fx_cases.split(","):
        if p:
            models.append((os.path.basename(p)[:-3], p, ["--no-fuse-attention"]))
            models.append((os.path.basename(p)[:-3] + "_fused", p, ["--fuse-attention"]))
    for name, model, extra in models:
        if name in SHAPES:
            arrays = {"x": np.random.default_rng(7).uniform(-1, 1, SHAPES[name]).astype(np.float32)}
        else:  # the placeholders of the graph's first line, all static f32 or bool (masks)
            header = open(model).read().split("graph(", 1)[1].split("):", 1)[0]
            rng = np.random.default_rng(7)
            arrays = {}
            for m in re.finditer(r"%(\w+): (f32|bool)\[([0-9, ]+)\]", header):
                shape = [int(d) for d in m.group(3).split(",")]
                arrays[m.group(1)] = (rng.uniform(-1, 1, shape).astype(np.float32)
                                      if m.group(2) == "f32" else rng.uniform(0, 1, shape) < 0.8)
        ref_in = os.path.join(work, f"{name}_in.safetensors")
        ref_out = os.path.join(work, f"{name}_out.safetensors")
        safetensors_np.save(ref_in, arrays)
        subprocess.run([args.tensorc, "run", model, "--interp", "--inputs", ref_in, "--outputs",
                        ref_out], check=True, stdout=subprocess.DEVNULL)
        reference = safetensors_np.load(ref_out)
        for dtype in args.dtypes.split(","):
            case = os.path.join(args.out, "cases", "models", f"{name}_{dtype}")
            os.makedirs(case, exist_ok=True)
            source, inputs, expected, dtypes = model, dict(arrays), dict(reference), {}
            if dtype != "f32":
                source = os.path.join(work, f"{name}_{dtype}.fx")  # a unique stem per case
                cast_model(model, source, dtype)
                floats = [k for k, v in arrays.items() if v.dtype == np.float32]  # not masks
                if dtype == "f16":
                    inputs.update({k: arrays[k].astype(np.float16) for k in floats})
                    expected = {k: v.astype(np.float16) for k, v in reference.items()}
                else:
                    inputs.update({k: to_bf16_bits(arrays[k]) for k in floats})
                    expected = {k: to_bf16_bits(v) for k, v in reference.items()}
                    dtypes = {k: "BF16" for k in list(expected) + floats}
            safetensors_np.save(os.path.join(case, "inputs.safetensors"), inputs, bf16=dtypes)
            safetensors_np.save(os.path.join(case, "expected.safetensors"), expected, bf16=dtypes)
            tol = 1e-3 if dtype == "f32" else 2e-2
            json.dump({"rtol": tol, "atol": 1e-5 if dtype == "f32" else 2e-2},
                      open(os.path.join(case, "case.json"), "w"))
            bundle = os.path.join(case, "bundle")
            shutil.rmtree(bundle, ignore_errors=True)
            # --fallback=allow: the kit checks every model's values on the GPU, those with ops
            # still on reference kernels (convnet's pooling) too.
            subprocess.run([args.tensorc, "compile", source, "-o", bundle, "--target", "cuda",
                            "--cuda-arch", args.cuda_arch, "--fallback=allow"] + extra +
                           args.compile_args.split(),
                           check=True, stderr=subprocess.DEVNULL)
            shutil.rmtree(os.path.join(bundle, "src"), ignore_errors=True)
            print(f"{name}_{dtype}: ready")
    shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
