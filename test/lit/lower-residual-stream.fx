# RUN: tensorc inspect %s --stage fuse | FileCheck %s
# RUN: tensorc inspect %s --stage fuse --target cuda | FileCheck %s
# RUN: d=$(mktemp -d) && tensorc compile %s -o $d/b > /dev/null 2>&1 && tensorc run $d/b --random-inputs 2 --outputs $d/c.safetensors > /dev/null && tensorc run %s --interp --random-inputs 2 --outputs $d/i.safetensors > /dev/null && python3 %S/compare_outputs.py $d/c.safetensors $d/i.safetensors && rm -r $d
# A pre-norm residual stream (RMSNorm from pointwise ops, so the stream's only users are pointwise
# and nothing else gives it a buffer): h1 = x + p1 reads two buffers of its size and stays inline;
# h2 = x + p1 + p2 reads three, more than realizeReadsThreshold, so it is computed once instead of
# by both the norm and the next residual add. It is stored by the norm's row kernel, not by the
# product's epilogue (it is read again after the next product); h3, read only by the output, is
# the last product's epilogue.
# CHECK-LABEL: per_fused_add_mul_sum_div_2 rows [16] (x, g, p1, m2_sum, n2)
# CHECK-NEXT: reduction m2_sum
# CHECK-LABEL: per_fused_add_mul_sum_div_4 rows [16] (x, g, p1, p2, h2, m3_sum, n3)
# CHECK-NEXT: pointwise h2 [16, 32]
# CHECK-NEXT: reduction m3_sum [16] reducing [32] with sum
# CHECK: tem_mm_add_5 (w3, h2, n3, h3)
# CHECK: epilogue h3 fused into p3
graph(%x: f32[16, 32], %w1: f32[32, 32], %w2: f32[32, 32], %w3: f32[32, 32], %g: f32[32]):
  %s1 : f32[16, 32] = call_function[target=aten.mul](args=(%x, %x))
  %m1 : f32[16, 1] = call_function[target=aten.mean](args=(%s1, [-1], True))
  %e1 : f32[16, 1] = call_function[target=aten.add](args=(%m1, 1e-06))
  %r1 : f32[16, 1] = call_function[target=aten.rsqrt](args=(%e1,))
  %q1 : f32[16, 32] = call_function[target=aten.mul](args=(%x, %r1))
  %n1 : f32[16, 32] = call_function[target=aten.mul](args=(%q1, %g))
  %p1 : f32[16, 32] = call_function[target=aten.mm](args=(%n1, %w1))
  %h1 : f32[16, 32] = call_function[target=aten.add](args=(%x, %p1))
  %s2 : f32[16, 32] = call_function[target=aten.mul](args=(%h1, %h1))
  %m2 : f32[16, 1] = call_function[target=aten.mean](args=(%s2, [-1], True))
  %e2 : f32[16, 1] = call_function[target=aten.add](args=(%m2, 1e-06))
  %r2 : f32[16, 1] = call_function[target=aten.rsqrt](args=(%e2,))
  %q2 : f32[16, 32] = call_function[target=aten.mul](args=(%h1, %r2))
  %n2 : f32[16, 32] = call_function[target=aten.mul](args=(%q2, %g))
  %p2 : f32[16, 32] = call_function[target=aten.mm](args=(%n2, %w2))
  %h2 : f32[16, 32] = call_function[target=aten.add](args=(%h1, %p2))
  %s3 : f32[16, 32] = call_function[target=aten.mul](args=(%h2, %h2))
  %m3 : f32[16, 1] = call_function[target=aten.mean](args=(%s3, [-1], True))
  %e3 : f32[16, 1] = call_function[target=aten.add](args=(%m3, 1e-06))
  %r3 : f32[16, 1] = call_function[target=aten.rsqrt](args=(%e3,))
  %q3 : f32[16, 32] = call_function[target=aten.mul](args=(%h2, %r3))
  %n3 : f32[16, 32] = call_function[target=aten.mul](args=(%q3, %g))
  %p3 : f32[16, 32] = call_function[target=aten.mm](args=(%n3, %w3))
  %h3 : f32[16, 32] = call_function[target=aten.add](args=(%h2, %p3))
  return (%h3,)
