# An additive mask, and a K^T that is not a transpose: the key becomes a transpose of it.
# CHECK-LABEL: graph(%q: f32[4, 8, 16], %kt: f32[4, 16, 8], %v: f32[4, 8, 32], %m: f32[8, 8]):
# CHECK-NEXT: %out_transpose : f32[4, 8, 16] = call_function[target=aten.transpose](args=(%kt, 1, 2))
# CHECK-NEXT: aten.scaled_dot_product_attention](args=(%q, %out_transpose, %v, %m, 1.0))
# LOG: with a mask
graph(%q: f32[4, 8, 16], %kt: f32[4, 16, 8], %v: f32[4, 8, 32], %m: f32[8, 8]):
  %qk : f32[4, 8, 8] = call_function[target=aten.bmm](args=(%q, %kt))
  %s : f32[4, 8, 8] = call_function[target=aten.add](args=(%qk, %m))
  %p : f32[4, 8, 8] = call_function[target=aten.softmax](args=(%s, 2))
  %out : f32[4, 8, 32] = call_function[target=aten.bmm](args=(%p, %v))
  return (%out,)
