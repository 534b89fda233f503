# RUN: tensorc inspect %s --stage simplify --target cuda --fuse-attention | FileCheck %s --check-prefix=ALL
# RUN: tensorc inspect %s --stage simplify --target cuda | FileCheck %s --check-prefix=DEFAULT
# RUN: tensorc inspect %s --stage simplify --target cpu,cuda | FileCheck %s --check-prefix=NONE
# RUN: tensorc inspect %s --stage simplify --target cuda --no-fuse-attention | FileCheck %s --check-prefix=NONE
# RUN: not tensorc inspect %s --fuse-attention 2>&1 | FileCheck %s --check-prefix=CPU
# RUN: not tensorc inspect %s --target cuda --fuse-attention --no-fuse-attention 2>&1 | FileCheck %s --check-prefix=BOTH
# RUN: not tensorc inspect %s --target gpu 2>&1 | FileCheck %s --check-prefix=TARGET
# Which attention heads GPU compiles fuse: --fuse-attention every one, --no-fuse-attention none;
# by default those a tiled kernel runs (f16 on tensor cores, f32 with head dims up to 64; not the
# f32 heads of 40). Fusion needs code for CUDA alone.

# ALL: %out : f16[2, 4, 8, 64] = call_function[target=aten.scaled_dot_product_attention]
# ALL: %out2 : f32[2, 4, 8, 64] = call_function[target=aten.scaled_dot_product_attention]
# ALL: %out3 : f32[2, 4, 8, 40] = call_function[target=aten.scaled_dot_product_attention]
# DEFAULT: %out : f16[2, 4, 8, 64] = call_function[target=aten.scaled_dot_product_attention]
# DEFAULT: %out2 : f32[2, 4, 8, 64] = call_function[target=aten.scaled_dot_product_attention]
# DEFAULT-NOT: scaled_dot_product_attention
# NONE-NOT: scaled_dot_product_attention
# CPU: error: --fuse-attention needs --target cuda (the CPU has no attention kernel)
# BOTH: --fuse-attention excludes --no-fuse-attention
# TARGET: error: unknown target 'gpu' (expected cpu, cuda or cpu,cuda)
graph(%q: f16[2, 4, 8, 64], %k: f16[2, 4, 8, 64], %v: f16[2, 4, 8, 64], %q2: f32[2, 4, 8, 64], %k2: f32[2, 4, 8, 64], %v2: f32[2, 4, 8, 64], %q3: f32[2, 4, 8, 40], %k3: f32[2, 4, 8, 40], %v3: f32[2, 4, 8, 40]):
  %kt : f16[2, 4, 64, 8] = call_function[target=aten.transpose](args=(%k, -2, -1))
  %qk : f16[2, 4, 8, 8] = call_function[target=aten.matmul](args=(%q, %kt))
  %p : f16[2, 4, 8, 8] = call_function[target=aten.softmax](args=(%qk, -1))
  %out : f16[2, 4, 8, 64] = call_function[target=aten.matmul](args=(%p, %v))
  %kt2 : f32[2, 4, 64, 8] = call_function[target=aten.transpose](args=(%k2, -2, -1))
  %qk2 : f32[2, 4, 8, 8] = call_function[target=aten.matmul](args=(%q2, %kt2))
  %p2 : f32[2, 4, 8, 8] = call_function[target=aten.softmax](args=(%qk2, -1))
  %out2 : f32[2, 4, 8, 64] = call_function[target=aten.matmul](args=(%p2, %v2))
  %kt3 : f32[2, 4, 40, 8] = call_function[target=aten.transpose](args=(%k3, -2, -1))
  %qk3 : f32[2, 4, 8, 8] = call_function[target=aten.matmul](args=(%q3, %kt3))
  %p3 : f32[2, 4, 8, 8] = call_function[target=aten.softmax](args=(%qk3, -1))
  %out3 : f32[2, 4, 8, 40] = call_function[target=aten.matmul](args=(%p3, %v3))
  return (%out, %out2, %out3)
