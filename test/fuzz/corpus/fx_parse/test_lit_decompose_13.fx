# matmul: a batched left operand folds into the rows of one mm; batched pairs use bmm.
# CHECK-LABEL: graph(%x: f32[s0, 4, 6], %w: f32[6, 5], %y: f32[2, 6, 5]):
# CHECK-NEXT:  %[[ROWS:.*]] : f32[4*s0, 6] = call_function[target=aten.view](args=(%x, [4*s0, 6]))
# CHECK-NEXT:  %[[MM:.*]] : f32[4*s0, 5] = call_function[target=aten.mm](args=(%[[ROWS]], %w))
# CHECK-NEXT:  %a : f32[s0, 4, 5] = call_function[target=aten.view](args=(%[[MM]], [s0, 4, 5]))
# CHECK-NEXT:  %[[EX:.*]] : f32[2, 4, 6] = call_function[target=aten.expand](args=(%x, [2, 4, 6]))
# CHECK-NEXT:  %c : f32[2, 4, 5] = call_function[target=aten.bmm](args=(%[[EX]], %y))
graph(%x: f32[s0, 4, 6], %w: f32[6, 5], %y: f32[2, 6, 5]):
  %a : f32[s0, 4, 5] = call_function[target=aten.matmul](args=(%x, %w))
  %c : f32[2, 4, 5] = call_function[target=aten.matmul](args=(%x, %y))
  return (%a, %c)
