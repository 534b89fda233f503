#!/usr/bin/env python3
"""Runs CUDA GEMM templates (the kernel library's tensor-core and SIMT GEMMs with their fused
epilogues, split-K with its workspaces) on the CPU emulation (test/e2e/cuda_emu.h) and compares
them with the interpreter, on machines without a GPU.

Each case is a small model of matrix products (linear layers with bias + GELU + residual
epilogues, epilogue chains scheduled away from their products, batched products, transposed
operands, a strided slice as an operand, sizes that are not multiples of 16 bytes, a symbolic row
count, f32 on TF32 tensor cores with --matmul-precision high) with its weights as constants,
compiled with `--target cuda`: the bundle's kernels.cu, with the inline PTX replaced by
the emulation, is built with the host C++ compiler and run; the reference is the interpreter on
the f32 model with the same values. Cases that must split K check that the manifest plans the
split's workspaces and that the counters are zero again after the run. Some cases compile for
sm_80 and sm_90 (NVRTC compiles both); the Hopper cases build kernels.cu as the sm_90a image is
(__CUDA_ARCH_FEAT_SM90_ALL: the wgmma forms) and pass tensor maps encoded from the manifest's
cuda_sm90a as the runtime encodes them. Prints one line per case and `N passed, M failed`.
"""
import argparse
import json
import os
import sys
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_cuda_conv_emulated as conv  # noqa: E402
import check_cuda_emulated as emu  # noqa: E402


def shape_text(dtype, shape):
    return f"{dtype}[{', '.join(map(str, shape))}]"


def linear_model(dtype, m, k, n, bias, gelu, residual):
    """x [m, k] . w^T (w [n, k], a constant) [+ b] [-> GELU] [+ r]."""
    ins = [f"%x: {shape_text(dtype, (m, k))}"]
    if residual:
        ins.append(f"%r: {shape_text(dtype, (m, n))}")
    params = {"w": (n, k)}
    out = shape_text(dtype, (m, n))
    lines = [f"  %wt : {shape_text(dtype, (k, n))} = call_function[target=aten.t](args=(%w,))"]
    if bias:
        params["b"] = (n,)
        lines.append(f"  %y : {out} = call_function[target=aten.addmm](args=(%b, %x, %wt))")
    else:
        lines.append(f"  %y : {out} = call_function[target=aten.mm](args=(%x, %wt))")
    last = "y"
    if gelu:
        lines.append(f"  %g : {out} = call_function[target=aten.gelu](args=(%{last},), "
                     "kwargs={approximate='none'})")
        last = "g"
    if residual:
        lines.append(f"  %o : {out} = call_function[target=aten.add](args=(%{last}, %r))")
        last = "o"
    inputs = {"x": (m, k)}
    if residual:
        inputs["r"] = (m, n)
    return ins, params, lines, last, inputs


def bmm_model(dtype, batch, m, k, n, transpose_b):
    """a [batch, m, k] . b [batch, k, n] (b an input given as [batch, n, k] and transposed when
    `transpose_b`), scaled by 0.5."""
    ins = [f"%a: {shape_text(dtype, (batch, m, k))}"]
    out = shape_text(dtype, (batch, m, n))
    lines = []
    if transpose_b:
        ins.append(f"%bt: {shape_text(dtype, (batch, n, k))}")
        lines.append(f"  %b : {shape_text(dtype, (batch, k, n))} = call_function["
                     "target=aten.transpose](args=(%bt, 1, 2))")
        inputs = {"a": (batch, m, k), "bt": (batch, n, k)}
    else:
        ins.append(f"%b: {shape_text(dtype, (batch, k, n))}")
        inputs = {"a": (batch, m, k), "b": (batch, k, n)}
    lines.append(f"  %p : {out} = call_function[target=aten.bmm](args=(%a, %b))")
    lines.append(f"  %o : {out} = call_function[target=aten.mul](args=(%p, 0.5))")
    return ins, {}, lines, "o", inputs


