#!/usr/bin/env python3
"""GPU benchmarks: tensorc CUDA bundles against eager PyTorch and torch.compile (default and
reduce-overhead), in one run on the GPU machine.

The compiler runs where LLVM and NVRTC are; the GPU machine needs only the kit, this repository
(for models/*.py), numpy, onnx and torch:

    bench/gpu.py prepare --out KIT [--build-dir build] [--cuda-arch sm_90] [--cases ...]
    bench/gpu.py check-twins [--models resnet50,...]     # torch twins vs onnxruntime (any CPU)
    bench/gpu.py run KIT [--cases ...] [--iterations 50] [--json out.json]     # on the GPU
    bench/gpu.py table out1.json [out2.json ...]          # one table from several runs
    bench/gpu.py compare KIT_A KIT_B [--cases ...]        # two compiler versions, on the GPU

Cases: pointwise (x + y).relu() * 2 on 64M fp32; layer_norm + softmax over 8192 x 4096 fp32;
the seed MLP (1024-4096-4096-1024, GELU) at batch 64 in bf16; seed-003 (3 x [Linear 128,
LayerNorm, SiLU]) at batch 64 in fp16; attention heads [8, 12, 512, 64] in fp16 (tensorc's fused
kernel against torch's scaled_dot_product_attention, `attention`, and against the formula as
written, `attention_math`; tensorc unfused against the formula, `attention_unfused`); and the
issue-7 models from models/make_zoo.py at batch 1 in f32 and f16: ResNet-50, MobileNetV2 (batch
norms folded into the convs at generation, for both sides), BERT-base (seq 128) and GPT-2 small
(seq 128, logits over the 50257-token vocabulary).
Each zoo model has a torch twin (zoo_twins.py) built from the very arrays the ONNX model holds.
Every case is checked against eager PyTorch before timing. Times are medians of >= 30 runs after
warm-up, host-measured from launch to stream completion, with inputs already on the device for
everyone (tensorc-run --iterations times kernels only). f32 runs keep torch in strict fp32 (no
TF32 in cuBLAS or cuDNN), as tensorc's f32 kernels are.

Weights are not carried: a kit holds each bundle's manifest and kernels and, instead of
weights.safetensors, weights.recipe.json: the file's header and, per tensor, which generated
array (or its transpose, a convolution weight's channels-last packing, or the concatenation of
merged projections) holds its bytes; `run` regenerates the arrays from the same
deterministic generators (models/make_zoo.py, models/make_models.py: numpy, fixed seeds),
rebuilds the file and checks its sha256 against the compiled one. Tensors tensorc derived itself
(folded constants) are carried as bytes when small (weights.carried.bin). So a kit is a few MB
whatever the models weigh.
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "models"))
sys.path.insert(0, os.path.join(REPO, "test", "gpu"))
import safetensors_np  # noqa: E402
from zoo_twins import check_twins, make_twin  # noqa: E402

MIN_ITERATIONS = 30
N_POINTWISE = 64 * 1024 * 1024
LN_ROWS, LN_COLS = 8192, 4096
BATCH = 64
ZOO_BATCH = 1
CARRY_LIMIT = 4 << 20  # bytes of tensorc-derived weights a case may carry
CHANNELS_LAST = (0, 2, 3, 1)  # how tensorc packs an NHWC convolution's weight
# How a weight's bytes come from a generated array (make_recipe's transform names).
TRANSFORMS = {"": lambda a: a, "T": lambda a: a.T,
              "channels_last": lambda a: a.transpose(CHANNELS_LAST)}

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
# Attention heads [batch, heads, seq, head dim] as a model writes them: softmax(Q.K^T / 8).V.
ATTENTION = [8, 12, 512, 64]
_scores = f"f16[{', '.join(map(str, ATTENTION[:3] + ATTENTION[2:3]))}]"
_heads = f"f16[{', '.join(map(str, ATTENTION))}]"
_keys_t = f"f16[{', '.join(map(str, ATTENTION[:2] + ATTENTION[3:] + ATTENTION[2:3]))}]"
ATTENTION_FX = f"""graph(%q: {_heads}, %k: {_heads}, %v: {_heads}):
  %kt : {_keys_t} = call_function[target=aten.transpose](args=(%k, -2, -1))
  %qk : {_scores} = call_function[target=aten.matmul](args=(%q, %kt))
  %s : {_scores} = call_function[target=aten.mul](args=(%qk, 0.125))
  %p : {_scores} = call_function[target=aten.softmax](args=(%s, -1))
  %o : {_heads} = call_function[target=aten.matmul](args=(%p, %v))
  return (%o,)
