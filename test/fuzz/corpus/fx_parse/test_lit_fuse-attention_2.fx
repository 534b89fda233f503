# Not fused: the scores are also returned, and a softmax over another dim.
# CHECK-LABEL: graph(%q: f32[4, 8, 16], %k: f32[4, 8, 16], %v: f32[4, 8, 16]):
# CHECK-NOT: scaled_dot_product_attention
# LOG: not fusing at {{.*}}: the scores have other users
# LOG: not fusing at {{.*}}: the softmax is not over the last dim
graph(%q: f32[4, 8, 16], %k: f32[4, 8, 16], %v: f32[4, 8, 16]):
  %kt : f32[4, 16, 8] = call_function[target=aten.transpose](args=(%k, 1, 2))
  %qk : f32[4, 8, 8] = call_function[target=aten.bmm](args=(%q, %kt))
  %p : f32[4, 8, 8] = call_function[target=aten.softmax](args=(%qk, 2))
  %out : f32[4, 8, 16] = call_function[target=aten.bmm](args=(%p, %v))
  %p2 : f32[4, 8, 8] = call_function[target=aten.softmax](args=(%qk, 1))
  %out2 : f32[4, 8, 16] = call_function[target=aten.bmm](args=(%p2, %v))
  return (%out, %out2, %qk)
