# addmm: mm, alpha and beta scaling, add; a scale of 1 emits nothing.
# CHECK-LABEL: graph(%x: f32[s0, 6], %w: f32[6, 5], %b: f32[5]):
# CHECK-NEXT:  %[[MM:.*]] : f32[s0, 5] = call_function[target=aten.mm](args=(%x, %w))
# CHECK-NEXT:  %y : f32[s0, 5] = call_function[target=aten.add](args=(%[[MM]], %b))
# CHECK-NEXT:  %[[MM2:.*]] : f32[s0, 5] = call_function[target=aten.mm](args=(%x, %w))
# CHECK-NEXT:  %[[ALPHA:.*]] : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[2.0]})
# CHECK-NEXT:  %[[SMM:.*]] : f32[s0, 5] = call_function[target=aten.mul](args=(%[[MM2]], %[[ALPHA]]))
# CHECK-NEXT:  %[[BETA:.*]] : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[0.5]})
# CHECK-NEXT:  %[[SB:.*]] : f32[5] = call_function[target=aten.mul](args=(%b, %[[BETA]]))
# CHECK-NEXT:  %z : f32[s0, 5] = call_function[target=aten.add](args=(%[[SMM]], %[[SB]]))
graph(%x: f32[s0, 6], %w: f32[6, 5], %b: f32[5]):
  %y : f32[s0, 5] = call_function[target=aten.addmm](args=(%b, %x, %w))
  %z : f32[s0, 5] = call_function[target=aten.addmm](args=(%b, %x, %w), kwargs={beta=0.5, alpha=2})
  return (%y, %z)
