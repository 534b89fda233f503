# RUN: tensorc opt %s --passes=fuse-attention,dce | FileCheck %s
# RUN: tensorc --log fuse-attention opt %s --passes=fuse-attention 2>&1 >/dev/null | FileCheck %s --check-prefix=LOG
# RUN: d=$(mktemp -d) && tensorc opt %s --passes=fuse-attention,dce -o $d/f.fx && tensorc run $d/f.fx --interp --random-inputs 5 --outputs $d/a.safetensors > /dev/null && tensorc run %s --interp --random-inputs 5 --outputs $d/b.safetensors > /dev/null && python3 %S/compare_outputs.py $d/a.safetensors $d/b.safetensors --rtol 4e-3 --atol 1e-3 && rm -r $d
# fuse-attention: softmax(Q.K^T * scale [+ mask]).V becomes one aten.scaled_dot_product_attention.
# The third RUN line checks that the interpreter's outputs stay the same (within f16 rounding).

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

# -----
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

# -----
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

# -----
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

# -----
# As torch's exporter writes attention: sqrt(scale) on q and on k^T, and the safe softmax's NaN
# guard where(isnan(p), 0, p): the scales multiply into the op's, the guard becomes
# safe_softmax (a fully masked row gives 0 rather than NaN).
# CHECK-LABEL: graph(%q: f16[2, 4, 8, 16], %k: f16[2, 4, 8, 16], %v: f16[2, 4, 8, 16], %m: f16[8, 8]):
# CHECK-NEXT: %out : f16[2, 4, 8, 16] = call_function[target=aten.scaled_dot_product_attention](args=(%q, %k, %v, %m, 0.25), kwargs={safe_softmax=True})
# CHECK-NEXT: return (%out,)
# LOG: fused %out = aten.matmul (safe softmax, scale 0.250000, with a mask)
graph(%q: f16[2, 4, 8, 16], %k: f16[2, 4, 8, 16], %v: f16[2, 4, 8, 16], %m: f16[8, 8]):
  %kt : f16[2, 4, 16, 8] = call_function[target=aten.transpose](args=(%k, -2, -1))
  %qs : f16[2, 4, 8, 16] = call_function[target=aten.mul](args=(%q, 0.5))
  %kts : f16[2, 4, 16, 8] = call_function[target=aten.mul](args=(0.5, %kt))
  %qk : f16[2, 4, 8, 8] = call_function[target=aten.matmul](args=(%qs, %kts))
  %s : f16[2, 4, 8, 8] = call_function[target=aten.add](args=(%qk, %m))
  %p : f16[2, 4, 8, 8] = call_function[target=aten.softmax](args=(%s, -1))
  %nan : bool[2, 4, 8, 8] = call_function[target=aten.isnan](args=(%p,))
  %g : f16[2, 4, 8, 8] = call_function[target=aten.where](args=(%nan, 0.0, %p))
  %out : f16[2, 4, 8, 16] = call_function[target=aten.matmul](args=(%g, %v))
  return (%out,)

# -----
# Not fused: a guard that fills 1 is no safe softmax, and guarded probabilities that are also
# returned.
# CHECK-LABEL: graph(%q: f16[2, 4, 8, 16], %k: f16[2, 4, 8, 16], %v: f16[2, 4, 8, 16]):
# CHECK-NOT: scaled_dot_product_attention
# LOG: not fusing at {{.*}}: the guarded probabilities have other users
graph(%q: f16[2, 4, 8, 16], %k: f16[2, 4, 8, 16], %v: f16[2, 4, 8, 16]):
  %kt : f16[2, 4, 16, 8] = call_function[target=aten.transpose](args=(%k, -2, -1))
  %qk : f16[2, 4, 8, 8] = call_function[target=aten.matmul](args=(%q, %kt))
  %p : f16[2, 4, 8, 8] = call_function[target=aten.softmax](args=(%qk, -1))
  %nan : bool[2, 4, 8, 8] = call_function[target=aten.isnan](args=(%p,))
  %g : f16[2, 4, 8, 8] = call_function[target=aten.where](args=(%nan, 1.0, %p))
  %out : f16[2, 4, 8, 16] = call_function[target=aten.matmul](args=(%g, %v))
  %qk2 : f16[2, 4, 8, 8] = call_function[target=aten.matmul](args=(%q, %kt))
  %p2 : f16[2, 4, 8, 8] = call_function[target=aten.softmax](args=(%qk2, -1))
  %nan2 : bool[2, 4, 8, 8] = call_function[target=aten.isnan](args=(%p2,))
  %g2 : f16[2, 4, 8, 8] = call_function[target=aten.where](args=(%nan2, 0.0, %p2))
  %out2 : f16[2, 4, 8, 16] = call_function[target=aten.matmul](args=(%g2, %v))
  return (%out, %out2, %g2)

