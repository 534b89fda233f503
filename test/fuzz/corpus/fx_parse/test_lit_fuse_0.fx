# RUN: tensorc inspect %s --stage fuse | FileCheck %s
# RUN: tensorc --log schedule inspect %s --stage fuse 2>&1 | FileCheck %s --check-prefix=LOG
# Fusion (the `fuse` stage): GEMMs take their pointwise users as epilogues; a layer norm and its
# activation become one kernel over the rows; a reduction over a different axis is not fused.

# Linear + LayerNorm + SiLU (the seed-003 block): one GEMM with the bias epilogue, one kernel
# for both row reductions and the normalization.
# CHECK-LABEL: tem_mm_add_0
# CHECK-NEXT: gemm fc_mm [s0, 16]
# CHECK-NEXT: pointwise fc [s0, 16]
# CHECK-NEXT: # epilogue fc fused into fc_mm
# CHECK-NEXT: per_fused_sum_div_sub_mul_1 rows [s0]
# CHECK-NEXT: reduction ln_mean_sum [s0] reducing [16] with sum
# CHECK-NEXT: reduction ln_sum [s0] reducing [16] with sum
# CHECK-NEXT: pointwise silu [s0, 16]
# A GELU after the second GEMM is its epilogue too (bias + erf-GELU in one kernel).
# CHECK-NEXT: # fused
# CHECK-NEXT: tem_mm_add_mul_erf_2
# CHECK-NEXT: gemm fc2_mm [s0, 16]
# CHECK-NEXT: pointwise gelu [s0, 16]
# A column sum (over the batch) is not the rows of the kernel before it.
# CHECK-NEXT: # epilogue gelu fused into fc2_mm
# CHECK-NEXT: red_fused_sum_3 rows [16]
# CHECK: # 4 kernels
# LOG: fused ln_sum into rows [s0]
# LOG: epilogue gelu fused into fc2_mm
# LOG: not fusing colsum: the previous kernel is not a loop kernel
graph(%x: f32[s0, 8], %w: f32[16, 8], %b: f32[16], %g: f32[16], %beta: f32[16], %w2: f32[16, 16], %b2: f32[16]):
  %wt : f32[8, 16] = call_function[target=aten.t](args=(%w,))
  %fc : f32[s0, 16] = call_function[target=aten.addmm](args=(%b, %x, %wt))
  %ln : f32[s0, 16] = call_function[target=aten.layer_norm](args=(%fc, [16], %g, %beta))
  %silu : f32[s0, 16] = call_function[target=aten.silu](args=(%ln,))
  %w2t : f32[16, 16] = call_function[target=aten.t](args=(%w2,))
  %fc2 : f32[s0, 16] = call_function[target=aten.addmm](args=(%b2, %silu, %w2t))
  %gelu : f32[s0, 16] = call_function[target=aten.gelu](args=(%fc2,))
  %colsum : f32[16] = call_function[target=aten.sum](args=(%gelu, [0]))
  return (%gelu, %colsum)
