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
# -----
# A node with a placeholder operand is not folded.
# CHECK-LABEL: graph(%x: f32[3]):
# CHECK:         %a : f32[3] = call_function[target=aten.add](args=(%x, %_tensor_constant))
# CHECK-NEXT:    return (%a,)
graph(%x: f32[3]):
  %a : f32[3] = call_function[target=aten.add](args=(%x, 2.0))
  return (%a,)
# -----
# Results over 65536 elements stay as computation (300*300 = 90000); smaller ones fold.
# CHECK-LABEL: graph(%x: f32[3]):
# CHECK-NEXT:    %big : f32[300, 300] = call_function[target=aten.full](args=([300, 300], 1.0))
# CHECK-NEXT:    %small : f32[2, 2] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[2, 2]>[1.0, 1.0, 1.0, 1.0]})
# CHECK-NEXT:    return (%big, %small)
graph(%x: f32[3]):
  %big : f32[300, 300] = call_function[target=aten.full](args=([300, 300], 1.0))
  %small : f32[2, 2] = call_function[target=aten.full](args=([2, 2], 1.0))
  return (%big, %small)
# -----
# A kernel error (integer division by zero) is not a compile error: the node is left in place.
# CHECK-LABEL: graph(%x: i64[2]):
# CHECK:         %d : i64[2] = call_function[target=aten.div](args=(%_tensor_constant, %_tensor_constant_1), kwargs={rounding_mode='floor'})
# CHECK-NEXT:    return (%d,)
graph(%x: i64[2]):
  %d : i64[2] = call_function[target=aten.div](args=(tensor<i64[2]>[1, 2], 0), kwargs={rounding_mode='floor'})
  return (%d,)
# -----
# A symbolic attribute (a size from an input's symbol) is not folded.
# CHECK-LABEL: graph(%x: f32[n]):
# CHECK-NEXT:    %ones : f32[n] = call_function[target=aten.full](args=([n], 1.0))
# CHECK-NEXT:    return (%ones,)
graph(%x: f32[n]):
  %ones : f32[n] = call_function[target=aten.full](args=([n], 1.0))
  return (%ones,)
# -----
# A data-dependent result shape (nonzero) is not folded: the constant's type would differ.
# CHECK-LABEL: graph(%x: f32[3]):
# CHECK:         %nz : i64[1, nz_d1] = call_function[target=prims.nonzero](args=(%_tensor_constant,))
# CHECK-NEXT:    return (%nz,)
graph(%x: f32[3]):
  %nz : i64[1, nz_d1] = call_function[target=prims.nonzero](args=(tensor<f32[3]>[1.0, 0.0, 2.0],))
  return (%nz,)
# -----
# Each result of a multi-result node becomes a constant with the result's name.
# CHECK-LABEL: graph(%x: f32[2]):
# CHECK:         %first : f32[1] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[1]>[1.0]})
# CHECK-NEXT:    %rest : f32[2] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[2]>[2.0, 3.0]})
# CHECK-NEXT:    %y : f32[2] = call_function[target=aten.add](args=(%rest, %x))
# CHECK-NEXT:    return (%y,)
graph(%x: f32[2]):
  %sp : (f32[1], f32[2]) = call_function[target=aten.split_with_sizes](args=(tensor<f32[3]>[1.0, 2.0, 3.0], [1, 2]))
  %first : f32[1] = call_function[target=getitem](args=(%sp, 0))
  %rest : f32[2] = call_function[target=getitem](args=(%sp, 1))
  %y : f32[2] = call_function[target=aten.add](args=(%rest, %x))
  return (%y,)
