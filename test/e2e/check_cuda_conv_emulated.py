#!/usr/bin/env python3
"""Runs channels-last CUDA convolutions (the kernel library's implicit GEMM and depthwise kernels
with their fused epilogues) on the CPU emulation (test/e2e/cuda_emu.h) and compares them with
the interpreter, on machines without a GPU.

Each case is a small model of convolutions (stride, padding, dilation, groups, depthwise, 1x1,
a 7x7 stem over 3 channels, bias + ReLU + residual epilogues, convolution chains that stay
channels-last) with its weights as constants, compiled with `--target cuda`: the bundle's
kernels.cu, with the inline PTX replaced by the emulation, is built with the host C++ compiler
and run with the bundle's (packed) weights; the reference is the interpreter on the f32 model
with the same values. Whole models of models/ (convnet.fx: convolution, batch norm, max pool, avg
pool, linear) run the same way in f32 and f16. Prints one line per case and `N passed, M failed`.
"""
import argparse
import json
import os
import subprocess
import sys
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_cuda_emulated as emu  # noqa: E402
from check_cuda_emulated import safetensors_np  # noqa: E402


def conv_line(out, x, w, b, shape, dtype, stride, pad, dil, groups):
    return (f"  %{out} : {dtype}[{', '.join(map(str, shape))}] = call_function["
            f"target=aten.convolution](args=(%{x}, %{w}, {('%' + b) if b else 'None'}, "
            f"[{stride}, {stride}], [{pad}, {pad}], [{dil}, {dil}], False, [0, 0], {groups}))")


def out_size(size, k, stride, pad, dil):
    return (size + 2 * pad - dil * (k - 1) - 1) // stride + 1


