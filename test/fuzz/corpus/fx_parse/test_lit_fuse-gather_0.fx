# RUN: tensorc --log schedule inspect %s --stage fuse 2>&1 | FileCheck %s
# RUN: d=$(mktemp -d) && tensorc compile %s -o $d/b > /dev/null 2>&1 && tensorc run $d/b --random-inputs 5 --dim s0=3 > $d/compiled && tensorc run %s --interp --random-inputs 5 --dim s0=3 > $d/interp && diff $d/compiled $d/interp && rm -r $d
# A gather reads its input at positions known only at run time: it never joins the kernel that
# writes that input, even when the positions stay within the row (a full read, not elementwise).
# CHECK: not fusing g: reads a at positions known only at run time (a gather)
# CHECK-LABEL: per_fused_amax_sub_0 rows [s0]
# CHECK-NEXT: reduction m [s0] reducing [10] with max
# CHECK-NEXT: pointwise a [s0, 10]
# CHECK: poi_fused_gather_1 rows [s0, 10] (idx, a, g)
# CHECK-NOT: ext_
graph(%x: f32[s0, 10], %idx: i64[s0, 10]):
  %m : f32[s0, 1] = call_function[target=aten.amax](args=(%x, [1], True))
  %a : f32[s0, 10] = call_function[target=aten.sub](args=(%x, %m))
  %g : f32[s0, 10] = call_function[target=aten.gather](args=(%a, 1, %idx))
  return (%a, %g)
