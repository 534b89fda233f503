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

# -----
# Inline literals become named prims.constant nodes; non-default keyword attributes print.
# CHECK-LABEL: graph(%x: f32[3]):
# CHECK-NEXT:  %_tensor_constant : f32[3] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[3]>[1.0, 2.0, 3.0]})
# CHECK-NEXT:  %add : f32[3] = call_function[target=aten.add](args=(%x, %_tensor_constant), kwargs={alpha=2})
# CHECK-NEXT:  %_tensor_constant_1 : i64[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<i64[]>[4]})
# CHECK-NEXT:  %mul : f32[3] = call_function[target=aten.mul](args=(%add, %_tensor_constant_1))
graph(%x: f32[3]):
  %add : f32[3] = call_function[target=aten.add](args=(%x, tensor<f32[3]>[1.0, 2.0, 3.0]), kwargs={alpha=2})
  %mul : f32[3] = call_function[target=aten.mul](args=(%add, 4))
  return (%mul,)

# -----
# Multi-result nodes print as a tuple type plus one getitem line per result.
# CHECK-LABEL: graph(%x: f32[s0, 6]):
# CHECK-NEXT:  %parts : (f32[s0, 2], f32[s0, 4]) = call_function[target=aten.split_with_sizes](args=(%x, [2, 4], 1))
# CHECK-NEXT:  %lo : f32[s0, 2] = call_function[target=getitem](args=(%parts, 0))
# CHECK-NEXT:  %hi : f32[s0, 4] = call_function[target=getitem](args=(%parts, 1))
# CHECK-NEXT:  %flat : f32[4*s0] = call_function[target=aten.reshape](args=(%hi, [-1]))
graph(%x: f32[s0, 6]):
  %parts : (f32[s0, 2], f32[s0, 4]) = call_function[target=aten.split_with_sizes](args=(%x, [2, 4], 1))
  %lo : f32[s0, 2] = call_function[target=getitem](args=(%parts, 0))
  %hi : f32[s0, 4] = call_function[target=getitem](args=(%parts, 1))
  %flat : f32[4*s0] = call_function[target=aten.reshape](args=(%hi, [-1]))
  return (%lo, %flat)
