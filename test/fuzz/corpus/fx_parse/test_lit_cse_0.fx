# RUN: tensorc opt %s --passes=cse | FileCheck %s
# Common-subexpression elimination: a node with the same op, operands and attributes as an
# earlier one is replaced by it.

# Identical nodes merge into the first; merges cascade into their users.
# CHECK-LABEL: graph(%x: f32[4], %y: f32[4]):
# CHECK-NEXT:    %a : f32[4] = call_function[target=aten.add](args=(%x, %y))
# CHECK-NEXT:    %e : f32[4] = call_function[target=aten.exp](args=(%a,))
# CHECK-NEXT:    %m : f32[4] = call_function[target=aten.mul](args=(%e, %e))
# CHECK-NEXT:    return (%m,)
graph(%x: f32[4], %y: f32[4]):
  %a : f32[4] = call_function[target=aten.add](args=(%x, %y))
  %b : f32[4] = call_function[target=aten.add](args=(%x, %y))
  %e : f32[4] = call_function[target=aten.exp](args=(%a,))
  %f : f32[4] = call_function[target=aten.exp](args=(%b,))
  %m : f32[4] = call_function[target=aten.mul](args=(%e, %f))
  return (%m,)
