# RUN: tensorc inspect %s --stage cuda --target cuda --fuse-attention | FileCheck %s
# CUDA attention kernels (what `compile --target cuda --fuse-attention` gives NVRTC): f16/bf16
# heads with head dims multiples of 16 up to 128 on the tensor-core flash kernel, f32 heads up to
# 64 on the f32 tiled kernel, the rest one warp per query row; masks are kernel operands read
# through broadcast strides.

# f16, head dim 64, sequences not multiples of the 64-row/64-key tiles, an additive [L, S] mask
# broadcast over batch and heads: the flash device code once, then a block per 32 query rows (8
# heads x 2 blocks of 64 rows would leave more than three quarters of the SMs idle: two warps
# share each 16 rows, each taking half of every key tile, SPLIT 2); head dims of 64 keep two key tiles of K and
# V in shared memory and Q in its own buffer (32 x 72 + 2 x 64 x (72 + 72) elements, STAGES 2).
# CHECK-LABEL: // Flash attention (f16/bf16, mma.sync m16n8k16, sm_80+)
# CHECK: cp.async.cg.shared.global
# CHECK: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
# CHECK: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
# CHECK-LABEL: void __launch_bounds__(128) tem_scaled_dot_product_attention_0(const unsigned short *__restrict__ b0, const unsigned short *__restrict__ b1, const unsigned short *__restrict__ b2, const unsigned short *__restrict__ b3, unsigned short *b4)
# CHECK: const long long L = ((100ll)), S = ((77ll));
# CHECK: __shared__ __align__(16) unsigned short tc_fa_smem[20736];
# CHECK: const long long qTiles = (L + 31) / 32, total = ((8ll)) * qTiles;
# CHECK: tc_flash_attention<64, 64, false, 1, false, 2, 2>(b0 + bi * ((6400ll)), ((64ll)), b1 + bi * ((4928ll)), ((64ll)), b2 + bi * ((4928ll)), ((64ll)), b4 + bi * ((6400ll)), ((64ll)), b3 + 0ll, ((77ll)), ((1ll)), L, S, row0, 0x1.715476p-3f, tc_fa_smem);
graph(%q: f16[2, 4, 100, 64], %k: f16[2, 4, 77, 64], %v: f16[2, 4, 77, 64], %m: f16[100, 77]):
  %kt : f16[2, 4, 64, 77] = call_function[target=aten.transpose](args=(%k, -2, -1))
  %qk : f16[2, 4, 100, 77] = call_function[target=aten.matmul](args=(%q, %kt))
  %s : f16[2, 4, 100, 77] = call_function[target=aten.mul](args=(%qk, 0.125))
  %sm : f16[2, 4, 100, 77] = call_function[target=aten.add](args=(%s, %m))
  %p : f16[2, 4, 100, 77] = call_function[target=aten.softmax](args=(%sm, -1))
  %out : f16[2, 4, 100, 64] = call_function[target=aten.matmul](args=(%p, %v))
  return (%out,)

# -----
# bf16, head dim 128, a bool mask per batch entry (broadcast over heads): the batch entry's mask
# offset from the flat batch index; head dims of 128 keep one key tile (64 x (136 + 136)
# elements, STAGES 1: two would not fit 48 KB of static shared memory).
# CHECK-LABEL: tem_scaled_dot_product_attention_0(
# CHECK-SAME: const unsigned char *__restrict__ b3
# CHECK: __shared__ __align__(16) unsigned short tc_fa_smem[17408];
# CHECK: long long tc_mask_base = 0, tc_mask_rest = bi;
# CHECK-NEXT: tc_mask_rest /= ((4ll));
# CHECK-NEXT: tc_mask_base += (tc_mask_rest % ((2ll))) * ((7700ll));
# CHECK-NEXT: tc_flash_attention<128, 128, true, 2, false, 1, 2>({{.*}}, b3 + tc_mask_base, ((77ll)), ((1ll)), L, S, row0,
graph(%q: bf16[2, 4, 100, 128], %k: bf16[2, 4, 77, 128], %v: bf16[2, 4, 77, 128], %m: bool[2, 1, 100, 77]):
  %kt : bf16[2, 4, 128, 77] = call_function[target=aten.transpose](args=(%k, -2, -1))
  %qk : bf16[2, 4, 100, 77] = call_function[target=aten.matmul](args=(%q, %kt))
  %s : bf16[2, 4, 100, 77] = call_function[target=aten.mul](args=(%qk, 0.125))
  %sm : bf16[2, 4, 100, 77] = call_function[target=aten.where](args=(%m, %s, -inf))
  %p : bf16[2, 4, 100, 77] = call_function[target=aten.softmax](args=(%sm, -1))
  %out : bf16[2, 4, 100, 128] = call_function[target=aten.matmul](args=(%p, %v))
  return (%out,)

