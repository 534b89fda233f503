# A graph with nothing dead is printed unchanged (the pass is a no-op).
# CHECK-LABEL: graph(%x: f32[2, s1]):
# CHECK-NEXT:    %e : f32[2, s1] = call_function[target=aten.exp](args=(%x,))
# CHECK-NEXT:    %s : f32[2, 1] = call_function[target=aten.sum](args=(%e, [1], True))
# CHECK-NEXT:    %d : f32[2, s1] = call_function[target=aten.div](args=(%e, %s))
# CHECK-NEXT:    return (%d,)
graph(%x: f32[2, s1]):
  %e : f32[2, s1] = call_function[target=aten.exp](args=(%x,))
  %s : f32[2, 1] = call_function[target=aten.sum](args=(%e, [1], True))
  %d : f32[2, s1] = call_function[target=aten.div](args=(%e, %s))
  return (%d,)
