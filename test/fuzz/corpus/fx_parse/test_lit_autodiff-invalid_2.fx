# The label's name is taken.
# CHECK: --label: the model already has a value named 'label'
graph(%label: f32[2, 4], %w: f32[4]):
  %m : f32[2, 4] = call_function[target=aten.mul](args=(%label, %w))
  return (%m,)