def model(dtype, case):
    """FX text and the parameters' shapes ({name: shape}) of a case."""
    n, c, h, w = case["input"]
    oc, k = case["oc"], case["k"]
    stride, pad, dil, groups = (case.get(key, d) for key, d in
                                (("stride", 1), ("pad", 0), ("dil", 1), ("groups", 1)))
    oh, ow = out_size(h, k, stride, pad, dil), out_size(w, k, stride, pad, dil)
    params = {"w": (oc, c // groups, k, k)}
    if case.get("bias"):
        params["b"] = (oc,)
    shape = (n, oc, oh, ow)
    ins = [f"%x: {dtype}[{n}, {c}, {h}, {w}]"]
    if case.get("residual"):
        ins.append(f"%r: {dtype}[{', '.join(map(str, shape))}]")
    lines = [conv_line("c", "x", "w", "b" if case.get("bias") else None, shape, dtype, stride,
                       pad, dil, groups)]
    last = "c"
    out_shape = f"{dtype}[{', '.join(map(str, shape))}]"
    if case.get("bn"):  # a batch norm folded to a per-channel scale and shift
        params["s"], params["t"] = (oc, 1, 1), (oc, 1, 1)
        lines.append(f"  %m : {out_shape} = call_function[target=aten.mul](args=(%{last}, %s))")
        lines.append(f"  %a : {out_shape} = call_function[target=aten.add](args=(%m, %t))")
        last = "a"
    if case.get("relu"):
        lines.append(f"  %y : {out_shape} = call_function[target=aten.relu](args=(%{last},))")
        last = "y"
    if case.get("chain"):  # a second 3x3 convolution and the first one's result added back
        params["w2"] = (oc, oc, 3, 3)
        lines.append(conv_line("c2", last, "w2", None, shape, dtype, 1, 1, 1, 1))
        lines.append(f"  %z : {out_shape} = call_function[target=aten.add](args=(%c2, %{last}))")
        last = "z"
    if case.get("residual"):
        lines.append(f"  %o : {out_shape} = call_function[target=aten.add](args=(%{last}, %r))")
        last = "o"
    param_ins = [f"%{name}: {dtype}[{', '.join(map(str, s))}]" for name, s in params.items()]
    text = f"graph({', '.join(ins + param_ins)}):\n" + "\n".join(lines) + f"\n  return (%{last},)\n"
    return text, params, shape


def write_weights(path, values, dtype):
    if dtype == "bf16":
        safetensors_np.save(path, {k: emu.safetensors_np_bf16(v) for k, v in values.items()},
                            bf16=tuple(values))
    else:
        np_type = np.float16 if dtype == "f16" else np.float32
        safetensors_np.save(path, {k: v.astype(np_type) for k, v in values.items()})


def run_case(args, work, name, dtype, case):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    folder = os.path.join(work, name)
    os.makedirs(folder, exist_ok=True)
    text, params, out_shape = model(dtype, case)
    reference_text, _, _ = model("f32", case)
    n, c, h, w = case["input"]
    fan_in = params["w"][1] * params["w"][2] * params["w"][3]
    weights = {}
    for pname, shape in params.items():
        scale = 1.0 / np.sqrt(fan_in) if pname.startswith("w") else 0.5
        weights[pname] = emu.round_to(dtype, rng.uniform(-scale, scale, shape).astype(np.float32))
    if "s" in weights:
        weights["s"] = emu.round_to(dtype, 1.0 + weights["s"])
    inputs = {"x": emu.round_to(dtype, rng.uniform(-1, 1, (n, c, h, w)).astype(np.float32))}
    if case.get("residual"):
        inputs["r"] = emu.round_to(dtype, rng.uniform(-1, 1, out_shape).astype(np.float32))
    want_kernel = "tk_depthwise<" if case.get("groups", 1) == c == case["oc"] else "TkConvInput<"
    return check_bundle(args, folder, dtype, text, reference_text, weights, inputs,
                        [want_kernel] + case.get("want", []), {}, case.get("blocks", 1 << 30),
                        want_split=case.get("split", False))


def run_model_case(args, work, name, dtype, path, input_shapes, symbols, want_kernels):
    """A model of models/ (FX text, f32, weights beside it) in `dtype`: its parameters and
    random inputs rounded to `dtype`, the f32 model on the rounded values as the reference."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    folder = os.path.join(work, name)
    os.makedirs(folder, exist_ok=True)
    reference_text = open(path).read()
    text = reference_text.replace("f32[", f"{dtype}[")
    weights = {k: emu.round_to(dtype, v.astype(np.float32)) for k, v in
               safetensors_np.load(os.path.splitext(path)[0] + ".safetensors").items()}
    inputs = {k: emu.round_to(dtype, rng.uniform(-1, 1, shape).astype(np.float32))
              for k, shape in input_shapes.items()}
    return check_bundle(args, folder, dtype, text, reference_text, weights, inputs, want_kernels,
                        symbols, 1 << 30)


def check_bundle(args, folder, dtype, text, reference_text, weights, inputs, want_kernels,
                 symbols, blocks, compile_args=("--cuda-arch", "sm_80"), tol=None,
                 want_split=False, library=False, hopper=False):
    """Compiles `text` (weights in `dtype`) for CUDA, runs its kernels.cu on the emulation and
    compares its output with the interpreter on `reference_text` (f32, the same values). With
    `want_split`, some kernel must split K (its workspaces in the manifest). With `library`, it
    compiles with -O max-autotune and runs every GEMM as cuBLASLt would in a tuned bundle: its
    product from the GEMM call's operand views, then its epilogue function."""
    if library:
        compile_args = [*compile_args, "-O", "max-autotune", "--no-tune"]
    for stem, body, wdtype in (("model", text, dtype), ("reference", reference_text, "f32")):
        with open(os.path.join(folder, stem + ".fx"), "w") as f:
            f.write(body)
        write_weights(os.path.join(folder, stem + ".safetensors"), weights, wdtype)
    bundle = os.path.join(folder, "bundle")
    compiled = subprocess.run([args.tensorc, "compile", os.path.join(folder, "model.fx"), "-o",
                               bundle, "--target", "cuda", *compile_args],
                              capture_output=True, text=True)
    if compiled.returncode:
        return f"tensorc compile failed: {compiled.stderr.strip()}"
    manifest = json.load(open(os.path.join(bundle, "manifest.json")))
    kernels = open(os.path.join(bundle, "src", "kernels.cu")).read()
    for want_kernel in want_kernels:
        if want_kernel not in kernels:
            return f"the kernel library's {want_kernel[:-1]} was not used"
    if want_split and not any("cuda_counters" in launch for launch in manifest["launches"]):
        return "no kernel splits K"
    if library and not any("cuda_gemm" in launch for launch in manifest["launches"]):
        return "no launch has a GEMM call"
    if hopper and not any("cuda_sm90a" in launch for launch in manifest["launches"]):
        return "no launch has a Hopper form"
    source = os.path.join(folder, "emulated.cpp")
    with open(source, "w") as f:
        f.write(emu.emulation_source(kernels, manifest, symbols, library_gemms=library,
                                     hopper=hopper))
    binary = os.path.join(folder, "emulated")
    built = subprocess.run([args.cxx, "-std=c++17", "-O1", "-w", "-fno-pie", "-no-pie",
                            *(["-D__CUDA_ARCH_FEAT_SM90_ALL"] if hopper else []),
                            "-I", HERE, source, "-o", binary], capture_output=True, text=True)
    if built.returncode:
        return f"building the emulation failed: {built.stderr[:2000]}"
    by_name = {buf["name"]: buf for buf in manifest["buffers"]}
    for key, value in inputs.items():
        buf = by_name[key]
        emu.to_memory(buf["dtype"], value).tofile(os.path.join(folder, f"buf{buf['id']}.bin"))
    # The bundle's weights, packed at compile time, go in as they are.
    packed = safetensors_np.load(os.path.join(bundle, "weights.safetensors"))
    for buf in manifest["buffers"]:
        if buf["kind"] != "weight":
            continue
        path = os.path.join(folder, f"buf{buf['id']}.bin")
        if buf["name"] in packed:
            packed[buf["name"]].tofile(path)
        else:  # an original the packed copy replaced: no kernel reads it
            size = int(np.prod([emu.evaluate(d, symbols) for d in buf["shape"]]))
            size *= emu.SIZES[buf["dtype"]]
            np.zeros(size, np.uint8).tofile(path)
    inputs_file = os.path.join(folder, "inputs.safetensors")
    safetensors_np.save(inputs_file, {k: v.astype(np.float32) for k, v in inputs.items()})
    expected = os.path.join(folder, "expected.safetensors")
    dims = [f"--dim={k}={v}" for k, v in symbols.items()]
    subprocess.run([args.tensorc, "run", os.path.join(folder, "reference.fx"), "--interp",
                    "--inputs", inputs_file, "--outputs", expected] + dims, check=True,
                   stdout=subprocess.DEVNULL)
    want_values = list(safetensors_np.load(expected).values())
    want = np.asarray(want_values[0], np.float64)
    out = [b for b in manifest["buffers"] if b["kind"] == "output"][0]
    for copies, schedule in (("deferred", "lockstep"), ("eager", "random")):
        mode = f"{copies} copies, {schedule} warps"
        ran = subprocess.run([binary, folder, str(blocks), copies, schedule],
                             capture_output=True, text=True)
        if ran.returncode:
            return f"emulation ({mode}) failed: {ran.stderr.strip()[:2000]}"
        raw = open(os.path.join(folder, f"out{out['id']}.bin"), "rb").read()
        got = emu.from_memory(out["dtype"], raw, want.shape).astype(np.float64)
        tol = tol or {"f32": 1e-4, "f16": 1e-2, "bf16": 5e-2}[dtype]
        why = emu.mismatch(mode, np.isclose(got, want, rtol=tol, atol=tol), got, want)
        if why:
            return why
    return None


# name -> dtype, case (input [N, C, H, W], oc, k, stride, pad, dil, groups, bias, bn, relu,
# residual, chain; blocks: launched at most, so kernels stride over their units; split: some
# kernel must split K)
CASES = {
    "f32_3x3_bias_relu": ("f32", dict(input=(2, 16, 10, 10), oc=32, k=3, pad=1, bias=True,
                                      relu=True)),
    "f16_3x3_stride2_bias_relu_residual": ("f16", dict(input=(2, 16, 9, 9), oc=32, k=3, stride=2,
                                                       pad=1, bias=True, relu=True,
                                                       residual=True)),
    "f16_1x1_bn": ("f16", dict(input=(1, 64, 7, 7), oc=24, k=1, bn=True, blocks=3)),
    "f16_stem_7x7_c3": ("f16", dict(input=(1, 3, 20, 20), oc=16, k=7, stride=2, pad=3, bias=True,
                                    relu=True)),
    "f16_dilation2_groups2": ("f16", dict(input=(1, 16, 8, 8), oc=32, k=3, pad=2, dil=2,
                                          groups=2)),
    "f32_grouped_odd_channels": ("f32", dict(input=(1, 12, 6, 6), oc=6, k=3, pad=1, groups=3,
                                             bias=True)),
    # 4 channels a group: merged 4 at a time into groups of 16 (block-diagonal weights), which
    # move as vectors; 5 a group stay as they are
    "f16_groups_of_4_merged": ("f16", dict(input=(2, 32, 9, 9), oc=32, k=3, pad=1, groups=8,
                                           bias=True, relu=True,
                                           want=["TkConvInput<unsigned short, 3, 3, 16, 1, 1, 1, "
                                                 "1, true>"])),
    "f32_groups_of_5_kept": ("f32", dict(input=(1, 20, 7, 7), oc=20, k=3, pad=1, groups=4,
                                         want=["TkConvInput<float, 3, 3, 5, "])),
    # a patchify stem (ViT's 16x16/16 at a smaller size): KW x C channels read as one run
    "f16_patchify_c3": ("f16", dict(input=(1, 3, 16, 24), oc=32, k=8, stride=8, bias=True,
                                    want=["TkConvInput<unsigned short, 8, 1, 24, 8, 1, 1, 1, "
                                          "true>"])),
    "f16_depthwise_3x3_bias_relu": ("f16", dict(input=(2, 32, 10, 10), oc=32, k=3, pad=1,
                                                groups=32, bias=True, relu=True)),
    "f32_depthwise_5x5_stride2": ("f32", dict(input=(1, 8, 11, 11), oc=8, k=5, stride=2, pad=2,
                                              groups=8, bn=True)),
    "bf16_3x3_bn_relu": ("bf16", dict(input=(1, 32, 6, 6), oc=64, k=3, pad=1, bn=True,
                                      relu=True)),
    "f16_chain_stays_channels_last": ("f16", dict(input=(1, 16, 8, 8), oc=32, k=3, pad=1, bn=True,
                                                  relu=True, chain=True)),
    # 16 pixels, K = 3 * 3 * 256: too few tiles for the SMs, so K splits (workspaces planned)
    "f16_deep_k_split": ("f16", dict(input=(1, 256, 4, 4), oc=64, k=3, pad=1, bias=True, relu=True,
                                     residual=True, split=True, blocks=5)),
    "f32_deep_k_split": ("f32", dict(input=(1, 128, 4, 4), oc=64, k=3, pad=1, bias=True,
                                     split=True)),
}

# Whole models of models/ in f32 and f16: name -> dtype, model, input shapes, shape symbols, the
# library kernels it must use (generated by models/make_models.py).
MODELS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "models")
MODEL_CASES = {
    "convnet_f32": ("f32", "convnet.fx", {"x": (2, 3, 32, 32)}, {"s0": 2}, ["TkConvInput<"]),
    "convnet_f16": ("f16", "convnet.fx", {"x": (2, 3, 32, 32)}, {"s0": 2}, ["TkConvInput<"]),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tensorc", required=True)
    parser.add_argument("--cxx", default="c++", help="host C++ compiler (C++17, GNU extensions)")
    parser.add_argument("--cases", default="", help="comma-separated subset of the cases")
    parser.add_argument("--work", help="keep the cases' files here")
    args = parser.parse_args()
    names = [n for n in args.cases.split(",") if n] or list(CASES) + list(MODEL_CASES)

    def run(work, name):
        if name in MODEL_CASES:
            dtype, path, shapes, symbols, want = MODEL_CASES[name]
            return run_model_case(args, work, name, dtype, os.path.join(MODELS, path), shapes,
                                  symbols, want)
        dtype, case = CASES[name]
        return run_case(args, work, name, dtype, case)

    return emu.run_cases(args, names, run)


if __name__ == "__main__":
    sys.exit(main())