"""
# The attention cases' tensorc compile flags: the fused kernel (flash, on tensor cores), or the
# unfused GEMMs and softmax. torch runs F.scaled_dot_product_attention (`attention`) or the
# formula as written (`attention_math`, `attention_unfused`; torch.compile fuses it).
ATTENTION_FLAGS = {"attention": ["--fuse-attention"], "attention_math": ["--fuse-attention"],
                   "attention_unfused": ["--no-fuse-attention"]}
# name -> (dtype, input shapes)
CASES = {
    "pointwise": ("f32", {"x": [N_POINTWISE], "y": [N_POINTWISE]}),
    "layernorm_softmax": ("f32", {"x": [LN_ROWS, LN_COLS]}),
    "mlp": ("bf16", {"x": [BATCH, 1024]}),
    "seed003": ("f16", {"x": [BATCH, 128]}),
    **{case: ("f16", {"q": ATTENTION, "k": ATTENTION, "v": ATTENTION}) for case in ATTENTION_FLAGS},
}
ZOO_MODELS = ("resnet50", "mobilenetv2", "efficientnet_b0", "bert", "gpt2")
TWINLESS = ("efficientnet_b0",)  # no torch twin yet: `compare` only, `run` skips them
# name -> (make_zoo model, dtype), batch ZOO_BATCH
ZOO_CASES = {f"{m}_{d}": (m, d) for m in ZOO_MODELS for d in ("f32", "f16")}
ALL_CASES = list(CASES) + list(ZOO_CASES)


def log(message):
    print(f"bench: {message}", file=sys.stderr, flush=True)


def ln_weights():
    rng = np.random.default_rng(5)
    return {"w": (1 + 0.1 * rng.standard_normal(LN_COLS)).astype(np.float32),
            "b": (0.1 * rng.standard_normal(LN_COLS)).astype(np.float32)}


def select_cases(text):
    if not text:
        return ALL_CASES
    names = [c for c in text.split(",") if c]
    unknown = [c for c in names if c not in ALL_CASES]
    if unknown:
        raise SystemExit(f"bench: unknown case(s) {unknown}; known: {ALL_CASES}")
    return names


# ---- weights: the same arrays on both machines --------------------------------------------------

def zoo_arrays(model):
    """make_zoo's f32 arrays of `model` (convnets with batch norms folded)."""
    import make_zoo
    return make_zoo.generate(model, "f32", fold_bn=model in make_zoo.CONVNETS)[1]


def cast_arrays(arrays, dtype):
    """Float32 arrays as `dtype` (f16: numpy cast; bf16: rounded bit patterns), as the kit's
    models were written."""
    if dtype == "f32":
        return arrays
    if dtype == "bf16":
        from make_model_kit import to_bf16_bits
        return {k: to_bf16_bits(v) if v.dtype == np.float32 else v for k, v in arrays.items()}
    return {k: v.astype(np.float16) if v.dtype == np.float32 else v for k, v in arrays.items()}


def seed_weights(model):
    """models/<model>.safetensors, regenerated by make_models.py (deterministic) if needed."""
    path = os.path.join(REPO, "models", f"{model}.safetensors")
    if not os.path.exists(path):
        subprocess.run([sys.executable, os.path.join(REPO, "models", "make_models.py")],
                       check=True, stdout=subprocess.DEVNULL)
    return safetensors_np.load(path)


