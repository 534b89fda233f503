# RUN: tensorc inspect %s --stage cuda --target cuda | FileCheck %s --check-prefix=HIGHEST
# RUN: tensorc inspect %s --stage cuda --target cuda --matmul-precision highest | FileCheck %s --check-prefix=HIGHEST
# RUN: tensorc inspect %s --stage cuda --target cuda --matmul-precision high | FileCheck %s --check-prefix=HIGH
# --matmul-precision (torch.set_float32_matmul_precision): f32 GEMMs and convolutions multiply in
# strict f32 on the SIMT kernel (highest, the default) or on TF32 tensor cores (high: math kind 2
# of the tensor-core template); f16 GEMMs are on tensor cores either way (kind 0). The f32 GEMM
# gives the SMs too few tiles and is deep enough to split K (parts of >= 96): the kernel takes the
# split-K workspaces after its buffers.
# HIGHEST: // --matmul-precision highest
# HIGHEST-LABEL: tem_mm_0(const float *__restrict__ b0, const float *__restrict__ b1, float *b{{[0-9]+}}, float *__restrict__ tk_partials, unsigned *__restrict__ tk_counters)
# HIGHEST: tk_gemm_simt<TkSimtConfig<{{[0-9]+}}, {{[0-9]+}}, {{[0-9]+}}>>(tk_a, tk_b, tk_M, tk_N, tk_K, tk_batches, tk_partials, tk_counters, tk_smem,
# HIGHEST-LABEL: tem_convolution_{{[0-9]+}}(
# HIGHEST: tk_gemm_simt<TkSimtConfig<
# HIGH: // --matmul-precision high
# HIGH-LABEL: tem_mm_0(
# HIGH: tk_gemm_tc<TkTcConfig<{{[0-9, ]+}}, 2>>(tk_a, tk_b
# HIGH-LABEL: tem_convolution_{{[0-9]+}}(
# HIGH: tk_gemm_tc<TkTcConfig<{{[0-9, ]+}}, 2>>(tk_a, tk_b
graph(%x: f32[64, 256], %w: f32[256, 48], %img: f32[1, 16, 8, 8], %k: f32[32, 16, 3, 3]):
  %y : f32[64, 48] = call_function[target=aten.mm](args=(%x, %w))
  %c : f32[1, 32, 8, 8] = call_function[target=aten.convolution](args=(%img, %k, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1))
  return (%y, %c)

# -----
# HIGHEST: // --matmul-precision highest
# HIGHEST-LABEL: tem_mm_0(
# HIGHEST: tk_gemm_tc<TkTcConfig<{{[0-9, ]+}}, 0>>(tk_a, tk_b
# HIGH: // --matmul-precision high
# HIGH-LABEL: tem_mm_0(
# HIGH: tk_gemm_tc<TkTcConfig<{{[0-9, ]+}}, 0>>(tk_a, tk_b
graph(%x: f16[64, 32], %w: f16[32, 48]):
  %y : f16[64, 48] = call_function[target=aten.mm](args=(%x, %w))
  return (%y,)
