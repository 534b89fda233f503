#!/usr/bin/env python3
"""Compile-time benchmark: wall time of `tensorc compile` per model and target, split by stage and
step (`--log timing`), plus a repeated compile served by the compile cache.

    bench/compile_time.py --tensorc build/tools/tensorc/tensorc [--models bert,gpt2,...]
        [--targets cpu,cuda] [--jobs N] [--zoo DIR] [--chain 20000]

Zoo models (models/make_zoo.py) come from DIR (default: the model cache); `--chain N` adds a
generated chain of N relu nodes. Each cold compile runs with --no-cache; the cached compile then
runs twice into a fresh cache directory (the second is timed). Prints one table per model and
target (stages in order, milliseconds) and a summary table; the machine's load average is
printed with each row, since a shared machine's load moves these figures a lot.
"""
import argparse
import os
import re
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
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    wall = time.monotonic() - start
    if result.returncode != 0:
        raise SystemExit(f"compile_time: {' '.join(command)} failed:\n{result.stderr}")
    steps = [(m.group(1), float(m.group(2))) for line in result.stderr.splitlines()
             if (m := TIMING.search(line))]
    return wall, steps


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
                cold, steps = compile_once(args.tensorc, path, os.path.join(tmp, "cold"), target,
                                           args.jobs, ["--no-cache"])
                load = os.getloadavg()[0]
                env = dict(os.environ, TENSORC_CACHE_DIR=os.path.join(tmp, f"cache-{name}"))
                compile_once(args.tensorc, path, os.path.join(tmp, "warm"), target, args.jobs, [],
                             env)
                cached, _ = compile_once(args.tensorc, path, os.path.join(tmp, "hit"), target,
                                         args.jobs, [], env)
                print(f"\n{name} --target {target} (-j {args.jobs or os.cpu_count()}): "
                      f"{cold:.2f} s, load average {load:.1f}")
                for step, ms in steps:
                    print(f"  {step:<75} {ms:>9.1f}")
                summary.append((name, target, cold, cached, load))
    print("\n| model | target | compile (s) | cached compile (s) | load average |")
    print("| --- | --- | --- | --- | --- |")
    for name, target, cold, cached, load in summary:
        print(f"| {name} | {target} | {cold:.2f} | {cached:.2f} | {load:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
