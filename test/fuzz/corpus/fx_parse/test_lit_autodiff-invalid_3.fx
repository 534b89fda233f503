# An integer output cannot be a loss.
# CHECK: output %a is i64[2]; the loss needs a floating-point output
graph(%x: f32[2, 4], %w: f32[4]):
  %m : f32[2, 4] = call_function[target=aten.mul](args=(%x, %w))
  %a : i64[2] = call_function[target=aten.argmax](args=(%m, 1))
  return (%a,)
