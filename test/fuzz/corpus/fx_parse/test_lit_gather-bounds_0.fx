# RUN: d=$(mktemp -d) && tensorc compile %s -o $d/b > /dev/null 2>&1 && tensorc run $d/b --random-inputs 3 --dim s0=2 | FileCheck %s && rm -r $d
# Compiled gathers never read out of bounds: a negative index counts from the end and one still
# outside [0, size) is clamped into it (the reference kernels report an error instead), so
# [-1, 9, 0, -7] picks the same columns as [5, 5, 0, 0] and, from 2 rows, the rows [1, 1, 0, 0].
# CHECK: a: f32[2, 4] [[SELECTED:.*]]
# CHECK-NEXT: b: f32[2, 4] [[SELECTED]]
# CHECK-NEXT: e: f32[4, 6] [[ROWS:.*]]
# CHECK-NEXT: f: f32[4, 6] [[ROWS]]
graph(%x: f32[s0, 6]):
  %a : f32[s0, 4] = call_function[target=aten.index_select](args=(%x, 1, tensor<i64[4]>[-1, 9, 0, -7]))
  %b : f32[s0, 4] = call_function[target=aten.index_select](args=(%x, 1, tensor<i64[4]>[5, 5, 0, 0]))
  %e : f32[4, 6] = call_function[target=aten.embedding](args=(%x, tensor<i32[4]>[-1, 9, 0, -7]))
  %f : f32[4, 6] = call_function[target=aten.embedding](args=(%x, tensor<i32[4]>[1, 1, 0, 0]))
  return (%a, %b, %e, %f)
