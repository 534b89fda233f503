# mean over static dims: sum / count, the count a 0-d constant of the tensor's dtype.
# CHECK-LABEL: graph(%x: f32[s0, 5, 4]):
# CHECK-NEXT:  %y_sum : f32[s0, 4] = call_function[target=aten.sum](args=(%x, [1]))
# CHECK-NEXT:  %y_constant : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[5.0]})
# CHECK-NEXT:  %y : f32[s0, 4] = call_function[target=aten.div](args=(%y_sum, %y_constant))
graph(%x: f32[s0, 5, 4]):
  %y : f32[s0, 4] = call_function[target=aten.mean](args=(%x, [1]))
  return (%y,)
