# Different attributes do not merge: sum over another dim, gelu with another approximation.
# CHECK-LABEL: graph(%x: f32[4, 4]):
# CHECK-NEXT:    %s0 : f32[4] = call_function[target=aten.sum](args=(%x, [0]))
# CHECK-NEXT:    %s1 : f32[4] = call_function[target=aten.sum](args=(%x, [1]))
# CHECK-NEXT:    %g0 : f32[4, 4] = call_function[target=aten.gelu](args=(%x,))
# CHECK-NEXT:    %g1 : f32[4, 4] = call_function[target=aten.gelu](args=(%x,), kwargs={approximate='tanh'})
# CHECK-NEXT:    return (%s0, %s1, %g0, %g1)
graph(%x: f32[4, 4]):
  %s0 : f32[4] = call_function[target=aten.sum](args=(%x, [0]))
  %s1 : f32[4] = call_function[target=aten.sum](args=(%x, [1]))
  %g0 : f32[4, 4] = call_function[target=aten.gelu](args=(%x,))
  %g1 : f32[4, 4] = call_function[target=aten.gelu](args=(%x,), kwargs={approximate='tanh'})
  return (%s0, %s1, %g0, %g1)
