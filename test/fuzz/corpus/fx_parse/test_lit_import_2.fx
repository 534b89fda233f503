# Multi-result nodes print as a tuple type plus one getitem line per result.
# CHECK-LABEL: graph(%x: f32[s0, 6]):
# CHECK-NEXT:  %parts : (f32[s0, 2], f32[s0, 4]) = call_function[target=aten.split_with_sizes](args=(%x, [2, 4], 1))
# CHECK-NEXT:  %lo : f32[s0, 2] = call_function[target=getitem](args=(%parts, 0))
# CHECK-NEXT:  %hi : f32[s0, 4] = call_function[target=getitem](args=(%parts, 1))
# CHECK-NEXT:  %flat : f32[4*s0] = call_function[target=aten.reshape](args=(%hi, [-1]))
graph(%x: f32[s0, 6]):
  %parts : (f32[s0, 2], f32[s0, 4]) = call_function[target=aten.split_with_sizes](args=(%x, [2, 4], 1))
  %lo : f32[s0, 2] = call_function[target=getitem](args=(%parts, 0))
  %hi : f32[s0, 4] = call_function[target=getitem](args=(%parts, 1))
  %flat : f32[4*s0] = call_function[target=aten.reshape](args=(%hi, [-1]))
  return (%lo, %flat)
