#!/usr/bin/env python3
"""Compiled training steps against the interpreter's, on models/.

For each model, on a fixed synthetic batch (seeded):
  1. gradients: `tensorc compile --train --optimizer none` and one `tensorc train` step of the
     bundle give the loss and every parameter's gradient; `tensorc train --interp` gives the
     same from the interpreter. They must agree (rtol 1e-3, atol 1e-5 of the largest |grad|).
  2. loss curve: `--optimizer sgd` (and adamw for seed-003) for --steps steps, compiled and
     interpreted; each step's loss must agree (rtol 1e-3) and the last must be below half the
     first.
  3. with --so-runner: the first optimizer's step compiled with --emit=so, trained through the C
     ABI (tc_model_train_step, save/load state) by that runner, must take the same losses.
Prints one line per check; exits 1 on any mismatch.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "models"))
import safetensors_np  # noqa: E402

# model file, input features, output features, batch, learning rates per optimizer
MODELS = {
    "seed003": ("ln_silu.fx", 128, 128, 8, {"sgd": 0.5, "adamw": 0.01}),
    "mlp": ("mlp.fx", 1024, 1024, 4, {"sgd": 0.5}),
}


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"FAILED: {' '.join(cmd)}\n{result.stdout}{result.stderr}")
    return result.stdout


def losses(text):
    return [float(v) for v in re.findall(r"^step \d+: loss (\S+)$", text, re.M)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tensorc", required=True)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--so-runner", help="test/runtime/train_so_main, to train a --emit=so "
                                            "library through the C ABI")
    args = parser.parse_args()
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            model_file, features, outputs, batch, rates = MODELS[name]
            model = os.path.join(ROOT, "models", model_file)
            rng = np.random.default_rng(3)
            data = os.path.join(tmp, f"{name}_data.safetensors")
            # A learnable target: a smooth function of the input, scaled to the output range.
            x = rng.standard_normal((batch, features)).astype(np.float32)
            label = np.tanh(x[:, :outputs] * 0.5).astype(np.float32)
            safetensors_np.save(data, {"x": x, "label": label})

            # 1. Gradients.
            bundle = os.path.join(tmp, f"{name}_grads")
            run([args.tensorc, "compile", model, "-o", bundle, "--train", "--optimizer", "none"])
            compiled_out = os.path.join(tmp, f"{name}_grads_compiled.safetensors")
            interp_out = os.path.join(tmp, f"{name}_grads_interp.safetensors")
            run([args.tensorc, "train", bundle, "--data", data, "--outputs", compiled_out])
            run([args.tensorc, "train", model, "--interp", "--optimizer", "none", "--data", data,
                 "--outputs", interp_out])
            got = safetensors_np.load(compiled_out)
            want = safetensors_np.load(interp_out)
            worst, names = 0.0, sorted(want)
            ok = sorted(got) == names
            for key in names if ok else []:
                g, w = got[key].astype(np.float64), want[key].astype(np.float64)
                scale = max(np.abs(w).max(), 1e-30)
                err = np.abs(g - w) - 1e-3 * np.abs(w)
                worst = max(worst, float(np.abs(g - w).max() / scale))
                ok = ok and bool((err <= 1e-5 * scale).all())
            grads = [n for n in names if n.startswith("grad_")]
            print(f"{name}: loss + {len(grads)} gradients compiled vs interpreter: "
                  f"{'ok' if ok else 'MISMATCH'} (max |diff| / max |grad| {worst:.2e})")
            failures += not ok

            # 2. Loss curves.
            for optimizer, lr in rates.items():
                bundle = os.path.join(tmp, f"{name}_{optimizer}")
                flags = ["--optimizer", optimizer, "--lr", str(lr)]
                run([args.tensorc, "compile", model, "-o", bundle, "--train"] + flags)
                compiled = losses(run([args.tensorc, "train", bundle, "--data", data,
                                       "--steps", str(args.steps)]))
                interp = losses(run([args.tensorc, "train", model, "--interp", "--data", data,
                                     "--steps", str(args.steps)] + flags))
                same = len(compiled) == len(interp) == args.steps and np.allclose(
                    compiled, interp, rtol=1e-3, atol=1e-6)
                learned = len(compiled) == args.steps and compiled[-1] < 0.5 * compiled[0]
                ok = same and learned
                print(f"{name} {optimizer} lr {lr}: {args.steps} steps, loss "
                      f"{compiled[0]:.6f} -> {compiled[-1]:.6f} compiled, "
                      f"{interp[0]:.6f} -> {interp[-1]:.6f} interpreter: "
                      f"{'ok' if ok else 'MISMATCH' if not same else 'DID NOT LEARN'}")
                failures += not ok
                if args.so_runner and optimizer == next(iter(rates)):
                    library = os.path.join(tmp, f"{name}_{optimizer}.so")
                    run([args.tensorc, "compile", model, "-o", library, "--emit=so",
                         "--train"] + flags)
                    specs = []
                    for key, array in (("x", x), ("label", label)):
                        raw = os.path.join(tmp, f"{name}_{key}.bin")
                        array.tofile(raw)
                        specs.append(raw + ":" + "x".join(map(str, array.shape)))
                    state = os.path.join(tmp, f"{name}_state.safetensors")
                    text = run([args.so_runner, library, str(args.steps), state] + specs)
                    via_c = losses(text)
                    ok = len(via_c) == args.steps and np.allclose(via_c, compiled, rtol=1e-6,
                                                                  atol=0)
                    print(f"{name} {optimizer} through the C ABI of a --emit=so library: "
                          f"{'ok' if ok else 'MISMATCH'} ({text.strip().splitlines()[-1]})")
                    failures += not ok
    if failures:
        sys.exit(f"{failures} training check(s) failed")
    print("compiled training matches the interpreter")


if __name__ == "__main__":
    main()
