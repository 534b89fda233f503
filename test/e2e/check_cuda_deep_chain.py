#!/usr/bin/env python3
"""A 20000-node elementwise chain compiled with `--target cuda` (NVRTC runs without a GPU): the
compile must succeed, with every rendered kernel bounded in size and in expression depth (what
NVRTC digests), within the time CTest allows this test (its TIMEOUT is the bound). The same model
compiled for the CPU runs against numpy, so splitting the chain into kernels changes no value.
Prints one line per check; exit 1 on any failure."""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "models"))
import safetensors_np  # noqa: E402

# The deepest parenthesis nesting rendered kernels may have (NVRTC recurses per level) and the
# most lines one kernel may take (the scheduler caps the nodes fused into one kernel).
MAX_DEPTH = 32
MAX_KERNEL_LINES = 6000


def chain_fx(length):
    """relu, neg, mul by 1.0001 and add 0.25 in turn: no two neighbours cancel or fold."""
    lines = ["graph(%x: f32[4, 256]):"]
    previous = "%x"
    for i in range(length):
        name = f"%n{i}"
        kind = i % 4
        if kind == 0:
            call = f"aten.relu](args=({previous},))"
        elif kind == 1:
            call = f"aten.neg](args=({previous},))"
        elif kind == 2:
            call = f"aten.mul](args=({previous}, 1.0001))"
        else:
            call = f"aten.add](args=({previous}, 0.25))"
        lines.append(f"  {name} : f32[4, 256] = call_function[target={call}")
        previous = name
    lines.append(f"  return ({previous},)")
    return "\n".join(lines) + "\n"


def chain_numpy(x, length):
    y = x.astype(np.float32)
    for i in range(length):
        kind = i % 4
        if kind == 0:
            y = np.maximum(y, np.float32(0))
        elif kind == 1:
            y = -y
        elif kind == 2:
            y = y * np.float32(1.0001)
        else:
            y = y + np.float32(0.25)
    return y


def depth(text):
    """The deepest ( [ nesting outside comments (the renderer writes no string literals)."""
    text = re.sub(r"//[^\n]*", "", text)
    deepest = level = 0
    for c in text:
        if c in "([":
            level += 1
            deepest = max(deepest, level)
        elif c in ")]":
            level -= 1
    return deepest


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tensorc", required=True)
    parser.add_argument("--length", type=int, default=20000)
    args = parser.parse_args()
    failures = 0

    def check(ok, message):
        nonlocal failures
        print(("ok: " if ok else "FAIL: ") + message, flush=True)
        failures += 0 if ok else 1

    with tempfile.TemporaryDirectory() as work:
        model = os.path.join(work, "chain.fx")
        with open(model, "w") as f:
            f.write(chain_fx(args.length))
        # An empty NVRTC cache: every kernel is compiled.
        env = dict(os.environ, TENSORC_CACHE_DIR=os.path.join(work, "nvrtc-cache"))
        bundle = os.path.join(work, "cuda")
        start = time.monotonic()
        proc = subprocess.run([args.tensorc, "compile", model, "-o", bundle, "--target", "cuda",
                               "--cuda-arch", "sm_80"], capture_output=True, text=True, env=env)
        seconds = time.monotonic() - start
        check(proc.returncode == 0,
              f"--target cuda compile of a {args.length}-node chain: exit {proc.returncode} in "
              f"{seconds:.1f} s {proc.stderr.strip()[-2000:]}")
        if proc.returncode == 0:
            source = open(os.path.join(bundle, "src", "kernels.cu")).read()
            kernels = re.split(r'(?=extern "C" __global__)', source)[1:]
            check(len(kernels) > 1, f"the chain is split into {len(kernels)} kernels")
            deepest = max(depth(k) for k in kernels)
            check(deepest <= MAX_DEPTH, f"deepest expression nesting {deepest} <= {MAX_DEPTH}")
            longest = max(k.count("\n") for k in kernels)
            check(longest <= MAX_KERNEL_LINES,
                  f"longest kernel {longest} lines <= {MAX_KERNEL_LINES}")

        cpu = os.path.join(work, "cpu")
        proc = subprocess.run([args.tensorc, "compile", model, "-o", cpu], capture_output=True,
                              text=True)
        check(proc.returncode == 0, f"cpu compile: exit {proc.returncode} {proc.stderr[-2000:]}")
        if proc.returncode == 0:
            x = np.linspace(-2, 2, 4 * 256, dtype=np.float32).reshape(4, 256)
            inputs, outputs = os.path.join(work, "in.safetensors"), os.path.join(work, "out.st")
            safetensors_np.save(inputs, {"x": x})
            proc = subprocess.run([args.tensorc, "run", cpu, "--inputs", inputs, "--outputs",
                                   outputs], capture_output=True, text=True)
            check(proc.returncode == 0, f"cpu run: exit {proc.returncode} {proc.stderr[-2000:]}")
            if proc.returncode == 0:
                (got,) = safetensors_np.load(outputs).values()
                want = chain_numpy(x, args.length)
                # Values stay near 0.125 (y -> 0.25 - 1.0001 * relu(y)); a rounding per node
                # over 20000 nodes stays far below 1e-3, a wrong or dropped node does not.
                error = float(np.max(np.abs(got - want)))
                check(error <= 1e-3, f"cpu result against numpy: max abs error {error:.2e}")
    print(f"{'FAILED' if failures else 'passed'}: {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