# -----
# f16 with enough heads for the SMs (8 x 12 heads x 2 blocks of 64 rows): a block per 64 query
# rows, one warp per 16 rows (SPLIT 1).
# CHECK-LABEL: tem_scaled_dot_product_attention_0(
# CHECK: __shared__ __align__(16) unsigned short tc_fa_smem[23040];
# CHECK: const long long qTiles = (L + 63) / 64, total = ((96ll)) * qTiles;
# CHECK: tc_flash_attention<64, 64, false, 0, false, 2, 1>(
graph(%q: f16[8, 12, 128, 64], %k: f16[8, 12, 128, 64], %v: f16[8, 12, 128, 64]):
  %kt : f16[8, 12, 64, 128] = call_function[target=aten.transpose](args=(%k, -2, -1))
  %qk : f16[8, 12, 128, 128] = call_function[target=aten.matmul](args=(%q, %kt))
  %s : f16[8, 12, 128, 128] = call_function[target=aten.mul](args=(%qk, 0.125))
  %p : f16[8, 12, 128, 128] = call_function[target=aten.softmax](args=(%s, -1))
  %out : f16[8, 12, 128, 64] = call_function[target=aten.matmul](args=(%p, %v))
  return (%out,)

# -----
# f32 heads with head dims multiples of 4 (q, k) and 16 (v) up to 64: the f32 tiled kernel, a
# block of 128 threads per 16 query rows, the mask read through its strides ([L, S]: rows 77
# apart).
# CHECK-LABEL: // Flash attention in strict f32 on CUDA cores
# CHECK-LABEL: void __launch_bounds__(128) tem_scaled_dot_product_attention_0(
# CHECK: __shared__ __align__(16) float tc_fa32_smem[6016];
# CHECK: const long long qTiles = (L + 15) / 16
# CHECK: tc_flash_attention_f32<64, 64, 1, false, 16, 2>({{.*}}, b3 + 0ll, ((77ll)), ((1ll)), L, S, row0,
graph(%q: f32[2, 4, 100, 64], %k: f32[2, 4, 77, 64], %v: f32[2, 4, 77, 64], %m: f32[100, 77]):
  %kt : f32[2, 4, 64, 77] = call_function[target=aten.transpose](args=(%k, -2, -1))
  %qk : f32[2, 4, 100, 77] = call_function[target=aten.matmul](args=(%q, %kt))
  %s : f32[2, 4, 100, 77] = call_function[target=aten.mul](args=(%qk, 0.125))
  %sm : f32[2, 4, 100, 77] = call_function[target=aten.add](args=(%s, %m))
  %p : f32[2, 4, 100, 77] = call_function[target=aten.softmax](args=(%sm, -1))
  %out : f32[2, 4, 100, 64] = call_function[target=aten.matmul](args=(%p, %v))
  return (%out,)

# -----
# Head dims neither kernel takes (f32, 40): one warp per query row, the mask added to each key's
# score; a -inf before any finite score weighs 0 rather than making NaN.
# CHECK-NOT: tc_flash_attention
# CHECK-LABEL: void __launch_bounds__(128) tem_scaled_dot_product_attention_0(
# CHECK: const long long tc_mask_row = 0ll + tc_i * ((77ll));
# CHECK: score += (float)(b3[tc_mask_row + j * ((1ll))]);
# CHECK: const float base = next == __int_as_float((int)0xff800000u) ? 0.0f : next;
# CHECK: const float p = expf(score - base);
graph(%q: f32[2, 4, 100, 40], %k: f32[2, 4, 77, 40], %v: f32[2, 4, 77, 40], %m: f32[100, 77]):
  %kt : f32[2, 4, 40, 77] = call_function[target=aten.transpose](args=(%k, -2, -1))
  %qk : f32[2, 4, 100, 77] = call_function[target=aten.matmul](args=(%q, %kt))
  %s : f32[2, 4, 100, 77] = call_function[target=aten.mul](args=(%qk, 0.125))
  %sm : f32[2, 4, 100, 77] = call_function[target=aten.add](args=(%s, %m))
  %p : f32[2, 4, 100, 77] = call_function[target=aten.softmax](args=(%sm, -1))
  %out : f32[2, 4, 100, 40] = call_function[target=aten.matmul](args=(%p, %v))
  return (%out,)
