#!/usr/bin/env python3
"""Checks `tensorc compile --emit=so`: model libraries run from a plain C program.

ln_silu and convnet are each compiled into one shared object. test/runtime/emit_so_main.c, which
links only libdl, dlopens both into one process (both loaded before either runs), runs them on
fixed-seed inputs and writes the outputs; they must match `tensorc run MODEL --interp` on the same
inputs (rtol 1e-3, atol 1e-5), with the best CPU variant and with the x86_64 baseline forced.
Also: the libraries define no dynamic symbol but the C ABI's tc_*, and --emit=so refuses aarch64.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "models"))
import safetensors_np  # noqa: E402

# model -> shape of its one f32 input (the batch is the symbolic dim).
MODELS = {"ln_silu": (8, 128), "convnet": (2, 3, 32, 32)}


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)}\n{result.stdout}{result.stderr}")
    return result.stdout


def exported_symbols(library):
    out = run([shutil.which("nm") or "nm", "-D", "--defined-only", library])
    return [line.split()[-1] for line in out.splitlines() if line.strip()]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tensorc", required=True)
    parser.add_argument("--runner", required=True, help="the emit_so_main program")
    args = parser.parse_args()
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        jobs, references = [], {}
        rng = np.random.default_rng(0)
        for name, shape in MODELS.items():
            model = os.path.join(ROOT, "models", name + ".fx")
            library = os.path.join(tmp, name + ".so")
            run([args.tensorc, "compile", model, "--emit=so", "-o", library])
            print(f"{name}.so: {os.path.getsize(library)} bytes")

            symbols = exported_symbols(library)
            foreign = [s for s in symbols if not s.startswith("tc_")]
            if foreign or "tc_model_load" not in symbols:
                print(f"FAIL {name}.so exports {foreign or 'no tc_model_load'}")
                failures += 1
            else:
                print(f"ok   {name}.so exports only tc_* ({len(symbols)} symbols)")

            x = rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)
            inputs = os.path.join(tmp, name + "_in.safetensors")
            safetensors_np.save(inputs, {"x": x})
            x.tofile(os.path.join(tmp, name + "_x.bin"))
            interp_out = os.path.join(tmp, name + "_interp.safetensors")
            run([args.tensorc, "run", model, "--interp", "--inputs", inputs,
                 "--outputs", interp_out])
            references[name] = list(safetensors_np.load(interp_out).values())
            jobs.append((name, library, shape))

        for variant in (None, "x86_64"):
            cmd = [args.runner] + (["--variant", variant] if variant else [])
            for i, (name, library, shape) in enumerate(jobs):
                cmd += ([] if i == 0 else ["--"]) + [
                    library, os.path.join(tmp, name + "_out.bin"),
                    os.path.join(tmp, name + "_x.bin") + ":" + "x".join(map(str, shape))]
            run(cmd)
            for name, _, _ in jobs:
                got = np.fromfile(os.path.join(tmp, name + "_out.bin"), dtype=np.float32)
                want = np.concatenate([r.astype(np.float32).ravel() for r in references[name]])
                label = f"{name} ({variant or 'best variant'}, two models in one process)"
                if got.shape != want.shape:
                    print(f"FAIL {label}: {got.size} output elements, expected {want.size}")
                    failures += 1
                elif not np.allclose(got, want, rtol=1e-3, atol=1e-5):
                    print(f"FAIL {label}: max abs error {np.abs(got - want).max():.3g}")
                    failures += 1
                else:
                    print(f"ok   {label}: max abs error {np.abs(got - want).max():.3g}")

        refused = subprocess.run([args.tensorc, "compile", os.path.join(ROOT, "models",
                                                                        "ln_silu.fx"),
                                  "--emit=so", "--cpu-arch", "aarch64", "-o",
                                  os.path.join(tmp, "arm.so")], capture_output=True, text=True)
        expected = "--emit=so builds for the host (x86_64); use a bundle directory for aarch64"
        if refused.returncode == 0 or expected not in refused.stderr:
            print(f"FAIL --emit=so --cpu-arch aarch64: rc {refused.returncode}: {refused.stderr}")
            failures += 1
        else:
            print("ok   --emit=so --cpu-arch aarch64 is refused")
    print("PASS" if failures == 0 else f"{failures} FAILURES")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
