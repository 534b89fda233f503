#!/usr/bin/env python3
"""`tensorc bisect` on the seed models, clean and with a bug planted by TENSORC_INJECT_BUG
(testing only):

- clean: exit 0 and `all N kernels match`, N the number of launches (generated kernels and
  fallback ops) in the manifest of the same model compiled by `tensorc compile`;
- models/convnet.fx with `relu:accuracy`: exit 2, and the first divergent kernel is a generated
  kernel of that manifest computing `relu`, whose fused nodes come from an `aten.relu` node of
  the model;
- models/mlp.fx has no ReLU: its GELU decomposes into `erf`, so `erf:accuracy` is planted there;
  the first divergent kernel computes `erf` and comes from an `aten.gelu` node.

    check_bisect.py --tensorc build/tools/tensorc/tensorc [--models convnet,mlp]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# model -> (planted bug, the loop IR op it changes, the model op it comes from)
CASES = {
    "convnet": ("relu:accuracy", "relu", "aten.relu"),
    "mlp": ("erf:accuracy", "erf", "aten.gelu"),
}


def run(args, env=None):
    result = subprocess.run(args, capture_output=True, text=True, timeout=900,
                            env={**os.environ, **(env or {})})
    return result.returncode, result.stdout + result.stderr


def launches(tensorc, model, tmp):
    """(every launch, the generated-kernel launches) of the manifest: bisect counts fallback ops
    run on their reference kernels as kernels too, as `compile` does."""
    bundle = os.path.join(tmp, os.path.basename(model) + ".bundle")
    code, out = run([tensorc, "compile", model, "-o", bundle])
    assert code == 0, f"compile {model}: {out}"
    with open(os.path.join(bundle, "manifest.json")) as f:
        manifest = json.load(f)
    return ([launch["name"] for launch in manifest["launches"]],
            [launch["name"] for launch in manifest["launches"] if launch["kind"] == "kernel"])


def model_ops(model):
    """Node name -> (aten target, the names of its operands), from the FX-text."""
    ops = {}
    with open(model) as f:
        for line in f:
            m = re.match(r"\s*%(\w+)\s*:.*call_function\[target=([\w.]+)\]\(args=(.*)\)$",
                         line.rstrip())
            if m:
                ops[m.group(1)] = (m.group(2), re.findall(r"%(\w+)", m.group(3)))
    return ops


def check(tensorc, name, tmp):
    model = os.path.join(ROOT, "models", f"{name}.fx")
    planted, loop_op, source_op = CASES[name]
    everything, kernels = launches(tensorc, model, tmp)

    code, out = run([tensorc, "bisect", model])
    assert code == 0, f"clean bisect of {name} exited {code}:\n{out}"
    assert f"all {len(everything)} kernels match" in out, \
        f"clean bisect of {name}: expected all {len(everything)} kernels to match:\n{out}"
    print(f"{name} clean: " + next(l for l in out.splitlines() if l.startswith("all ")))

    code, out = run([tensorc, "bisect", model], env={"TENSORC_INJECT_BUG": planted})
    assert code == 2, f"bisect of {name} with {planted} exited {code}:\n{out}"
    lines = out.splitlines()
    first = next((l for l in lines if l.startswith("first divergent kernel: ")), None)
    assert first, f"{name} with {planted}: no divergent kernel named:\n{out}"
    kernel = first.split(", ")[-1]
    assert kernel in kernels, f"{name}: {kernel} is not a kernel launch of {kernels}"
    fused = []
    for line in lines[lines.index(first) + 1:]:
        m = re.match(r"\s*fused node (\S+) \(([^)]*)\) from %(\w+) \(([\w.]+)\)", line)
        if not m:
            break
        fused.append(m.groups())
    assert fused, f"{name}: no fused nodes listed after {first}:\n{out}"
    ops = model_ops(model)
    culprit = [f for f in fused if loop_op in f[1].split(", ")]
    assert culprit, f"{name}: kernel {kernel} computes no {loop_op}: {fused}"
    for _, _, source, target in culprit:
        # The loop node is named after the model node it computes; a producer inlined into it
        # (the relu a max pool reads) shows among its ops, its model node among the operands.
        assert source in ops and ops[source][0] == target, \
            f"{name}: {source} is {ops.get(source)} in the model, bisect says {target}"
        assert target == source_op or any(ops.get(arg, ("",))[0] == source_op
                                          for arg in ops[source][1]), \
            f"{name}: {source} ({target}) neither is nor reads an {source_op} node"
    print(f"{name} with {planted}: {first}; " +
          "; ".join(f"{n} ({o}) from %{s} ({t})" for n, o, s, t in culprit))
    verdict = next((l for l in lines if l.startswith("verdict: ")), None)
    if verdict:
        print(f"  {verdict}")
    assert verdict and kernel in verdict, f"{name}: the verdict does not name {kernel}:\n{out}"


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tensorc", required=True)
    parser.add_argument("--models", default="convnet,mlp")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            check(args.tensorc, name, tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
