#!/usr/bin/env python3
"""Runs the CUDA kernel library's kernels (lib/Codegen/CUDA/Kernels) on the CPU emulation
(test/e2e/cuda_emu.h) and compares them with numpy references computed in float64 from the same
inputs: tensor-core GEMMs (f16, bf16, TF32), strict-f32 SIMT GEMMs, implicit-GEMM convolutions
and depthwise convolutions, over shapes with tails, transposed operands, element-path fallbacks,
split-K on and off and every epilogue kind of the kit tool.

Each case runs in several emulation modes (cp.async copies landing at issue or at their wait,
warps in step or drifting apart, blocks in ascending, descending or shuffled order); split-K
results must be bitwise equal across block orders (the reduction order is fixed). Outputs are
poisoned first, so an element no thread writes fails. ldmatrix reads must be free of bank
conflicts. `--mutants` checks that deliberately broken kernels (a swizzle that differs between
the copies and the fragment reads, a swizzle that is consistent but conflicting, a cp.async wait
one group short, a missing barrier) fail. Prints one line per check and `N passed, M failed`.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

# The CTest set: few, small, and covering every code path (see each comment).
CASES = [
    # tensor cores, both operands K-major, tails in M, N and K, batch 2, 8-wide epilogue stores
    {"name": "gemm_f16_tails_bias_relu", "op": "gemm", "dtype": "f16", "m": 100, "n": 72, "k": 200,
     "batch": 2, "epilogue": "bias_relu",
     "config": {"bm": 64, "bn": 64, "bk": 32, "warps_m": 2, "warps_n": 2, "stages": 3, "split_k": 1}},
    # ldmatrix.trans for M-contiguous A and N-contiguous B, split-K 3, bf16
    {"name": "gemm_bf16_transposed_splitk", "op": "gemm", "dtype": "bf16", "m": 70, "n": 96, "k": 272,
     "a_kmajor": False, "b_kmajor": False, "epilogue": "store",
     "config": {"bm": 64, "bn": 64, "bk": 32, "warps_m": 2, "warps_n": 2, "stages": 4, "split_k": 3}},
    # K and ld not multiples of 8: element copies instead of cp.async, padded row pitch
    {"name": "gemm_f16_element_path", "op": "gemm", "dtype": "f16", "m": 40, "n": 50, "k": 203,
     "lda_pad": 3, "epilogue": "store",
     "config": {"bm": 32, "bn": 64, "bk": 32, "warps_m": 1, "warps_n": 4, "stages": 3, "split_k": 2}},
    # the 8-warp 128x128 tile with a 4-deep ring and BK 64; shape symbols as kernel arguments;
    # B shared by the batch; bf16 output of f16 inputs
    {"name": "gemm_f16_128x128_runtime_dims", "op": "gemm", "dtype": "f16", "out_dtype": "bf16",
     "m": 130, "n": 136, "k": 320, "batch": 2, "b_broadcast": True, "runtime_dims": True,
     "epilogue": "bias_gelu",
     "config": {"bm": 128, "bn": 128, "bk": 64, "warps_m": 2, "warps_n": 4, "stages": 4, "split_k": 1}},
    # batch-1 shape: 16-row tiles, split-K 4
    {"name": "gemm_f16_m3_splitk", "op": "gemm", "dtype": "f16", "m": 3, "n": 136, "k": 512,
     "epilogue": "store",
     "config": {"bm": 16, "bn": 64, "bk": 64, "warps_m": 1, "warps_n": 4, "stages": 4, "split_k": 4}},
    # TF32: K-major A, N-contiguous B (element fragment reads), f32 out
    {"name": "gemm_tf32_bias_gelu", "op": "gemm", "dtype": "f32", "math": "tf32", "m": 66, "n": 72,
     "k": 100, "b_kmajor": False, "epilogue": "bias_gelu",
     "config": {"bm": 64, "bn": 64, "bk": 32, "warps_m": 2, "warps_n": 2, "stages": 3, "split_k": 1}},
    # TF32: M-contiguous A, K-major B, split-K 2
    {"name": "gemm_tf32_transposed_a_splitk", "op": "gemm", "dtype": "f32", "math": "tf32", "m": 50,
     "n": 40, "k": 140, "a_kmajor": False, "epilogue": "store",
     "config": {"bm": 64, "bn": 64, "bk": 16, "warps_m": 2, "warps_n": 2, "stages": 3, "split_k": 2}},
    # strict f32 SIMT: K tails, split-K 2, K-major operands (transposing shared stores)
    {"name": "gemm_simt_tails_splitk", "op": "gemm", "dtype": "f32", "math": "simt", "m": 70, "n": 68,
     "k": 203, "epilogue": "store",
     "config": {"bm": 64, "bn": 64, "split_k": 2}},
    # strict f32 SIMT: M- and N-contiguous operands, 128x128 tile, batch 2
    {"name": "gemm_simt_transposed_bias_relu", "op": "gemm", "dtype": "f32", "math": "simt", "m": 130,
     "n": 72, "k": 40, "batch": 2, "a_kmajor": False, "b_kmajor": False, "epilogue": "bias_relu",
     "config": {"bm": 128, "bn": 128, "split_k": 1}},
    # strict f32 SIMT, deep K slices: BK 32 with a K tail (203 = 6 * 32 + 11) split 3 ways over
    # K-major operands; BK 16 over M- and N-contiguous ones, 32x128 tiles
    {"name": "gemm_simt_bk32_tails_splitk", "op": "gemm", "dtype": "f32", "math": "simt", "m": 70,
     "n": 68, "k": 203, "epilogue": "bias_relu",
     "config": {"bm": 64, "bn": 64, "bk": 32, "split_k": 3}},
    {"name": "gemm_simt_bk16_transposed", "op": "gemm", "dtype": "f32", "math": "simt", "m": 40,
     "n": 136, "k": 72, "a_kmajor": False, "b_kmajor": False, "epilogue": "store",
     "config": {"bm": 32, "bn": 128, "bk": 16, "split_k": 1}},
    # NHWC 3x3 convolution, padding, folded batch norm + residual + ReLU
    {"name": "conv_f16_3x3_bn_add_relu", "op": "conv", "dtype": "f16", "n": 2, "h": 9, "w": 7, "c": 16,
     "oc": 24, "kh": 3, "kw": 3, "pad": 1, "epilogue": "bn_add_relu",
     "config": {"bm": 64, "bn": 64, "bk": 32, "warps_m": 2, "warps_n": 2, "stages": 3, "split_k": 1}},
    # bf16, stride 2, dilation 2, 2 groups of 8 channels, split-K 2
    {"name": "conv_bf16_strided_dilated_groups", "op": "conv", "dtype": "bf16", "n": 1, "h": 13, "w": 11,
     "c": 16, "oc": 32, "kh": 3, "kw": 3, "stride": 2, "pad": 2, "dilation": 2, "groups": 2,
     "epilogue": "bias_relu",
     "config": {"bm": 32, "bn": 64, "bk": 32, "warps_m": 1, "warps_n": 4, "stages": 3, "split_k": 2}},
    # 3 input channels (a stem): element-path patches; 7x7 stride 2 padding 3
    {"name": "conv_f16_stem_element_path", "op": "conv", "dtype": "f16", "n": 1, "h": 12, "w": 10, "c": 3,
     "oc": 16, "kh": 7, "kw": 7, "stride": 2, "pad": 3, "epilogue": "bias_relu",
     "config": {"bm": 32, "bn": 64, "bk": 32, "warps_m": 1, "warps_n": 4, "stages": 3, "split_k": 1}},
    # groups whose output channels are not 8-aligned (OC / groups = 4): per-column epilogue sites
    {"name": "conv_f16_groups_unaligned_out", "op": "conv", "dtype": "f16", "n": 1, "h": 6, "w": 6, "c": 32,
     "oc": 16, "kh": 3, "kw": 3, "pad": 1, "groups": 4, "epilogue": "store",
     "config": {"bm": 32, "bn": 64, "bk": 32, "warps_m": 1, "warps_n": 4, "stages": 3, "split_k": 1}},
    # 1-D convolution (H = KH = 1), TF32, split-K 2
    {"name": "conv_tf32_1d_splitk", "op": "conv", "dtype": "f32", "math": "tf32", "n": 2, "h": 1, "w": 30,
     "c": 12, "oc": 20, "kh": 1, "kw": 5, "pad": [0, 2], "epilogue": "store",
     "config": {"bm": 64, "bn": 64, "bk": 16, "warps_m": 2, "warps_n": 2, "stages": 3, "split_k": 2}},
    # strict f32 convolution on the SIMT kernel, stride 2, 2 groups
    {"name": "conv_simt_strided_groups", "op": "conv", "dtype": "f32", "math": "simt", "n": 1, "h": 10,
     "w": 9, "c": 8, "oc": 12, "kh": 3, "kw": 3, "stride": 2, "pad": 1, "groups": 2,
     "epilogue": "bias_relu", "config": {"bm": 32, "bn": 64, "split_k": 1}},
    # configurations from the heuristic (GemmConfig.cpp) rather than given
    {"name": "gemm_f16_auto", "op": "gemm", "dtype": "f16", "m": 96, "n": 136, "k": 264,
     "epilogue": "bias_relu", "arch": "sm_90"},
    {"name": "gemm_simt_auto", "op": "gemm", "dtype": "f32", "math": "simt", "m": 20, "n": 72,
     "k": 100, "epilogue": "store"},
    {"name": "conv_f16_auto", "op": "conv", "dtype": "f16", "n": 1, "h": 5, "w": 5, "c": 64,
     "oc": 64, "kh": 3, "kw": 3, "pad": 1, "epilogue": "store"},
    # ResNeXt's grouped 3x3 convolutions: 4 and 16 channels per group take 16-column tiles (the
    # heuristic's narrow tiles; 4 channels: element-path patches)
    {"name": "conv_f16_auto_groups_of_4", "op": "conv", "dtype": "f16", "n": 1, "h": 11, "w": 9,
     "c": 32, "oc": 32, "kh": 3, "kw": 3, "pad": 1, "groups": 8, "epilogue": "bias_relu"},
    {"name": "conv_f16_auto_groups_of_16", "op": "conv", "dtype": "f16", "n": 1, "h": 7, "w": 7,
     "c": 64, "oc": 64, "kh": 3, "kw": 3, "pad": 1, "stride": 2, "groups": 4, "epilogue": "store"},
    # a 16-column tile over N = 12 (column tails), K-major B
    {"name": "gemm_f16_narrow_tile", "op": "gemm", "dtype": "f16", "m": 150, "n": 12, "k": 72,
     "epilogue": "bias_relu",
     "config": {"bm": 128, "bn": 16, "bk": 32, "warps_m": 4, "warps_n": 1, "stages": 3, "split_k": 1}},
    {"name": "dw_f16_auto", "op": "depthwise", "dtype": "f16", "n": 1, "h": 7, "w": 7, "c": 48,
     "kh": 5, "kw": 5, "pad": 2, "epilogue": "store"},
    # ---- the Hopper kernel (wgmma from TMA tiles, emulated from the PTX definitions) ----
    # two consumer warpgroups, tails in M, N and K (TMA zero fill), batch 2, two epilogue passes
    {"name": "wg_f16_tails_bias_relu", "op": "gemm", "dtype": "f16", "m": 100, "n": 72, "k": 200,
     "batch": 2, "epilogue": "bias_relu",
     "config": {"kernel": "wgmma", "bm": 128, "bn": 64, "bk": 64, "stages": 3, "split_k": 1,
                "epi_cols": 32}},
    # split-K over a cluster of 3 reducing through distributed shared memory; a two-slot ring
    # wrapping several times; bf16 in, bf16 out, 48-wide tiles
    {"name": "wg_bf16_cluster_split", "op": "gemm", "dtype": "bf16", "m": 70, "n": 48, "k": 600,
     "epilogue": "bias_gelu",
     "config": {"kernel": "wgmma", "bm": 64, "bn": 48, "bk": 64, "stages": 2, "split_k": 3}},
    # a persistent grid of 2 blocks looping over 12 units (the ring's phases carry across units);
    # B shared by a batch of 3; sizes as kernel arguments
    {"name": "wg_f16_persistent_broadcast", "op": "gemm", "dtype": "f16", "m": 130, "n": 64,
     "k": 136, "batch": 3, "b_broadcast": True, "runtime_dims": True, "epilogue": "store",
     "config": {"kernel": "wgmma", "bm": 64, "bn": 32, "bk": 64, "stages": 3, "split_k": 1,
                "grid_limit": 2}},
    # TF32, a cluster of 2 looping over two tiles (its reduction barriers' phases carry over)
    {"name": "wg_tf32_cluster_loop", "op": "gemm", "dtype": "f32", "math": "tf32", "m": 66,
     "n": 40, "k": 100, "epilogue": "store",
     "config": {"kernel": "wgmma", "bm": 64, "bn": 48, "bk": 32, "stages": 2, "split_k": 2,
                "grid_limit": 2}},
    # 256-wide tiles (registers moved to the consumers), eight 32-column epilogue passes
    {"name": "wg_f16_bn256", "op": "gemm", "dtype": "f16", "m": 130, "n": 260, "k": 72,
     "epilogue": "store",
     "config": {"kernel": "wgmma", "bm": 128, "bn": 256, "bk": 64, "stages": 2, "split_k": 1,
                "epi_cols": 32}},
    # a pointwise convolution as a dense GEMM over the NHWC input, folded batch norm + residual
    {"name": "wg_conv_1x1_bn_add_relu", "op": "conv", "dtype": "f16", "n": 1, "h": 9, "w": 7,
     "c": 24, "oc": 40, "kh": 1, "kw": 1, "epilogue": "bn_add_relu",
     "config": {"kernel": "wgmma", "bm": 64, "bn": 48, "bk": 64, "stages": 2, "split_k": 1}},
    # the heuristic's Hopper choice for a BERT-like short M (small-problem model: narrow
    # unsplit tiles, a deep ring)
    {"name": "wg_f16_auto", "op": "gemm", "dtype": "f16", "m": 128, "n": 192, "k": 512,
     "epilogue": "bias_relu"},
    # an eight-slot ring wrapping twice (17 K slices, the last partial), 32-wide tiles, tails in M and N
    {"name": "wg_f16_ring8_narrow", "op": "gemm", "dtype": "f16", "m": 72, "n": 40, "k": 1032,
     "epilogue": "bias_relu",
     "config": {"kernel": "wgmma", "bm": 64, "bn": 32, "bk": 64, "stages": 8, "split_k": 1,
                "epi_cols": 32}},
    # 16-wide tiles (wgmma m64n16, one 16-column epilogue pass), a tail in N
    {"name": "wg_f16_bn16", "op": "gemm", "dtype": "f16", "m": 70, "n": 24, "k": 200,
     "epilogue": "store",
     "config": {"kernel": "wgmma", "bm": 64, "bn": 16, "bk": 64, "stages": 3, "split_k": 1,
                "epi_cols": 16}},
    # a cluster of 4 with eight-slot rings, parts of 4 and 5 slices
    {"name": "wg_f16_cluster4_ring8", "op": "gemm", "dtype": "f16", "m": 64, "n": 64, "k": 1096,
     "epilogue": "store",
     "config": {"kernel": "wgmma", "bm": 64, "bn": 64, "bk": 64, "stages": 8, "split_k": 4}},
    # depthwise 7x7 (ConvNeXt), a channel tile with 8 of 32 channels valid
    {"name": "dw_f16_7x7", "op": "depthwise", "dtype": "f16", "n": 1, "h": 11, "w": 9, "c": 40, "kh": 7,
     "kw": 7, "pad": 3, "epilogue": "bias_relu", "tile": {"h": 8, "w": 8, "c": 32, "rows": 2}},
    # depthwise 3x3 stride 2, bf16, folded batch norm + residual + ReLU
    {"name": "dw_bf16_3x3_s2", "op": "depthwise", "dtype": "bf16", "n": 2, "h": 9, "w": 10, "c": 24,
     "kh": 3, "kw": 3, "stride": 2, "pad": 1, "epilogue": "bn_add_relu",
     "tile": {"h": 4, "w": 4, "c": 32, "rows": 2}},
    # depthwise 5x5 dilation 2, f32
    {"name": "dw_f32_5x5_dilated", "op": "depthwise", "dtype": "f32", "n": 1, "h": 9, "w": 9, "c": 12,
     "kh": 5, "kw": 5, "pad": 4, "dilation": 2, "epilogue": "store",
     "tile": {"h": 4, "w": 8, "c": 16, "rows": 1}},
    # channels not a multiple of 8: element loads and per-channel epilogue sites
    {"name": "dw_f16_odd_channels", "op": "depthwise", "dtype": "f16", "n": 1, "h": 6, "w": 7, "c": 20,
     "kh": 3, "kw": 3, "pad": 1, "epilogue": "store", "tile": {"h": 4, "w": 4, "c": 32, "rows": 2}},
]

# name -> (what it breaks, regex on kernels.cu, replacement, cases it runs on)
MUTANTS = {
    "swizzle_mismatch": (
        "fragment reads swizzle with another pattern than the copies (still conflict-free)",
        r"aoff\[i\] = AK \? tk_swz<BK / VEC>\(wm0 \+ i \* 16 \+ \(lane & 15\), lane >> 4\)",
        "aoff[i] = AK ? tk_swz<BK / VEC>(wm0 + i * 16 + (lane & 15), (lane >> 4) ^ 1)",
        ["gemm_f16_tails_bias_relu"]),
    "swizzle_conflicting": (
        "no swizzle anywhere: consistent data, but ldmatrix bank conflicts",
        r"return row \* \(CPR \* 16\) \+ \(\(chunk \^ \(row & 7\)\) << 4\);\n  const int l = row \* CPR \+ chunk;\n  return \(\(l & ~7\) \| \(\(l \^ \(l >> 3\)\) & 7\)\) << 4;",
        "return row * (CPR * 16) + (chunk << 4);\n  return (row * CPR + chunk) << 4;",
        ["gemm_f16_tails_bias_relu"]),
    "wait_one_short": (
        "the ring waits for one group fewer than the slice it reads",
        r"tk_cp_async_wait<STAGES - 2>\(\);",
        "tk_cp_async_wait<STAGES - 1>();",
        ["gemm_f16_tails_bias_relu"]),
    "missing_barrier": (
        "no barrier between a slot's last fragment reads and its refill",
        r"__syncthreads\(\); // slice i is in for every thread; every warp is done with slot i - 1",
        "",
        ["gemm_f16_tails_bias_relu"]),
    "tf32_unrounded": (
        "TF32 operands reach the mma unrounded (the hardware truncates them)",
        r"af\[i2\]\[q\] = tk_tf32\(af\[i2\]\[q\]\);",
        "(void)0;",
        ["gemm_tf32_bias_gelu"]),
    "splitk_counter_kept": (
        "the last split-K part does not reset its tile's counter for the next launch",
        r"counters\[tileId\] = 0; // every part has counted: ready for the next launch",
        "(void)0;",
        ["gemm_bf16_transposed_splitk"]),
}

MUTANTS.update({
    "wg_release_before_wait": (
        "a consumer hands a slot back before the wgmma reading it has completed",
        r"tk_wgmma_wait<1>\(\); // the previous slice's group is done: its slot goes back",
        "",
        ["wg_bf16_cluster_split"]),
    "wg_k_step": (
        "wgmma K steps advance 16 bytes instead of 32 along A's swizzled rows",
        r"tk_wgmma<BN, C::KIND>\(acc, tk_wg_desc\(a \+ 32 \* s\)",
        "tk_wgmma<BN, C::KIND>(acc, tk_wg_desc(a + 16 * s)",
        ["wg_f16_tails_bias_relu"]),
    "wg_cluster_local_sum": (
        "each CTA of a split-K cluster sums its own partial tile SPLITK times",
        r"tk_ld_cluster_f4\(at, q\), hi = tk_ld_cluster_f4\(at \+ 16, q\)",
        "tk_ld_cluster_f4(at, rank), hi = tk_ld_cluster_f4(at + 16, rank)",
        ["wg_bf16_cluster_split"]),
    "wg_cluster_no_ready_wait": (
        "a CTA reads the cluster's partial tiles without waiting until they are staged",
        r"tk_mbar_wait_cluster\(ready, epiPhase\);",
        "",
        ["wg_bf16_cluster_split"]),
})

STORAGE = {"f16": np.float16, "bf16": np.uint16, "f32": np.float32}


def bf16_bits(x):
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_value(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def round_to(dtype, x):
    """Values as stored in dtype, back in float32."""
    x = np.asarray(x, np.float32)
    if dtype == "f16":
        return x.astype(np.float16).astype(np.float32)
    if dtype == "bf16":
        return bf16_value(bf16_bits(x))
    return x


def to_memory(dtype, x):
    if dtype == "f16":
        return np.asarray(x, np.float32).astype(np.float16)
    if dtype == "bf16":
        return bf16_bits(x)
    return np.asarray(x, np.float32)


def from_memory(dtype, raw):
    if dtype == "f16":
        return np.frombuffer(raw, np.float16).astype(np.float64)
    if dtype == "bf16":
        return bf16_value(np.frombuffer(raw, np.uint16)).astype(np.float64)
    return np.frombuffer(raw, np.float32).astype(np.float64)


def tf32(x):
    """f32 -> TF32 by PTX's cvt.rna.tf32.f32 (nearest, ties away: add half an ulp, truncate)."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x1000) & 0xFFFFE000).astype(np.uint32).view(np.float32)


