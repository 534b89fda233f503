# gelu (erf form): 0.5 * x * (1 + erf(x / sqrt(2))).
# CHECK-LABEL: graph(%x: f32[s0, 16]):
# CHECK-NEXT:  %[[C:.*]] : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[0.70710676{{[0-9]*}}]})
# CHECK-NEXT:  %[[A:.*]] : f32[s0, 16] = call_function[target=aten.mul](args=(%x, %[[C]]))
# CHECK-NEXT:  %[[E:.*]] : f32[s0, 16] = call_function[target=aten.erf](args=(%[[A]],))
# CHECK-NEXT:  %[[ONE:.*]] : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[1.0]})
# CHECK-NEXT:  %[[P:.*]] : f32[s0, 16] = call_function[target=aten.add](args=(%[[E]], %[[ONE]]))
# CHECK-NEXT:  %[[HALF:.*]] : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[0.5]})
# CHECK-NEXT:  %[[H:.*]] : f32[s0, 16] = call_function[target=aten.mul](args=(%x, %[[HALF]]))
# CHECK-NEXT:  %y : f32[s0, 16] = call_function[target=aten.mul](args=(%[[H]], %[[P]]))
graph(%x: f32[s0, 16]):
  %y : f32[s0, 16] = call_function[target=aten.gelu](args=(%x,), kwargs={approximate='none'})
  return (%y,)
