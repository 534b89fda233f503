#!/usr/bin/env python3
"""Runs one libFuzzer harness the way CTest and the long runs do.

First every input under --regressions (findings fixed earlier) is replayed once; then the fuzzer
runs for --seconds on a scratch corpus in --work-dir, seeded from --seeds (read-only: libFuzzer
writes new inputs only into the scratch corpus). Prints the executions, coverage (cov: edges,
ft: features) and corpus size, and fails when libFuzzer reports a crash, leak, timeout or
out-of-memory (the input is left in --work-dir/artifacts).
"""
import argparse
import os
import re
import subprocess
import sys


def replay(fuzzer, directory, environment):
    inputs = sorted(os.path.join(directory, name) for name in os.listdir(directory)
                    if not name.startswith(".") and name != "README.md") \
        if os.path.isdir(directory) else []
    if not inputs:
        return True
    result = subprocess.run([fuzzer, "-runs=1", "-timeout=10", "-rss_limit_mb=2048"] + inputs,
                            capture_output=True, text=True, env=environment)
    if result.returncode != 0:
        sys.stdout.write(result.stdout[-4000:] + result.stderr[-8000:])
        print(f"FAIL: a regression input of {directory} fails again")
        return False
    print(f"replayed {len(inputs)} regression input(s): ok")
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fuzzer", required=True)
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--regressions", default="")
    parser.add_argument("--seeds", nargs="*", default=[])
    parser.add_argument("--jobs", type=int, default=1, help="libFuzzer -fork workers")
    parser.add_argument("extra", nargs="*", help="more libFuzzer flags")
    args = parser.parse_args()

    # The harnesses' scratch files (and any a crash leaves behind) stay in the work directory.
    environment = dict(os.environ, TMPDIR=os.path.join(args.work_dir, "tmp"))
    os.makedirs(environment["TMPDIR"], exist_ok=True)
    if args.regressions and not replay(args.fuzzer, args.regressions, environment):
        return 1
    corpus = os.path.join(args.work_dir, "corpus")
    artifacts = os.path.join(args.work_dir, "artifacts") + os.sep
    os.makedirs(corpus, exist_ok=True)
    os.makedirs(artifacts, exist_ok=True)
    command = [args.fuzzer, f"-max_total_time={args.seconds}", "-timeout=10",
               "-rss_limit_mb=2048", "-max_len=65536", "-print_final_stats=1",
               f"-artifact_prefix={artifacts}"]
    if args.jobs > 1:
        command.append(f"-fork={args.jobs}")
    command += args.extra + [corpus] + [seed for seed in args.seeds if os.path.isdir(seed)]
    log_path = os.path.join(args.work_dir, "fuzz.log")
    with open(log_path, "w") as log:
        result = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, env=environment)
    text = open(log_path, errors="replace").read()
    # The last status line: "#123456 DONE cov: 1234 ft: 5678 corp: 90/12Kb ..." (or a pulse).
    status = re.findall(r"^#(\d+)\s+\w+\s+cov: (\d+) ft: (\d+) corp: (\d+)", text, re.M)
    runs = re.findall(r"stat::number_of_executed_units:\s*(\d+)", text)
    name = os.path.basename(args.fuzzer)
    if status:
        executions, cov, ft, corp = status[-1]
        print(f"{name}: {runs[-1] if runs else executions} executions in {args.seconds} s, "
              f"cov: {cov} ft: {ft}, corpus {corp} inputs")
    if result.returncode != 0:
        crash = re.search(r"==\d+==ERROR: .*|SUMMARY: .*|ALARM: .*|Test unit written to .*", text)
        print(text[-6000:])
        print(f"FAIL: {name} exited with {result.returncode}"
              + (f" ({crash.group(0)})" if crash else "") + f"; log: {log_path}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
