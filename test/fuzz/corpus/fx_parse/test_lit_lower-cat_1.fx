# A cat along a symbolic dim (sizes unknown at compile time) stays a reference-kernel fallback.
# LOWER: extern aten.cat (x, x, x) -> (c)
# COMPILE: fallbacks (run by the runtime's reference kernels): aten.cat
# CHECK: c: f32[9, 3] mean=0.157168 min=-0.636428 max=0.84136
graph(%x: f32[s0, 3]):
  %c : f32[3*s0, 3] = call_function[target=aten.cat](args=([%x, %x, %x],))
  return (%c,)
