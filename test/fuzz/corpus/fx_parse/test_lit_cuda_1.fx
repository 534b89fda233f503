# Pointwise kernels: four elements per thread, dense operands and results moved as one 4-wide
# vector each (ushort4 for f16: computed in float, converted on load and store), then a scalar
# loop for the last range % 4 elements.
# CHECK-LABEL: poi_fused_add_relu_0(const unsigned short *__restrict__ b0, unsigned short *b1, long long sym_s0)
# CHECK: const long long groups = range / 4;
# CHECK: const ushort4 in0 = *reinterpret_cast<const ushort4 *>(&b0[o0]);
# CHECK: tc_h2f(in0.x)
# CHECK: tc_max(
# CHECK: tc_h2f(in0.w)
# CHECK: *reinterpret_cast<ushort4 *>(&b1[o0]) = ushort4{
# CHECK: for (long long o = groups * 4 + (long long)blockIdx.x * 256 + threadIdx.x; o < range; o += (long long)gridDim.x * 256)
# CHECK: b1[o] = tc_f2h(
graph(%y: f16[s0, 16]):
  %sum : f16[s0, 16] = call_function[target=aten.add](args=(%y, %y))
  %relu : f16[s0, 16] = call_function[target=aten.relu](args=(%sum,))
  return (%relu,)
