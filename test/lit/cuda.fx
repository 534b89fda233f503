# RUN: tensorc inspect %s --stage cuda | FileCheck %s
# CUDA rendering (the `cuda` stage, what `compile --target cuda` gives NVRTC): one __global__
# function per kernel, parameters = the kernel's buffers then the shape symbols.

# A GEMM with its bias epilogue: the kernel library's strict-f32 SIMT GEMM (the default
# --matmul-precision highest) on the operands' views, the epilogue applied to the accumulators
# the library hands its hook, stored at the output's dense index.
# CHECK: // --matmul-precision highest
# CHECK-LABEL: tem_mm_add_0(const float *__restrict__ b0, const float *__restrict__ b1, const float *__restrict__ b2, float *b{{[0-9]+}}, long long sym_s0)
# CHECK: const TkMatrix<float, true, true> tk_a{(b0 + 0ll), (long long)(((8ll)))
# CHECK: tk_gemm_simt<TkSimtConfig<
# CHECK: const float tc_acc[4] = {tk_v[0], tk_v[1], tk_v[2], tk_v[3]};
# CHECK: const float [[ACC:v[0-9]+]] = tc_acc[tc_e];
# CHECK: [[ACC]] + v{{[0-9]+}}
# A layer norm, its SiLU and the argmax over it (and, horizontally, the add + relu over the same
# rows): one row per block, block reductions through warp shuffles, a barrier between stages.
# The rows have a constant extent (16), a multiple of 4: register rows of vectors, each thread
# taking slots of 4 elements from (threadIdx.x + j * 32) * 4 in an unrolled loop, its row
# operands loaded as one vector per slot; a reduction's result reaches every thread through
# shared memory and later stages read it from that register, not from memory.
# CHECK-LABEL: per_fused_sum_div_sub_mul_1(
# CHECK: __shared__ unsigned long long tc_smem[65];
# CHECK: for (long long o = blockIdx.x; o < rows; o += gridDim.x)
# CHECK: float rv[[MEAN:[0-9]+]];
# CHECK: for (int tc_j = 0; tc_j < 1; ++tc_j) {
# CHECK-NEXT: const int tc_base = (threadIdx.x + tc_j * 32) * 4;
# CHECK-NEXT: if (tc_base >= 16) continue;
# CHECK-NEXT: const float4 [[X:tc_v[0-9]+r_[0-9]+]] = *reinterpret_cast<const float4 *>(&b{{[0-9]+}}[o * 16 + tc_base]);
# CHECK-NEXT: {
# CHECK-NEXT: const int r = tc_base + 0;
# CHECK: = [[X]].x;
# CHECK: const int r = tc_base + 3;
# CHECK: = [[X]].w;
# CHECK: tc_shfl_down(acc, d)
# CHECK: if (threadIdx.x == 0) { b[[MEAN]][o] = acc; *reinterpret_cast<float *>(&tc_smem[64]) = acc; }
# CHECK: __syncthreads();
# CHECK-NEXT: rv[[MEAN]] = *reinterpret_cast<const float *>(&tc_smem[64]);
# CHECK: = rv[[MEAN]];
# The layer norm's weight and bias are read at the column alone: one vector per slot too.
# CHECK: const float4 tc_v{{[0-9]+}}c_{{[0-9]+}} = *reinterpret_cast<const float4 *>(&b{{[0-9]+}}[tc_base]);
# CHECK: expf(
# The argmax keeps the index and breaks ties towards the lower one when partial results meet.
# CHECK: const long long other_i = tc_shfl_down(acc_i, d);
# CHECK: other_i < acc_i
# CHECK: if (threadIdx.x == 0) { b{{[0-9]+}}[o] = acc_i;
# A pointwise stage with inner dims: the block's threads split the row; its results stay in
# registers for later stages, and are stored as one vector per slot.
# CHECK: float rc[[OUT:[0-9]+]][4];
# CHECK: const int i = tc_base + 0;
# CHECK: tc_max(
# CHECK: rc[[OUT]][tc_j * 4 + 0] =
# CHECK: rc[[OUT]][tc_j * 4 + 3] =
# CHECK: *reinterpret_cast<float4 *>(&b[[OUT]][o * 16 + tc_base]) = float4{rc[[OUT]][tc_j * 4 + 0], rc[[OUT]][tc_j * 4 + 1], rc[[OUT]][tc_j * 4 + 2], rc[[OUT]][tc_j * 4 + 3]};

