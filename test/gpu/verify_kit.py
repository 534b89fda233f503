#!/usr/bin/env python3
"""Runs a GPU test kit on a machine with a CUDA device and compares with the expected outputs.

A kit (made where the compiler is, by test/gpu/make_model_kit.py or `tensorc-conformance --target
cuda --kit DIR`) holds cases/<suite>/<name>/{bundle/, inputs.safetensors, expected.safetensors,
case.json} and the runtime-only runner `tensorc-run`. Each case runs with `--device cuda` (and,
with --graphs, again with CUDA-graph replay); outputs are compared by dtype, shape, then values
(rtol/atol from case.json, NaN equal to NaN). Prints `SUITE: N passed, M failed` per suite and in
total, and writes a JSON report with each case's status and failure reason.

With --tune, cases compiled with -O max-autotune (their GEMMs have library calls) are first tuned
(`tensorc-run BUNDLE --tune`, which rewrites the kit's bundle), with --tune-margin -1 every GEMM
that cuBLASLt agrees on is given to it whatever its speed, so that the library path runs; their
runs must then report cuBLASLt as their GEMM library, and each value must be within rtol of its
output's largest magnitude (the library sums in another order than the kernel).
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "models"))
import safetensors_np  # noqa: E402


def compare(expected, got, rtol, atol, bf16, scaled=False):
    """None when `got` matches `expected`; else why not. `scaled`: each value within rtol of the
    output's largest finite magnitude (plus atol), not of its own."""
    for name, want in expected.items():
        if name not in got:
            return f"output {name} missing"
        have = got[name]
        if have.dtype != want.dtype:
            return f"output {name}: dtype {have.dtype}, expected {want.dtype}"
        if have.shape != want.shape:
            return f"output {name}: shape {list(have.shape)}, expected {list(want.shape)}"
        if name in bf16:
            want, have = safetensors_np.bf16_to_f32(want), safetensors_np.bf16_to_f32(have)
        if np.issubdtype(want.dtype, np.floating):
            w, h = want.astype(np.float64), have.astype(np.float64)
            if scaled:
                finite = np.abs(w[np.isfinite(w)])
                largest = float(finite.max()) if finite.size else 0.0
                ok = np.isclose(h, w, rtol=0, atol=atol + rtol * largest, equal_nan=True)
            else:
                ok = np.isclose(h, w, rtol=rtol, atol=atol, equal_nan=True)
            if not ok.all():
                i = int(np.argmin(ok.reshape(-1)))
                return (f"output {name}: {int((~ok).sum())} of {ok.size} values differ; first at "
                        f"flat {i}: {h.reshape(-1)[i]!r} vs {w.reshape(-1)[i]!r}")
        elif not np.array_equal(have, want):
            i = int(np.argmin((have == want).reshape(-1)))
            return f"output {name}: differs at flat {i}: {have.reshape(-1)[i]} vs {want.reshape(-1)[i]}"
    return None


