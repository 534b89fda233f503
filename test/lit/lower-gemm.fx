# RUN: tensorc inspect %s --stage lower | FileCheck %s
# RUN: tensorc inspect %s --stage lower --target cuda | FileCheck %s --check-prefix=CUDA
# RUN: d=$(mktemp -d) && tensorc compile %s -o $d/b > /dev/null 2>&1 && tensorc run $d/b --random-inputs 2 --dim s0=5 --outputs $d/c.safetensors > /dev/null && tensorc run %s --interp --random-inputs 2 --dim s0=5 --outputs $d/i.safetensors > /dev/null && python3 %S/compare_outputs.py $d/c.safetensors $d/i.safetensors && rm -r $d
# Matrix products lower to GEMM templates over strided views of their operands (a transposed
# operand is a view, not a copy); what follows a product reads it at its own index, so it can
# become the epilogue. f16 products are templates only for CUDA alone (the CPU GEMM is f32).
# addmm with a transposed input weight: b is read through strides [0, 1, 8].
# CHECK-LABEL: template gemm fc_mm batch=1 m=s0 n=16 k=8 origins=[mm]
# CHECK-NEXT: a = x offset 0 strides [0, 8, 1]
# CHECK-NEXT: b = w offset 0 strides [0, 1, 8]
# bmm of [2, 3, 4] x [2, 4, 5]: batch strides 12 and 20.
# CHECK-NEXT: template gemm bm batch=2 m=3 n=5 k=4 origins=[bmm]
# CHECK-NEXT: a = p offset 0 strides [12, 4, 1]
# CHECK-NEXT: b = q offset 0 strides [20, 5, 1]
# The f16 product is a reference-kernel fallback on the CPU and a template for CUDA.
# CHECK-NEXT: extern aten.mm (h, hw) -> (hm) origins=[mm]
# The bias add, computed where the output is stored, reads the product at its own index.
# CHECK: pointwise fc over [s0, 16] origins=[add]
# CHECK-NEXT: t0 : f32 = load(fc_mm, 16*x0 + x1)
# CHECK-NEXT: t1 : f32 = load(b, x1)
# CUDA: template gemm hm batch=1 m=4 n=4 k=4 origins=[mm]
# CUDA-NOT: extern
graph(%x: f32[s0, 8], %w: f32[16, 8], %b: f32[16], %p: f32[2, 3, 4], %q: f32[2, 4, 5], %h: f16[4, 4], %hw: f16[4, 4]):
  %t : f32[8, 16] = call_function[target=aten.t](args=(%w,))
  %fc : f32[s0, 16] = call_function[target=aten.addmm](args=(%b, %x, %t))
  %bm : f32[2, 3, 5] = call_function[target=aten.bmm](args=(%p, %q))
  %hm : f16[4, 4] = call_function[target=aten.mm](args=(%h, %hw))
  return (%fc, %bm, %hm)
