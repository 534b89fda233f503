# RUN: d=$(mktemp -d) && tensorc compile %s -o $d/b -q && FileCheck %s < $d/b/src/x86_64.ll && FileCheck %s --check-prefix=AVX512 < $d/b/src/x86_64-avx512.ll && tensorc run $d/b --random-inputs 7 --dim s0=3 --threads 2 --variant x86_64 --outputs $d/c.safetensors > /dev/null && tensorc run $d/b --random-inputs 7 --dim s0=3 --threads 2 --outputs $d/c2.safetensors > /dev/null && tensorc run %s --interp --random-inputs 7 --dim s0=3 --outputs $d/i.safetensors > /dev/null && python3 %S/compare_outputs.py $d/c.safetensors $d/i.safetensors && python3 %S/compare_outputs.py $d/c2.safetensors $d/i.safetensors && rm -r $d
# CPU elementwise kernels whose last dim is a short constant C (2-4, fewer than the vector lanes)
# and whose loads run contiguously along the dim before it: an image's NCHW -> NHWC copy with 3
# channels. A row of W x C outputs is computed as vectors along W, one per channel, interleaved
# into C x lanes contiguous outputs (one shuffle, one store), with scalar elements before the
# first whole block and after the last (W = 37, 2 threads: chunks start and end mid-block).
# Both variants match the interpreter.
# The add of two [s0, 2, 4, 37] operands, then moved channels-last (C = 2).
# CHECK-LABEL: define void @poi_fused_add_1(
# CHECK: irow.block
# CHECK: store <16 x float>
# C = 4.
# CHECK-LABEL: define void @poi_fused_2(
# CHECK: store <32 x float>
# C = 3 (an RGB image).
# CHECK-LABEL: define void @poi_fused_0(
# CHECK: store <24 x float>
# AVX-512: 16 lanes per channel vector.
# AVX512-LABEL: define void @poi_fused_add_1(
# AVX512: store <32 x float>
# AVX512-LABEL: define void @poi_fused_0(
# AVX512: store <48 x float>
graph(%x: f32[s0, 3, 5, 37], %y: f32[s0, 2, 4, 37], %z: f32[s0, 2, 4, 37], %u: f32[s0, 4, 3, 37]):
  %p : f32[s0, 5, 37, 3] = call_function[target=aten.permute](args=(%x, [0, 2, 3, 1]))
  %s : f32[s0, 2, 4, 37] = call_function[target=aten.add](args=(%y, %z))
  %q : f32[s0, 4, 37, 2] = call_function[target=aten.permute](args=(%s, [0, 2, 3, 1]))
  %r : f32[s0, 3, 37, 4] = call_function[target=aten.permute](args=(%u, [0, 2, 3, 1]))
  return (%p, %q, %r)
