# gelu (tanh form): 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))); f16 keeps f32 scalars.
# CHECK-LABEL: graph(%x: f16[16]):
# CHECK-NEXT:  %[[SQ:.*]] : f16[16] = call_function[target=aten.mul](args=(%x, %x))
# CHECK-NEXT:  %[[CUBE:.*]] : f16[16] = call_function[target=aten.mul](args=(%[[SQ]], %x))
# CHECK-NEXT:  %[[K:.*]] : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[0.04471499{{[0-9]*}}]})
# CHECK-NEXT:  %[[KC:.*]] : f16[16] = call_function[target=aten.mul](args=(%[[CUBE]], %[[K]]))
# CHECK-NEXT:  %[[IN:.*]] : f16[16] = call_function[target=aten.add](args=(%x, %[[KC]]))
# CHECK-NEXT:  %[[B:.*]] : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[0.79788458{{[0-9]*}}]})
# CHECK-NEXT:  %[[S:.*]] : f16[16] = call_function[target=aten.mul](args=(%[[IN]], %[[B]]))
# CHECK-NEXT:  %[[T:.*]] : f16[16] = call_function[target=aten.tanh](args=(%[[S]],))
# CHECK:       %y : f16[16] = call_function[target=aten.mul]
graph(%x: f16[16]):
  %y : f16[16] = call_function[target=aten.gelu](args=(%x,), kwargs={approximate='tanh'})
  return (%y,)