def erf(x):
    return np.vectorize(math.erf)(x)


def apply_epilogue(case, acc, params, cols_axis_last=True):
    """acc: float64 [..., cols]; returns the float64 values before the output rounding."""
    kind = case.get("epilogue", "store")
    if kind == "bias_relu":
        return np.maximum(acc + params["bias"], 0)
    if kind == "bias_gelu":
        x = acc + params["bias"]
        return 0.5 * x * (1 + erf(x / math.sqrt(2)))
    if kind == "bn_add_relu":
        return np.maximum(acc * params["scale"] + params["shift"] + params["residual_value"], 0)
    return acc


def make_case_data(case, rng):
    """Inputs (as stored), the float64 reference output and the output shape."""
    dtype, math_mode = case["dtype"], case.get("math", "")
    out_dtype = case.get("out_dtype", dtype)

    def operand(shape):
        return round_to(dtype, rng.uniform(-1, 1, shape))

    def mult(x):  # what the tensor cores multiply
        return tf32(x).astype(np.float64) if math_mode == "tf32" else x.astype(np.float64)

    data = {}
    op = case["op"]
    if op == "gemm":
        m, n, k, b = case["m"], case["n"], case["k"], case.get("batch", 1)
        a_k, b_k = case.get("a_kmajor", True), case.get("b_kmajor", True)
        a = operand((b, m, k))
        bb = operand((1 if case.get("b_broadcast") else b, k, n))
        lda = (k if a_k else m) + case.get("lda_pad", 0)
        ldb = (n if not b_k else k) + case.get("ldb_pad", 0)
        # memory: A [b][m][lda] or [b][k][lda]; B [b][n][ldb] (K-major) or [b][k][ldb]
        a_mem = np.zeros((b, m if a_k else k, lda), np.float32)
        a_mem[:, :, :(k if a_k else m)] = a if a_k else a.transpose(0, 2, 1)
        b_mem = np.zeros((bb.shape[0], n if b_k else k, ldb), np.float32)
        b_mem[:, :, :(k if b_k else n)] = bb.transpose(0, 2, 1) if b_k else bb
        data["A"], data["B"] = a_mem, b_mem
        acc = np.einsum("bmk,bkn->bmn", mult(a), mult(np.broadcast_to(bb, (b, k, n))))
        cols, out_shape = n, (b, m, n)
    elif op == "conv":
        n_, h, w, c, oc = case["n"], case["h"], case["w"], case["c"], case["oc"]
        kh, kw, groups = case["kh"], case["kw"], case.get("groups", 1)
        sh, sw = pair(case.get("stride", 1))
        ph, pw = pair(case.get("pad", 0))
        dh, dw = pair(case.get("dilation", 1))
        oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
        ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
        x = operand((n_, h, w, c))
        wt = operand((oc, kh, kw, c // groups))
        data["input"], data["weight"] = x, wt
        xp = np.zeros((n_, h + 2 * ph, w + 2 * pw, c))
        xp[:, ph:ph + h, pw:pw + w, :] = mult(x)
        cg, ocg = c // groups, oc // groups
        acc = np.zeros((n_, oh, ow, oc))
        wm = mult(wt)
        for r in range(kh):
            for s in range(kw):
                patch = xp[:, r * dh: r * dh + (oh - 1) * sh + 1: sh, s * dw: s * dw + (ow - 1) * sw + 1: sw, :]
                for g in range(groups):
                    acc[..., g * ocg:(g + 1) * ocg] += np.einsum(
                        "nhwc,oc->nhwo", patch[..., g * cg:(g + 1) * cg], wm[g * ocg:(g + 1) * ocg, r, s, :])
        cols, out_shape = oc, acc.shape
    else:  # depthwise
        n_, h, w, c, kh, kw = case["n"], case["h"], case["w"], case["c"], case["kh"], case["kw"]
        sh, sw = pair(case.get("stride", 1))
        ph, pw = pair(case.get("pad", 0))
        dh, dw = pair(case.get("dilation", 1))
        oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
        ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
        x = operand((n_, h, w, c))
        wt = operand((kh, kw, c))
        data["input"], data["weight"] = x, wt
        xp = np.zeros((n_, h + 2 * ph, w + 2 * pw, c))
        xp[:, ph:ph + h, pw:pw + w, :] = x
        acc = np.zeros((n_, oh, ow, c))
        for r in range(kh):
            for s in range(kw):
                acc += xp[:, r * dh: r * dh + (oh - 1) * sh + 1: sh, s * dw: s * dw + (ow - 1) * sw + 1: sw, :] * wt[r, s]
        cols, out_shape = c, acc.shape
    params = {}
    kind = case.get("epilogue", "store")
    if kind in ("bias_relu", "bias_gelu"):
        data["bias"] = params["bias"] = rng.uniform(-1, 1, cols).astype(np.float32)
    if kind == "bn_add_relu":
        data["scale"] = params["scale"] = rng.uniform(0.5, 1.5, cols).astype(np.float32)
        data["shift"] = params["shift"] = rng.uniform(-1, 1, cols).astype(np.float32)
        residual = round_to(out_dtype, rng.uniform(-2, 2, out_shape))
        data["residual"] = residual
        params["residual_value"] = residual.astype(np.float64)
    want = apply_epilogue(case, acc, {k: np.asarray(v, np.float64) for k, v in params.items()})
    return data, want


def pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def emulation_source(kernels_cu, manifest):
    """kernels.cu without its inline PTX, and a main() that runs one case on buffer files."""
    kept, skipping = [], False
    for line in kernels_cu.splitlines(keepends=True):
        if line.startswith("// ---- inline PTX"):
            skipping = True
        elif line.startswith("// ---- end of inline PTX"):
            skipping = False
        elif not skipping:
            kept.append(line)
    runs = []
    for index, k in enumerate(manifest["kernels"]):
        out_type = "float" if k["out_dtype"] == "f32" else "unsigned short"
        args, maps = [], []
        for role in k["roles"]:
            if role.startswith("map:"):
                # The emulation's tensor map layout (cuda_emu.h tk_tma_load_3d).
                t = k["tensor_maps"][len(maps)]
                words = ([f"(unsigned long long)(uintptr_t)buffer(\"{role[4:]}\")"] + t["dims"] +
                         t["strides"] + t["box"] + [4 if t["dtype"] in ("f32", "tf32") else 2])
                name = f"tk_emu_map{len(maps)}"
                maps.append(f"TkTensorMap {name}{{}}; " + " ".join(
                    f"{name}.opaque[{i}] = {w};" for i, w in enumerate(words)))
                args.append(name)
            elif role in ("m", "n", "k", "batch"):
                args.append(f"{k[role]}ll")
            elif role == "partials":
                args.append("(float *)buffer(\"partials\")")
            elif role == "counters":
                args.append("(unsigned *)buffer(\"counters\")")
            elif role in ("bias", "scale", "shift"):
                args.append(f"(const float *)buffer(\"{role}\")")
            elif role == "out":
                args.append(f"({out_type} *)buffer(\"out\")")
            else:
                t = "float" if k["dtype"] == "f32" else "unsigned short"
                args.append(f"(const {t} *)buffer(\"{role}\")")
        runs.append(f"  if (which == {index}) {{ {' '.join(maps)} tc_emu::launch({k['grid']}, "
                    f"{k['threads']}, [&] {{ {k['name']}({', '.join(args)}); }}, {k['cluster']}); }}")
    main = """
#include <map>
#include <string>
static std::map<std::string, std::vector<unsigned char>> tc_buffers;
static void *buffer(const char *name) { return tc_buffers.at(name).data(); }
int main(int argc, char **argv) {
  if (argc != 6) return 2;
  const int which = std::atoi(argv[1]);
  const std::string dir = argv[2];
  tc_emu::eagerCopies = std::string(argv[3]) == "eager";
  tc_emu::randomSchedule = std::string(argv[4]) == "random";
  tc_emu::blockOrder = std::atoi(argv[5]);
  FILE *list = std::fopen((dir + "/buffers.txt").c_str(), "r");
  char name[64];
  long long size;
  while (list && std::fscanf(list, "%63s %lld", name, &size) == 2) {
    std::vector<unsigned char> &data = tc_buffers[name];
    data.resize(size_t(size) + 64);
    FILE *f = std::fopen((dir + "/" + name + ".bin").c_str(), "rb");
    if (!f || std::fread(data.data(), 1, size_t(size), f) != size_t(size)) { std::fprintf(stderr, "cannot read %s\\n", name); return 2; }
    std::fclose(f);
  }
  if (list) std::fclose(list);
""" + "\n".join(runs) + """
  FILE *f = std::fopen((dir + "/result.bin").c_str(), "wb");
  std::vector<unsigned char> &out = tc_buffers.at("out");
  std::fwrite(out.data(), 1, out.size() - 64, f);
  std::fclose(f);
  bool countersZero = true;
  if (tc_buffers.count("counters"))
    for (size_t i = 0; i + 64 < tc_buffers["counters"].size(); ++i)
      countersZero = countersZero && tc_buffers["counters"][i] == 0;
  std::printf("ldmatrix %llu reads %llu conflicts counters %s\\n", tc_emu::ldmatrixReads,
              tc_emu::ldmatrixConflicts, countersZero ? "zero" : "LEFT-NONZERO");
  return 0;
}
"""
    return '#include "cuda_emu.h"\n#include <math.h>\n' + "".join(kept) + main


def build(args, work, cases, label, mutate=None):
    """Renders `cases` with the kit tool and builds their emulation; returns (binary, manifest)."""
    os.makedirs(work, exist_ok=True)
    cases_path = os.path.join(work, "cases.json")
    with open(cases_path, "w") as f:
        json.dump(cases, f)
    rendered = os.path.join(work, "rendered")
    subprocess.run([args.tool, "render", cases_path, rendered, "--arch", "sm_90a"], check=True)
    manifest = json.load(open(os.path.join(rendered, "manifest.json")))
    source = open(os.path.join(rendered, "kernels.cu")).read()
    if mutate:
        pattern, replacement = mutate
        source, count = re.subn(pattern, lambda _: replacement, source)
        if not count:
            raise SystemExit(f"{label}: the mutation's pattern is not in the kernels (stale test)")
    cpp = os.path.join(work, "emulated.cpp")
    with open(cpp, "w") as f:
        f.write(emulation_source(source, manifest))
    binary = os.path.join(work, "emulated")
    built = subprocess.run([args.cxx, "-std=c++17", "-O1", "-w", "-fno-pie", "-no-pie", "-I", HERE,
                            cpp, "-o", binary], capture_output=True, text=True)
    if built.returncode:
        raise SystemExit(f"{label}: building the emulation failed:\n{built.stderr[:4000]}")
    return binary, manifest


def run_case(binary, index, case, entry, work):
    """Runs one case in every mode; returns None or the first failure."""
    rng = np.random.default_rng(zlib.crc32(case["name"].encode()))
    data, want = make_case_data(case, rng)
    cdir = os.path.join(work, case["name"])
    os.makedirs(cdir, exist_ok=True)
    dtype, out_dtype = case["dtype"], case.get("out_dtype", case["dtype"])
    sizes = {}
    for role, value in data.items():
        mem = value if role in ("bias", "scale", "shift") else to_memory(
            out_dtype if role == "residual" else dtype, value)
        mem = np.ascontiguousarray(mem)
        mem.tofile(os.path.join(cdir, f"{role}.bin"))
        sizes[role] = mem.nbytes
    out_bytes = want.size * (4 if out_dtype == "f32" else 2)
    np.full(out_bytes, 0xFF, np.uint8).tofile(os.path.join(cdir, "out.bin"))  # NaN poison
    sizes["out"] = out_bytes
    if entry["partial_floats"]:
        np.full(entry["partial_floats"] * 4, 0xFF, np.uint8).tofile(os.path.join(cdir, "partials.bin"))
        np.zeros(entry["counter_count"], np.uint32).tofile(os.path.join(cdir, "counters.bin"))
        sizes["partials"] = entry["partial_floats"] * 4
        sizes["counters"] = entry["counter_count"] * 4
    with open(os.path.join(cdir, "buffers.txt"), "w") as f:
        for role, size in sizes.items():
            f.write(f"{role} {size}\n")
    tol = {"f16": 2e-3, "bf16": 1e-2, "f32": 2e-5}[out_dtype]
    rms = float(np.sqrt(np.mean(want ** 2))) or 1.0
    want_out = round_to(out_dtype, want).astype(np.float64)
    split = entry["partial_floats"] > 0
    modes = [("deferred", "lockstep", 0), ("eager", "random", 1)]
    if split:
        modes.append(("deferred", "random", 2))
    first = None
    for copies, schedule, order in modes:
        mode = f"{copies} copies, {schedule} warps, block order {order}"
        ran = subprocess.run([binary, str(index), cdir, copies, schedule, str(order)],
                             capture_output=True, text=True)
        if ran.returncode:
            return f"{mode}: emulation failed: {ran.stderr.strip()[:1000]}"
        stats = ran.stdout.split()
        conflicts, counters = int(stats[3]), stats[6]
        if conflicts:
            return f"{mode}: {conflicts} ldmatrix bank conflicts in {stats[1]} reads"
        if counters != "zero":
            return f"{mode}: split-K counters were not left at zero"
        raw = open(os.path.join(cdir, "result.bin"), "rb").read()
        got = from_memory(out_dtype, raw).reshape(want.shape)
        ok = np.abs(got - want_out) <= tol * (rms + np.abs(want_out))
        if not ok.all():
            i = int(np.argmin(ok.reshape(-1)))
            return (f"{mode}: {int((~ok).sum())} of {ok.size} values differ; first at "
                    f"{np.unravel_index(i, got.shape)}: {got.reshape(-1)[i]!r} vs "
                    f"{want_out.reshape(-1)[i]!r}")
        if split:  # the reduction order is fixed: bit-identical whichever block came last
            if first is None:
                first = raw
            elif raw != first:
                return f"{mode}: split-K result differs bitwise from block order 0"
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tool", required=True, help="the tensorc-cuda-kernels binary")
    parser.add_argument("--cxx", default="c++", help="host C++ compiler (C++17, GNU extensions)")
    parser.add_argument("--cases", default="", help="comma-separated subset of the cases")
    parser.add_argument("--mutants", action="store_true",
                        help="check that deliberately broken kernels fail instead")
    parser.add_argument("--archs", default="",
                        help="also compile the cases with NVRTC for these archs (sm_80,sm_90,sm_90a)")
    parser.add_argument("--work", help="keep the files here")
    args = parser.parse_args()
    names = [n for n in args.cases.split(",") if n]
    by_name = {c["name"]: c for c in CASES}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise SystemExit(f"unknown case(s) {unknown}")
    cases = [by_name[n] for n in names] if names else CASES
    failed = total = 0
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or tmp
        if args.mutants:
            for mutant, (what, pattern, replacement, on) in MUTANTS.items():
                chosen = [by_name[n] for n in on]
                binary, manifest = build(args, os.path.join(work, mutant), chosen, mutant,
                                         (pattern, replacement))
                whys = [run_case(binary, i, c, manifest["kernels"][i], os.path.join(work, mutant))
                        for i, c in enumerate(chosen)]
                caught = any(whys)
                total += 1
                failed += not caught
                detail = next((w for w in whys if w), "")
                print(f"{'ok' if caught else 'FAIL'} mutant {mutant} ({what}): "
                      f"{'caught: ' + detail[:160] if caught else 'NOT caught'}", flush=True)
        else:
            binary, manifest = build(args, work, cases, "cases")
            for arch in [a for a in args.archs.split(",") if a]:
                # Hopper (sm_90a) kernels compile for sm_90a only; the others for every target.
                source = "kernels.cu" if arch == "sm_90a" else "kernels_portable.cu"
                compiled = subprocess.run(
                    [args.tool, "compile", os.path.join(work, "rendered", source), "--arch",
                     arch], capture_output=True, text=True)
                total += 1
                failed += compiled.returncode != 0
                print(f"{'FAIL' if compiled.returncode else 'ok'} NVRTC {arch}: {len(cases)} kernels"
                      f"{': ' + compiled.stderr[-2000:] if compiled.returncode else ''}", flush=True)
            for i, case in enumerate(cases):
                why = run_case(binary, i, case, manifest["kernels"][i], work)
                total += 1
                failed += why is not None
                print(f"{'FAIL' if why else 'ok'} {case['name']}{': ' + why if why else ''}",
                      flush=True)
    print(f"{total - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
