# log_softmax with a dtype: cast first, then (x - max) - log(sum(exp(x - max))).
# CHECK-LABEL: graph(%x: f16[4, 8]):
# CHECK-NEXT:  %[[X:.*]] : f32[4, 8] = call_function[target=prims.convert_element_type](args=(%x, f32))
# CHECK-NEXT:  %[[MAX:.*]] : f32[4, 1] = call_function[target=aten.amax](args=(%[[X]], [1], True))
# CHECK-NEXT:  %[[SUB:.*]] : f32[4, 8] = call_function[target=aten.sub](args=(%[[X]], %[[MAX]]))
# CHECK-NEXT:  %[[EXP:.*]] : f32[4, 8] = call_function[target=aten.exp](args=(%[[SUB]],))
# CHECK-NEXT:  %[[SUM:.*]] : f32[4, 1] = call_function[target=aten.sum](args=(%[[EXP]], [1], True))
# CHECK-NEXT:  %[[LOG:.*]] : f32[4, 1] = call_function[target=aten.log](args=(%[[SUM]],))
# CHECK-NEXT:  %y : f32[4, 8] = call_function[target=aten.sub](args=(%[[SUB]], %[[LOG]]))
graph(%x: f16[4, 8]):
  %y : f32[4, 8] = call_function[target=aten.log_softmax](args=(%x, -1, torch.float32))
  return (%y,)
