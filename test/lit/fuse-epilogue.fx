# RUN: tensorc --log schedule inspect %s --stage fuse 2>&1 | FileCheck %s
# RUN: tensorc --log schedule inspect %s --stage fuse --max-fusions 1 2>&1 | FileCheck %s --check-prefix=MAX1
# RUN: tensorc --log schedule inspect %s --stage fuse --disable-fusions epilogue 2>&1 | FileCheck %s --check-prefix=NOEPI
# RUN: tensorc explain %s | FileCheck %s --check-prefix=EXPLAIN
# RUN: d=$(mktemp -d) && tensorc compile %s -o $d/b --no-cache -q && tensorc run $d/b --random-inputs 3 --dim s0=5 --outputs $d/c.safetensors > /dev/null && tensorc run %s --interp --random-inputs 3 --dim s0=5 --outputs $d/i.safetensors > /dev/null && python3 %S/compare_outputs.py $d/c.safetensors $d/i.safetensors && rm -r $d
# RUN: d=$(mktemp -d) && tensorc compile %s -o $d/b --no-cache -q --max-fusions 1 && tensorc run $d/b --random-inputs 3 --dim s0=5 --outputs $d/c.safetensors > /dev/null && tensorc run %s --interp --random-inputs 3 --dim s0=5 --outputs $d/i.safetensors > /dev/null && python3 %S/compare_outputs.py $d/c.safetensors $d/i.safetensors && rm -r $d
# GEMM epilogues that are neither adjacent to their product nor one node, end to end on the CPU
# against the interpreter. The first product's epilogue is a chain of two nodes (h1 is realized:
# two readers and costly) that comes after the second product and a row mean; it reads only
# weights, so the first product's kernel takes it in place. The second product's epilogue reads
# the mean, scheduled after that product, so its kernel moves to the epilogue's position.
# CHECK: epilogue h1 fused into y1_mm (kept in place ahead of 2 later kernels)
# CHECK-NEXT: epilogue v1 fused into y1_mm after h1 (kept in place ahead of 2 later kernels)
# CHECK-NEXT: epilogue o2 fused into y2_mm (moved past 1 later kernel: it reads m_sum)
# CHECK: tem_mm_add_mul_erf_tanh_sigmoid_0 (x, w1, b1, v1)
# CHECK-NEXT: gemm y1_mm [s0, 96]
# CHECK-NEXT: pointwise h1 [s0, 96]
# CHECK-NEXT: pointwise v1 [s0, 96]
# CHECK: red_fused_sum_1 rows [s0] (r, m_sum)
# CHECK: tem_mm_add_tanh_div_sub_exp_mul_2 (x, r, w2, b2, m_sum, v1, o2)
# CHECK-NEXT: gemm y2_mm [s0, 96]
# CHECK-NEXT: pointwise o2 [s0, 96]
# CHECK: # 3 kernels
# With one fusion allowed the chain stops after its first link, which the kernel then stores.
# MAX1: epilogue h1 fused into y1_mm (kept in place ahead of 2 later kernels)
# MAX1-NEXT: no epilogue v1: --max-fusions 1 reached
# MAX1: no epilogue o2: --max-fusions 1 reached
# MAX1: tem_mm_add_mul_erf_tanh_0 (x, w1, b1, h1)
# MAX1: tem_mm_1 (x, w2, y2_mm)
# MAX1: # 5 kernels
# NOEPI: no epilogue h1: epilogue fusion is disabled
# NOEPI: no epilogue o2: epilogue fusion is disabled
# NOEPI: tem_mm_0 (x, w1, y1_mm)
# NOEPI-NEXT: gemm y1_mm [s0, 96]
# NOEPI-NEXT: tem_mm_1 (x, w2, y2_mm)
# EXPLAIN: fusion: 3 (3 epilogue) made
graph(%x: f32[s0, 64], %r: f32[s0, 96], %w1: f32[96, 64], %b1: f32[96], %w2: f32[96, 64], %b2: f32[96]):
  %t1 : f32[64, 96] = call_function[target=aten.t](args=(%w1,))
  %t2 : f32[64, 96] = call_function[target=aten.t](args=(%w2,))
  %y1 : f32[s0, 96] = call_function[target=aten.addmm](args=(%b1, %x, %t1))
  %y2 : f32[s0, 96] = call_function[target=aten.addmm](args=(%b2, %x, %t2))
  %m : f32[s0, 1] = call_function[target=aten.mean](args=(%r, [1], True))
  %g1 : f32[s0, 96] = call_function[target=aten.gelu](args=(%y1,), kwargs={approximate='none'})
  %h1 : f32[s0, 96] = call_function[target=aten.gelu](args=(%g1,), kwargs={approximate='tanh'})
  %s1 : f32[s0, 96] = call_function[target=aten.sigmoid](args=(%h1,))
  %u1 : f32[s0, 96] = call_function[target=aten.mul](args=(%h1, %s1))
  %v1 : f32[s0, 96] = call_function[target=aten.gelu](args=(%u1,), kwargs={approximate='tanh'})
  %q1 : f32[s0, 96] = call_function[target=aten.exp](args=(%v1,))
  %z1 : f32[s0, 96] = call_function[target=aten.mul](args=(%v1, %q1))
  %o1 : f32[s0, 96] = call_function[target=aten.add](args=(%z1, %r))
  %g2 : f32[s0, 96] = call_function[target=aten.tanh](args=(%y2,))
  %k2 : f32[s0, 96] = call_function[target=aten.sub](args=(%g2, %m))
  %o2 : f32[s0, 96] = call_function[target=aten.mul](args=(%k2, %o1))
  return (%o2,)
