# CHECK: error: aten.gelu has no parameter 'approx'
graph(%x: f32[4]):
  %y : f32[4] = call_function[target=aten.gelu](args=(%x,), kwargs={approx='tanh'})
  return (%y,)
