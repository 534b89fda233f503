# batch_norm in inference: per-channel vectors viewed as [C, 1, 1].
# CHECK-LABEL: graph(%x: f32[s0, 3, 4, 4], %w: f32[3], %b: f32[3], %m: f32[3], %v: f32[3]):
# CHECK-NEXT:  %[[M:.*]] : f32[3, 1, 1] = call_function[target=aten.view](args=(%m, [3, 1, 1]))
# CHECK-NEXT:  %[[V:.*]] : f32[3, 1, 1] = call_function[target=aten.view](args=(%v, [3, 1, 1]))
# CHECK-NEXT:  %[[EPS:.*]] : f32[] = call_function[target=prims.constant]
# CHECK-NEXT:  %[[VE:.*]] : f32[3, 1, 1] = call_function[target=aten.add](args=(%[[V]], %[[EPS]]))
# CHECK-NEXT:  %[[RSTD:.*]] : f32[3, 1, 1] = call_function[target=aten.rsqrt](args=(%[[VE]],))
# CHECK-NEXT:  %[[D:.*]] : f32[s0, 3, 4, 4] = call_function[target=aten.sub](args=(%x, %[[M]]))
# CHECK-NEXT:  %[[N:.*]] : f32[s0, 3, 4, 4] = call_function[target=aten.mul](args=(%[[D]], %[[RSTD]]))
# CHECK-NEXT:  %[[W:.*]] : f32[3, 1, 1] = call_function[target=aten.view](args=(%w, [3, 1, 1]))
# CHECK-NEXT:  %[[S:.*]] : f32[s0, 3, 4, 4] = call_function[target=aten.mul](args=(%[[N]], %[[W]]))
# CHECK-NEXT:  %[[B:.*]] : f32[3, 1, 1] = call_function[target=aten.view](args=(%b, [3, 1, 1]))
# CHECK-NEXT:  %y : f32[s0, 3, 4, 4] = call_function[target=aten.add](args=(%[[S]], %[[B]]))
graph(%x: f32[s0, 3, 4, 4], %w: f32[3], %b: f32[3], %m: f32[3], %v: f32[3]):
  %y : f32[s0, 3, 4, 4] = call_function[target=aten.batch_norm](args=(%x, %w, %b, %m, %v, False, 0.1, 1e-05))
  return (%y,)
