# Two outputs: which one is the loss's?
# CHECK: the model has 2 outputs; a training loss needs exactly one
graph(%x: f32[2, 4], %w: f32[4]):
  %m : f32[2, 4] = call_function[target=aten.mul](args=(%x, %w))
  %n : f32[2, 4] = call_function[target=aten.neg](args=(%m,))
  return (%m, %n)
