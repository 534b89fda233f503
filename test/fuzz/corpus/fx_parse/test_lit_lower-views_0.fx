# RUN: tensorc inspect %s --stage lower | FileCheck %s
# Reshapes whose symbolic dim comes first on both sides lower to index arithmetic: [3*s0, 8] to
# [s0, 3, 8] reads the GEMM result through strides, no reference-kernel fallback.
# CHECK-NOT: extern
# CHECK: template gemm mm batch=1 m=3*s0 n=8 k=4
# CHECK: pointwise r over [s0, 3, 8]
# CHECK-NEXT: t0 : f32 = load(mm, 24*x0 + 8*x1 + x2)
# CHECK-NOT: extern
graph(%x: f32[s0, 3, 4], %w: f32[4, 8]):
  %flat : f32[3*s0, 4] = call_function[target=aten.reshape](args=(%x, [3*s0, 4]))
  %mm : f32[3*s0, 8] = call_function[target=aten.mm](args=(%flat, %w))
  %y : f32[s0, 3, 8] = call_function[target=aten.view](args=(%mm, [s0, 3, 8]))
  %r : f32[s0, 3, 8] = call_function[target=aten.relu](args=(%y,))
  return (%r,)
