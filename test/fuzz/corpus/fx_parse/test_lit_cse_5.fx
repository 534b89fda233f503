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