def bmm_shared_model(dtype, batch, m, k, n):
    """a [batch, m, k] . w^T (w an input [n, k]) expanded over the batch: B is shared by the
    batch entries (batch stride 0; a constant w would be copied out per entry at compile time)."""
    ins = [f"%a: {shape_text(dtype, (batch, m, k))}", f"%w: {shape_text(dtype, (n, k))}"]
    out = shape_text(dtype, (batch, m, n))
    lines = [f"  %wt : {shape_text(dtype, (k, n))} = call_function[target=aten.t](args=(%w,))",
             f"  %we : {shape_text(dtype, (batch, k, n))} = call_function[target=aten.expand]("
             f"args=(%wt, [{batch}, {k}, {n}]))",
             f"  %p : {out} = call_function[target=aten.bmm](args=(%a, %we))"]
    return ins, {}, lines, "p", {"a": (batch, m, k), "w": (n, k)}


def transposed_a_model(dtype, m, k, n):
    """x^T . w^T with x an input [k, m] (A is M-contiguous) and w a constant [n, k]."""
    ins = [f"%x: {shape_text(dtype, (k, m))}"]
    lines = [f"  %xt : {shape_text(dtype, (m, k))} = call_function[target=aten.t](args=(%x,))",
             f"  %wt : {shape_text(dtype, (k, n))} = call_function[target=aten.t](args=(%w,))",
             f"  %o : {shape_text(dtype, (m, n))} = call_function[target=aten.mm]"
             "(args=(%xt, %wt))"]
    return ins, {"w": (n, k)}, lines, "o", {"x": (k, m)}


def strided_a_model(dtype, m, k, n):
    """x[:, ::2] . w^T with x an input [m, 2k]: A has no unit-stride dim (the lowering copies it
    dense first)."""
    ins = [f"%x: {shape_text(dtype, (m, 2 * k))}"]
    lines = [f"  %xs : {shape_text(dtype, (m, k))} = call_function[target=aten.slice]"
             f"(args=(%x, 1, 0, {2 * k}, 2))",
             f"  %wt : {shape_text(dtype, (k, n))} = call_function[target=aten.t](args=(%w,))",
             f"  %o : {shape_text(dtype, (m, n))} = call_function[target=aten.mm]"
             "(args=(%xs, %wt))"]
    return ins, {"w": (n, k)}, lines, "o", {"x": (m, 2 * k)}


def chain_model(dtype, m, k, n):
    """Two linear layers on x whose epilogues come later in the program: the first's a chain of
    two nodes (GELU, GELU-tanh, then h * sigmoid(h) realized as its own node, then GELU-tanh,
    exp and a residual add) after the second product and a row mean; the second's (tanh, minus
    the mean, times the first's result) reads the mean, scheduled after that product."""
    s, t = shape_text(dtype, (m, n)), shape_text(dtype, (k, n))
    ins = [f"%x: {shape_text(dtype, (m, k))}", f"%r: {s}"]
    params = {"w1": (n, k), "b1": (n,), "w2": (n, k), "b2": (n,)}
    ops = [("t1", t, "aten.t", "%w1"), ("t2", t, "aten.t", "%w2"),
           ("y1", s, "aten.addmm", "%b1, %x, %t1"), ("y2", s, "aten.addmm", "%b2, %x, %t2"),
           ("m", shape_text(dtype, (m, 1)), "aten.mean", "%r, [1], True"),
           ("g1", s, "aten.gelu", "%y1"), ("h1", s, "aten.gelu", "%g1", "tanh"),
           ("s1", s, "aten.sigmoid", "%h1"), ("u1", s, "aten.mul", "%h1, %s1"),
           ("v1", s, "aten.gelu", "%u1", "tanh"), ("q1", s, "aten.exp", "%v1"),
           ("z1", s, "aten.mul", "%v1, %q1"), ("o1", s, "aten.add", "%z1, %r"),
           ("g2", s, "aten.tanh", "%y2"), ("k2", s, "aten.sub", "%g2, %m"),
           ("o2", s, "aten.mul", "%k2, %o1")]
    lines = []
    for name, out, target, args, *approximate in ops:
        kwargs = f", kwargs={{approximate='{approximate[0]}'}}" if approximate else ""
        if target == "aten.gelu" and not approximate:
            kwargs = ", kwargs={approximate='none'}"
        lines.append(f"  %{name} : {out} = call_function[target={target}](args=({args},){kwargs})")
    return ins, params, lines, "o2", {"x": (m, k), "r": (m, n)}