def case_sources(case, cache):
    """The arrays whose bytes a case's bundle weights are made of (dtype already applied).
    `cache` keeps the f32 arrays of a model between its f32 and f16 cases."""
    if case == "pointwise" or case in ATTENTION_FLAGS:
        return {}
    if case == "layernorm_softmax":
        return ln_weights()
    if case == "mlp":
        return cast_arrays(seed_weights("mlp"), CASES["mlp"][0])
    if case == "seed003":
        return cast_arrays(seed_weights("ln_silu"), CASES["seed003"][0])
    model, dtype = ZOO_CASES[case]
    if model not in cache:
        cache.clear()  # one model's arrays at a time (GPT-2's are 500 MB)
        cache[model] = zoo_arrays(model)
    return cast_arrays(cache[model], dtype)


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def read_safetensors_raw(path):
    """(header text, {name: header entry}, data section start, file bytes)."""
    with open(path, "rb") as f:
        raw = f.read()
    (length,) = struct.unpack("<Q", raw[:8])
    header = raw[8:8 + length].decode()
    return header, json.loads(header), 8 + length, raw


def concat_parts(data, entry, index):
    """[(source, transform)] whose arrays, joined along the last dim, give `data` (tensorc's
    merged Q/K/V projections: 2 to 4 equal parts), or None."""
    shape, itemsize = entry["shape"], len(data) // max(1, int(np.prod(entry["shape"])))
    if not shape or not itemsize:
        return None
    rows = int(np.prod(shape[:-1]))
    matrix = np.frombuffer(data, np.uint8).reshape(rows, shape[-1] * itemsize)
    for count in (2, 3, 4):
        if shape[-1] % count:
            continue
        width = shape[-1] // count * itemsize
        hits = [index.get(sha256(np.ascontiguousarray(matrix[:, i * width:(i + 1) * width])
                                 .tobytes())) for i in range(count)]
        if all(hits):
            return [list(h) for h in hits]
    return None


def make_recipe(weights_path, sources):
    """How to rebuild weights_path from `sources`: (recipe dict, carried bytes)."""
    header, entries, base, raw = read_safetensors_raw(weights_path)
    index = {}
    for name, array in sources.items():
        array = np.ascontiguousarray(array)
        index.setdefault(sha256(array.tobytes()), (name, ""))
        if array.ndim == 2:
            index.setdefault(sha256(np.ascontiguousarray(array.T).tobytes()), (name, "T"))
        if array.ndim == 4:  # a convolution weight packed channels-last: [O, I, H, W] -> [O, H, W, I]
            packed = np.ascontiguousarray(array.transpose(CHANNELS_LAST))
            index.setdefault(sha256(packed.tobytes()), (name, "channels_last"))
    tensors, carried, unmatched = [], bytearray(), []
    for name, entry in entries.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        data = raw[base + begin:base + end]
        hit = index.get(sha256(data))
        parts = None if hit else concat_parts(data, entry, index)
        if hit:
            tensors.append({"name": name, "source": hit[0], "transform": hit[1]})
        elif parts:
            tensors.append({"name": name, "concat": parts})
        else:
            tensors.append({"name": name, "carried": [len(carried), len(data)]})
            carried += data
            unmatched.append(f"{name} {entry['dtype']}{entry['shape']}")
    recipe = {"header": header, "size": len(raw), "sha256": sha256(raw), "tensors": tensors,
              "numpy": np.__version__, "carried": unmatched}
    return recipe, bytes(carried)


def rebuild_weights(recipe, sources, carried):
    """The weights file's bytes from a recipe; raises when its sha256 differs."""
    header = recipe["header"].encode()
    entries = json.loads(header)
    out = bytearray(recipe["size"])
    out[:8] = struct.pack("<Q", len(header))
    out[8:8 + len(header)] = header
    base = 8 + len(header)
    for t in recipe["tensors"]:
        begin, end = entries[t["name"]]["data_offsets"]
        if "carried" in t:
            offset, length = t["carried"]
            data = carried[offset:offset + length]
        elif "concat" in t:
            arrays = [TRANSFORMS[tr](sources[src]) for src, tr in t["concat"]]
            data = np.ascontiguousarray(np.concatenate(
                [a.reshape(-1, a.shape[-1]) for a in arrays], axis=1)).tobytes()
        else:
            array = sources[t["source"]]
            data = np.ascontiguousarray(TRANSFORMS[t["transform"]](array)).tobytes()
        if len(data) != end - begin:
            raise RuntimeError(f"weights: tensor {t['name']} needs {end - begin} bytes, its "
                               f"source gives {len(data)}")
        out[base + begin:base + end] = data
    if sha256(out) != recipe["sha256"]:
        raise RuntimeError(
            "regenerated weights differ from the compiled bundle's (sha256 mismatch); the "
            f"generators ran with numpy {recipe['numpy']} there and {np.__version__} here: the "
            "random streams or float casts may differ between these versions")
    return bytes(out)