graph(%x: f32[s0, 8], %w: f32[16, 8], %b: f32[16], %g: f32[16], %beta: f32[16], %y: f32[s0, 16]):
  %wt : f32[8, 16] = call_function[target=aten.t](args=(%w,))
  %fc : f32[s0, 16] = call_function[target=aten.addmm](args=(%b, %x, %wt))
  %ln : f32[s0, 16] = call_function[target=aten.layer_norm](args=(%fc, [16], %g, %beta))
  %silu : f32[s0, 16] = call_function[target=aten.silu](args=(%ln,))
  %am : i64[s0] = call_function[target=aten.argmax](args=(%silu, 1))
  %sum : f32[s0, 16] = call_function[target=aten.add](args=(%y, %y))
  %relu : f32[s0, 16] = call_function[target=aten.relu](args=(%sum,))
  return (%am, %relu)

# -----
# Rows of a constant extent that is not a multiple of 4 (10): register rows of single
# elements, threadIdx.x + j * 32, each loaded and stored on its own.
# CHECK-LABEL: per_fused_sum_div_sub_0(
# CHECK: for (int tc_j = 0; tc_j < 1; ++tc_j) {
# CHECK-NEXT: const int tc_base = (threadIdx.x + tc_j * 32);
# CHECK-NEXT: if (tc_base >= 10) continue;
# CHECK-NEXT: const int r = tc_base;
# CHECK-NOT: float4
# CHECK: b{{[0-9]+}}[o * 10 + i] = rc{{[0-9]+}}[tc_j];
graph(%x: f32[s0, 10]):
  %m : f32[s0, 1] = call_function[target=aten.mean](args=(%x, [1], True))
  %d : f32[s0, 10] = call_function[target=aten.sub](args=(%x, %m))
  return (%d,)

# -----
# Rows of a symbolic extent (a softmax over s0): block-strided loops, each stage reading the
# earlier stages' results back from memory after the barrier.
# CHECK-LABEL: per_fused_amax_sub_exp_sum_0(
# CHECK: __shared__ unsigned long long tc_smem[64];
# CHECK: for (long long r = threadIdx.x; r < extent; r += 1024)
# CHECK: if (threadIdx.x == 0) b{{[0-9]+}}[o] = acc;
# CHECK: for (long long i = threadIdx.x; i < inner; i += 1024)
# CHECK: b{{[0-9]+}}[o * inner + i] =
graph(%x: f32[4, s0]):
  %sm : f32[4, s0] = call_function[target=aten.softmax](args=(%x, 1))
  return (%sm,)

# -----
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

# -----
# A gather in the 4-wide elementwise path: the i32 index is dense (one int4 per thread), the
# gathered input is read one element at a time at its row plus the wrapped, clamped index.
# CHECK-LABEL: poi_fused_gather_relu_0(const float *__restrict__ b0, const int *__restrict__ b1, float *b2, long long sym_s0)
# CHECK: const int4 in1 = *reinterpret_cast<const int4 *>(&b1[o0]);
# CHECK: const int [[I:v[0-9]+]] = in1.x;
# CHECK: const long long [[C:v[0-9]+]] = ({{v[0-9]+}} < (long long)(15ll) ? {{v[0-9]+}} : (long long)(15ll));
# CHECK-NEXT: const float {{v[0-9]+}} = b0[(x0_{{[0-9]+}} * (16ll)) + [[C]]];
# CHECK: in1.w
# CHECK: *reinterpret_cast<float4 *>(&b2[o0]) = float4{
graph(%u: f32[s0, 16], %idx: i32[s0, 16]):
  %g : f32[s0, 16] = call_function[target=aten.gather](args=(%u, 1, %idx))
  %r : f32[s0, 16] = call_function[target=aten.relu](args=(%g,))
  return (%r,)