def head_split_model(dtype, m, k, heads, d):
    """x [m, k] . w^T + b viewed as [m, heads, d] and transposed to [heads, m, d] (a transformer's
    head split, which the GEMM's epilogue stores at permuted positions)."""
    n = heads * d
    ins = [f"%x: {shape_text(dtype, (m, k))}"]
    lines = [f"  %wt : {shape_text(dtype, (k, n))} = call_function[target=aten.t](args=(%w,))",
             f"  %y : {shape_text(dtype, (m, n))} = call_function[target=aten.addmm]"
             "(args=(%b, %x, %wt))",
             f"  %v : {shape_text(dtype, (m, heads, d))} = call_function[target=aten.view]"
             f"(args=(%y, [{m}, {heads}, {d}]))",
             f"  %o : {shape_text(dtype, (heads, m, d))} = call_function[target=aten.transpose]"
             "(args=(%v, 0, 1))"]
    return ins, {"w": (n, k), "b": (n,)}, lines, "o", {"x": (m, k)}


def qkv_model(dtype, m, k, heads, d):
    """A transformer's Q, K and V projections of one x (x . wq^T + bq, ...), each split into heads
    [heads, m, d], summed: compiles merge the three products into one GEMM (merge-parallel-matmuls)
    whose column slices the head-split kernel reads."""
    n = heads * d
    ins = [f"%x: {shape_text(dtype, (m, k))}"]
    lines, params, heads_out = [], {}, []
    for p in "qkv":
        params[f"w{p}"], params[f"b{p}"] = (n, k), (n,)
        lines += [f"  %t{p} : {shape_text(dtype, (k, n))} = call_function[target=aten.t]"
                  f"(args=(%w{p},))",
                  f"  %y{p} : {shape_text(dtype, (m, n))} = call_function[target=aten.addmm]"
                  f"(args=(%b{p}, %x, %t{p}))",
                  f"  %v{p} : {shape_text(dtype, (m, heads, d))} = call_function[target=aten.view]"
                  f"(args=(%y{p}, [{m}, {heads}, {d}]))",
                  f"  %h{p} : {shape_text(dtype, (heads, m, d))} = call_function["
                  f"target=aten.transpose](args=(%v{p}, 0, 1))"]
        heads_out.append(f"h{p}")
    out = shape_text(dtype, (heads, m, d))
    lines += [f"  %s : {out} = call_function[target=aten.add](args=(%hq, %hk))",
              f"  %o : {out} = call_function[target=aten.add](args=(%s, %hv))"]
    return ins, params, lines, "o", {"x": (m, k)}


def build_model(dtype, case):
    kind = case["kind"]
    if kind == "linear":
        parts = linear_model(dtype, case["m"], case["k"], case["n"], case.get("bias", False),
                             case.get("gelu", False), case.get("residual", False))
    elif kind == "bmm":
        parts = bmm_model(dtype, case["batch"], case["m"], case["k"], case["n"],
                          case.get("transpose_b", False))
    elif kind == "bmm_shared":
        parts = bmm_shared_model(dtype, case["batch"], case["m"], case["k"], case["n"])
    elif kind == "head_split":
        parts = head_split_model(dtype, case["m"], case["k"], case["heads"], case["d"])
    elif kind == "qkv":
        parts = qkv_model(dtype, case["m"], case["k"], case["heads"], case["d"])
    elif kind == "chain":
        parts = chain_model(dtype, case["m"], case["k"], case["n"])
    elif kind == "strided_a":
        parts = strided_a_model(dtype, case["m"], case["k"], case["n"])
    else:
        parts = transposed_a_model(dtype, case["m"], case["k"], case["n"])
    ins, params, lines, last, inputs = parts
    param_ins = [f"%{name}: {shape_text(dtype, s)}" for name, s in params.items()]
    text = (f"graph({', '.join(ins + param_ins)}):\n" + "\n".join(lines) +
            f"\n  return (%{last},)\n")
    return text, params, inputs