def strip_weights(bundle, sources):
    """Replaces bundle/weights.safetensors by a recipe (checked by rebuilding it here)."""
    path = os.path.join(bundle, "weights.safetensors")
    if not os.path.exists(path):
        return 0
    recipe, carried = make_recipe(path, sources)
    if len(carried) > CARRY_LIMIT:
        raise SystemExit(f"bench: {bundle}: {len(carried)} bytes of weights are not copies of "
                         f"generated arrays (tensorc transformed them): {recipe['carried']}; "
                         "apply that transformation in the generator instead")
    with open(path, "rb") as f:
        if rebuild_weights(recipe, sources, carried) != f.read():
            raise SystemExit(f"bench: {bundle}: the recipe does not rebuild the weights")
    with open(os.path.join(bundle, "weights.recipe.json"), "w") as f:
        json.dump(recipe, f)
    if carried:
        with open(os.path.join(bundle, "weights.carried.bin"), "wb") as f:
            f.write(carried)
    size = os.path.getsize(path)
    os.remove(path)
    return size


def restore_weights(bundle, sources):
    """Writes bundle/weights.safetensors from its recipe (kept if already right)."""
    recipe_path = os.path.join(bundle, "weights.recipe.json")
    if not os.path.exists(recipe_path):
        return
    with open(recipe_path) as f:
        recipe = json.load(f)
    path = os.path.join(bundle, "weights.safetensors")
    if os.path.exists(path) and os.path.getsize(path) == recipe["size"]:
        with open(path, "rb") as f:
            if sha256(f.read()) == recipe["sha256"]:
                return
    carried_path = os.path.join(bundle, "weights.carried.bin")
    carried = open(carried_path, "rb").read() if os.path.exists(carried_path) else b""
    data = rebuild_weights(recipe, sources, carried)
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.replace(path + ".tmp", path)


# ---- prepare (where the compiler is) ------------------------------------------------------------

