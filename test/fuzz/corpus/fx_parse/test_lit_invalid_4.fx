# CHECK: error: expected a tensor type such as f32[2, 3]
graph(%x: [4]):
  return (%x,)
