# A node with a placeholder operand is not folded.
# CHECK-LABEL: graph(%x: f32[3]):
# CHECK:         %a : f32[3] = call_function[target=aten.add](args=(%x, %_tensor_constant))
# CHECK-NEXT:    return (%a,)
graph(%x: f32[3]):
  %a : f32[3] = call_function[target=aten.add](args=(%x, 2.0))
  return (%a,)
