#!/usr/bin/env python3
"""Runs a training kit (test/gpu/make_training_kit.py) on a GPU against PyTorch autograd.

Per dtype: the gradients of one step (tensorc's `grads` bundle vs torch autograd on the same
weights and batch; f32 within rtol 1e-3 + 1e-5 of the largest |grad|, f16 within 2e-2), then
50 SGD steps (tensorc-run --train-steps on the `step` bundle vs the same loop in eager torch),
then the time of one training step (forward, backward, SGD update) for tensorc's CUDA-graph step
and for torch eager, torch.compile and torch.compile(mode="reduce-overhead") (the model
and its loss compiled together; backward, a foreach SGD step and zero_grad as torch runs them). Medians of --iterations
after warm-up, CUDA events around each step. Needs torch with CUDA.
"""
import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "models"))
import safetensors_np  # noqa: E402

LAYERS = 3


class Seed003(torch.nn.Module):
    """3 x [Linear 128, LayerNorm, SiLU], as models/make_models.py builds ln_silu.fx."""

    def __init__(self, weights, dtype):
        super().__init__()
        self.p = torch.nn.ParameterDict({
            k: torch.nn.Parameter(torch.from_numpy(np.ascontiguousarray(v)).to("cuda", dtype))
            for k, v in weights.items()})

    def forward(self, x):
        for i in range(1, LAYERS + 1):
            p = self.p
            x = F.linear(x, p[f"fc{i}_w"], p[f"fc{i}_b"])
            x = F.layer_norm(x, (x.shape[-1],), p[f"ln{i}_w"], p[f"ln{i}_b"], 1e-5)
            x = F.silu(x)
        return x


def loss_fn(out, label):
    return F.mse_loss(out.float(), label.float())


class WithLoss(torch.nn.Module):
    """The model and its loss, compiled as one (so the backward graph covers both)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x, label):
        return loss_fn(self.model(x), label)


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"FAILED: {' '.join(cmd)}\n{result.stdout}{result.stderr}")
    return result.stdout


def time_torch(step, iterations):
    for _ in range(10):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(iterations):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return float(np.median(times))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kit")
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    meta = json.load(open(os.path.join(args.kit, "kit.json")))
    runner = os.path.join(args.kit, "tensorc-run")
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, batch "
          f"{meta['batch']}, lr {meta['lr']}")
    failures, rows = 0, []
    for dtype_name, dtype in (("f32", torch.float32), ("f16", torch.float16)):
        folder = os.path.join(args.kit, dtype_name)
        data_path = os.path.join(folder, "data.safetensors")
        data = safetensors_np.load(data_path)
        weights = safetensors_np.load(os.path.join(folder, "weights.safetensors"))
        x = torch.from_numpy(data["x"]).cuda()
        label = torch.from_numpy(data["label"]).cuda()

        # 1. Gradients of one step.
        model = Seed003(weights, dtype)
        loss = loss_fn(model(x), label)
        loss.backward()
        out_path = os.path.join(folder, "grads_out.safetensors")
        run([runner, os.path.join(folder, "grads"), "--device", "cuda", "--inputs", data_path,
             "--outputs", out_path])
        got = safetensors_np.load(out_path)
        rtol, atol = (1e-3, 1e-5) if dtype_name == "f32" else (2e-2, 2e-2)
        worst, ok = 0.0, abs(float(got["loss"]) - loss.item()) <= rtol * abs(loss.item()) + 1e-6
        for name, param in model.p.items():
            want = param.grad.float().cpu().numpy().astype(np.float64)
            have = got[f"grad_{name}"].astype(np.float64)
            scale = max(np.abs(want).max(), 1e-30)
            worst = max(worst, float(np.abs(have - want).max() / scale))
            ok = ok and bool((np.abs(have - want) <= atol * scale + rtol * np.abs(want)).all())
        print(f"{dtype_name}: loss {float(got['loss']):.6f} (torch {loss.item():.6f}), "
              f"{len(model.p)} gradients vs torch autograd: {'ok' if ok else 'MISMATCH'} "
              f"(max |diff| / max |grad| {worst:.2e})")
        failures += not ok

        # 2. Loss curve.
        text = run([runner, os.path.join(folder, "step"), "--device", "cuda", "--inputs",
                    data_path, "--train-steps", str(args.steps)])
        ours = [float(v) for v in re.findall(r"^step \d+: loss (\S+)$", text, re.M)]
        model = Seed003(weights, dtype)
        opt = torch.optim.SGD(model.parameters(), lr=meta["lr"])
        theirs = []
        for _ in range(args.steps):
            opt.zero_grad()
            loss = loss_fn(model(x), label)
            loss.backward()
            opt.step()
            theirs.append(loss.item())
        tol = 1e-3 if dtype_name == "f32" else 5e-2
        ok = len(ours) == args.steps and np.allclose(ours, theirs, rtol=tol, atol=1e-4) \
            and ours[-1] < ours[0]
        loop = re.search(r"\(([0-9.]+) ms per step", text)
        print(f"{dtype_name}: {args.steps} SGD steps, loss {ours[0]:.6f} -> {ours[-1]:.6f} "
              f"(torch {theirs[0]:.6f} -> {theirs[-1]:.6f}): {'ok' if ok else 'MISMATCH'}; "
              f"tensorc-run's loop {loop.group(1) if loop else '?'} ms per step (state through the host)")
        failures += not ok

        # 3. Step time.
        text = run([runner, os.path.join(folder, "step"), "--device", "cuda", "--inputs",
                    data_path, "--iterations", str(args.iterations)])
        ours_ms = float(re.search(r"median ([0-9.]+) ms", text).group(1))
        row = {"dtype": dtype_name, "tensorc": ours_ms}
        for mode in ("eager", "default", "reduce-overhead"):
            model = Seed003(weights, dtype)
            with_loss = WithLoss(model)
            forward = with_loss if mode == "eager" else torch.compile(with_loss, mode=mode)
            opt = torch.optim.SGD(model.parameters(), lr=meta["lr"], foreach=True)

            def step():
                if mode == "reduce-overhead":
                    torch.compiler.cudagraph_mark_step_begin()
                loss = forward(x, label)
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
            row[mode] = time_torch(step, args.iterations)
        rows.append(row)

    print("\n| dtype | eager ms | compile ms | reduce-overhead ms | tensorc ms | vs eager | "
          "vs compile | vs reduce-overhead |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        t = r["tensorc"]
        print(f"| {r['dtype']} | {r['eager']:.3f} | {r['default']:.3f} | "
              f"{r['reduce-overhead']:.3f} | {t:.3f} | {r['eager'] / t:.2f} | "
              f"{r['default'] / t:.2f} | {r['reduce-overhead'] / t:.2f} |")
    if failures:
        sys.exit(f"{failures} check(s) failed")
    print("training on the GPU matches PyTorch autograd")


if __name__ == "__main__":
    main()
