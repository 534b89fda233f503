#!/usr/bin/env python3
"""A small lit-style runner: `# RUN:` lines run in bash, `# CHECK:` lines are checked by FileCheck.
Test files are FX-text (.fx) or loop IR (.loop); both take `#` comment lines.

A file may hold several cases separated by a line `# -----`; each case is written to its own
file and the file's RUN lines run once per case with %s naming that case. Substitutions:
%s (the case file), %S (the directory of the test), tensorc, tensorc-run (with --tensorc-run),
FileCheck, not (inverts a normal exit status; a crash still fails).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile


def run_file(path, tensorc, filecheck, tensorc_run=None):
    with open(path) as f:
        text = f.read()
    runs = [m.group(1).strip() for m in re.finditer(r"^#\s*RUN:(.*)$", text, re.M)]
    if not runs:
        return [f"{path}: no RUN lines"]
    cases = re.split(r"^# -----\s*$", text, flags=re.M)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for index, case in enumerate(cases):
            case_path = os.path.join(tmp, f"case{index}{os.path.splitext(path)[1]}")
            with open(case_path, "w") as f:
                f.write(case)
            for run in runs:
                command = (run.replace("%s", case_path)
                              .replace("%S", os.path.dirname(os.path.abspath(path))))
                runner = f"tensorc-run() {{ {tensorc_run} \"$@\"; }}\n" if tensorc_run else ""
                script = ("set -o pipefail\n"
                          "not() { \"$@\"; local s=$?; [ $s -ne 0 ] && [ $s -lt 128 ]; }\n"
                          f"tensorc() {{ {tensorc} \"$@\"; }}\n" + runner +
                          f"FileCheck() {{ {filecheck} \"$@\"; }}\n" + command + "\n")
                result = subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                                        cwd=tmp, timeout=120)
                if result.returncode != 0:
                    failures.append(f"{path} case {index}: `{run}` failed\n{result.stdout}"
                                    f"{result.stderr}")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tensorc", required=True)
    parser.add_argument("--filecheck", required=True)
    parser.add_argument("--tensorc-run", help="the runtime-only runner, for RUN lines using it")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    failures = []
    for path in args.files:
        failures += run_file(path, args.tensorc, args.filecheck, args.tensorc_run)
    for failure in failures:
        print("FAIL:", failure)
    passed = len(args.files) - len({f.split(" case")[0].split(":")[0] for f in failures})
    print(f"{passed} passed, {len(args.files) - passed} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
