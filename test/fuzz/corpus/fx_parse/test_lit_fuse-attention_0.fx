# RUN: tensorc opt %s --passes=fuse-attention,dce | FileCheck %s
# RUN: tensorc --log fuse-attention opt %s --passes=fuse-attention 2>&1 >/dev/null | FileCheck %s --check-prefix=LOG
# fuse-attention: softmax(Q.K^T * scale [+ mask]).V becomes one aten.scaled_dot_product_attention.

# Scaled by a constant (division), K^T a transpose of K: the transpose is looked through.
# CHECK-LABEL: graph(%q: f32[2, 4, 8, 16], %k: f32[2, 4, 8, 16], %v: f32[2, 4, 8, 16]):
# CHECK-NEXT: %out : f32[2, 4, 8, 16] = call_function[target=aten.scaled_dot_product_attention](args=(%q, %k, %v, None, 0.25))
# CHECK-NEXT: return (%out,)
# LOG: fused %out = aten.matmul (scale 0.250000)
graph(%q: f32[2, 4, 8, 16], %k: f32[2, 4, 8, 16], %v: f32[2, 4, 8, 16]):
  %kt : f32[2, 4, 16, 8] = call_function[target=aten.transpose](args=(%k, -2, -1))
  %qk : f32[2, 4, 8, 8] = call_function[target=aten.matmul](args=(%q, %kt))
  %s : f32[2, 4, 8, 8] = call_function[target=aten.div](args=(%qk, 4.0))
  %p : f32[2, 4, 8, 8] = call_function[target=aten.softmax](args=(%s, -1))
  %out : f32[2, 4, 8, 16] = call_function[target=aten.matmul](args=(%p, %v))
  return (%out,)
