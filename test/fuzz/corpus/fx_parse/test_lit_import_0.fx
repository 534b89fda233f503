# RUN: tensorc inspect %s --stage import | FileCheck %s
# Each case prints back through the FX-text printer after the import stage.

# CHECK-LABEL: graph(%x: f32[s0, 1024], %w: f32[4096, 1024], %b: f32[4096]):
# CHECK-NEXT:  %t : f32[1024, 4096] = call_function[target=aten.t](args=(%w,))
# CHECK-NEXT:  %mm : f32[s0, 4096] = call_function[target=aten.addmm](args=(%b, %x, %t))
# CHECK-NEXT:  %gelu : f32[s0, 4096] = call_function[target=aten.gelu](args=(%mm,))
# CHECK-NEXT:  return (%gelu,)
graph(%x: f32[s0, 1024], %w: f32[4096, 1024], %b: f32[4096]):
  %t    : f32[1024, 4096]   = call_function[target=aten.t](args=(%w,))
  %mm   : f32[s0, 4096]     = call_function[target=aten.addmm](args=(%b, %x, %t))
  %gelu : f32[s0, 4096]     = call_function[target=aten.gelu](args=(%mm,), kwargs={approximate='none'})
  return (%gelu,)