def prepare(args):
    import make_model_kit  # test/gpu: casts an FX model and its weights to f16/bf16
    import make_zoo

    tensorc = os.path.join(args.build_dir, "tools", "tensorc", "tensorc")
    runner = os.path.join(args.build_dir, "runtime", "tensorc-run")
    cases = select_cases(args.cases)
    if os.path.exists(args.out):
        shutil.rmtree(args.out)
    work = os.path.join(args.out, "work")
    os.makedirs(work)
    shutil.copy(runner, os.path.join(args.out, "tensorc-run"))
    subprocess.run([sys.executable, os.path.join(REPO, "models", "make_models.py")], check=True,
                   stdout=subprocess.DEVNULL)
    sources = {}
    if "pointwise" in cases:
        sources["pointwise"] = os.path.join(work, "pointwise.fx")
        open(sources["pointwise"], "w").write(POINTWISE_FX)
    if "layernorm_softmax" in cases:
        path = os.path.join(work, "layernorm_softmax.fx")
        open(path, "w").write(LN_SOFTMAX_FX)
        safetensors_np.save(path[:-3] + ".safetensors", ln_weights())
        sources["layernorm_softmax"] = path
    for case in ATTENTION_FLAGS:
        if case in cases:
            sources[case] = os.path.join(work, f"{case}.fx")
            open(sources[case], "w").write(ATTENTION_FX)
    for case, model in (("mlp", "mlp"), ("seed003", "ln_silu")):
        if case in cases:
            dtype = CASES[case][0]
            path = os.path.join(work, f"{case}_{dtype}.fx")
            make_model_kit.cast_model(os.path.join(REPO, "models", f"{model}.fx"), path, dtype)
            sources[case] = path
    kit = {"cases": {}, "numpy": np.__version__, "cuda_arch": args.cuda_arch}
    cache, total_stripped = {}, 0
    for case in cases:
        if case in ZOO_CASES:
            model, dtype = ZOO_CASES[case]
            proto, _ = make_zoo.generate(model, dtype, fold_bn=model in make_zoo.CONVNETS)
            sources[case] = os.path.join(work, f"{case}.onnx")
            with open(sources[case], "wb") as f:
                f.write(proto.SerializeToString())
            del proto
        bundle = os.path.join(args.out, case)
        start = time.perf_counter()
        proc = subprocess.run([tensorc, "compile", sources[case], "-o", bundle, "--target",
                               "cuda", "--cuda-arch", args.cuda_arch] +
                              ATTENTION_FLAGS.get(case, []), capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"bench: {case}: tensorc compile failed:\n{proc.stderr}")
        compile_s = time.perf_counter() - start
        shutil.rmtree(os.path.join(bundle, "src"), ignore_errors=True)
        stripped = strip_weights(bundle, case_sources(case, cache))
        total_stripped += stripped
        fallbacks = [ln for ln in proc.stderr.splitlines() if "fallback" in ln]
        kit["cases"][case] = {"compile_s": compile_s, "compile_log": proc.stderr.splitlines()}
        log(f"{case}: compiled in {compile_s:.1f} s; weights {stripped / 1e6:.1f} MB left to "
            f"regenerate" + (f"; {fallbacks[0]}" if fallbacks and "fallbacks" in fallbacks[0]
                             else ""))
        if case in ZOO_CASES:
            os.remove(sources[case])
    shutil.rmtree(work)
    with open(os.path.join(args.out, "kit.json"), "w") as f:
        json.dump(kit, f, indent=1)
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(args.out) for f in fs)
    log(f"kit ready in {args.out}: {size / 2**20:.1f} MiB ({total_stripped / 2**20:.0f} MiB of "
        "weights to regenerate on the GPU machine)")
    if size > 60 * 2**20:
        log("warning: the kit is over 60 MiB; split it with --cases")
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

    def load(model, dtype):
        return {k: torch.from_numpy(v).to(dev).to(dtype) for k, v in seed_weights(model).items()}

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

    def attention(q, k, v):  # flash or memory-efficient SDPA kernels, as torch picks
        return F.scaled_dot_product_attention(q, k, v)

    def attention_math(q, k, v):
        return torch.softmax(q @ k.transpose(-2, -1) * 0.125, dim=-1) @ v

    return {"pointwise": pointwise, "layernorm_softmax": layernorm_softmax, "mlp": mlp,
            "seed003": seed003, "attention": attention, "attention_math": attention_math,
            "attention_unfused": attention_math}


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


def case_inputs(case, rng):
    """(arrays for tensorc in the bundle's dtypes, arrays for torch, dtype, names stored as
    bf16 bit patterns)."""
    import make_model_kit
    import make_zoo

    if case in ZOO_CASES:
        model, dtype = ZOO_CASES[case]
        arrays = make_zoo.example_inputs(model, ZOO_BATCH, seed=0, dtype=dtype)
        return arrays, arrays, dtype, {}
    dtype, shapes = CASES[case]
    arrays = {n: rng.uniform(-1, 1, s).astype(np.float32) for n, s in shapes.items()}
    if dtype == "bf16":
        stored = {k: make_model_kit.to_bf16_bits(v) for k, v in arrays.items()}
        return stored, arrays, dtype, set(stored)
    stored = {k: v.astype(np.float16 if dtype == "f16" else np.float32) for k, v in arrays.items()}
    return stored, arrays, dtype, {}


