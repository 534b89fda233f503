# Equal literals merge, distinct ones (0.0 and -0.0 differ in bits) stay; outputs follow merges.
# CHECK-LABEL: graph(%x: f32[4]):
# CHECK-NEXT:    %_tensor_constant : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[0.0]})
# CHECK-NEXT:    %a : f32[4] = call_function[target=aten.add](args=(%x, %_tensor_constant))
# CHECK-NEXT:    %_tensor_constant_2 : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[-0.0]})
# CHECK-NEXT:    %c : f32[4] = call_function[target=aten.add](args=(%x, %_tensor_constant_2))
# CHECK-NEXT:    return (%a, %a, %c)
graph(%x: f32[4]):
  %a : f32[4] = call_function[target=aten.add](args=(%x, 0.0))
  %b : f32[4] = call_function[target=aten.add](args=(%x, 0.0))
  %c : f32[4] = call_function[target=aten.add](args=(%x, -0.0))
  return (%a, %b, %c)
