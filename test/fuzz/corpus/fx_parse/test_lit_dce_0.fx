# RUN: tensorc opt %s --passes=dce | FileCheck %s
# Dead-code elimination: nodes nothing uses go, transitively; outputs, their producers and every
# placeholder stay.

# A chain of unused nodes is removed as a whole; the live chain is kept in order.
# CHECK-LABEL: graph(%x: f32[4]):
# CHECK-NEXT:    %a : f32[4] = call_function[target=aten.relu](args=(%x,))
# CHECK-NEXT:    %y : f32[4] = call_function[target=aten.exp](args=(%a,))
# CHECK-NEXT:    return (%y,)
graph(%x: f32[4]):
  %a : f32[4] = call_function[target=aten.relu](args=(%x,))
  %dead1 : f32[4] = call_function[target=aten.neg](args=(%a,))
  %dead2 : f32[4] = call_function[target=aten.tanh](args=(%dead1,))
  %y : f32[4] = call_function[target=aten.exp](args=(%a,))
  %dead3 : f32[4] = call_function[target=aten.add](args=(%dead2, %y))
  return (%y,)
