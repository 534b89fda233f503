# CHECK: error: unknown value %nope
graph(%x: f32[4]):
  return (%nope,)
