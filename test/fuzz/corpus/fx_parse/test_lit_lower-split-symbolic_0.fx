# RUN: tensorc inspect %s --stage lower | FileCheck %s
# Symbolic split sizes give symbolic offsets: the second result starts s0 into each row of x
# (the exp of the input is inlined into both readers, no kernel of the split's own).
# CHECK-NOT: extern
# CHECK: pointwise o over [3, s0]
# CHECK: load(x, s0*x0 + 4*x0 + x1)
# CHECK: pointwise b over [3, 4]
# CHECK-NEXT: t0 : f32 = load(x, s0 + s0*x0 + 4*x0 + x1)
# CHECK-NEXT: t1 : f32 = exp(t0)
# CHECK-NOT: extern
graph(%x: f32[3, s0 + 4], %y: f32[s0]):
  %e : f32[3, s0 + 4] = call_function[target=aten.exp](args=(%x,))
  %sp : (f32[3, s0], f32[3, 4]) = call_function[target=aten.split_with_sizes](args=(%e, [s0, 4], 1))
  %a : f32[3, s0] = call_function[target=getitem](args=(%sp, 0))
  %b : f32[3, 4] = call_function[target=getitem](args=(%sp, 1))
  %o : f32[3, s0] = call_function[target=aten.add](args=(%a, %y))
  return (%o, %b)
