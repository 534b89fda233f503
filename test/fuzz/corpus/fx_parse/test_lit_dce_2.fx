# A multi-result node stays whole when one of its results is used; unused literals go.
# CHECK-LABEL: graph(%x: f32[6]):
# CHECK-NOT:     prims.constant
# CHECK:         %sp : (f32[2], f32[4]) = call_function[target=aten.split_with_sizes](args=(%x, [2, 4]))
# CHECK-NEXT:    %first : f32[2] = call_function[target=getitem](args=(%sp, 0))
# CHECK-NEXT:    %rest : f32[4] = call_function[target=getitem](args=(%sp, 1))
# CHECK-NEXT:    return (%rest,)
graph(%x: f32[6]):
  %m : f32[6] = call_function[target=aten.mul](args=(%x, 2.0))
  %sp : (f32[2], f32[4]) = call_function[target=aten.split_with_sizes](args=(%x, [2, 4]))
  %first : f32[2] = call_function[target=getitem](args=(%sp, 0))
  %rest : f32[4] = call_function[target=getitem](args=(%sp, 1))
  return (%rest,)
