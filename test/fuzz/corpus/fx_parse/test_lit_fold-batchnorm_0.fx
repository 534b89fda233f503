# RUN: tensorc opt %s --passes=fold-batchnorm,dce | FileCheck %s
# RUN: tensorc --log fold-batchnorm opt %s --passes=fold-batchnorm 2>&1 >/dev/null | FileCheck %s --check-prefix=LOG
# RUN: d=$(mktemp -d) && tensorc opt %s --passes=fold-batchnorm,dce -o $d/f.fx && tensorc run $d/f.fx --interp --random-inputs 3 > $d/a && tensorc run %s --interp --random-inputs 3 > $d/b && diff $d/a $d/b && rm -r $d
# fold-batchnorm: an inference batch norm after a convolution with constant parameters becomes
# the convolution's weights and bias; the results are the same (third RUN line). A convolution
# with another user keeps its batch norm.

# CHECK-LABEL: graph(
# CHECK-SAME: %y_w_folded: f32[2, 1, 1, 1], %y_b_folded: f32[2]
# CHECK: %bn : f32[1, 2, 2, 2] = call_function[target=aten.convolution](args=(%x, %y_w_folded, %y_b_folded
# CHECK-NOT: %bn = {{.*}}batch_norm
# CHECK: %bn2 : f32[1, 2, 2, 2] = call_function[target=aten.batch_norm]
# LOG: folded %bn = aten.batch_norm into %y = aten.convolution
# LOG: not folding %bn2 = aten.batch_norm: the convolution has other users
graph(%x: f32[1, 1, 2, 2]):
  %w : f32[2, 1, 1, 1] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[2, 1, 1, 1]>[1.0, 2.0]})
  %g : f32[2] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[2]>[2.0, 2.0]})
  %b : f32[2] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[2]>[1.0, 1.0]})
  %m : f32[2] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[2]>[0.5, 0.0]})
  %v : f32[2] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[2]>[3.0, 0.0]})
  %y : f32[1, 2, 2, 2] = call_function[target=aten.convolution](args=(%x, %w, None, [1, 1], [0, 0], [1, 1], False, [0, 0]))
  %bn : f32[1, 2, 2, 2] = call_function[target=aten.batch_norm](args=(%y, %g, %b, %m, %v), kwargs={eps=1.0})
  %y2 : f32[1, 2, 2, 2] = call_function[target=aten.convolution](args=(%x, %w, None, [1, 1], [0, 0], [1, 1], False, [0, 0]))
  %bn2 : f32[1, 2, 2, 2] = call_function[target=aten.batch_norm](args=(%y2, %g, %b, %m, %v), kwargs={eps=1.0})
  %s : f32[1, 2, 2, 2] = call_function[target=aten.add](args=(%bn2, %y2))
  return (%bn, %s)
