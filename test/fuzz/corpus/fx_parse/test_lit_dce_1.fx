# An output that no node uses stays, and so do unused placeholders (they are the signature).
# CHECK-LABEL: graph(%x: f32[4], %unused: f32[2]):
# CHECK-NEXT:    %a : f32[4] = call_function[target=aten.relu](args=(%x,))
# CHECK-NEXT:    %b : f32[4] = call_function[target=aten.neg](args=(%x,))
# CHECK-NEXT:    return (%a, %b)
graph(%x: f32[4], %unused: f32[2]):
  %a : f32[4] = call_function[target=aten.relu](args=(%x,))
  %b : f32[4] = call_function[target=aten.neg](args=(%x,))
  return (%a, %b)
