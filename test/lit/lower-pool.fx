# RUN: tensorc inspect %s --stage lower | FileCheck %s --check-prefix=LOWER
# RUN: d=$(mktemp -d) && tensorc compile %s -o $d/b --fallback=error 2>&1 | FileCheck %s --check-prefix=COMPILE && tensorc run $d/b --random-inputs 4 --dim s0=2 | FileCheck %s && tensorc run %s --interp --random-inputs 4 --dim s0=2 | FileCheck %s && rm -r $d
# Pooling is a pointwise kernel over the output unrolling the window: each tap is a masked load
# (padding reads -inf for max_pool, 0 for avg_pool) at its position wrapped into the input, so
# the load stays affine and in bounds. The cheap relu is recomputed per tap (fused); avg_pool
# without count_include_pad divides by the window clipped to the input. The bundle matches the
# interpreter.
# LOWER-NOT: extern
# LOWER: pointwise m over [s0, 3, 5, 5] origins=[relu, max_pool]
# LOWER-NEXT: t0 : i64 = index(2*x2 - 1)
# LOWER-NEXT: t1 : bool = ge(t0, 0)
# LOWER-NEXT: t2 : bool = lt(t0, 8)
# LOWER: load(x, 8*((2*x2 + 7)%8) + (2*x3 + 7)%8 + 192*x0 + 64*x1)
# LOWER-NEXT: relu
# LOWER-NEXT: where({{t[0-9]+}}, {{t[0-9]+}}, -inf)
# LOWER: maximum
# LOWER: pointwise a over [s0, 3, 3, 3] origins=[avg_pool]
# LOWER: load(m, 5*((2*x2 + 4)%5) + (2*x3 + 4)%5 + 75*x0 + 25*x1)
# LOWER-NEXT: where({{t[0-9]+}}, {{t[0-9]+}}, 0)
# LOWER: maximum({{t[0-9]+}}, 1)
# LOWER: div
# LOWER-NOT: extern
# COMPILE: 0 fallback op types
# CHECK: a: f32[2, 3, 3, 3] mean=0.514166 min=0.0964266 max=0.856178
graph(%x: f32[s0, 3, 8, 8]):
  %r : f32[s0, 3, 8, 8] = call_function[target=aten.relu](args=(%x,))
  %m : f32[s0, 3, 5, 5] = call_function[target=aten.max_pool](args=(%r,), kwargs={kernel_size=[2, 2], stride=[2, 2], padding=[1, 1], dilation=[1, 1], ceil_mode=False})
  %a : f32[s0, 3, 3, 3] = call_function[target=aten.avg_pool](args=(%m,), kwargs={kernel_size=[3, 3], stride=[2, 2], padding=[1, 1], ceil_mode=False, count_include_pad=False})
  return (%a,)
