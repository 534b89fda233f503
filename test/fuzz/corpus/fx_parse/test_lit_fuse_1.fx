# A convolution is a GEMM template too: its bias and relu become the epilogue, and a residual add
# after a 1x1 convolution is that convolution's epilogue.
# CHECK-LABEL: tem_convolution_relu_0 (x, w, b, r)
# CHECK-NEXT: conv2d c_nobias [s0, 8, 8, 8]
# CHECK-NEXT: pointwise r [s0, 8, 8, 8]
# CHECK-NEXT: # epilogue r fused into c_nobias
# CHECK-NEXT: tem_convolution_add_1 (w2, r, s)
# CHECK: # 2 kernels
# LOG: epilogue r fused into c_nobias
# LOG: epilogue s fused into c2
graph(%x: f32[s0, 4, 8, 8], %w: f32[8, 4, 3, 3], %b: f32[8], %w2: f32[8, 8, 1, 1]):
  %c : f32[s0, 8, 8, 8] = call_function[target=aten.convolution](args=(%x, %w, %b, [1, 1], [1, 1], [1, 1], False, [0, 0]))
  %r : f32[s0, 8, 8, 8] = call_function[target=aten.relu](args=(%c,))
  %c2 : f32[s0, 8, 8, 8] = call_function[target=aten.convolution](args=(%r, %w2, None, [1, 1], [0, 0], [1, 1], False, [0, 0]))
  %s : f32[s0, 8, 8, 8] = call_function[target=aten.add](args=(%c2, %r))
  return (%s,)
