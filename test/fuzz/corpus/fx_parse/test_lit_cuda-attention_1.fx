# bf16, head dim 128, a bool mask per batch entry (broadcast over heads): the batch entry's mask
# offset from the flat batch index.
# CHECK-LABEL: tem_scaled_dot_product_attention_0(
# CHECK-SAME: const unsigned char *__restrict__ b3
# CHECK: __shared__ __align__(16) unsigned short tc_fa_smem[64 * (136 + 136)];
# CHECK: long long tc_mask_base = 0, tc_mask_rest = bi;
# CHECK-NEXT: tc_mask_rest /= ((4ll));
# CHECK-NEXT: tc_mask_base += (tc_mask_rest % ((2ll))) * ((7700ll));
# CHECK-NEXT: tc_flash_attention<128, 128, true, 2>({{.*}}, b3 + tc_mask_base, ((77ll)), ((1ll)), L, S, row0,
graph(%q: bf16[2, 4, 100, 128], %k: bf16[2, 4, 77, 128], %v: bf16[2, 4, 77, 128], %m: bool[2, 1, 100, 77]):
  %kt : bf16[2, 4, 128, 77] = call_function[target=aten.transpose](args=(%k, -2, -1))
  %qk : bf16[2, 4, 100, 77] = call_function[target=aten.matmul](args=(%q, %kt))
  %s : bf16[2, 4, 100, 77] = call_function[target=aten.mul](args=(%qk, 0.125))
  %sm : bf16[2, 4, 100, 77] = call_function[target=aten.where](args=(%m, %s, -inf))
  %p : bf16[2, 4, 100, 77] = call_function[target=aten.softmax](args=(%sm, -1))
  %out : bf16[2, 4, 100, 128] = call_function[target=aten.matmul](args=(%p, %v))
  return (%out,)