def tune_case(runner, case_dir, margin, timeout):
    """None when the case has no GEMM library calls; "tuned" when tuning chose cuBLASLt for some
    GEMM; ("refused", why) when tuning's own checks refused it (the library's output, or the
    tuned bundle's, differing from the kernel's: the bundle is left untuned); else why tuning
    failed."""
    bundle = os.path.join(case_dir, "bundle")
    manifest = json.load(open(os.path.join(bundle, "manifest.json")))
    if not any("cuda_gemm" in launch for launch in manifest["launches"]):
        return None
    cmd = [runner, bundle, "--device", "cuda", "--tune", "--tune-margin", str(margin), "--inputs",
           os.path.join(case_dir, "inputs.safetensors")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        last = lines[-1] if lines else ""
        if "differ from the untuned one's" in last:
            return ("refused", last)
        return f"tune: exit {proc.returncode}: {last}"
    chosen = re.search(r"(\d+) of (\d+) GEMMs to cuBLASLt", proc.stdout)
    return "tuned" if chosen and int(chosen.group(1)) > 0 else None


def run_case(runner, case_dir, graphs, timeout, tune=None):
    meta = json.load(open(os.path.join(case_dir, "case.json")))
    library = False
    if tune is not None:
        why = tune_case(runner, case_dir, tune, timeout)
        if isinstance(why, tuple):
            print(f"note: {case_dir}: tuning refused ({why[1]}); runs its kernels")
        elif why and why != "tuned":
            return why
        library = why == "tuned"
    expected_path = os.path.join(case_dir, "expected.safetensors")
    expected = safetensors_np.load(expected_path)
    bf16 = {k for k, v in safetensors_np.dtypes(expected_path).items() if v == "BF16"}
    modes = [("plain", [])] + ([("graphs", ["--cuda-graphs", "on", "--iterations", "3"])]
                               if graphs else [])
    with tempfile.TemporaryDirectory() as tmp:
        for mode, extra in modes:
            out = os.path.join(tmp, f"{mode}.safetensors")
            cmd = [runner, os.path.join(case_dir, "bundle"), "--device", "cuda", "--inputs",
                   os.path.join(case_dir, "inputs.safetensors"), "--outputs", out] + extra
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired:
                return f"{mode}: timed out after {timeout} s"
            if proc.returncode != 0:
                lines = (proc.stderr or proc.stdout).strip().splitlines()
                return f"{mode}: exit {proc.returncode}: {lines[-1] if lines else ''}"
            if library and "GEMM library cuBLASLt for" not in proc.stdout:
                return f"{mode}: tuned for cuBLASLt, but the run used {proc.stdout.splitlines()[0]}"
            # A library sums in another order than the kernel (and the f32 reference): outputs
            # that cancel (sums of thousands of O(1) terms ending near zero) or amplify rounding
            # (exp chains) then differ by more than rtol of their own value in a few elements.
            # Tuning checked the library against the kernel; here each value must be within rtol
            # of its output's largest magnitude.
            why = compare(expected, safetensors_np.load(out), meta.get("rtol", 1e-3),
                          meta.get("atol", 1e-5), bf16, scaled=library)
            if why:
                return f"{mode}: {why}"
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kit")
    parser.add_argument("--runner", help="tensorc-run (default: KIT/tensorc-run)")
    parser.add_argument("--graphs", action="store_true", help="also run with CUDA-graph replay")
    parser.add_argument("--report", help="write per-case results as JSON here")
    parser.add_argument("--tune", action="store_true",
                        help="tune -O max-autotune cases first (rewrites their bundles)")
    parser.add_argument("--tune-margin", type=float, default=-1.0,
                        help="with --tune: how much faster cuBLASLt must be (-1: always chosen)")
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("-j", "--jobs", type=int, default=8, help="cases run at once")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    runner = args.runner or os.path.join(args.kit, "tensorc-run")
    results, totals = [], {}
    cases_root = os.path.join(args.kit, "cases")
    cases = [(suite, name) for suite in sorted(os.listdir(cases_root))
             for name in sorted(os.listdir(os.path.join(cases_root, suite)))]
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        reasons = pool.map(lambda case: run_case(runner, os.path.join(cases_root, *case),
                                                 args.graphs, args.timeout,
                                                 args.tune_margin if args.tune else None), cases)
        for (suite, name), why in zip(cases, reasons):
            results.append({"suite": suite, "test": name, "status": "failed" if why else "passed",
                            "reason": why or ""})
            passed, failed = totals.get(suite, (0, 0))
            totals[suite] = (passed + (why is None), failed + (why is not None))
            if why and args.verbose:
                print(f"FAIL {suite}/{name}: {why}")
    all_passed = all_failed = 0
    for suite, (passed, failed) in totals.items():
        print(f"{suite}: {passed} passed, {failed} failed")
        all_passed += passed
        all_failed += failed
    print(f"total: {all_passed} passed, {all_failed} failed")
    if args.report:
        with open(args.report, "w") as f:
            json.dump(results, f, indent=1)
    return 0 if all_failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
