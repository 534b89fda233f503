# An outer product summed over rows: the [s0, s0] product lives in the arena, so a large s0 asks
# the GPU for more memory than it has while inputs and outputs stay small (cuda_capi_check.c).
graph(%x: f32[s0, 1]):
  %xt : f32[1, s0] = call_function[target=aten.t](args=(%x,))
  %p : f32[s0, s0] = call_function[target=aten.mm](args=(%x, %xt))
  %s : f32[s0] = call_function[target=aten.sum](args=(%p, [1]))
  return (%s,)
