# t and transpose become permutes; reshape becomes view.
# CHECK-LABEL: graph(%x: f32[s0, 3, 4], %w: f32[3, 4]):
# CHECK-NEXT:  %a : f32[4, 3] = call_function[target=aten.permute](args=(%w, [1, 0]))
# CHECK-NEXT:  %b : f32[s0, 4, 3] = call_function[target=aten.permute](args=(%x, [0, 2, 1]))
# CHECK-NEXT:  %c : f32[s0, 12] = call_function[target=aten.view](args=(%x, [s0, -1]))
graph(%x: f32[s0, 3, 4], %w: f32[3, 4]):
  %a : f32[4, 3] = call_function[target=aten.t](args=(%w,))
  %b : f32[s0, 4, 3] = call_function[target=aten.transpose](args=(%x, 1, 2))
  %c : f32[s0, 12] = call_function[target=aten.reshape](args=(%x, [s0, -1]))
  return (%a, %b, %c)
