# RUN: tensorc inspect %s --stage lower | FileCheck %s
# RUN: d=$(mktemp -d) && tensorc compile %s -o $d/b > /dev/null 2>&1 && tensorc run $d/b --random-inputs 8 --dim s0=2 --outputs $d/c.safetensors > /dev/null && tensorc run %s --interp --random-inputs 8 --dim s0=2 --outputs $d/i.safetensors > /dev/null && python3 %S/compare_outputs.py $d/c.safetensors $d/i.safetensors && rm -r $d
# f32 2-D convolutions with static channels and spatial sizes lower to implicit-GEMM conv2d
# templates without their bias; the bias add reads the template's result at its own index (an
# epilogue candidate). Grouped convolutions keep their groups; transposed ones stay fallbacks.
# Stride 2, padding 1, 3x3 kernel over 8x8: 4x4 outputs.
# CHECK-LABEL: template conv2d c_nobias n=s0 c=3 h=8 w=8 oc=4 kernel=[3, 3] out=[4, 4] stride=[2, 2] padding=[1, 1] dilation=[1, 1] groups=1 origins=[convolution]
# CHECK-NEXT: input = x
# CHECK-NEXT: weight = w offset 0 strides [27, 9, 3, 1]
# CHECK-NEXT: pointwise r over [s0, 4, 4, 4] origins=[convolution, relu]
# CHECK-NEXT: t0 : f32 = load(c_nobias, 64*x0 + 16*x1 + 4*x2 + x3)
# CHECK-NEXT: t1 : f32 = load(b, x1)
# CHECK-NEXT: t2 : f32 = add(t0, t1)
# CHECK-NEXT: t3 : f32 = relu(t2)
# Two groups of 2 channels each, no bias, dilation 2.
# CHECK-LABEL: template conv2d g n=s0 c=4 h=4 w=4 oc=4 kernel=[3, 3] out=[4, 4] stride=[1, 1] padding=[2, 2] dilation=[2, 2] groups=2
# CHECK-NEXT: input = r
# CHECK-NEXT: weight = wg offset 0 strides [18, 9, 3, 1]
# CHECK: extern aten.convolution (r, wt) -> (tr)
graph(%x: f32[s0, 3, 8, 8], %w: f32[4, 3, 3, 3], %b: f32[4], %wg: f32[4, 2, 3, 3], %wt: f32[4, 2, 2, 2]):
  %c : f32[s0, 4, 4, 4] = call_function[target=aten.convolution](args=(%x, %w, %b, [2, 2], [1, 1], [1, 1], False, [0, 0], 1))
  %r : f32[s0, 4, 4, 4] = call_function[target=aten.relu](args=(%c,))
  %g : f32[s0, 4, 4, 4] = call_function[target=aten.convolution](args=(%r, %wg, None, [1, 1], [2, 2], [2, 2], False, [0, 0], 2))
  %tr : f32[s0, 2, 8, 8] = call_function[target=aten.convolution](args=(%r, %wt, None, [2, 2], [0, 0], [1, 1], True, [0, 0], 1))
  return (%g, %tr)
