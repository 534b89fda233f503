# RUN: d=$(mktemp -d) && tensorc compile %s -o $d/b -q && for k in POOL WIDE ARG BATCH; do FileCheck %s --check-prefix=$k < $d/b/src/x86_64.ll || exit 1; done && FileCheck %s --check-prefix=AVX512 < $d/b/src/x86_64-avx512.ll && tensorc run $d/b --random-inputs 6 --dim s0=3 --threads 2 --variant x86_64 --outputs $d/c.safetensors > /dev/null && tensorc run $d/b --random-inputs 6 --dim s0=3 --threads 2 --outputs $d/c2.safetensors > /dev/null && tensorc run %s --interp --random-inputs 6 --dim s0=3 --outputs $d/i.safetensors > /dev/null && python3 %S/compare_outputs.py $d/c.safetensors $d/i.safetensors && python3 %S/compare_outputs.py $d/c2.safetensors $d/i.safetensors && rm -r $d
# CPU reductions whose reduced dims are not the innermost (a channels-last tensor's H and W, a
# batch dim, softmax over a middle dim) run the contiguous kept dim as vectors, each lane its own
# reduction: 4 vectors at a time (AVX2 <32 x float>, AVX-512 <64 x float>), then one vector, then
# single channels. Odd channel counts (37, 131, 67, 13) reach every tail; batch 3 with 2 threads
# splits rows between tasks. Both variants match the interpreter.
# The global average pool, max and sum of squares over H, W of an NHWC tensor: one kernel.
# POOL-LABEL: define void @red_fused_sum_amax_mul_0(
# POOL: fadd <32 x float>
# POOL: call <32 x float> @llvm.maximum.v32f32(
# The same over a wider channel dim.
# WIDE-LABEL: define void @red_fused_sum_1(
# WIDE: fadd <32 x float>
# argmax over a middle dim keeps one index vector per value vector (no 4-vector blocks).
# ARG-LABEL: define void @red_fused_argmax_amax_sub_exp_2(
# ARG: <8 x i64>
# A sum over the batch dim.
# BATCH-LABEL: define void @red_fused_sum_3(
# BATCH: fadd <8 x float>
# AVX512-LABEL: define void @red_fused_sum_amax_mul_0(
# AVX512: fadd <64 x float>
graph(%x: f32[s0, 16, 16, 37], %w: f32[s0, 9, 9, 131], %y: f32[s0, 3, 67], %z: f32[s0, 4, 13]):
  %g : f32[s0, 37] = call_function[target=aten.mean](args=(%x, [1, 2]))
  %gmax : f32[s0, 37] = call_function[target=aten.amax](args=(%x, [1, 2]))
  %sq : f32[s0, 16, 16, 37] = call_function[target=aten.mul](args=(%x, %x))
  %ss : f32[s0, 1, 1, 37] = call_function[target=aten.sum](args=(%sq, [1, 2], True))
  %gw : f32[s0, 131] = call_function[target=aten.mean](args=(%w, [1, 2]))
  %am : i64[s0, 67] = call_function[target=aten.argmax](args=(%y, 1))
  %sm : f32[s0, 3, 67] = call_function[target=aten.softmax](args=(%y, 1))
  %cs : f32[4, 13] = call_function[target=aten.sum](args=(%z, [0]))
  return (%g, %gmax, %ss, %gw, %am, %sm, %cs)
