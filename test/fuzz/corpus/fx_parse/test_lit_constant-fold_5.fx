# A data-dependent result shape (nonzero) is not folded: the constant's type would differ.
# CHECK-LABEL: graph(%x: f32[3]):
# CHECK:         %nz : i64[1, nz_d1] = call_function[target=prims.nonzero](args=(%_tensor_constant,))
# CHECK-NEXT:    return (%nz,)
graph(%x: f32[3]):
  %nz : i64[1, nz_d1] = call_function[target=prims.nonzero](args=(tensor<f32[3]>[1.0, 0.0, 2.0],))
  return (%nz,)