def compare_outputs(case, got, want, dtype):
    """(ok, max |diff|, message). Seed cases: the historical per-element tolerance; zoo models
    (deep, random weights): per-element rtol plus an atol relative to the output's scale."""
    tol = 1e-3 if dtype == "f32" else 2e-2
    g, w = got.astype(np.float64), want.astype(np.float64)
    if g.shape != w.shape:
        return False, float("nan"), f"shape {list(g.shape)} != {list(w.shape)}"
    scale = float(np.abs(w).max()) if w.size else 0.0
    atol = (1e-5 if dtype == "f32" else tol) if case in CASES else tol * max(scale, 1e-30)
    close = np.isclose(g, w, rtol=tol, atol=atol)
    err = float(np.abs(g - w).max()) if w.size else 0.0
    message = (f"max |diff| {err:.3g} (max |value| {scale:.3g}); "
               f"{int((~close).sum())} of {close.size} outside rtol {tol:g} atol {atol:.3g}")
    return bool(close.all()) and bool(np.isfinite(g).all()), err, message


def run(args):
    import torch

    runner = os.path.join(args.kit, "tensorc-run")
    kit_meta = {}
    if os.path.exists(os.path.join(args.kit, "kit.json")):
        with open(os.path.join(args.kit, "kit.json")) as f:
            kit_meta = json.load(f)
    cases = [c for c in select_cases(args.cases) if os.path.isdir(os.path.join(args.kit, c))]
    missing = [c for c in select_cases(args.cases) if c not in cases]
    if missing:
        log(f"not in this kit: {', '.join(missing)}")
    twinless = [c for c in cases if ZOO_CASES.get(c, ("",))[0] in TWINLESS]
    if twinless:
        log(f"no torch twin (use `compare`): {', '.join(twinless)}")
        cases = [c for c in cases if c not in twinless]
    # Strict fp32 on torch's side too (TF32 is on by default for cuDNN convolutions).
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    tdtype = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
    models = torch_models(torch) if any(c in CASES for c in cases) else {}
    records = []
    rng = np.random.default_rng(0)
    device_name = torch.cuda.get_device_name()
    copy_gbs = None
    if "pointwise" in cases:  # the device's copy bandwidth, for the pointwise target
        a = torch.empty(N_POINTWISE, device="cuda")
        b = torch.empty_like(a)
        copy_ms = time_torch(torch, lambda: b.copy_(a), [], args.iterations)
        copy_gbs = 2 * a.numel() * 4 / copy_ms / 1e6
        del a, b
    cache = {}
    for case in cases:
        bundle = os.path.join(args.kit, case)
        start = time.perf_counter()
        restore_weights(bundle, case_sources(case, cache))
        regen_s = time.perf_counter() - start
        stored, arrays, dtype, bf16 = case_inputs(case, rng)
        with open(os.path.join(bundle, "manifest.json")) as f:
            manifest = json.load(f)
        names = [d["name"] for d in manifest["inputs"]]
        inputs_path = os.path.join(args.kit, f"{case}_inputs.safetensors")
        outputs_path = os.path.join(args.kit, f"{case}_outputs.safetensors")
        safetensors_np.save(inputs_path, dict(zip(names, stored.values())), bf16=bf16)
        if case in ZOO_CASES:
            model = ZOO_CASES[case][0]
            fn = make_twin(torch, model, cache[model]).to("cuda").to(tdtype[dtype])
            torch_inputs = [torch.from_numpy(v).to("cuda") for v in arrays.values()]
        else:
            fn = models[case]
            torch_inputs = [torch.from_numpy(v).to("cuda").to(tdtype[dtype])
                            for v in arrays.values()]
        record = {"case": case, "dtype": dtype, "batch": ZOO_BATCH if case in ZOO_CASES else
                  None, "shapes": {k: list(v.shape) for k, v in stored.items()},
                  "weights_regenerated_s": regen_s,
                  "tensorc_compile_s": kit_meta.get("cases", {}).get(case, {}).get("compile_s")}
        with torch.no_grad():
            want = fn(*torch_inputs).float().cpu().numpy()
            subprocess.run([runner, bundle, "--device", "cuda", "--inputs", inputs_path,
                            "--outputs", outputs_path], check=True, capture_output=True)
            got = list(safetensors_np.load(outputs_path).values())[0]
            if dtype == "bf16":
                got = safetensors_np.bf16_to_f32(got)
            ok, err, message = compare_outputs(case, got, want, dtype)
            record["max_abs_diff"] = err
            log(f"{case}: tensorc vs eager PyTorch: {message}")
            if not ok:
                raise RuntimeError(f"{case}: tensorc differs from eager PyTorch: {message}")
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
        del fn
        torch.cuda.empty_cache()
        log(f"{case}: done")
        result = {"device": device_name, "torch": torch.__version__,
                  "iterations": args.iterations, "records": records}
        if args.json:  # after every case, so a run cut short keeps what it measured
            with open(args.json, "w") as f:
                json.dump(result, f, indent=1)
    print_table(result)
    return 0


