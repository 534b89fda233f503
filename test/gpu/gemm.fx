# Batch-1 transformer GEMMs (GPU test kit, test/gpu/make_model_kit.py): too few output tiles for
# an H100's SMs, so the kernel library splits K and the runtime provides the split-K workspaces
# (verify_kit.py --graphs replays them as a CUDA graph: the counters must be left zero).
# %g  128 x 2304 (K 768), bias and GELU fused; B is an input read K-contiguous (w^T)
# %o  128 x 768 (K 3072), bias and a residual add fused
# %s  12 batched 128 x 128 (K 64) products, B transposed (attention scores, unfused)
# %l  128 x 768 (K 768), a bias alone: under -O max-autotune a library call with cuBLASLt's bias
#     epilogue, its output written by the library
graph(%x: f32[128, 768], %w: f32[2304, 768], %b: f32[2304], %h: f32[128, 3072], %w2: f32[768, 3072], %b2: f32[768], %r: f32[128, 768], %a: f32[12, 128, 64], %k: f32[12, 128, 64], %w3: f32[768, 768], %b3: f32[768]):
  %wt : f32[768, 2304] = call_function[target=aten.t](args=(%w,))
  %qkv : f32[128, 2304] = call_function[target=aten.addmm](args=(%b, %x, %wt))
  %g : f32[128, 2304] = call_function[target=aten.gelu](args=(%qkv,), kwargs={approximate='none'})
  %w2t : f32[3072, 768] = call_function[target=aten.t](args=(%w2,))
  %y : f32[128, 768] = call_function[target=aten.addmm](args=(%b2, %h, %w2t))
  %o : f32[128, 768] = call_function[target=aten.add](args=(%y, %r))
  %kt : f32[12, 64, 128] = call_function[target=aten.transpose](args=(%k, 1, 2))
  %s : f32[12, 128, 128] = call_function[target=aten.bmm](args=(%a, %kt))
  %w3t : f32[768, 768] = call_function[target=aten.t](args=(%w3,))
  %l : f32[128, 768] = call_function[target=aten.addmm](args=(%b3, %x, %w3t))
  return (%g, %o, %s, %l)
