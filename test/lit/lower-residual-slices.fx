# RUN: tensorc inspect %s --stage lower | FileCheck %s
# RUN: d=$(mktemp -d) && tensorc compile %s -o $d/b > /dev/null 2>&1 && tensorc run $d/b --random-inputs 2 --outputs $d/c.safetensors > /dev/null && tensorc run %s --interp --random-inputs 2 --outputs $d/i.safetensors > /dev/null && python3 %S/compare_outputs.py $d/c.safetensors $d/i.safetensors && rm -r $d
# A value reading three buffers of its size (x + p1 + p2), read by two slices that each take half
# of it (Swin's patch merging takes four quarters), stays inline: together the slices read it once,
# so a buffer would only add its write (lower-residual-stream.fx realizes the same sum when its
# users read all of it).
# CHECK: template gemm p2
# CHECK-NOT: pointwise h
# CHECK: pointwise o over [2, 8, 16]
graph(%x: f32[2, 8, 32], %y: f32[16, 32], %w1: f32[32, 32], %w2: f32[32, 32]):
  %p1 : f32[16, 32] = call_function[target=aten.mm](args=(%y, %w1))
  %p2 : f32[16, 32] = call_function[target=aten.mm](args=(%y, %w2))
  %v1 : f32[2, 8, 32] = call_function[target=aten.view](args=(%p1, [2, 8, 32]))
  %v2 : f32[2, 8, 32] = call_function[target=aten.view](args=(%p2, [2, 8, 32]))
  %a : f32[2, 8, 32] = call_function[target=aten.add](args=(%x, %v1))
  %h : f32[2, 8, 32] = call_function[target=aten.add](args=(%a, %v2))
  %lo : f32[2, 8, 16] = call_function[target=aten.slice](args=(%h, 2, 0, 16))
  %hi : f32[2, 8, 16] = call_function[target=aten.slice](args=(%h, 2, 16, 32))
  %o : f32[2, 8, 16] = call_function[target=aten.mul](args=(%lo, %hi))

  return (%o,)
