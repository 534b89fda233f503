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
