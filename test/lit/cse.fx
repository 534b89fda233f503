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
# -----
# Different attributes do not merge: sum over another dim, gelu with another approximation.
# CHECK-LABEL: graph(%x: f32[4, 4]):
# CHECK-NEXT:    %s0 : f32[4] = call_function[target=aten.sum](args=(%x, [0]))
# CHECK-NEXT:    %s1 : f32[4] = call_function[target=aten.sum](args=(%x, [1]))
# CHECK-NEXT:    %g0 : f32[4, 4] = call_function[target=aten.gelu](args=(%x,))
# CHECK-NEXT:    %g1 : f32[4, 4] = call_function[target=aten.gelu](args=(%x,), kwargs={approximate='tanh'})
# CHECK-NEXT:    return (%s0, %s1, %g0, %g1)
graph(%x: f32[4, 4]):
  %s0 : f32[4] = call_function[target=aten.sum](args=(%x, [0]))
  %s1 : f32[4] = call_function[target=aten.sum](args=(%x, [1]))
  %g0 : f32[4, 4] = call_function[target=aten.gelu](args=(%x,))
  %g1 : f32[4, 4] = call_function[target=aten.gelu](args=(%x,), kwargs={approximate='tanh'})
  return (%s0, %s1, %g0, %g1)
# -----
# Operands in another order do not merge (sub is not commutative, and CSE does not assume it).
# CHECK-LABEL: graph(%x: f32[4], %y: f32[4]):
# CHECK-NEXT:    %a : f32[4] = call_function[target=aten.sub](args=(%x, %y))
# CHECK-NEXT:    %b : f32[4] = call_function[target=aten.sub](args=(%y, %x))
# CHECK-NEXT:    return (%a, %b)
graph(%x: f32[4], %y: f32[4]):
  %a : f32[4] = call_function[target=aten.sub](args=(%x, %y))
  %b : f32[4] = call_function[target=aten.sub](args=(%y, %x))
  return (%a, %b)
# -----
# Equal literals merge, distinct ones (0.0 and -0.0 differ in bits) stay; outputs follow merges.
# CHECK-LABEL: graph(%x: f32[4]):
# CHECK-NEXT:    %_tensor_constant : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[0.0]})
# CHECK-NEXT:    %a : f32[4] = call_function[target=aten.add](args=(%x, %_tensor_constant))
# CHECK-NEXT:    %_tensor_constant_2 : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[-0.0]})
# CHECK-NEXT:    %c : f32[4] = call_function[target=aten.add](args=(%x, %_tensor_constant_2))
# CHECK-NEXT:    return (%a, %a, %c)
graph(%x: f32[4]):
  %a : f32[4] = call_function[target=aten.add](args=(%x, 0.0))
  %b : f32[4] = call_function[target=aten.add](args=(%x, 0.0))
  %c : f32[4] = call_function[target=aten.add](args=(%x, -0.0))
  return (%a, %b, %c)
# -----
# Data-dependent ops are deterministic: the second nonzero merges, and its users take the first
# one's size symbol.
# CHECK-LABEL: graph(%x: f32[4]):
# CHECK-NEXT:    %n1 : i64[1, n1_d1] = call_function[target=prims.nonzero](args=(%x,))
# CHECK-NEXT:    %r1 : i64[1, n1_d1] = call_function[target=aten.neg](args=(%n1,))
# CHECK-NEXT:    return (%r1, %r1)
graph(%x: f32[4]):
  %n1 : i64[1, n1_d1] = call_function[target=prims.nonzero](args=(%x,))
  %n2 : i64[1, n2_d1] = call_function[target=prims.nonzero](args=(%x,))
  %r1 : i64[1, n1_d1] = call_function[target=aten.neg](args=(%n1,))
  %r2 : i64[1, n2_d1] = call_function[target=aten.neg](args=(%n2,))
  return (%r1, %r2)
# -----
# A data-dependent node whose size symbol an attribute names is not merged (the attribute would
# go stale).
# CHECK-LABEL: graph(%x: f32[4]):
# CHECK-NEXT:    %n1 : i64[1, n1_d1] = call_function[target=prims.nonzero](args=(%x,))
# CHECK-NEXT:    %n2 : i64[1, n2_d1] = call_function[target=prims.nonzero](args=(%x,))
# CHECK-NEXT:    %v : i64[n2_d1] = call_function[target=aten.view](args=(%n2, [n2_d1]))
# CHECK-NEXT:    return (%n1, %v)
graph(%x: f32[4]):
  %n1 : i64[1, n1_d1] = call_function[target=prims.nonzero](args=(%x,))
  %n2 : i64[1, n2_d1] = call_function[target=prims.nonzero](args=(%x,))
  %v : i64[n2_d1] = call_function[target=aten.view](args=(%n2, [n2_d1]))
  return (%n1, %v)
