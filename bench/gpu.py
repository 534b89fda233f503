#!/usr/bin/env python3
"""GPU benchmarks: tensorc CUDA bundles against eager PyTorch and torch.compile (default and
reduce-overhead), in one run on the GPU machine.

The compiler runs where LLVM and NVRTC are; the GPU machine needs only the kit, numpy and torch:

    bench/gpu.py prepare --out KIT [--build-dir build] [--cuda-arch sm_90]   # compiles bundles
    bench/gpu.py run KIT [--iterations 50] [--json out.json]                  # on the GPU

Cases (issue 5): pointwise (x + y).relu() * 2 on 64M fp32; layer_norm + softmax over 8192 x 4096
fp32; the seed MLP (1024-4096-4096-1024, GELU) at batch 64 in bf16; seed-003 (3 x [Linear 128,
LayerNorm, SiLU]) at batch 64 in fp16. Every case is checked against eager PyTorch before timing.
Times are medians of >= 30 runs after warm-up, host-measured from launch to stream completion,
with inputs already on the device for everyone (tensorc-run --iterations times kernels only).
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "models"))
sys.path.insert(0, os.path.join(REPO, "test", "gpu"))
import safetensors_np  # noqa: E402

MIN_ITERATIONS = 30
N_POINTWISE = 64 * 1024 * 1024
LN_ROWS, LN_COLS = 8192, 4096
BATCH = 64

POINTWISE_FX = f"""graph(%x: f32[{N_POINTWISE}], %y: f32[{N_POINTWISE}]):
  %s : f32[{N_POINTWISE}] = call_function[target=aten.add](args=(%x, %y))
  %r : f32[{N_POINTWISE}] = call_function[target=aten.relu](args=(%s,))
  %o : f32[{N_POINTWISE}] = call_function[target=aten.mul](args=(%r, 2.0))
  return (%o,)
"""
LN_SOFTMAX_FX = f"""graph(%x: f32[{LN_ROWS}, {LN_COLS}], %w: f32[{LN_COLS}], %b: f32[{LN_COLS}]):
  %ln : f32[{LN_ROWS}, {LN_COLS}] = call_function[target=aten.layer_norm](args=(%x, [{LN_COLS}], %w, %b, 1e-05))
  %sm : f32[{LN_ROWS}, {LN_COLS}] = call_function[target=aten.softmax](args=(%ln, -1))
  return (%sm,)
