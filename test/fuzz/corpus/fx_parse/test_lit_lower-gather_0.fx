# RUN: tensorc inspect %s --stage lower | FileCheck %s --check-prefix=LOWER
# RUN: tensorc inspect %s --stage fuse | FileCheck %s
# RUN: d=$(mktemp -d) && tensorc compile %s -o $d/b 2>&1 | FileCheck %s --check-prefix=COMPILE && tensorc run $d/b --random-inputs 4 --dim s0=3 > $d/compiled && tensorc run %s --interp --random-inputs 4 --dim s0=3 > $d/interp && diff $d/compiled $d/interp && tensorc run $d/b --random-inputs 7 --dim s0=1 --variant x86_64 > $d/compiled && tensorc run %s --interp --random-inputs 7 --dim s0=1 > $d/interp && diff $d/compiled $d/interp && rm -r $d
# Gathers (embedding, index_select, gather) lower to pointwise bodies with an indirect load: the
# loaded index, wrapped (+ size when negative) and clamped into range, times the dim's stride.
# They fuse like other pointwise ops; compiled and interpreted runs agree (symbolic batch s0).
# LOWER-LABEL: pointwise r over [s0, 5, 16]
# LOWER: t1 : i64 = load(ids, 5*x0 + x1)
# LOWER-NEXT: t2 : i64 = add(t1, 10)
# LOWER-NEXT: t3 : bool = lt(t1, 0)
# LOWER-NEXT: t4 : i64 = where(t3, t2, t1)
# LOWER-NEXT: t5 : i64 = maximum(t4, 0)
# LOWER-NEXT: t6 : i64 = minimum(t5, 9)
# LOWER-NEXT: t7 : i64 = mul(t6, 16)
# LOWER-NEXT: t8 : f32 = load(w, x2 + t7)
# LOWER-LABEL: pointwise s over [10, 4]
# LOWER: t0 : i32 = load(sel, x1)
# LOWER: load(t, 12*x0 + t6)
# index_select on a transposed view reads the untransposed buffer (stride 1 in the picked dim).
# LOWER-LABEL: pointwise s2 over [4, 10]
# LOWER: t6 : i64 = minimum(t5, 11)
# LOWER-NEXT: t7 : f32 = load(t, 12*x1 + t6)
# LOWER-NOT: extern
# CHECK-NOT: ext_
# The embedding, the positional add and the ReLU: one generated kernel.
# CHECK: poi_fused_embedding_add_relu_0 rows [s0, 5, 16] (ids, w, pos, r)
# CHECK: poi_fused_index_select_1 rows [10, 4]
# CHECK: poi_fused_gather_mul_2 rows [s0, 5]
# CHECK: poi_fused_index_select_3 rows [4, 10]
# CHECK-NOT: ext_
# COMPILE: 0 fallback op types
graph(%ids: i64[s0, 5], %w: f32[10, 16], %pos: f32[5, 16], %t: f32[10, 12], %sel: i32[4], %u: f32[s0, 10]):
  %e : f32[s0, 5, 16] = call_function[target=aten.embedding](args=(%w, %ids))
  %a : f32[s0, 5, 16] = call_function[target=aten.add](args=(%e, %pos))
  %r : f32[s0, 5, 16] = call_function[target=aten.relu](args=(%a,))
  %s : f32[10, 4] = call_function[target=aten.index_select](args=(%t, 1, %sel))
  %g : f32[s0, 5] = call_function[target=aten.gather](args=(%u, 1, %ids))
  %g2 : f32[s0, 5] = call_function[target=aten.mul](args=(%g, %g))
  %tt : f32[12, 10] = call_function[target=aten.t](args=(%t,))
  %s2 : f32[4, 10] = call_function[target=aten.index_select](args=(%tt, 0, %sel))
  return (%r, %s, %g2, %s2)
