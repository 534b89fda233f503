# var: mean (itself decomposed), sub, mul, sum, div by N - correction.
# CHECK-LABEL: graph(%x: f32[3, 6]):
# CHECK-NEXT:  %[[SUM:.*]] : f32[3, 1] = call_function[target=aten.sum](args=(%x, [1], True))
# CHECK-NEXT:  %[[N:.*]] : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[6.0]})
# CHECK-NEXT:  %[[MEAN:.*]] : f32[3, 1] = call_function[target=aten.div](args=(%[[SUM]], %[[N]]))
# CHECK-NEXT:  %[[D:.*]] : f32[3, 6] = call_function[target=aten.sub](args=(%x, %[[MEAN]]))
# CHECK-NEXT:  %[[SQ:.*]] : f32[3, 6] = call_function[target=aten.mul](args=(%[[D]], %[[D]]))
# CHECK-NEXT:  %[[SS:.*]] : f32[3] = call_function[target=aten.sum](args=(%[[SQ]], [1]))
# CHECK-NEXT:  %[[DIV:.*]] : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[5.0]})
# CHECK-NEXT:  %y : f32[3] = call_function[target=aten.div](args=(%[[SS]], %[[DIV]]))
graph(%x: f32[3, 6]):
  %y : f32[3] = call_function[target=aten.var](args=(%x, [1]))
  return (%y,)
