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
# -----
# An output that no node uses stays, and so do unused placeholders (they are the signature).
# CHECK-LABEL: graph(%x: f32[4], %unused: f32[2]):
# CHECK-NEXT:    %a : f32[4] = call_function[target=aten.relu](args=(%x,))
# CHECK-NEXT:    %b : f32[4] = call_function[target=aten.neg](args=(%x,))
# CHECK-NEXT:    return (%a, %b)
graph(%x: f32[4], %unused: f32[2]):
  %a : f32[4] = call_function[target=aten.relu](args=(%x,))
  %b : f32[4] = call_function[target=aten.neg](args=(%x,))
  return (%a, %b)
# -----
# A multi-result node stays whole when one of its results is used; unused literals go.
# CHECK-LABEL: graph(%x: f32[6]):
# CHECK-NOT:     prims.constant
# CHECK:         %sp : (f32[2], f32[4]) = call_function[target=aten.split_with_sizes](args=(%x, [2, 4]))
# CHECK-NEXT:    %first : f32[2] = call_function[target=getitem](args=(%sp, 0))
# CHECK-NEXT:    %rest : f32[4] = call_function[target=getitem](args=(%sp, 1))
# CHECK-NEXT:    return (%rest,)
graph(%x: f32[6]):
  %m : f32[6] = call_function[target=aten.mul](args=(%x, 2.0))
  %sp : (f32[2], f32[4]) = call_function[target=aten.split_with_sizes](args=(%x, [2, 4]))
  %first : f32[2] = call_function[target=getitem](args=(%sp, 0))
  %rest : f32[4] = call_function[target=getitem](args=(%sp, 1))
  return (%rest,)
# -----
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
