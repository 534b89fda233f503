# RUN: tensorc opt %s --passes=decompose | FileCheck %s
# Each rule rewrites its op into primitive ops with exactly the node's result type.

# softmax: amax(keepdim), sub, exp, sum(keepdim), div over the given dim.
# CHECK-LABEL: graph(%x: f32[s0, 8]):
# CHECK-NEXT:  %y_amax : f32[s0, 1] = call_function[target=aten.amax](args=(%x, [1], True))
# CHECK-NEXT:  %y_sub : f32[s0, 8] = call_function[target=aten.sub](args=(%x, %y_amax))
# CHECK-NEXT:  %y_exp : f32[s0, 8] = call_function[target=aten.exp](args=(%y_sub,))
# CHECK-NEXT:  %y_sum : f32[s0, 1] = call_function[target=aten.sum](args=(%y_exp, [1], True))
# CHECK-NEXT:  %y : f32[s0, 8] = call_function[target=aten.div](args=(%y_exp, %y_sum))
# CHECK-NEXT:  return (%y,)
graph(%x: f32[s0, 8]):
  %y : f32[s0, 8] = call_function[target=aten.softmax](args=(%x, 1))
  return (%y,)
