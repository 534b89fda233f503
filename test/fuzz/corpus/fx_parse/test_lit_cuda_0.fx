# RUN: tensorc inspect %s --stage cuda | FileCheck %s
# CUDA rendering (the `cuda` stage, what `compile --target cuda` gives NVRTC): one __global__
# function per kernel, parameters = the kernel's buffers then the shape symbols.

# A GEMM with its bias epilogue: shared-memory tiles, the epilogue reads the accumulator.
# CHECK-LABEL: void __launch_bounds__(256) tem_mm_add_0(const float *__restrict__ b0, const float *__restrict__ b1, const float *__restrict__ b2, float *b{{[0-9]+}}, long long sym_s0)
# CHECK: __shared__ float As[16][64 + 4];
# CHECK: for (long long t = blockIdx.x; t < total; t += gridDim.x)
# CHECK: acc[i][j] += a[i] * b[j];
# CHECK: const float [[ACC:v[0-9]+]] = acc[i][j];
# CHECK: [[ACC]] + v{{[0-9]+}}
# A layer norm, its SiLU and the argmax over it (and, horizontally, the add + relu over the same
# rows): one row per block, block reductions through warp shuffles, a barrier between stages.
# CHECK-LABEL: per_fused_sum_div_sub_mul_1(
# CHECK: for (long long o = blockIdx.x; o < rows; o += gridDim.x)
# CHECK: for (long long r = threadIdx.x; r < extent; r += 32)
# CHECK: tc_shfl_down(acc, d)
# CHECK: if (threadIdx.x == 0) b{{[0-9]+}}[o] = acc;
# CHECK: __syncthreads();
# CHECK: expf(
# The argmax keeps the index and breaks ties towards the lower one when partial results meet.
# CHECK: const long long other_i = tc_shfl_down(acc_i, d);
# CHECK: other_i < acc_i
# CHECK: if (threadIdx.x == 0) b{{[0-9]+}}[o] = acc_i;
# A pointwise stage with inner dims: the block's threads split the row.
# CHECK: for (long long i = threadIdx.x; i < inner; i += 32)
# CHECK: tc_max(
# CHECK: b{{[0-9]+}}[o * inner + i] =

graph(%x: f32[s0, 8], %w: f32[16, 8], %b: f32[16], %g: f32[16], %beta: f32[16], %y: f32[s0, 16]):
  %wt : f32[8, 16] = call_function[target=aten.t](args=(%w,))
  %fc : f32[s0, 16] = call_function[target=aten.addmm](args=(%b, %x, %wt))
  %ln : f32[s0, 16] = call_function[target=aten.layer_norm](args=(%fc, [16], %g, %beta))
  %silu : f32[s0, 16] = call_function[target=aten.silu](args=(%ln,))
  %am : i64[s0] = call_function[target=aten.argmax](args=(%silu, 1))
  %sum : f32[s0, 16] = call_function[target=aten.add](args=(%y, %y))
  %relu : f32[s0, 16] = call_function[target=aten.relu](args=(%sum,))
  return (%am, %relu)
