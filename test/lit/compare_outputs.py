#!/usr/bin/env python3
"""Compares two .safetensors files of outputs (a compiled run against the interpreter's): same
names, dtypes and shapes, values within rtol/atol (DESIGN §8: 1e-3 and 1e-5 for fp32)."""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models"))
import safetensors_np  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("actual")
    parser.add_argument("expected")
    parser.add_argument("--rtol", type=float, default=1e-3)
    parser.add_argument("--atol", type=float, default=1e-5)
    args = parser.parse_args()
    actual, expected = safetensors_np.load(args.actual), safetensors_np.load(args.expected)
    if sorted(actual) != sorted(expected):
        print(f"outputs {sorted(actual)} against {sorted(expected)}")
        return 1
    failures = 0
    for name in sorted(expected):
        a, e = actual[name], expected[name]
        if a.dtype != e.dtype or a.shape != e.shape:
            print(f"{name}: {a.dtype}{list(a.shape)} against {e.dtype}{list(e.shape)}")
            failures += 1
        elif not np.allclose(a.astype(np.float64), e.astype(np.float64), rtol=args.rtol,
                             atol=args.atol, equal_nan=True):
            worst = np.max(np.abs(a.astype(np.float64) - e.astype(np.float64)))
            print(f"{name}: values differ (largest difference {worst})")
            failures += 1
    print(f"{len(expected) - failures} of {len(expected)} outputs match")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