def run_case(args, work, name, dtype, case):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    folder = os.path.join(work, name)
    os.makedirs(folder, exist_ok=True)
    text, params, input_shapes = build_model(dtype, case)
    reference_text, _, _ = build_model("f32", case)
    symbols = case.get("symbols", {})
    if symbols:  # the row count is a shape symbol: the model takes any, the run binds one
        rows = (f"[{case['batch']}, {case['m']}, " if case["kind"] == "bmm" else f"[{case['m']}, ")
        symbolic = rows.replace(f"{case['m']}, ", "s0, ")
        text = text.replace(rows, symbolic)
        reference_text = reference_text.replace(rows, symbolic)
    scale = 1.0 / np.sqrt(case["k"])
    weights = {p: emu.round_to(dtype, rng.uniform(-scale if p.startswith("w") else -0.5,
                                                  scale if p.startswith("w") else 0.5, s)
                               .astype(np.float32)) for p, s in params.items()}
    inputs = {k: emu.round_to(dtype, rng.uniform(-1, 1, s).astype(np.float32))
              for k, s in input_shapes.items()}
    compile_args = ["--cuda-arch", case.get("archs", "sm_80")]
    if case.get("tf32"):
        compile_args += ["--matmul-precision", "high"]
    compile_args += case.get("compile_args", [])
    want = "tk_gemm_simt<" if dtype == "f32" and not case.get("tf32") else "tk_gemm_tc<"
    if case.get("hopper"):  # the wgmma form, batched or shared as the case's operands are
        want = case["hopper"]
    # TF32 keeps 10 of f32's 23 mantissa bits: a looser bound than strict f32 against the f32
    # interpreter (products of operands under 1, sums of `k` of them).
    tol = 2e-2 if case.get("tf32") else None
    if case.get("want_vector"):  # both operands 16-byte aligned: TkMatrix<T, K-major, true>
        want = [want, "TkMatrix<unsigned short, true, true> tk_a", "true> tk_b"]
    else:
        want = [want]
    library = case.get("library", False)
    why = conv.check_bundle(args, folder, dtype, text, reference_text, weights, inputs, want,
                            symbols, case.get("blocks", 1 << 30), compile_args, tol,
                            want_split=case.get("split", False) and not library, library=library,
                            hopper=bool(case.get("hopper")))
    if why or not case.get("want_launches"):
        return why
    with open(os.path.join(folder, "bundle", "manifest.json")) as f:
        launches = [launch["name"] for launch in json.load(f)["launches"]]
    if launches != case["want_launches"]:
        return f"launches {launches}, not {case['want_launches']}"
    return None


NO_MERGE = ["--disable-passes", "merge-parallel-matmuls"]
CHAIN_LAUNCHES = ["tem_mm_add_mul_erf_tanh_sigmoid_0", "red_fused_sum_1",
                  "tem_mm_add_tanh_div_sub_exp_mul_2"]

