# Operands in another order do not merge (sub is not commutative, and CSE does not assume it).
# CHECK-LABEL: graph(%x: f32[4], %y: f32[4]):
# CHECK-NEXT:    %a : f32[4] = call_function[target=aten.sub](args=(%x, %y))
# CHECK-NEXT:    %b : f32[4] = call_function[target=aten.sub](args=(%y, %x))
# CHECK-NEXT:    return (%a, %b)
graph(%x: f32[4], %y: f32[4]):
  %a : f32[4] = call_function[target=aten.sub](args=(%x, %y))
  %b : f32[4] = call_function[target=aten.sub](args=(%y, %x))
  return (%a, %b)
