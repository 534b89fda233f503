# A symbolic attribute (a size from an input's symbol) is not folded.
# CHECK-LABEL: graph(%x: f32[n]):
# CHECK-NEXT:    %ones : f32[n] = call_function[target=aten.full](args=([n], 1.0))
# CHECK-NEXT:    return (%ones,)
graph(%x: f32[n]):
  %ones : f32[n] = call_function[target=aten.full](args=([n], 1.0))
  return (%ones,)
