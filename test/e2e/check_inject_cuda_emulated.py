#!/usr/bin/env python3
"""TENSORC_INJECT_BUG (testing only) on the CUDA backend, without a GPU: a relu model compiled
with `--target cuda` (NVRTC compiles here), its kernels.cu run on the CPU emulation of
test/e2e/cuda_emu.h, against numpy:

- clean: tanh(relu(x));
- relu:accuracy: tanh(relu(x) + 1);
- relu:crash: the emulated kernel dies on a signal (it reads 2^40 elements past its output;
  on a GPU that is an illegal address error);
- relu:compile-error: `tensorc compile --target cuda` exits 1 naming the kernel.

    check_inject_cuda_emulated.py --tensorc build/tools/tensorc/tensorc --cxx c++
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_cuda_emulated import emulation_source  # noqa: E402

MODEL = """graph(%x: f32[s0, 40]):
  %a : f32[s0, 40] = call_function[target=aten.relu](args=(%x,))
  %o : f32[s0, 40] = call_function[target=aten.tanh](args=(%a,))
  return (%o,)
"""
BATCH = 3


def compile_bundle(args, work, bug):
    env = {**os.environ}
    env.pop("TENSORC_INJECT_BUG", None)
    if bug:
        env["TENSORC_INJECT_BUG"] = bug
    bundle = os.path.join(work, "bundle-" + (bug or "clean").replace(":", "-"))
    done = subprocess.run([args.tensorc, "compile", os.path.join(work, "model.fx"), "-o", bundle,
                           "--target", "cuda", "--cuda-arch", "sm_80"],
                          capture_output=True, text=True, env=env)
    return bundle, done


def emulate(args, work, bundle, x):
    """Runs the bundle's kernels on the emulation; (returncode, output or None)."""
    manifest = json.load(open(os.path.join(bundle, "manifest.json")))
    kernels = open(os.path.join(bundle, "src", "kernels.cu")).read()
    source = bundle + ".cpp"
    with open(source, "w") as f:
        f.write(emulation_source(kernels, manifest, {"s0": BATCH}))
    binary = bundle + ".bin"
    subprocess.run([args.cxx, "-std=c++17", "-O1", "-w", "-fno-pie", "-no-pie", "-I",
                    os.path.dirname(os.path.abspath(__file__)), source, "-o", binary], check=True)
    case = bundle + ".case"
    os.makedirs(case, exist_ok=True)
    by_name = {b["name"]: b for b in manifest["buffers"]}
    x.tofile(os.path.join(case, f"buf{by_name['x']['id']}.bin"))
    ran = subprocess.run([binary, case, str(1 << 30), "deferred", "lockstep"], capture_output=True)
    if ran.returncode:
        return ran.returncode, None
    out = os.path.join(case, f"out{by_name['o']['id']}.bin")
    return 0, np.fromfile(out, np.float32).reshape(x.shape)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tensorc", required=True)
    parser.add_argument("--cxx", default="c++")
    args = parser.parse_args()
    x = np.random.default_rng(3).uniform(-2, 2, (BATCH, 40)).astype(np.float32)
    relu = np.maximum(x, 0)
    with tempfile.TemporaryDirectory() as work:
        with open(os.path.join(work, "model.fx"), "w") as f:
            f.write(MODEL)
        for bug, want in ((None, np.tanh(relu)), ("relu:accuracy", np.tanh(relu + 1))):
            bundle, done = compile_bundle(args, work, bug)
            assert done.returncode == 0, done.stderr
            code, got = emulate(args, work, bundle, x)
            assert code == 0, f"{bug}: the emulation exited {code}"
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=str(bug))
            print(f"{bug or 'clean'}: the emulated CUDA kernel computes "
                  f"{'tanh(relu(x) + 1)' if bug else 'tanh(relu(x))'}")
        bundle, done = compile_bundle(args, work, "relu:crash")
        assert done.returncode == 0, done.stderr
        code, _ = emulate(args, work, bundle, x)
        assert code < 0 or code >= 128, f"relu:crash: the emulation exited {code}, no signal"
        print(f"relu:crash: the emulated CUDA kernel died (exit {code})")
        _, done = compile_bundle(args, work, "relu:compile-error")
        assert done.returncode == 1 and "injected bug" in done.stderr, done.stderr
        print("relu:compile-error: " + done.stderr.strip().splitlines()[-1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
