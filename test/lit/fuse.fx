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

# -----
# A convolution is a GEMM template too: its bias and relu become the epilogue, and a residual add
# after a 1x1 convolution is that convolution's epilogue.
# CHECK-LABEL: tem_convolution_relu_0 (x, w, b, r)
# CHECK-NEXT: conv2d c_nobias [s0, 8, 8, 8]
# CHECK-NEXT: pointwise r [s0, 8, 8, 8]
# CHECK-NEXT: # epilogue r fused into c_nobias
# CHECK-NEXT: tem_convolution_add_1 (w2, r, s)
# CHECK: # 2 kernels
# LOG: epilogue r fused into c_nobias
# LOG: epilogue s fused into c2
graph(%x: f32[s0, 4, 8, 8], %w: f32[8, 4, 3, 3], %b: f32[8], %w2: f32[8, 8, 1, 1]):
  %c : f32[s0, 8, 8, 8] = call_function[target=aten.convolution](args=(%x, %w, %b, [1, 1], [1, 1], [1, 1], False, [0, 0]))
  %r : f32[s0, 8, 8, 8] = call_function[target=aten.relu](args=(%c,))
  %c2 : f32[s0, 8, 8, 8] = call_function[target=aten.convolution](args=(%r, %w2, None, [1, 1], [0, 0], [1, 1], False, [0, 0]))
  %s : f32[s0, 8, 8, 8] = call_function[target=aten.add](args=(%c2, %r))
  return (%s,)
