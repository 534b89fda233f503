# RUN: tensorc inspect %s --stage lower | FileCheck %s --check-prefix=LOWER
# RUN: d=$(mktemp -d) && tensorc compile %s -o $d/b 2>&1 | FileCheck %s --check-prefix=COMPILE && tensorc run $d/b --random-inputs 4 --dim s0=3 | FileCheck %s && tensorc run %s --interp --random-inputs 4 --dim s0=3 | FileCheck %s && rm -r $d
# A cat along a static dim is a pointwise select over the inputs' ranges, fused with its
# producers (a GEMM result seen through a view, an i64 input cast to f32) and consumer over a
# symbolic batch: each input is read at its index wrapped into its own range, and the compiled
# bundle matches the interpreter.
# LOWER-NOT: extern
# LOWER: pointwise t over [s0, 6, 3]
# LOWER-NEXT: t0 : i64 = load(i, 3*x0 + x2)
# LOWER-NEXT: t1 : f32 = cast(t0)
# LOWER-NEXT: t2 : f32 = load(mm, 3*((x1 + 1)%2) + 6*x0 + x2)
# LOWER-NEXT: t3 : i64 = index(x1)
# LOWER-NEXT: t4 : bool = lt(t3, 5)
# LOWER-NEXT: t5 : f32 = where(t4, t2, t1)
# LOWER-NEXT: t6 : f32 = load(p, 9*x0 + 3*(x1%3) + x2)
# LOWER-NEXT: t7 : bool = lt(t3, 3)
# LOWER-NEXT: t8 : f32 = where(t7, t6, t5)
# LOWER-NEXT: t9 : f32 = tanh(t8)
# LOWER-NOT: extern
# COMPILE: 0 fallback op types
# CHECK: t: f32[3, 6, 3] mean=0.215331 min=-0.759399 max=1
graph(%x: f32[s0, 4], %w: f32[4, 6], %p: f32[s0, 3, 3], %i: i64[s0, 1, 3]):
  %mm : f32[s0, 6] = call_function[target=aten.mm](args=(%x, %w))
  %v : f32[s0, 2, 3] = call_function[target=aten.view](args=(%mm, [s0, 2, 3]))
  %c : f32[s0, 6, 3] = call_function[target=aten.cat](args=([%p, %v, %i], 1))
  %t : f32[s0, 6, 3] = call_function[target=aten.tanh](args=(%c,))
  return (%t,)
