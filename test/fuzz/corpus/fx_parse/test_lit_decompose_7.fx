# batch_norm in training uses batch statistics: kept.
# CHECK-LABEL: graph(%x: f32[2, 3, 4], %w: f32[3], %b: f32[3]):
# CHECK-NEXT:  %y : f32[2, 3, 4] = call_function[target=aten.batch_norm](args=(%x, %w, %b, None, None, True))
# CHECK-NEXT:  return (%y,)
graph(%x: f32[2, 3, 4], %w: f32[3], %b: f32[3]):
  %y : f32[2, 3, 4] = call_function[target=aten.batch_norm](args=(%x, %w, %b, None, None, True, 0.1, 1e-05))
  return (%y,)
