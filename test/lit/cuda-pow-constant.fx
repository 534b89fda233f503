# RUN: tensorc inspect %s --stage cuda | FileCheck %s
# pow by a small integer constant is multiplies, as torch special-cases it, in f16 too, where
# the exponent reaches the renderer as a constant cast to f16 and back to f32 (gelu_new written
# out: x + 0.044715 * pow(x, 3.0)). Other exponents keep powf (0.5 too: sqrt differs from pow at
# -0 and -inf).
# CHECK-LABEL: poi_fused_pow_mul_add_0(
# CHECK-NOT: powf
# CHECK: [[SQ:v[0-9]+]] = [[X:v[0-9]+]] * [[X]];
# CHECK: = [[SQ]] * [[X]];
# CHECK: powf(
# CHECK: powf(
# CHECK: }
graph(%x: f16[64, 32]):
  %c : f16[64, 32] = call_function[target=aten.pow](args=(%x, 3.0))
  %r : f16[64, 32] = call_function[target=aten.pow](args=(%x, 0.5))
  %q : f16[64, 32] = call_function[target=aten.pow](args=(%x, 1.5))
  %s : f16[64, 32] = call_function[target=aten.mul](args=(%c, %r))
  %o : f16[64, 32] = call_function[target=aten.add](args=(%s, %q))
  return (%o,)
