# Attention heads as a model writes them (GPU test kit, test/gpu/make_model_kit.py): Q.K^T scaled,
# softmax over the keys, times V; once plain (one CUDA attention kernel after fuse-attention) and
# once with an additive mask (fused too, run on the reference kernel).
graph(%q: f32[2, 4, 128, 64], %k: f32[2, 4, 128, 64], %v: f32[2, 4, 128, 64], %q2: f32[2, 4, 128, 64], %mask: f32[128, 128]):
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
  return (%out, %masked)
