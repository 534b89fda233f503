#!/usr/bin/env python3
"""Compile-time benchmark: wall time of `tensorc compile` per model and target, split by stage and
step (`--log timing`), plus a repeated compile served by the compile cache.

    bench/compile_time.py --tensorc build/tools/tensorc/tensorc [--models bert,gpt2,...]
        [--targets cpu,cuda] [--jobs N] [--zoo DIR] [--chain 20000] [--check-jobs]

Zoo models (models/make_zoo.py) come from DIR (default: the model cache); `--chain N` adds a
generated chain of N relu nodes. Each cold compile runs with --no-cache; the cached compile then
runs twice into a fresh cache directory (the second is timed). Prints one table per model and
target (stages in order, milliseconds) and a summary table with each compile's wall time and the
CPU time (user + sys) it used; the machine's load average is printed with each row, since a
shared machine's load moves these figures a lot (the CPU time much less than the wall time).
`--check-jobs` also compiles each model with -j 1 and -j 2 (no cache) and says whether the two
bundles are byte-identical.
"""
import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))

TIMING = re.compile(r"\[timing\] (.*): ([0-9.]+) ms$")


def compile_once(tensorc, model, out, target, jobs, extra, env=None):
    command = [tensorc, "compile", model, "-o", out, "--target", target, "-j", str(jobs),
               "--fallback=allow", "--log", "timing"] + extra
    start = time.monotonic()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.monotonic() - start
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if result.returncode != 0:
        raise SystemExit(f"compile_time: {' '.join(command)} failed:\n{result.stderr}")
    steps = [(m.group(1), float(m.group(2))) for line in result.stderr.splitlines()
             if (m := TIMING.search(line))]
    return wall, cpu, steps


def bundle_files(root):
    files = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                files[os.path.relpath(path, root)] = f.read()
    return files


def same_for_jobs(tensorc, model, tmp, target):
    """'yes (N files)' when -j 1 and -j 2 write byte-identical bundles, else the files that differ."""
    bundles = []
    for jobs in (1, 2):
        out = os.path.join(tmp, f"j{jobs}")
        compile_once(tensorc, model, out, target, jobs, ["--no-cache"])
        bundles.append(bundle_files(out))
    one, two = bundles
    differ = sorted(name for name in set(one) | set(two) if one.get(name) != two.get(name))
    return f"no: {', '.join(differ)}" if differ else f"yes ({len(one)} files)"


def chain_model(path, length):
    lines = ["graph(%x: f32[s0, 64]):"]
    prev = "%x"
    for i in range(length):
        lines.append(f"  %r{i} : f32[s0, 64] = call_function[target=aten.relu](args=({prev},))")
        prev = f"%r{i}"
    lines.append(f"  return ({prev},)")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tensorc", required=True)
    parser.add_argument("--models", default="bert,gpt2,resnet50,mobilenetv2")
    parser.add_argument("--targets", default="cpu,cuda")
    parser.add_argument("--jobs", type=int, default=0)
    parser.add_argument("--zoo", default=None, help="directory of the zoo's .onnx files")
    parser.add_argument("--chain", type=int, default=20000, help="relu chain length (0: none)")
    parser.add_argument("--check-jobs", action="store_true",
                        help="also check that -j 1 and -j 2 write byte-identical bundles")
    args = parser.parse_args()

    models = {}
    names = [m for m in args.models.split(",") if m]
    if names:
        if args.zoo:
            models.update({n: os.path.join(args.zoo, f"{n}.onnx") for n in names})
        else:
            import make_zoo
            models.update(make_zoo.build(names, make_zoo.default_out_dir()))
    summary = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.chain:
            models[f"relu_chain_{args.chain}"] = os.path.join(tmp, "chain.fx")
            chain_model(models[f"relu_chain_{args.chain}"], args.chain)
        for name, path in models.items():
            for target in args.targets.split(","):
                cold, cpu, steps = compile_once(args.tensorc, path, os.path.join(tmp, "cold"),
                                                target, args.jobs, ["--no-cache"])
                load = os.getloadavg()[0]
                env = dict(os.environ, TENSORC_CACHE_DIR=os.path.join(tmp, f"cache-{name}"))
                compile_once(args.tensorc, path, os.path.join(tmp, "warm"), target, args.jobs, [],
                             env)
                cached, cached_cpu, _ = compile_once(args.tensorc, path, os.path.join(tmp, "hit"),
                                                     target, args.jobs, [], env)
                same = same_for_jobs(args.tensorc, path, tmp, target) if args.check_jobs else ""
                print(f"\n{name} --target {target} (-j {args.jobs or os.cpu_count()}): "
                      f"{cold:.2f} s, {cpu:.2f} s CPU, load average {load:.1f}")
                for step, ms in steps:
                    print(f"  {step:<75} {ms:>9.1f}")
                summary.append((name, target, cold, cpu, cached, cached_cpu, load, same))
                sys.stdout.flush()
    print("\n| model | target | compile (s) | CPU user+sys (s) | cached compile (s) | cached CPU (s) "
          "| load average |" + (" -j 1 = -j 2 |" if args.check_jobs else ""))
    print("| --- | --- | --- | --- | --- | --- | --- |" + (" --- |" if args.check_jobs else ""))
    for name, target, cold, cpu, cached, cached_cpu, load, same in summary:
        print(f"| {name} | {target} | {cold:.2f} | {cpu:.2f} | {cached:.2f} | {cached_cpu:.2f} "
              f"| {load:.1f} |" + (f" {same} |" if args.check_jobs else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
