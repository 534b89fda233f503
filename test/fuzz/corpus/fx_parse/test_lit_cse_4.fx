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
