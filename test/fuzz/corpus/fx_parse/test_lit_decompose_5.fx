# layer_norm: mean, centered square mean, eps, rsqrt, scale by weight, add bias.
# CHECK-LABEL: graph(%x: f32[s0, 8], %w: f32[8], %b: f32[8]):
# CHECK:       %[[MEAN:.*]] : f32[s0, 1] = call_function[target=aten.div]
# CHECK-NEXT:  %[[D:.*]] : f32[s0, 8] = call_function[target=aten.sub](args=(%x, %[[MEAN]]))
# CHECK-NEXT:  %[[SQ:.*]] : f32[s0, 8] = call_function[target=aten.mul](args=(%[[D]], %[[D]]))
# CHECK-NEXT:  %[[SS:.*]] : f32[s0, 1] = call_function[target=aten.sum](args=(%[[SQ]], [1], True))
# CHECK:       %[[VAR:.*]] : f32[s0, 1] = call_function[target=aten.div](args=(%[[SS]],
# CHECK:       %[[EPS:.*]] : f32[s0, 1] = call_function[target=aten.add](args=(%[[VAR]],
# CHECK-NEXT:  %[[RSTD:.*]] : f32[s0, 1] = call_function[target=aten.rsqrt](args=(%[[EPS]],))
# CHECK-NEXT:  %[[NORM:.*]] : f32[s0, 8] = call_function[target=aten.mul](args=(%[[D]], %[[RSTD]]))
# CHECK-NEXT:  %[[SCALED:.*]] : f32[s0, 8] = call_function[target=aten.mul](args=(%[[NORM]], %w))
# CHECK-NEXT:  %y : f32[s0, 8] = call_function[target=aten.add](args=(%[[SCALED]], %b))
# CHECK-NOT:   aten.layer_norm
graph(%x: f32[s0, 8], %w: f32[8], %b: f32[8]):
  %y : f32[s0, 8] = call_function[target=aten.layer_norm](args=(%x, [8], %w, %b))
  return (%y,)
