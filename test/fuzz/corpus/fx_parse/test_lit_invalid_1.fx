# CHECK: error: %y: aten.add: shapes [4] and [5] do not broadcast
graph(%x: f32[4], %z: f32[5]):
  %y : f32[4] = call_function[target=aten.add](args=(%x, %z))
  return (%y,)
