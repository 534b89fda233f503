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