# -----
# Swin's shifted windows: the scores plus a relative-position bias, viewed as [batch, windows,
# heads, l, s] plus the window mask, viewed back. The two masks join into one of the scores'
# shape; without the bias the window mask alone is expanded.
# CHECK-LABEL: graph(%q: f32[4, 3, 8, 16], %k: f32[4, 3, 8, 16], %v: f32[4, 3, 8, 16], %bias: f32[1, 3, 8, 8], %mask: f32[1, 2, 1, 8, 8]):
# CHECK-NEXT: %[[E:[a-z_0-9]+]] : f32[4, 3, 8, 8] = call_function[target=aten.expand](args=(%bias, [4, 3, 8, 8]))
# CHECK-NEXT: %[[R:[a-z_0-9]+]] : f32[2, 2, 3, 8, 8] = call_function[target=aten.reshape](args=(%[[E]], [2, 2, 3, 8, 8]))
# CHECK-NEXT: %[[A:[a-z_0-9]+]] : f32[2, 2, 3, 8, 8] = call_function[target=aten.add](args=(%[[R]], %mask))
# CHECK-NEXT: %[[M:[a-z_0-9]+]] : f32[4, 3, 8, 8] = call_function[target=aten.reshape](args=(%[[A]], [4, 3, 8, 8]))
# CHECK-NEXT: %out : f32[4, 3, 8, 16] = call_function[target=aten.scaled_dot_product_attention](args=(%q, %k, %v, %[[M]], 0.25))
# CHECK: %[[E2:[a-z_0-9]+]] : f32[2, 2, 3, 8, 8] = call_function[target=aten.expand](args=(%mask, [2, 2, 3, 8, 8]))
# CHECK-NEXT: %[[M2:[a-z_0-9]+]] : f32[4, 3, 8, 8] = call_function[target=aten.reshape](args=(%[[E2]], [4, 3, 8, 8]))
# CHECK-NEXT: %out2 : f32[4, 3, 8, 16] = call_function[target=aten.scaled_dot_product_attention](args=(%q, %k, %v, %[[M2]], 1.0))
# CHECK-NOT: aten.softmax
# LOG: fused %out = aten.matmul (scale 0.250000, with a mask)
# LOG: fused %out2 = aten.matmul (scale 1.000000, with a mask)
graph(%q: f32[4, 3, 8, 16], %k: f32[4, 3, 8, 16], %v: f32[4, 3, 8, 16], %bias: f32[1, 3, 8, 8], %mask: f32[1, 2, 1, 8, 8]):
  %qs : f32[4, 3, 8, 16] = call_function[target=aten.mul](args=(%q, 0.25))
  %kt : f32[4, 3, 16, 8] = call_function[target=aten.transpose](args=(%k, -2, -1))
  %qk : f32[4, 3, 8, 8] = call_function[target=aten.matmul](args=(%qs, %kt))
  %b : f32[4, 3, 8, 8] = call_function[target=aten.add](args=(%qk, %bias))
  %w : f32[2, 2, 3, 8, 8] = call_function[target=aten.view](args=(%b, [2, 2, 3, 8, 8]))
  %wm : f32[2, 2, 3, 8, 8] = call_function[target=aten.add](args=(%w, %mask))
  %s : f32[4, 3, 8, 8] = call_function[target=aten.view](args=(%wm, [-1, 3, 8, 8]))
  %p : f32[4, 3, 8, 8] = call_function[target=aten.softmax](args=(%s, -1))
  %out : f32[4, 3, 8, 16] = call_function[target=aten.matmul](args=(%p, %v))
  %qk2 : f32[4, 3, 8, 8] = call_function[target=aten.matmul](args=(%q, %kt))
  %w2 : f32[2, 2, 3, 8, 8] = call_function[target=aten.reshape](args=(%qk2, [2, 2, 3, 8, 8]))
  %wm2 : f32[2, 2, 3, 8, 8] = call_function[target=aten.add](args=(%mask, %w2))
  %s2 : f32[4, 3, 8, 8] = call_function[target=aten.reshape](args=(%wm2, [4, 3, 8, 8]))
  %p2 : f32[4, 3, 8, 8] = call_function[target=aten.softmax](args=(%s2, -1))
  %out2 : f32[4, 3, 8, 16] = call_function[target=aten.matmul](args=(%p2, %v))
  return (%out, %out2)