# name -> dtype, case (kind: linear (m, k, n, bias, gelu, residual), bmm (batch, m, k, n,
# transpose_b), transposed_a or strided_a (m, k, n); split: some kernel must split K; blocks: launched at
# most, so kernels stride over their units; archs: --cuda-arch; tf32: --matmul-precision high;
# symbols: the row count as s0 at this value; want_vector: both operands take 16-byte copies;
# compile_args: further compile arguments; kind chain (m, k, n): chain_model; kind head_split or qkv (m, k, heads, d): head_split_model or qkv_model; want_launches: the manifest's launch names, in order)
CASES = {
    # batch-1 linear layer: 32 rows, too few tiles for the SMs, K split (workspaces), fused
    # bias + GELU + residual; NVRTC compiles it for sm_80 and sm_90
    "f16_linear_split_bias_gelu_residual": ("f16", dict(kind="linear", m=32, k=512, n=256,
                                                        bias=True, gelu=True, residual=True,
                                                        split=True, archs="sm_80,sm_90")),
    "bf16_linear_split_bias_gelu": ("bf16", dict(kind="linear", m=24, k=384, n=192, bias=True,
                                                 gelu=True, split=True, blocks=7)),
    # more than 64 rows (64x64 tiles) split 6 ways, as BERT's seq-128 layers are
    "f16_linear_128_rows_split": ("f16", dict(kind="linear", m=128, k=768, n=128, bias=True,
                                              split=True)),
    # strict f32 on SIMT, tails in every dim, split K
    "f32_linear_simt_tails_bias_gelu": ("f32", dict(kind="linear", m=40, k=300, n=72, bias=True,
                                                    gelu=True, split=True,
                                                    archs="sm_80,sm_90")),
    # f32 on TF32 tensor cores (--matmul-precision high)
    "f32_linear_tf32_residual": ("f32", dict(kind="linear", m=48, k=256, n=96, residual=True,
                                             tf32=True, split=True)),
    # K not a multiple of 8 elements: element copies instead of 16-byte ones; N neither: the
    # epilogue stores element by element (16-byte stores otherwise)
    "f16_linear_unaligned_k_n": ("f16", dict(kind="linear", m=20, k=100, n=42, bias=True)),
    # batched products: batch strides, B N-contiguous / B K-contiguous (transposed)
    "f16_bmm": ("f16", dict(kind="bmm", batch=3, m=40, k=72, n=56)),
    "bf16_bmm_transposed_b": ("bf16", dict(kind="bmm", batch=2, m=70, k=64, n=48,
                                           transpose_b=True)),
    "f32_bmm_transposed_b": ("f32", dict(kind="bmm", batch=2, m=33, k=20, n=24,
                                         transpose_b=True)),
    # A M-contiguous (x^T) on tensor cores: 32-row tiles for the transposing loads
    "f16_transposed_a": ("f16", dict(kind="transposed_a", m=24, k=64, n=80)),
    # x[:, ::2]: no unit stride in A's matrix dims
    "f16_strided_a_copied": ("f16", dict(kind="strided_a", m=32, k=64, n=48)),
    # a symbolic row count (the heuristic sizes for large M: no split)
    "f16_linear_symbolic_rows": ("f16", dict(kind="linear", m=37, k=64, n=96, bias=True,
                                             gelu=True, symbols={"s0": 37})),
    # a symbolic row count in a batched product: the batch stride s0 * 72 is still a whole number
    # of 16-byte vectors (16-byte copies)
    "f16_bmm_symbolic_rows": ("f16", dict(kind="bmm", batch=2, m=45, k=72, n=40,
                                          symbols={"s0": 45}, want_vector=True)),
    # epilogues neither next to their product nor one node: a two-node chain kept in place
    # ahead of later kernels, and an epilogue whose kernel moves past the row mean it reads
    # (the launches: both products with their epilogues, the mean between them). Both products
    # read x: merge-parallel-matmuls, which would make them one, is off here
    "f16_epilogue_chain_non_adjacent": ("f16", dict(kind="chain", m=40, k=64, n=96,
                                                    want_launches=CHAIN_LAUNCHES,
                                                    archs="sm_80,sm_90",
                                                    compile_args=NO_MERGE)),
    "f32_epilogue_chain_non_adjacent": ("f32", dict(kind="chain", m=33, k=40, n=72,
                                                    want_launches=CHAIN_LAUNCHES,
                                                    compile_args=NO_MERGE)),
    # the same chain with the products merged: one GEMM with both biases in its epilogue, the
    # rest of every epilogue in one row kernel
    "f16_epilogue_chain_merged": ("f16", dict(kind="chain", m=40, k=64, n=96,
                                              want_launches=["tem_mm_add_0",
                                                             "per_fused_sum_add_mul_erf_1"])),
    # the bias add and head split of a transformer's Q/K/V product: compiles keep it a kernel
    # of its own (the permuted epilogue stores element by element: slower on an H100)
    "f16_head_split_epilogue": ("f16", dict(kind="head_split", m=40, k=64, heads=3, d=16,
                                            want_launches=["tem_mm_0", "poi_fused_add_1"],
                                            archs="sm_80,sm_90")),
    "f32_head_split_epilogue": ("f32", dict(kind="head_split", m=24, k=32, heads=4, d=8,
                                            want_launches=["tem_mm_0", "poi_fused_add_1"])),
    # Q, K and V projections of one input: one GEMM over the three weights side by side with the
    # three biases in its epilogue; the heads of its column slices read by one kernel
    "f16_qkv_merged": ("f16", dict(kind="qkv", m=40, k=64, heads=2, d=16,
                                   want_launches=["tem_mm_add_0", "poi_fused_add_1"])),
    "f32_qkv_merged": ("f32", dict(kind="qkv", m=24, k=32, heads=3, d=8,
                                   want_launches=["tem_mm_add_0", "poi_fused_add_1"])),
    # Hopper forms (sm_90; big enough that 128-row tiles fill 132 SMs), run as an H100 would:
    # compiled with __CUDA_ARCH_FEAT_SM90_ALL, tensor maps encoded from the manifest as the
    # runtime does. A linear layer with bias and GELU (128x64 tiles), and a batched product whose
    # B is shared by the batch entries (its map has one entry; the kernel reads entry 0).
    "f16_hopper_linear_bias_gelu": ("f16", dict(kind="linear", m=1536, k=64, n=704, bias=True,
                                                gelu=True, archs="sm_90",
                                                hopper="tk_gemm_wg<")),
    "f16_hopper_bmm_shared_b": ("f16", dict(kind="bmm_shared", batch=2, m=1024, k=64, n=576,
                                            archs="sm_90", hopper=", true, false>(")),
}

