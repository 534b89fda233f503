# RUN: tensorc opt %s --passes=constant-fold | FileCheck %s
# Constant folding: a node whose operands are all prims.constant results is evaluated and
# replaced by a constant of the same type and name; the consumed constants stay for DCE.

# Two literals added fold into one constant named like the node; its user folds too.
# CHECK-LABEL: graph(%x: f32[3]):
# CHECK:         %a : f32[3] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[3]>[3.0, 4.0, 5.0]})
# CHECK-NEXT:    %b : f32[3] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[3]>[-3.0, -4.0, -5.0]})
# CHECK-NEXT:    %y : f32[3] = call_function[target=aten.mul](args=(%b, %x))
# CHECK-NEXT:    return (%y,)
graph(%x: f32[3]):
  %a : f32[3] = call_function[target=aten.add](args=(tensor<f32[3]>[1.0, 2.0, 3.0], 2.0))
  %b : f32[3] = call_function[target=aten.neg](args=(%a,))
  %y : f32[3] = call_function[target=aten.mul](args=(%b, %x))
  return (%y,)