"""
# name -> (dtype, input shape, bundle source)
CASES = {
    "pointwise": ("f32", {"x": [N_POINTWISE], "y": [N_POINTWISE]}),
    "layernorm_softmax": ("f32", {"x": [LN_ROWS, LN_COLS]}),
    "mlp": ("bf16", {"x": [BATCH, 1024]}),
    "seed003": ("f16", {"x": [BATCH, 128]}),
}


def log(message):
    print(f"bench: {message}", file=sys.stderr, flush=True)


def ln_weights():
    rng = np.random.default_rng(5)
    return {"w": (1 + 0.1 * rng.standard_normal(LN_COLS)).astype(np.float32),
            "b": (0.1 * rng.standard_normal(LN_COLS)).astype(np.float32)}


# ---- prepare (where the compiler is) ------------------------------------------------------------

def prepare(args):
    import make_model_kit  # test/gpu: casts an FX model and its weights to f16/bf16

    tensorc = os.path.join(args.build_dir, "tools", "tensorc", "tensorc")
    runner = os.path.join(args.build_dir, "runtime", "tensorc-run")
    if os.path.exists(args.out):
        shutil.rmtree(args.out)
    work = os.path.join(args.out, "work")
    os.makedirs(work)
    shutil.copy(runner, os.path.join(args.out, "tensorc-run"))
    subprocess.run([sys.executable, os.path.join(REPO, "models", "make_models.py")], check=True,
                   stdout=subprocess.DEVNULL)
    sources = {}
    path = os.path.join(work, "pointwise.fx")
    open(path, "w").write(POINTWISE_FX)
    sources["pointwise"] = path
    path = os.path.join(work, "layernorm_softmax.fx")
    open(path, "w").write(LN_SOFTMAX_FX)
    safetensors_np.save(path[:-3] + ".safetensors", ln_weights())
    sources["layernorm_softmax"] = path
    for case, model in (("mlp", "mlp"), ("seed003", "ln_silu")):
        dtype = CASES[case][0]
        path = os.path.join(work, f"{case}_{dtype}.fx")
        make_model_kit.cast_model(os.path.join(REPO, "models", f"{model}.fx"), path, dtype)
        sources[case] = path
    for case, source in sources.items():
        start = time.perf_counter()
        subprocess.run([tensorc, "compile", source, "-o", os.path.join(args.out, case), "--target",
                        "cuda", "--cuda-arch", args.cuda_arch], check=True)
        log(f"{case}: compiled in {time.perf_counter() - start:.2f} s")
        shutil.rmtree(os.path.join(args.out, case, "src"), ignore_errors=True)
    shutil.rmtree(work)
    log(f"kit ready in {args.out}")
    return 0


# ---- run (on the GPU machine) -------------------------------------------------------------------

def torch_models(torch):
    F = torch.nn.functional
    dev = "cuda"

    def pointwise(x, y):
        return (x + y).relu() * 2

    lw = {k: torch.from_numpy(v).to(dev) for k, v in ln_weights().items()}

    def layernorm_softmax(x):
        return F.softmax(F.layer_norm(x, (LN_COLS,), lw["w"], lw["b"], 1e-5), dim=-1)

    # The seed models' weights: models/make_models.py is deterministic (numpy, fixed seeds).
    subprocess.run([sys.executable, os.path.join(REPO, "models", "make_models.py")], check=True,
                   stdout=subprocess.DEVNULL)
    def load(model, dtype):
        raw = safetensors_np.load(os.path.join(REPO, "models", f"{model}.safetensors"))
        return {k: torch.from_numpy(v).to(dev).to(dtype) for k, v in raw.items()}

    mp = load("mlp", torch.bfloat16)

    def mlp(x):
        x = F.gelu(F.linear(x, mp["fc1_w"], mp["fc1_b"]))
        x = F.gelu(F.linear(x, mp["fc2_w"], mp["fc2_b"]))
        return F.linear(x, mp["fc3_w"], mp["fc3_b"])

    sp = load("ln_silu", torch.float16)

    def seed003(x):
        for i in (1, 2, 3):
            x = F.linear(x, sp[f"fc{i}_w"], sp[f"fc{i}_b"])
            x = F.silu(F.layer_norm(x, (128,), sp[f"ln{i}_w"], sp[f"ln{i}_b"], 1e-5))
        return x

    return {"pointwise": pointwise, "layernorm_softmax": layernorm_softmax, "mlp": mlp,
            "seed003": seed003}


def time_torch(torch, fn, inputs, iterations, warmup=10):
    for _ in range(warmup):
        fn(*inputs)
    torch.cuda.synchronize()
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        fn(*inputs)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def time_tensorc(runner, bundle, inputs_path, iterations, graphs):
    cmd = [runner, bundle, "--device", "cuda", "--inputs", inputs_path, "--iterations",
           str(iterations), "--cuda-graphs", "on" if graphs else "off"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    match = re.search(r"median ([0-9.]+) ms", out)
    if not match:
        raise RuntimeError(f"no timing in tensorc-run output: {out}")
    return float(match.group(1))


def run(args):
    import torch
    import make_model_kit

    runner = os.path.join(args.kit, "tensorc-run")
    models = torch_models(torch)
    tdtype = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
    records = []
    rng = np.random.default_rng(0)
    device_name = torch.cuda.get_device_name()
    # Copy bandwidth of this device (read + write bytes per second), for the pointwise target.
    a = torch.empty(N_POINTWISE, device="cuda")
    b = torch.empty_like(a)
    copy_ms = time_torch(torch, lambda: b.copy_(a), [], args.iterations)
    copy_gbs = 2 * a.numel() * 4 / copy_ms / 1e6
    del a, b
    for case, (dtype, shapes) in CASES.items():
        arrays = {name: rng.uniform(-1, 1, shape).astype(np.float32) for name, shape in shapes.items()}
        inputs_path = os.path.join(args.kit, f"{case}_inputs.safetensors")
        outputs_path = os.path.join(args.kit, f"{case}_outputs.safetensors")
        if dtype == "bf16":
            stored = {k: make_model_kit.to_bf16_bits(v) for k, v in arrays.items()}
            safetensors_np.save(inputs_path, stored, bf16=stored.keys())
        else:
            stored = {k: v.astype(np.float16 if dtype == "f16" else np.float32)
                      for k, v in arrays.items()}
            safetensors_np.save(inputs_path, stored)
        torch_inputs = [torch.from_numpy(v).to("cuda").to(tdtype[dtype]) for v in arrays.values()]
        fn = models[case]
        with torch.no_grad():
            want = fn(*torch_inputs).float().cpu().numpy()
            bundle = os.path.join(args.kit, case)
            subprocess.run([runner, bundle, "--device", "cuda", "--inputs", inputs_path,
                            "--outputs", outputs_path], check=True, capture_output=True)
            got = list(safetensors_np.load(outputs_path).values())[0]
            if dtype == "bf16":
                got = safetensors_np.bf16_to_f32(got)
            tol = 1e-3 if dtype == "f32" else 2e-2
            close = np.isclose(got.astype(np.float64), want.astype(np.float64), rtol=tol,
                               atol=tol if dtype != "f32" else 1e-5)
            if not close.all():
                raise RuntimeError(f"{case}: tensorc differs from eager PyTorch in "
                                   f"{int((~close).sum())} of {close.size} values")
            record = {"case": case, "dtype": dtype, "shapes": shapes}
            record["eager_ms"] = time_torch(torch, fn, torch_inputs, args.iterations)
            compiled = torch.compile(fn)
            record["compile_ms"] = time_torch(torch, compiled, torch_inputs, args.iterations)
            torch._dynamo.reset()
            overhead = torch.compile(fn, mode="reduce-overhead")
            record["compile_ro_ms"] = time_torch(torch, overhead, torch_inputs, args.iterations)
            torch._dynamo.reset()
        record["tensorc_ms"] = time_tensorc(runner, bundle, inputs_path, args.iterations, False)
        record["tensorc_graphs_ms"] = time_tensorc(runner, bundle, inputs_path, args.iterations,
                                                   True)
        os.remove(inputs_path)
        os.remove(outputs_path)
        if case == "pointwise":
            best = min(record["tensorc_ms"], record["tensorc_graphs_ms"])
            record["tensorc_gbs"] = 3 * N_POINTWISE * 4 / best / 1e6
            record["copy_gbs"] = copy_gbs
        records.append(record)
        log(f"{case}: done")
    print(f"device: {device_name}; torch {torch.__version__}; median of {args.iterations} runs; "
          "ratio = peer ms / tensorc ms (> 1: tensorc faster)")
    header = (f"{'case':<18} {'dtype':<5} {'eager':>8} {'compile':>8} {'c-ro':>8} {'tensorc':>8} "
              f"{'tc-graph':>8} {'vs eager':>8} {'vs comp':>8} {'vs c-ro':>8}")
    print(header)
    ratios = {"eager": [], "compile": [], "compile_ro": []}
    for r in records:
        best = min(r["tensorc_ms"], r["tensorc_graphs_ms"])
        rs = {k: r[f"{k}_ms"] / best for k in ratios}
        for k, v in rs.items():
            ratios[k].append(v)
        print(f"{r['case']:<18} {r['dtype']:<5} {r['eager_ms']:8.4f} {r['compile_ms']:8.4f} "
              f"{r['compile_ro_ms']:8.4f} {r['tensorc_ms']:8.4f} {r['tensorc_graphs_ms']:8.4f} "
              f"{rs['eager']:8.2f} {rs['compile']:8.2f} {rs['compile_ro']:8.2f}")
    geo = {k: float(np.exp(np.mean(np.log(v)))) for k, v in ratios.items()}
    print(f"{'geomean ratio':<24} {'':>44} {geo['eager']:8.2f} {geo['compile']:8.2f} "
          f"{geo['compile_ro']:8.2f}")
    for r in records:
        if "tensorc_gbs" in r:
            print(f"pointwise: tensorc {r['tensorc_gbs']:.0f} GB/s = "
                  f"{100 * r['tensorc_gbs'] / r['copy_gbs']:.0f}% of this device's copy bandwidth "
                  f"({r['copy_gbs']:.0f} GB/s, torch copy_)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": device_name, "torch": torch.__version__, "records": records,
                       "geomean": geo}, f, indent=1)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare", help="compile the bundles into a kit (needs the compiler)")
    p.add_argument("--out", required=True)
    p.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    p.add_argument("--cuda-arch", default="sm_90")
    r = sub.add_parser("run", help="benchmark a kit on the GPU (needs torch)")
    r.add_argument("kit")
    r.add_argument("--iterations", type=int, default=50)
    r.add_argument("--json")
    args = parser.parse_args()
    if args.command == "run" and args.iterations < MIN_ITERATIONS:
        parser.error(f"--iterations must be at least {MIN_ITERATIONS}")
    return prepare(args) if args.command == "prepare" else run(args)


if __name__ == "__main__":
    sys.exit(main())
