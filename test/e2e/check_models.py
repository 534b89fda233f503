#!/usr/bin/env python3
"""Runs models/ on the tensorc interpreter (and, with --compiled, as compiled CPU bundles) and
compares with an independent numpy computation.

For each model: random inputs (fixed seed) are written to safetensors, `tensorc run --interp`
computes the outputs, and a float64 numpy implementation of the same model, reading the same
weights, gives the reference. With --compiled the model is also compiled (`tensorc compile`)
and the bundle run (`tensorc run OUT`, each CPU variant this machine supports) on the same
inputs. Tolerance: rtol 1e-3, atol 1e-5 (DESIGN.md §8).
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "models"))
import safetensors_np  # noqa: E402

_erf = np.vectorize(math.erf)


def linear(x, w, b):
    return x @ w.T + b


def gelu(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def layer_norm(x, w, b, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def silu(x):
    return x / (1.0 + np.exp(-x))


def conv2d(x, w, b, stride, pad, groups=1):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ho, wo = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, o, ho, wo))
    og = o // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, g * cg:(g + 1) * cg, i:i + stride * ho:stride, j:j + stride * wo:stride]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch,
                                                         w[g * og:(g + 1) * og, :, i, j])
    return out if b is None else out + b[None, :, None, None]


def mlp(p, x):
    x = gelu(linear(x, p["fc1_w"], p["fc1_b"]))
    x = gelu(linear(x, p["fc2_w"], p["fc2_b"]))
    return linear(x, p["fc3_w"], p["fc3_b"])


def ln_silu(p, x):
    for i in (1, 2, 3):
        x = silu(layer_norm(linear(x, p[f"fc{i}_w"], p[f"fc{i}_b"]), p[f"ln{i}_w"], p[f"ln{i}_b"]))
    return x


def convnet(p, x):
    x = conv2d(x, p["conv1_w"], p["conv1_b"], 1, 1)
    c = lambda v: v[None, :, None, None]  # noqa: E731
    x = (x - c(p["bn1_mean"])) / np.sqrt(c(p["bn1_var"]) + 1e-5) * c(p["bn1_w"]) + c(p["bn1_b"])
    x = np.maximum(x, 0)
    n, ch, h, w = x.shape
    x = x.reshape(n, ch, h // 2, 2, w // 2, 2).max(axis=(3, 5))
    x = np.maximum(conv2d(x, p["conv2_w"], p["conv2_b"], 2, 1), 0)
    x = x.mean(axis=(2, 3))
    return linear(x, p["fc_w"], p["fc_b"])


def resblock(p, x):
    a = np.maximum(conv2d(x, p["conv_a_w"], p["conv_a_b"], 1, 1), 0)
    s = np.maximum(conv2d(a, p["conv_g_w"], None, 1, 1, groups=4) + a, 0)
    c = conv2d(s, p["conv_c_w"], None, 1, 0)
    return linear(c.mean(axis=(2, 3)), p["fc_w"], p["fc_b"])


MODELS = {"mlp": (mlp, (64, 1024)), "ln_silu": (ln_silu, (32, 128)),
          "convnet": (convnet, (4, 3, 32, 32)), "resblock": (resblock, (3, 16, 15, 15))}


def compare(label, got, want):
    if got.shape != want.shape or got.dtype != np.float32:
        return f"{label}: got {got.dtype}{list(got.shape)}, want float32{list(want.shape)}"
    err = np.abs(got.astype(np.float64) - want)
    bad = err > 1e-5 + 1e-3 * np.abs(want)
    print(f"{label}: {got.shape} max abs err {err.max():.3g}, "
          f"{int(bad.sum())} of {bad.size} elements outside rtol 1e-3 / atol 1e-5")
    return f"{label}: mismatch" if bad.any() else None


def host_variants():
    flags = open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else ""
    variants = ["x86_64"]
    if all(f" {flag}" in flags for flag in ("avx512f", "avx512bw", "avx512vl", "avx512dq")):
        variants.append("x86_64-avx512")
    return variants


def run_outputs(command, outputs):
    subprocess.run(command + ["--outputs", outputs], check=True, stdout=subprocess.DEVNULL)
    got = list(safetensors_np.load(outputs).values())
    if len(got) != 1:
        raise RuntimeError(f"expected 1 output, got {len(got)}")
    return got[0]


def check(tensorc, name, models_dir, compiled):
    reference, shape = MODELS[name]
    params = {k: v.astype(np.float64) for k, v in
              safetensors_np.load(os.path.join(models_dir, f"{name}.safetensors")).items()}
    x = np.random.default_rng(7).uniform(-1, 1, shape).astype(np.float32)
    want = reference(params, x.astype(np.float64))
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        inputs, outputs = os.path.join(tmp, "in.safetensors"), os.path.join(tmp, "out.safetensors")
        safetensors_np.save(inputs, {"x": x})
        model = os.path.join(models_dir, f"{name}.fx")
        got = run_outputs([tensorc, "run", model, "--interp", "--inputs", inputs], outputs)
        failures.append(compare(f"{name} interp", got, want))
        if compiled:
            bundle = os.path.join(tmp, "bundle")
            subprocess.run([tensorc, "compile", model, "-o", bundle], check=True,
                           stderr=subprocess.DEVNULL)
            for variant in host_variants():
                got = run_outputs([tensorc, "run", bundle, "--variant", variant,
                                   "--inputs", inputs], outputs)
                failures.append(compare(f"{name} compiled {variant}", got, want))
    return [f for f in failures if f]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tensorc", required=True)
    parser.add_argument("--model", action="append", choices=sorted(MODELS))
    parser.add_argument("--models-dir", default=os.path.join(ROOT, "models"))
    parser.add_argument("--compiled", action="store_true",
                        help="also compile each model and check the bundle")
    args = parser.parse_args()
    failures = [f for m in (args.model or sorted(MODELS))
                for f in check(args.tensorc, m, args.models_dir, args.compiled)]
    for failure in failures:
        print("FAIL:", failure)
    what = "interpreter and compiled bundles" if args.compiled else "interpreter"
    print(f"{what} match numpy" if not failures else f"{what} do NOT match numpy")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
