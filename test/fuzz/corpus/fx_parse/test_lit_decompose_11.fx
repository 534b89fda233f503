# clamp: maximum with min, then minimum with max (both propagate NaN).
# CHECK-LABEL: graph(%x: f32[16]):
# CHECK-NEXT:  %[[LO:.*]] : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[-1.0]})
# CHECK-NEXT:  %[[MAX:.*]] : f32[16] = call_function[target=aten.maximum](args=(%x, %[[LO]]))
# CHECK-NEXT:  %[[HI:.*]] : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[6.0]})
# CHECK-NEXT:  %y : f32[16] = call_function[target=aten.minimum](args=(%[[MAX]], %[[HI]]))
graph(%x: f32[16]):
  %y : f32[16] = call_function[target=aten.clamp](args=(%x, -1.0, 6))
  return (%y,)
