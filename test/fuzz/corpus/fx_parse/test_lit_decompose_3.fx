# mean over a symbolic dim is kept: the count is not a constant.
# CHECK-LABEL: graph(%x: f32[s0, 4]):
# CHECK-NEXT:  %y : f32[4] = call_function[target=aten.mean](args=(%x, [0]))
# CHECK-NEXT:  return (%y,)
graph(%x: f32[s0, 4]):
  %y : f32[4] = call_function[target=aten.mean](args=(%x, [0]))
  return (%y,)
