# CHECK: error: declared type f32[4] but inference gives bool[4]
graph(%x: f32[4]):
  %y : f32[4] = call_function[target=aten.isnan](args=(%x,))
  return (%y,)
