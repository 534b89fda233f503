#!/usr/bin/env python3
"""bench/inprocess.py, the ctypes mirror of the runtime's C ABI that bench/run.py times tensorc
with: a bundle loaded through libtensorc_rt.so gives the same outputs as `tensorc-run --outputs`
on the same inputs (at 1 and 2 threads), run() works on the bound inputs, a path that is no
bundle is an InProcessError carrying the runtime's message, and bench/ab.py (paired timing of two
bundles) runs on a bundle against itself and names a missing bundle.

    check_inprocess.py --tensorc build/tools/tensorc/tensorc --runner build/runtime/tensorc-run \
        --runtime-lib build/package/lib/libtensorc_rt.so
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "models"))
import inprocess  # noqa: E402
import safetensors_np  # noqa: E402


def run(args):
    result = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(args)}\n{result.stdout}{result.stderr}")


def check_ab(args, bundle, inputs_path, tmp):
    """bench/ab.py on a bundle against itself: equal outputs, a positive finite paired ratio; a
    missing bundle: exit 1 naming it."""
    ab = [sys.executable, os.path.join(ROOT, "bench", "ab.py")]
    common = ["--inputs", inputs_path, "--threads", "2", "--pairs", "4", "--pause-ms", "0",
              "--runtime-lib", args.runtime_lib]
    result = subprocess.run(ab + [bundle, bundle] + common, capture_output=True, text=True,
                            timeout=300)
    ratio = None
    for line in result.stdout.splitlines():
        if line.startswith("paired A/B: median "):
            ratio = float(line.split()[3].rstrip(","))
    failures = 0
    if result.returncode != 0 or "largest difference 0 " not in result.stdout or \
            ratio is None or not 0 < ratio < float("inf"):
        print(f"FAIL: ab.py on one bundle twice: exit {result.returncode}\n{result.stdout}"
              f"{result.stderr}")
        failures += 1
    else:
        print(f"ok: ab.py on one bundle twice: outputs equal, paired ratio {ratio}")
    missing = os.path.join(tmp, "no-such-bundle")
    result = subprocess.run(ab + [bundle, missing] + common, capture_output=True, text=True,
                            timeout=300)
    if result.returncode != 1 or missing not in result.stderr:
        print(f"FAIL: ab.py with a missing bundle: exit {result.returncode}, {result.stderr}")
        failures += 1
    else:
        print(f"ok: ab.py with a missing bundle: {result.stderr.strip()}")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tensorc", required=True)
    parser.add_argument("--runner", required=True)
    parser.add_argument("--runtime-lib", required=True)
    args = parser.parse_args()
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        bundle = os.path.join(tmp, "ln_silu")
        run([args.tensorc, "compile", os.path.join(ROOT, "models", "ln_silu.fx"), "-o", bundle,
             "--target", "cpu", "--no-cache"])
        with open(os.path.join(bundle, "manifest.json")) as f:
            manifest = json.load(f)
        rng = np.random.default_rng(3)
        inputs = {}
        for desc in manifest["inputs"]:
            shape = [4 if isinstance(d, str) else d for d in desc["shape"]]
            assert desc["dtype"] == "f32", desc
            inputs[desc["name"]] = rng.uniform(-1, 1, shape).astype(np.float32)
        inputs_path = os.path.join(tmp, "inputs.safetensors")
        safetensors_np.save(inputs_path, inputs)
        for threads in (1, 2):
            outputs_path = os.path.join(tmp, f"outputs{threads}.safetensors")
            run([args.runner, bundle, "--inputs", inputs_path, "--outputs", outputs_path,
                 "--threads", str(threads)])
            expected = safetensors_np.load(outputs_path)
            model = inprocess.InProcessModel(args.runtime_lib, bundle, threads)
            model.set_inputs(list(inputs.values()))
            model.run()
            got = model.outputs()
            model.close()
            if len(got) != len(manifest["outputs"]):
                print(f"FAIL: {len(got)} outputs in process, the manifest lists "
                      f"{len(manifest['outputs'])}")
                failures += 1
                continue
            for desc, array in zip(manifest["outputs"], got):
                want = expected[desc["name"]]
                if array.shape != want.shape or array.dtype != want.dtype or \
                        not np.array_equal(array, want):
                    same = array.shape == want.shape
                    diff = np.abs(array.astype(np.float64) - want).max() if same else "n/a"
                    print(f"FAIL: threads {threads}: output {desc['name']}: in process "
                          f"{array.dtype}{list(array.shape)}, tensorc-run "
                          f"{want.dtype}{list(want.shape)}, max |diff| {diff}")
                    failures += 1
                else:
                    print(f"ok: threads {threads}: output {desc['name']} {list(array.shape)} "
                          f"equals tensorc-run's")
        failures += check_ab(args, bundle, inputs_path, tmp)
        try:
            inprocess.InProcessModel(args.runtime_lib, tmp, 1)
            print("FAIL: loading a directory that is no bundle did not raise")
            failures += 1
        except inprocess.InProcessError as error:
            if "manifest" not in str(error):
                print(f"FAIL: the error does not carry the runtime's message: {error}")
                failures += 1
            else:
                print(f"ok: not a bundle: {error}")
    if failures:
        print(f"{failures} failure(s)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