def compare(args):
    """Two kits of the same cases (two compiler versions): every case's outputs compared bit for
    bit, then each timed alternately (A, B, A, B, ...; the best median of each) by tensorc-run
    --cuda-graphs on (graph replay where a bundle was compiled for it)."""
    cases = [c for c in select_cases(args.cases)
             if all(os.path.isdir(os.path.join(kit, c)) for kit in (args.kit_a, args.kit_b))]
    if not cases:
        raise SystemExit("bench: the two kits have no case in common")
    rng, cache, ratios = np.random.default_rng(0), {}, []
    print(f"{'case':<22} {'outputs':<14} {'A ms':>9} {'B ms':>9} {'A/B':>6}")
    for case in cases:
        outputs, inputs = [], {}
        for kit in (args.kit_a, args.kit_b):
            bundle = os.path.join(kit, case)
            restore_weights(bundle, case_sources(case, cache))
            stored, _, _, bf16 = case_inputs(case, rng)
            with open(os.path.join(bundle, "manifest.json")) as f:
                names = [d["name"] for d in json.load(f)["inputs"]]
            inputs[kit] = os.path.join(kit, f"{case}_inputs.safetensors")
            outputs_path = os.path.join(kit, f"{case}_outputs.safetensors")
            safetensors_np.save(inputs[kit], dict(zip(names, stored.values())), bf16=bf16)
            subprocess.run([os.path.join(kit, "tensorc-run"), bundle, "--device", "cuda",
                            "--inputs", inputs[kit], "--outputs", outputs_path], check=True,
                           capture_output=True)
            outputs.append(list(safetensors_np.load(outputs_path).values()))
            os.remove(outputs_path)
        same = all(a.shape == b.shape and a.tobytes() == b.tobytes()
                   for a, b in zip(*outputs)) and len(outputs[0]) == len(outputs[1])
        diff = max(float(np.abs(a.astype(np.float64) - b.astype(np.float64)).max())
                   if a.shape == b.shape and a.size else float("nan")
                   for a, b in zip(*outputs))
        times = {args.kit_a: [], args.kit_b: []}
        for _ in range(args.rounds):
            for kit in (args.kit_a, args.kit_b):
                times[kit].append(time_tensorc(os.path.join(kit, "tensorc-run"),
                                               os.path.join(kit, case), inputs[kit],
                                               args.iterations, True))
        for path in inputs.values():
            os.remove(path)
        a, b = min(times[args.kit_a]), min(times[args.kit_b])
        ratios.append(a / b)
        print(f"{case:<22} {'bit-identical' if same else f'max|d| {diff:.2g}':<14} {a:9.4f} "
              f"{b:9.4f} {a / b:6.3f}", flush=True)
    print(f"{'geomean A/B':<22} {'':<14} {'':>9} {'':>9} "
          f"{float(np.exp(np.mean(np.log(ratios)))):6.3f}")
    return 0