# The same problems compiled with -O max-autotune and run as a bundle tuned for cuBLASLt would
# run them (library: each GEMM's product from its call's operand views, then the kernel's
# epilogue function): f16 / f32 outputs in 16-byte groups, an N that is not (element stores), a
# batched product with a transposed B, an M-contiguous A, a head split (permuted stores), a
# symbolic row count, the merged Q/K/V product, bf16.
for base in ("f16_linear_split_bias_gelu_residual", "f32_linear_simt_tails_bias_gelu",
             "f16_linear_unaligned_k_n", "bf16_bmm_transposed_b", "f32_bmm_transposed_b",
             "f16_transposed_a", "f32_head_split_epilogue", "f16_linear_symbolic_rows",
             "f32_qkv_merged", "bf16_linear_split_bias_gelu", "f32_linear_tf32_residual"):
    dtype, case = CASES[base]
    CASES[base + "_library"] = (dtype, dict(case, library=True, blocks=5))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tensorc", required=True)
    parser.add_argument("--cxx", default="c++", help="host C++ compiler (C++17, GNU extensions)")
    parser.add_argument("--cases", default="", help="comma-separated subset of the cases")
    parser.add_argument("--work", help="keep the cases' files here")
    args = parser.parse_args()
    names = [n for n in args.cases.split(",") if n] or list(CASES)
    return emu.run_cases(args, names, lambda work, name: run_case(args, work, name, *CASES[name]))


if __name__ == "__main__":
    sys.exit(main())
