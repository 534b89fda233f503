# f32 (and head dims the flash kernel does not take): one warp per query row, the mask added to
# each key's score; a -inf before any finite score weighs 0 rather than making NaN.
# CHECK-NOT: tc_flash_attention
# CHECK-LABEL: void __launch_bounds__(128) tem_scaled_dot_product_attention_0(
# CHECK: const long long tc_mask_row = 0ll + (row - bi * L) * ((77ll));
# CHECK: score += (float)(b3[tc_mask_row + j * ((1ll))]);
# CHECK: const float base = next == __int_as_float((int)0xff800000u) ? 0.0f : next;
# CHECK: const float p = expf(score - base);
graph(%q: f32[2, 4, 100, 64], %k: f32[2, 4, 77, 64], %v: f32[2, 4, 77, 64], %m: f32[100, 77]):
  %kt : f32[2, 4, 64, 77] = call_function[target=aten.transpose](args=(%k, -2, -1))
  %qk : f32[2, 4, 100, 77] = call_function[target=aten.matmul](args=(%q, %kt))
  %s : f32[2, 4, 100, 77] = call_function[target=aten.mul](args=(%qk, 0.125))
  %sm : f32[2, 4, 100, 77] = call_function[target=aten.add](args=(%s, %m))
  %p : f32[2, 4, 100, 77] = call_function[target=aten.softmax](args=(%sm, -1))
  %out : f32[2, 4, 100, 64] = call_function[target=aten.matmul](args=(%p, %v))
  return (%out,)
