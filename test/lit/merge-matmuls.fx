# RUN: tensorc opt %s --passes=merge-parallel-matmuls,dce | FileCheck %s
# RUN: tensorc --log merge-parallel-matmuls opt %s --passes=merge-parallel-matmuls 2>&1 >/dev/null | FileCheck %s --check-prefix=LOG
# RUN: d=$(mktemp -d) && tensorc opt %s --passes=merge-parallel-matmuls,dce -o $d/m.fx && tensorc run $d/m.fx --interp --random-inputs 5 > $d/a && tensorc run %s --interp --random-inputs 5 > $d/b && diff $d/a $d/b && rm -r $d
# merge-parallel-matmuls: products of one operand by constant weights of one K and dtype become
# one product by the weights side by side and column slices of it (the results are the same:
# third RUN line). A product by an operand that is not a constant, or the only constant product
# of its operand, stays.

# CHECK-LABEL: graph(
# CHECK-SAME: %q_merged_weight: f32[4, 6]
# CHECK: %q_mm : f32[3, 6] = call_function[target=aten.mm](args=(%x, %q_merged_weight))
# CHECK-NEXT: %q : f32[3, 2] = call_function[target=aten.slice](args=(%q_mm, 1, 0, 2
# CHECK: %k : f32[3, 3] = call_function[target=aten.slice](args=(%q_mm, 1, 2, 5
# CHECK: %v : f32[3, 1] = call_function[target=aten.slice](args=(%q_mm, 1, 5, 6
# CHECK: %other : f32[3, 2] = call_function[target=aten.mm](args=(%x, %wx))
# CHECK: %deep : f32[2, 2] = call_function[target=aten.mm](args=(%xs, %wd))
# LOG: merged 3 products of %x by wq, wk, wv
graph(%x: f32[3, 4], %wx: f32[4, 2]):
  %wq : f32[4, 2] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[4, 2]>[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]})
  %wk : f32[4, 3] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[4, 3]>[1.0, -1.0, 0.5, 2.0, -2.0, 0.25, 3.0, -3.0, 0.125, 4.0, -4.0, 1.0]})
  %wv : f32[4, 1] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[4, 1]>[0.5, -0.5, 1.5, -1.5]})
  %wd : f32[3, 2] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[3, 2]>[1.0, 0.0, 0.0, 1.0, 1.0, 1.0]})
  %q : f32[3, 2] = call_function[target=aten.mm](args=(%x, %wq))
  %k : f32[3, 3] = call_function[target=aten.mm](args=(%x, %wk))
  %v : f32[3, 1] = call_function[target=aten.mm](args=(%x, %wv))
  %other : f32[3, 2] = call_function[target=aten.mm](args=(%x, %wx))
  %xt : f32[4, 3] = call_function[target=aten.t](args=(%x,))
  %xs : f32[2, 3] = call_function[target=aten.slice](args=(%xt, 0, 0, 2))
  %deep : f32[2, 2] = call_function[target=aten.mm](args=(%xs, %wd))
  return (%q, %k, %v, %other, %deep)

# -----
# Transposed weights (a linear layer's weight.t(), which decomposition writes as permute [1, 0]):
# the merged weight stacks them [N1 + N2, K] and the product reads it through one transpose.
# CHECK-LABEL: graph(
# CHECK-SAME: %q_merged_weight: f32[5, 2]
# CHECK: %q_permute : f32[2, 5] = call_function[target=aten.permute](args=(%q_merged_weight, [1, 0]))
# CHECK-NEXT: %q_mm : f32[3, 5] = call_function[target=aten.mm](args=(%x, %q_permute))
# CHECK-NEXT: %q : f32[3, 3] = call_function[target=aten.slice](args=(%q_mm, 1, 0, 3
# CHECK-NEXT: %k : f32[3, 2] = call_function[target=aten.slice](args=(%q_mm, 1, 3, 5
# LOG: merged 2 products of %x by wq, wk
graph(%x: f32[3, 2]):
  %wq : f32[3, 2] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[3, 2]>[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
  %wk : f32[2, 2] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[2, 2]>[-1.0, 0.5, 0.25, -2.0]})
  %tq : f32[2, 3] = call_function[target=aten.permute](args=(%wq, [1, 0]))
  %tk : f32[2, 2] = call_function[target=aten.permute](args=(%wk, [1, 0]))
  %q : f32[3, 3] = call_function[target=aten.mm](args=(%x, %tq))
  %k : f32[3, 2] = call_function[target=aten.mm](args=(%x, %tk))
  return (%q, %k)

# -----
# Each product's one user adds a constant bias over its columns (directly, or after a view that
# keeps the last dim, as [M, N] -> [B, S, N]): the biases merge too, one add on the merged
# product (a GEMM epilogue later), then the slices and views. A bias of the wrong length would
# not merge (not in this case).
# CHECK-LABEL: graph(
# CHECK-SAME: %q_merged_weight: f32[2, 5], %q_merged_bias: f32[5]
# CHECK: %q_mm : f32[4, 5] = call_function[target=aten.mm](args=(%x, %q_merged_weight))
# CHECK-NEXT: %{{.*}} : f32[4, 5] = call_function[target=aten.add](args=(%q_mm, %q_merged_bias
# CHECK-NEXT: %{{.*}} : f32[4, 3] = call_function[target=aten.slice](args=(%{{.*}}, 1, 0, 3
# CHECK-NEXT: %bq : f32[2, 2, 3] = call_function[target=aten.view](
# CHECK: %bk : f32[4, 2] = call_function[target=aten.slice](
# CHECK-NOT: aten.add
# LOG: merged 2 products of %x by wq, wk, and their biases
graph(%x: f32[4, 2]):
  %wq : f32[2, 3] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[2, 3]>[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
  %wk : f32[2, 2] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[2, 2]>[-1.0, 0.5, 0.25, -2.0]})
  %cq : f32[3] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[3]>[0.5, -0.5, 2.0]})
  %ck : f32[2] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[2]>[1.0, -3.0]})
  %q : f32[4, 3] = call_function[target=aten.mm](args=(%x, %wq))
  %vq : f32[2, 2, 3] = call_function[target=aten.view](args=(%q, [2, 2, 3]))
  %bq : f32[2, 2, 3] = call_function[target=aten.add](args=(%vq, %cq))
  %k : f32[4, 2] = call_function[target=aten.mm](args=(%x, %wk))
  %bk : f32[4, 2] = call_function[target=aten.add](args=(%ck, %k))
  return (%bq, %bk)