def print_table(result):
    records = result["records"]
    print(f"device: {result['device']}; torch {result['torch']}; median of "
          f"{result['iterations']} runs; ratio = peer ms / tensorc's best ms (> 1: tensorc "
          "faster)")
    header = (f"{'case':<18} {'dtype':<5} {'eager':>8} {'compile':>8} {'c-ro':>8} {'tensorc':>8} "
              f"{'tc-graph':>8} {'vs eager':>8} {'vs comp':>8} {'vs c-ro':>8}")
    print(header)
    ratios = {"eager": [], "compile": [], "compile_ro": []}
    for r in records:
        best = min(r["tensorc_ms"], r["tensorc_graphs_ms"])
        rs = {k: r[f"{k}_ms"] / best for k in ratios}
        for k, v in rs.items():
            ratios[k].append(v)
        name = r["case"] if r.get("batch") is None else \
            f"{r['case'].rsplit('_', 1)[0]} b{r['batch']}"
        print(f"{name:<18} {r['dtype']:<5} {r['eager_ms']:8.4f} {r['compile_ms']:8.4f} "
              f"{r['compile_ro_ms']:8.4f} {r['tensorc_ms']:8.4f} {r['tensorc_graphs_ms']:8.4f} "
              f"{rs['eager']:8.2f} {rs['compile']:8.2f} {rs['compile_ro']:8.2f}")
    geo = {k: float(np.exp(np.mean(np.log(v)))) for k, v in ratios.items() if v}
    if geo:
        print(f"{'geomean ratio':<24} {'':>44} {geo['eager']:8.2f} {geo['compile']:8.2f} "
              f"{geo['compile_ro']:8.2f}")
    for r in records:
        if r.get("tensorc_gbs"):
            print(f"pointwise: tensorc {r['tensorc_gbs']:.0f} GB/s = "
                  f"{100 * r['tensorc_gbs'] / r['copy_gbs']:.0f}% of this device's copy bandwidth "
                  f"({r['copy_gbs']:.0f} GB/s, torch copy_)")
    compiled = [r for r in records if r.get("tensorc_compile_s")]
    if compiled:
        print("tensorc compile time (where the kit was made): " + ", ".join(
            f"{r['case']} {r['tensorc_compile_s']:.1f} s" for r in compiled))
    return geo


def table(args):
    merged = None
    for path in args.json:
        with open(path) as f:
            result = json.load(f)
        if merged is None:
            merged = result
            continue
        if (result["device"], result["torch"]) != (merged["device"], merged["torch"]):
            raise SystemExit(f"bench: {path} is from {result['device']} / torch "
                             f"{result['torch']}, not {merged['device']} / {merged['torch']}")
        merged["records"] += result["records"]
    order = {c: i for i, c in enumerate(ALL_CASES)}
    merged["records"].sort(key=lambda r: order.get(r["case"], len(order)))
    print_table(merged)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare", help="compile the bundles into a kit (needs the compiler)")
    p.add_argument("--out", required=True)
    p.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    p.add_argument("--cuda-arch", default="sm_90")
    p.add_argument("--cases", help=f"comma-separated, from {ALL_CASES} (default: all)")
    c = sub.add_parser("check-twins", help="torch twins vs onnxruntime on the CPU (needs torch)")
    c.add_argument("--models", default=",".join(m for m in ZOO_MODELS if m not in TWINLESS))
    r = sub.add_parser("run", help="benchmark a kit on the GPU (needs torch)")
    r.add_argument("kit")
    r.add_argument("--cases", help="comma-separated (default: every case in the kit)")
    r.add_argument("--iterations", type=int, default=50)
    r.add_argument("--json")
    t = sub.add_parser("table", help="one table from the JSON files of several runs")
    t.add_argument("json", nargs="+")
    k = sub.add_parser("compare", help="two kits of the same cases (two compiler versions): "
                       "outputs bit for bit and run times, on the GPU machine")
    k.add_argument("kit_a")
    k.add_argument("kit_b")
    k.add_argument("--cases", help="comma-separated (default: every case both kits hold)")
    k.add_argument("--iterations", type=int, default=30)
    k.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    if args.command in ("run", "compare") and args.iterations < MIN_ITERATIONS:
        parser.error(f"--iterations must be at least {MIN_ITERATIONS}")
    if args.command == "check-twins":
        return check_twins(args, ZOO_BATCH)
    return {"prepare": prepare, "run": run, "table": table, "compare": compare}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
