# Inline literals become named prims.constant nodes; non-default keyword attributes print.
# CHECK-LABEL: graph(%x: f32[3]):
# CHECK-NEXT:  %_tensor_constant : f32[3] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[3]>[1.0, 2.0, 3.0]})
# CHECK-NEXT:  %add : f32[3] = call_function[target=aten.add](args=(%x, %_tensor_constant), kwargs={alpha=2})
# CHECK-NEXT:  %_tensor_constant_1 : i64[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<i64[]>[4]})
# CHECK-NEXT:  %mul : f32[3] = call_function[target=aten.mul](args=(%add, %_tensor_constant_1))
graph(%x: f32[3]):
  %add : f32[3] = call_function[target=aten.add](args=(%x, tensor<f32[3]>[1.0, 2.0, 3.0]), kwargs={alpha=2})
  %mul : f32[3] = call_function[target=aten.mul](args=(%add, 4))
  return (%mul,)
