# silu: x * sigmoid(x).
# CHECK-LABEL: graph(%x: f32[s0, 16]):
# CHECK-NEXT:  %[[S:.*]] : f32[s0, 16] = call_function[target=aten.sigmoid](args=(%x,))
# CHECK-NEXT:  %y : f32[s0, 16] = call_function[target=aten.mul](args=(%x, %[[S]]))
graph(%x: f32[s0, 16]):
  %y : f32[s0, 16] = call_function[target=aten.silu](args=(%x,))
  return (%y,)
