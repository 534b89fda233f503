# A kernel error (integer division by zero) is not a compile error: the node is left in place.
# CHECK-LABEL: graph(%x: i64[2]):
# CHECK:         %d : i64[2] = call_function[target=aten.div](args=(%_tensor_constant, %_tensor_constant_1), kwargs={rounding_mode='floor'})
# CHECK-NEXT:    return (%d,)
graph(%x: i64[2]):
  %d : i64[2] = call_function[target=aten.div](args=(tensor<i64[2]>[1, 2], 0), kwargs={rounding_mode='floor'})
  return (%d,)
