# Attention heads as models write them (GPU test kit, test/gpu/make_model_kit.py): Q.K^T scaled,
# [masked,] softmax over the keys, times V. Each case runs unfused and fused (one attention
# kernel: f16/bf16 on the tensor-core flash kernel, f32 on the warp-per-row kernel):
# %out      head dim 64, 128 x 128, no mask
# %masked   head dim 64, 128 x 128, an additive [L, S] mask broadcast over batch and heads
# %tails    head dim 128, 100 queries x 77 keys (neither a multiple of the 64-row/64-key tiles),
#           a bool mask per batch entry (broadcast over heads) applied as where(mask, s, -inf)
# %padded   head dim 64, 200 x 150, a bool key-padding mask [B, 1, 1, S], value head dim 128
graph(%q: f32[2, 4, 128, 64], %k: f32[2, 4, 128, 64], %v: f32[2, 4, 128, 64], %q2: f32[2, 4, 128, 64], %mask: f32[128, 128], %q3: f32[2, 3, 100, 128], %k3: f32[2, 3, 77, 128], %v3: f32[2, 3, 77, 128], %keep3: bool[2, 1, 100, 77], %q4: f32[2, 2, 200, 64], %k4: f32[2, 2, 150, 64], %v4: f32[2, 2, 150, 128], %keep4: bool[2, 1, 1, 150]):
  %kt : f32[2, 4, 64, 128] = call_function[target=aten.transpose](args=(%k, -2, -1))
  %qk : f32[2, 4, 128, 128] = call_function[target=aten.matmul](args=(%q, %kt))
  %s : f32[2, 4, 128, 128] = call_function[target=aten.mul](args=(%qk, 0.125))
  %p : f32[2, 4, 128, 128] = call_function[target=aten.softmax](args=(%s, -1))
  %out : f32[2, 4, 128, 64] = call_function[target=aten.matmul](args=(%p, %v))
  %kt2 : f32[2, 4, 64, 128] = call_function[target=aten.transpose](args=(%k, -2, -1))
  %qk2 : f32[2, 4, 128, 128] = call_function[target=aten.matmul](args=(%q2, %kt2))
  %s2 : f32[2, 4, 128, 128] = call_function[target=aten.div](args=(%qk2, 8.0))
  %sm : f32[2, 4, 128, 128] = call_function[target=aten.add](args=(%s2, %mask))
  %p2 : f32[2, 4, 128, 128] = call_function[target=aten.softmax](args=(%sm, -1))
  %masked : f32[2, 4, 128, 64] = call_function[target=aten.matmul](args=(%p2, %v))
  %kt3 : f32[2, 3, 128, 77] = call_function[target=aten.transpose](args=(%k3, -2, -1))
  %qk3 : f32[2, 3, 100, 77] = call_function[target=aten.matmul](args=(%q3, %kt3))
  %s3 : f32[2, 3, 100, 77] = call_function[target=aten.mul](args=(%qk3, 0.088388))
  %w3 : f32[2, 3, 100, 77] = call_function[target=aten.where](args=(%keep3, %s3, -inf))
  %p3 : f32[2, 3, 100, 77] = call_function[target=aten.softmax](args=(%w3, -1))
  %tails : f32[2, 3, 100, 128] = call_function[target=aten.matmul](args=(%p3, %v3))
  %kt4 : f32[2, 2, 64, 150] = call_function[target=aten.transpose](args=(%k4, -2, -1))
  %qk4 : f32[2, 2, 200, 150] = call_function[target=aten.matmul](args=(%q4, %kt4))
  %s4 : f32[2, 2, 200, 150] = call_function[target=aten.mul](args=(%qk4, 0.125))
  %w4 : f32[2, 2, 200, 150] = call_function[target=aten.where](args=(%keep4, %s4, -inf))
  %p4 : f32[2, 2, 200, 150] = call_function[target=aten.softmax](args=(%w4, -1))
  %padded : f32[2, 2, 200, 128] = call_function[target=aten.matmul](args=(%p4, %v4))
  return (%out, %masked, %tails, %padded)
