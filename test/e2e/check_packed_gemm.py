#!/usr/bin/env python3
"""GEMMs whose B operand is a constant, which CPU bundles store packed for the micro-kernels
(lib/Codegen/CPU/PackGemmWeights.cpp), against numpy in float64.

Each case is an FX-text model with its weights in a side safetensors file, compiled with
`tensorc compile` and run on every CPU variant this machine has, at several values of the batch
symbol s0 (GEMM rows 1 .. 100: the small-M paths, partial micro-tiles, several row tasks). The
cases cover what the packing pass must tell apart: a weight read by one GEMM (packed in place), a
weight read by two GEMMs through one view (one shared copy), a weight also read by another op
(a tied embedding: the packed copy is a second weight), a transposed and an untransposed B, a 3-D
constant B of a bmm, N not a multiple of 16, K over one K block (384), and fused epilogues (bias,
GELU, residual add). The bundle's src/lower.txt must show the packed layout, so a pass that
silently packs nothing fails too. Tolerance: rtol 1e-3, atol 1e-5 (DESIGN.md section 8).
"""
import argparse
import json
import math
import os
import platform
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "models"))
import safetensors_np  # noqa: E402

_erf = np.vectorize(math.erf)


def gelu(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


# name: (FX text, weights {name: shape}, inputs {name: shape with 's' for s0}, numpy reference,
#        how many GEMMs read a packed B)
CASES = {
    "linear_gelu_residual": ("""
graph(%x: f32[s0, 40], %w1: f32[72, 40], %b1: f32[72], %w2: f32[40, 72], %b2: f32[40]):
  %t1 : f32[40, 72] = call_function[target=aten.t](args=(%w1,))
  %h : f32[s0, 72] = call_function[target=aten.addmm](args=(%b1, %x, %t1))
  %g : f32[s0, 72] = call_function[target=aten.gelu](args=(%h,), kwargs={approximate='none'})
  %t2 : f32[72, 40] = call_function[target=aten.t](args=(%w2,))
  %o : f32[s0, 40] = call_function[target=aten.addmm](args=(%b2, %g, %t2))
  %r : f32[s0, 40] = call_function[target=aten.add](args=(%o, %x))
  return (%r,)
""", {"w1": (72, 40), "b1": (72,), "w2": (40, 72), "b2": (40,)}, {"x": ("s", 40)},
        lambda p: [gelu(p["x"] @ p["w1"].T + p["b1"]) @ p["w2"].T + p["b2"] + p["x"]], 2),
    # K = 700 (two K blocks), N = 33 (a partial strip), B untransposed; two GEMMs, one view.
    "deep_k_shared_view": ("""
graph(%x: f32[s0, 700], %y: f32[s0, 700], %w: f32[700, 33]):
  %a : f32[s0, 33] = call_function[target=aten.mm](args=(%x, %w))
  %b : f32[s0, 33] = call_function[target=aten.mm](args=(%y, %w))
  %r : f32[s0, 33] = call_function[target=aten.relu](args=(%b,))
  return (%a, %r)
""", {"w": (700, 33)}, {"x": ("s", 700), "y": ("s", 700)},
        lambda p: [p["x"] @ p["w"], np.maximum(p["y"] @ p["w"], 0.0)], 2),
    # A tied embedding: one weight read by index_select and, transposed, by the output GEMM.
    "tied_embedding": ("""
graph(%ids: i64[s0], %emb: f32[50, 24], %scale: f32[24]):
  %e : f32[s0, 24] = call_function[target=aten.index_select](args=(%emb, 0, %ids))
  %s : f32[s0, 24] = call_function[target=aten.mul](args=(%e, %scale))
  %t : f32[24, 50] = call_function[target=aten.t](args=(%emb,))
  %logits : f32[s0, 50] = call_function[target=aten.mm](args=(%s, %t))
  return (%logits,)
""", {"emb": (50, 24), "scale": (24,)}, {"ids": ("s",)},
        lambda p: [(p["emb"][p["ids"]] * p["scale"]) @ p["emb"].T], 1),
    # A batched constant B (one K x N operand per batch) and a broadcast one.
    "bmm_constant": ("""
graph(%x: f32[3, s0, 20], %w: f32[3, 20, 18], %v: f32[18, 21]):
  %y : f32[3, s0, 18] = call_function[target=aten.bmm](args=(%x, %w))
  %z : f32[3, s0, 21] = call_function[target=aten.matmul](args=(%y, %v))
  return (%y, %z)
""", {"w": (3, 20, 18), "v": (18, 21)}, {"x": (3, "s", 20)},
        lambda p: [p["x"] @ p["w"], (p["x"] @ p["w"]) @ p["v"]], 2),
}

BATCHES = (1, 5, 100)


def host_variants():
    if platform.machine() not in ("x86_64", "AMD64"):
        return [None]
    variants = ["x86_64"]
    with open("/proc/cpuinfo") as f:
        if "avx512f" in f.read():
            variants.append("x86_64-avx512")
    return variants


def make_inputs(specs, batch, rng):
    inputs = {}
    for name, shape in specs.items():
        dims = tuple(batch if d == "s" else d for d in shape)
        if name == "ids":
            inputs[name] = rng.integers(0, 50, size=dims).astype(np.int64)
        else:
            inputs[name] = rng.uniform(-1, 1, size=dims).astype(np.float32)
    return inputs


def check_case(tensorc, work, name, case, rng):
    text, weight_specs, input_specs, reference, gemms = case
    model = os.path.join(work, name + ".fx")
    with open(model, "w") as f:
        f.write(text.lstrip())
    weights = {w: rng.uniform(-1, 1, size=shape).astype(np.float32)
               for w, shape in weight_specs.items()}
    safetensors_np.save(os.path.join(work, name + ".safetensors"), weights)
    bundle = os.path.join(work, name + ".bundle")
    subprocess.run([tensorc, "compile", model, "-o", bundle], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(os.path.join(bundle, "src", "lower.txt")) as f:
        packed = f.read().count("layout=packed16")
    with open(os.path.join(bundle, "manifest.json")) as f:
        output_names = [desc["name"] for desc in json.load(f)["outputs"]]
    failures = []
    if packed != gemms:
        failures.append(f"{name}: {packed} GEMMs read a packed B, expected {gemms}")
    for batch in BATCHES:
        inputs = make_inputs(input_specs, batch, rng)
        inputs_path = os.path.join(work, f"{name}.{batch}.inputs.safetensors")
        safetensors_np.save(inputs_path, inputs)
        params = {k: v.astype(np.float64) if v.dtype == np.float32 else v
                  for k, v in {**weights, **inputs}.items()}
        want = reference(params)
        for variant in host_variants():
            outputs = os.path.join(work, f"{name}.{batch}.out.safetensors")
            command = [tensorc, "run", bundle, "--inputs", inputs_path, "--outputs", outputs]
            if variant:
                command += ["--variant", variant]
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
            got = safetensors_np.load(outputs)
            for index, (key, expected) in enumerate(zip(output_names, want)):
                actual = got[key].astype(np.float64)
                if actual.shape != expected.shape or not np.allclose(actual, expected,
                                                                      rtol=1e-3, atol=1e-5):
                    diff = (np.abs(actual - expected).max() if actual.shape == expected.shape
                            else f"shape {actual.shape} vs {expected.shape}")
                    failures.append(f"{name} s0={batch} {variant} output {index}: {diff}")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tensorc", required=True)
    args = parser.parse_args()
    rng = np.random.default_rng(16)
    failures = []
    with tempfile.TemporaryDirectory() as work:
        for name, case in CASES.items():
            found = check_case(args.tensorc, work, name, case, rng)
            print(f"{name}: {'ok' if not found else 'FAILED'}")
            failures += found
    for failure in failures:
        print("FAIL", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
