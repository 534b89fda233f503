# RUN: tensorc explain %s --dim s0=2 | FileCheck %s
# RUN: tensorc explain %s > a.txt && tensorc explain %s > b.txt && cmp a.txt b.txt
# RUN: tensorc explain %s --limit 1 | FileCheck %s --check-prefix=LIMIT
# RUN: not tensorc explain %s --target tpu 2>&1 | FileCheck %s --check-prefix=BADTARGET
# `tensorc explain`: one deterministic page: ops imported, decompositions, fallbacks and why,
# kernels by kind, fusions made and refused with reasons, the memory plan, the largest kernels.

# CHECK-LABEL: # tensorc explain
# CHECK-SAME: (target cpu)
# CHECK-NEXT: imported: 11 nodes of 11 op types
# CHECK-NEXT: inputs: x f32[s0, 4, 8, 8], cw f32[8, 4, 3, 3]
# CHECK-NEXT: simplify (constant-fold, fold-batchnorm, cse, dce): 11 -> 11 nodes
# CHECK-NEXT: decompose (decompose, constant-fold, cse, dce): 11 -> 34 nodes
# CHECK-NEXT: fewer: aten.addmm x1, aten.batch_norm x1, aten.layer_norm x1, aten.silu x1, aten.t x1
# CHECK: aten.addmm x1 -> aten.mm, aten.add
# CHECK: aten.silu x1 -> aten.sigmoid, aten.mul
# The cumulative sum has no lowering (no scan kernel): it runs on its reference kernel, and the
# report says why.
# CHECK: fallbacks (reference kernels run by the runtime): 1
# CHECK-NEXT: aten.cumsum (%scan): no lowering rule covers aten.cumsum with these operands (f32[s0, 8, 4, 4])
# CHECK-NEXT: kernels: 6 from 10 loop nodes: 1 GEMM template (tem_), 1 convolution template (tem_), 1 persistent reduction (per_), 1 pointwise (poi_), 1 reduction (red_), 1 reference-kernel fallback (ext_)
# Batch norm and ReLU become the convolution's epilogue (the pooling over other ranges cannot
# extend it); SiLU cannot extend the linear layer's, whose result the layer norm reads too; the
# column sum is not the rows before it. The flattening of the pooled features is a view: the
# linear layer reads them where the pooling wrote them.
# CHECK-NEXT: fusion: 4 (2 epilogue, 1 pointwise, 1 reduction) made, 5 (2 epilogue, 1 pointwise, 2 reduction) refused
# CHECK-NEXT: refused because: 2 x the previous kernel is not a loop kernel
# CHECK-NEXT: refused because: 1 x ranges [..] differ from the epilogue's [..]
# CHECK-NEXT: refused because: 1 x ranges [..] do not start with the kernel's rows [..]
# CHECK-NEXT: refused because: 1 x the epilogue result fc has other readers
# CHECK: refused pool (pointwise): the previous kernel is not a loop kernel
# CHECK-NEXT: refused ln_mean_sum (reduction): the previous kernel is not a loop kernel
# CHECK-NEXT: refused silu (epilogue): the epilogue result fc has other readers
# CHECK-NEXT: refused colsum (reduction): ranges [16] do not start with the kernel's rows [s0]
# CHECK-NEXT: memory plan: arena 128*((4*s0 + 63)//64) + 2560*s0 bytes = 5.12 KiB peak at s0=2
# The convolution (2*N*OC*OH*OW*C*KH*KW = 73728 FLOP at s0=2, plus its epilogue) is the largest.
# CHECK-NEXT: estimated cost at s0=2:
# CHECK-NEXT: tem_convolution_sub_add_rsqrt_mul_relu_0: 80.90 KFLOP
# CHECK-NEXT: tem_mm_add_3: 8.22 KFLOP
# LIMIT: aten.addmm x1, ... 10 more
# LIMIT: refused because: 2 x the previous kernel is not a loop kernel
# LIMIT-NEXT: ... 3 more reasons
# LIMIT: ... 4 more refusals
# BADTARGET: unknown target 'tpu'
graph(%x: f32[s0, 4, 8, 8], %cw: f32[8, 4, 3, 3], %bn_w: f32[8], %bn_b: f32[8], %bn_mean: f32[8], %bn_var: f32[8], %w: f32[16, 128], %b: f32[16], %g: f32[16], %beta: f32[16]):
  %conv : f32[s0, 8, 8, 8] = call_function[target=aten.convolution](args=(%x, %cw, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1))
  %bn : f32[s0, 8, 8, 8] = call_function[target=aten.batch_norm](args=(%conv, %bn_w, %bn_b, %bn_mean, %bn_var, False, 0.1, 1e-05))
  %relu : f32[s0, 8, 8, 8] = call_function[target=aten.relu](args=(%bn,))
  %pool : f32[s0, 8, 4, 4] = call_function[target=aten.max_pool](args=(%relu, [2, 2]))
  %scan : f32[s0, 8, 4, 4] = call_function[target=aten.cumsum](args=(%pool, 3))
  %flat : f32[s0, 128] = call_function[target=aten.view](args=(%scan, [s0, 128]))
  %wt : f32[128, 16] = call_function[target=aten.t](args=(%w,))
  %fc : f32[s0, 16] = call_function[target=aten.addmm](args=(%b, %flat, %wt))
  %ln : f32[s0, 16] = call_function[target=aten.layer_norm](args=(%fc, [16], %g, %beta, 1e-05))
  %silu : f32[s0, 16] = call_function[target=aten.silu](args=(%ln,))
  %colsum : f32[16] = call_function[target=aten.sum](args=(%silu, [0]))
  return (%silu, %colsum)
