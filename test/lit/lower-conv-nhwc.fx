# RUN: tensorc inspect %s --target cuda --stage lower | FileCheck %s
# RUN: tensorc inspect %s --target cuda --stage fuse | FileCheck %s --check-prefix=FUSE
# RUN: tensorc inspect %s --target cuda --stage cuda | FileCheck %s --check-prefix=CUDA
# RUN: tensorc inspect %s --target cpu --stage lower | FileCheck %s --check-prefix=CPU
# CUDA-only compiles lower convolutions channels-last: the input copied to NHWC once at the
# model's edge, weights packed [OC][KH][KW][C/groups] ([KH][KW][C] for depthwise), NHWC results
# read at the NHWC address of their NCHW index; a value realized for a convolution is stored NHWC
# when its loads are (relu of the first result), so the chain needs no transposes; the graph
# output is NCHW. The CPU keeps its NCHW form.
# CHECK-LABEL: pointwise x_nhwc over [s0, 6, 6, 8] origins=[channels_last]
# CHECK-NEXT: t0 : f16 = load(x, 288*x0 + 6*x1 + x2 + 36*x3)
# CHECK: pointwise w_packed over [16, 3, 3, 8] origins=[channels_last]
# CHECK-NEXT: t0 : f16 = load(w, 72*x0 + 3*x1 + x2 + 9*x3)
# CHECK: template conv2d c_nobias n=s0 c=8 h=6 w=6 oc=16 kernel=[3, 3] out=[6, 6] stride=[1, 1] padding=[1, 1] dilation=[1, 1] groups=1 layout=nhwc
# CHECK-NEXT: input = x_nhwc
# CHECK-NEXT: weight = w_packed offset 0 strides [72, 24, 8, 1]
# The bias add in f32, then ReLU, stored NHWC: the convolution's epilogue.
# CHECK-NEXT: pointwise r_nhwc over [s0, 6, 6, 16] origins=[convolution, relu, channels_last]
# CHECK-NEXT: t0 : f16 = load(c_nobias, 576*x0 + 96*x1 + 16*x2 + x3)
# CHECK-NEXT: t1 : f32 = cast(t0)
# CHECK: t4 : f32 = add(t1, t3)
# CHECK: t6 : f16 = relu(t5)
# Depthwise: weights [KH][KW][C].
# CHECK: pointwise wd_packed over [3, 3, 16] origins=[channels_last]
# CHECK: template conv2d d_nhwc n=s0 c=16 h=6 w=6 oc=16 kernel=[3, 3] out=[3, 3] stride=[2, 2] padding=[1, 1] dilation=[1, 1] groups=16 layout=nhwc
# CHECK-NEXT: input = r_nhwc
# CHECK-NEXT: weight = wd_packed offset 0 strides [1, 48, 16, 1]
# A 1x1 convolution's weights are already packed; it reads the depthwise result in place.
# CHECK: template conv2d p_nhwc n=s0 c=16 h=3 w=3 oc=16 kernel=[1, 1]
# CHECK-NEXT: input = d_nhwc
# CHECK-NEXT: weight = w2 offset 0 strides [16, 16, 16, 1]
# A sum over H and W of an NHWC result is one reduction dim of 9 pixels (no div/mod split).
# CHECK: reduction s over [s0, 16] reducing [9] with sum
# CHECK-NEXT: t0 : f16 = load(p_nhwc, 16*r0 + 144*x0 + x1)
# CHECK: pointwise o over [s0, 16, 3, 3] origins=[convolution, add]
# CHECK-NEXT: t0 : f16 = load(p_nhwc, 144*x0 + x1 + 48*x2 + 16*x3)
# CHECK-NEXT: t1 : f16 = load(d_nhwc, 144*x0 + x1 + 48*x2 + 16*x3)
# CHECK: outputs (o, s)
# FUSE: tem_convolution_relu_channels_last_{{[0-9]+}} (b, x_nhwc, w_packed, r_nhwc)
# FUSE-NEXT: conv2d c_nobias [s0, 6, 6, 16]
# FUSE-NEXT: pointwise r_nhwc [s0, 6, 6, 16]
# FUSE-NEXT: # epilogue r_nhwc fused into c_nobias
# CUDA: tk_gemm_tc<TkTcConfig<
# CUDA: tk_depthwise<TkDwConfig<
# CPU: extern aten.convolution (x, w, b) -> (c)
graph(%x: f16[s0, 8, 6, 6], %w: f16[16, 8, 3, 3], %b: f16[16], %w2: f16[16, 16, 1, 1], %wd: f16[16, 1, 3, 3]):
  %c : f16[s0, 16, 6, 6] = call_function[target=aten.convolution](args=(%x, %w, %b, [1, 1], [1, 1], [1, 1], False, [0, 0], 1))
  %r : f16[s0, 16, 6, 6] = call_function[target=aten.relu](args=(%c,))
  %d : f16[s0, 16, 3, 3] = call_function[target=aten.convolution](args=(%r, %wd, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 16))
  %p : f16[s0, 16, 3, 3] = call_function[target=aten.convolution](args=(%d, %w2, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1))
  %o : f16[s0, 16, 3, 3] = call_function[target=aten.add](args=(%p, %d))
  %s : f16[s0, 16] = call_function[target=aten.sum](args=(%p, [2, 3]))
  return (%o, %s)
