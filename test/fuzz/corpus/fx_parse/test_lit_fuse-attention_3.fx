# Bool masks: where(keep, scores, -inf) keeps the mask; where(drop, -inf, scores) (ONNX's
# masked_fill) becomes logical_not(drop).
# CHECK-LABEL: graph(%q: f16[2, 4, 8, 16], %k: f16[2, 4, 8, 16], %v: f16[2, 4, 8, 16], %m: bool[8, 8]):
# CHECK: %out : f16[2, 4, 8, 16] = call_function[target=aten.scaled_dot_product_attention](args=(%q, %k, %v, %m, 0.25))
# CHECK: %{{[a-z_0-9]+}} : bool[8, 8] = call_function[target=aten.logical_not](args=(%m,))
# CHECK: %out2 : f16[2, 4, 8, 16] = call_function[target=aten.scaled_dot_product_attention]
# LOG: fused %out = aten.matmul (scale 0.250000, with a bool mask)
graph(%q: f16[2, 4, 8, 16], %k: f16[2, 4, 8, 16], %v: f16[2, 4, 8, 16], %m: bool[8, 8]):
  %kt : f16[2, 4, 16, 8] = call_function[target=aten.transpose](args=(%k, -2, -1))
  %qk : f16[2, 4, 8, 8] = call_function[target=aten.matmul](args=(%q, %kt))
  %s : f16[2, 4, 8, 8] = call_function[target=aten.mul](args=(%qk, 0.25))
  %w : f16[2, 4, 8, 8] = call_function[target=aten.where](args=(%m, %s, -inf))
  %p : f16[2, 4, 8, 8] = call_function[target=aten.softmax](args=(%w, -1))
  %out : f16[2, 4, 8, 16] = call_function[target=aten.matmul](args=(%p, %v))
  %qk2 : f16[2, 4, 8, 8] = call_function[target=aten.matmul](args=(%q, %kt))
  %w2 : f16[2, 4, 8, 8] = call_function[target=aten.where](args=(%m, -inf, %qk2))
  %p2 : f16[2, 4, 8, 8] = call_function[target=aten.softmax](args=(%w2, -1))
  %out2 : f16[2, 4, 8, 16] = call_function[target=aten.matmul](args=(%p2, %v))
  return (%out, %out2)
