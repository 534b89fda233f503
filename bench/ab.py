#!/usr/bin/env python3
"""Is bundle B faster than bundle A? Both CPU bundles run in this process, alternately, run by
run, and the answer is the median of the paired ratios.

    python3 bench/ab.py BUNDLE_A BUNDLE_B --inputs X.safetensors [--threads 2] [--pairs 60]
        [--pause-ms 5] [--runtime-lib build/package/lib/libtensorc_rt.so]

For a change to the compiler, compile the same model before and after it (`--no-cache`) and
compare the two bundles. On a machine whose speed moves by tens of percent within seconds, a
timing of A and a later timing of B decide nothing; two runs a few milliseconds apart see the same
state, so each pair's ratio A ms / B ms is nearly free of it. Pairs alternate which bundle runs
first, with --pause-ms between runs (a thread pool that spins after a run would otherwise slow the
run right after it). Before timing, one run of each must give the same outputs (largest
difference printed; exit 1 when they differ by more than --tolerance relative to the outputs'
largest magnitude): a change that alters results is no speed-up. Prints both medians, the
median paired ratio (> 1: B is faster) and its interquartile range. A bundle against itself gave
medians of 0.98-1.00 at 60 pairs on a 2-core VM: smaller effects need more pairs or a quieter
machine.
"""
import argparse
import os
import statistics
import struct
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "models"))
import inprocess  # noqa: E402
import safetensors_np  # noqa: E402


def quantile(sorted_values, q):
    return sorted_values[int(round(q * (len(sorted_values) - 1)))]


def largest_difference(expected, actual):
    """max |a - b| over all outputs, and the outputs' largest magnitude (finite values)."""
    difference, scale = 0.0, 0.0
    if len(expected) != len(actual):
        return float("inf"), 0.0
    for a, b in zip(expected, actual):
        if a.shape != b.shape:
            return float("inf"), 0.0
        a, b = a.astype(np.float64), b.astype(np.float64)
        finite = np.isfinite(a)
        if not np.array_equal(finite, np.isfinite(b)):
            return float("inf"), 0.0
        if finite.any():
            difference = max(difference, float(np.abs(a[finite] - b[finite]).max()))
            scale = max(scale, float(np.abs(a[finite]).max()))
    return difference, scale


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle_a")
    parser.add_argument("bundle_b")
    parser.add_argument("--inputs", required=True,
                        help="safetensors file with the inputs, in the bundles' input order")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--pairs", type=int, default=60)
    parser.add_argument("--pause-ms", type=float, default=5.0)
    parser.add_argument("--tolerance", type=float, default=1e-4,
                        help="largest output difference allowed, relative to the largest output")
    parser.add_argument("--runtime-lib",
                        default=inprocess.runtime_library(os.path.join(ROOT, "build")))
    args = parser.parse_args()
    if args.pairs < 2 or args.threads < 1 or args.pause_ms < 0:
        parser.error("--pairs takes 2 or more, --threads 1 or more, --pause-ms 0 or more")
    for path in (args.bundle_a, args.bundle_b, args.inputs, args.runtime_lib):
        if not os.path.exists(path):
            sys.exit(f"ab: {path}: no such file or directory")

    try:
        arrays = list(safetensors_np.load(args.inputs).values())
    except (OSError, ValueError, KeyError, struct.error) as error:
        sys.exit(f"ab: {args.inputs}: not a safetensors file ({error})")
    models = []
    try:
        for bundle in (args.bundle_a, args.bundle_b):
            model = inprocess.InProcessModel(args.runtime_lib, bundle, args.threads)
            model.set_inputs(arrays)
            models.append(model)
        difference, scale = largest_difference(models[0].outputs(), models[1].outputs())
        print(f"outputs: largest difference {difference:.3g} (largest output {scale:.3g})")
        if not difference <= args.tolerance * max(scale, 1e-30):
            sys.exit(f"ab: {args.bundle_a} and {args.bundle_b} give different outputs "
                     f"(largest difference {difference:.3g}, allowed {args.tolerance:g} x "
                     f"{scale:.3g}); a timing would compare different computations")

        def timed(model):
            time.sleep(args.pause_ms / 1e3)
            start = time.perf_counter()
            model.run()
            return time.perf_counter() - start

        for _ in range(3):  # warm-up: pages, caches, the pool's threads
            timed(models[0]), timed(models[1])
        times = ([], [])
        ratios = []
        for pair in range(args.pairs):
            order = (0, 1) if pair % 2 == 0 else (1, 0)
            for side in order:
                times[side].append(timed(models[side]))
            ratios.append(times[0][-1] / times[1][-1])
    except (OSError, inprocess.InProcessError) as error:  # OSError: the library did not load
        sys.exit(f"ab: {error}")
    finally:
        for model in models:
            model.close()
    ratios.sort()
    print(f"{args.threads} thread(s), {args.pairs} pairs: A median "
          f"{statistics.median(times[0]) * 1e3:.3f} ms, B median "
          f"{statistics.median(times[1]) * 1e3:.3f} ms")
    print(f"paired A/B: median {statistics.median(ratios):.3f}, interquartile "
          f"{quantile(ratios, 0.25):.3f}-{quantile(ratios, 0.75):.3f} (> 1: B is faster)")


if __name__ == "__main__":
    main()
