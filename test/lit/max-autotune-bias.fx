# RUN: tensorc compile %s --target cuda -O max-autotune --no-tune --no-cache -o ma 2>&1 | FileCheck %s --check-prefix=COMPILE --allow-empty
# RUN: python3 -c "import json; m = json.load(open('ma/manifest.json')); [print(l['name'], json.dumps(l['cuda_gemm'], sort_keys=True)) for l in m['launches']]" | FileCheck %s --check-prefix=MANIFEST
# RUN: FileCheck %s --check-prefix=SOURCE < ma/src/kernels.cu
# -O max-autotune: a GEMM whose only epilogue adds a vector along N (a linear layer's bias, in
# the product's dtype) calls the library with that bias (cuBLASLt's bias epilogue: added to the
# f32 product, rounded once) and writes its output directly: no epilogue function, no product
# scratch. A bias of another dtype, a bias along M, or anything more keeps the epilogue function.
# COMPILE-NOT: error
# MANIFEST: tem_mm_add_0 {{.*}}"bias": 2, {{.*}}"direct": true,
# MANIFEST: tem_mm_convert_element_type_add_1 {"a":
# MANIFEST-NOT: "bias"
# MANIFEST-SAME: "epilogue_grid"
# MANIFEST: tem_mm_add_2 {"a":
# MANIFEST-NOT: "bias"
# MANIFEST-SAME: "epilogue_grid"
# MANIFEST: tem_mm_add_relu_3 {"a":
# MANIFEST-NOT: "bias"
# MANIFEST-SAME: "epilogue_grid"
# SOURCE-NOT: tem_mm_add_0_product_epilogue
# SOURCE: tem_mm_convert_element_type_add_1_product_epilogue
# SOURCE: tem_mm_add_2_product_epilogue
# SOURCE: tem_mm_add_relu_3_product_epilogue
graph(%x: f16[64, 96], %w0: f16[96, 48], %w1: f16[96, 48], %w2: f16[96, 48], %w3: f16[96, 48], %b: f16[48], %b32: f32[48], %bm: f16[64, 1]):
  %y : f16[64, 48] = call_function[target=aten.addmm](args=(%b, %x, %w0))
  %p : f16[64, 48] = call_function[target=aten.mm](args=(%x, %w1))
  %p32 : f32[64, 48] = call_function[target=prims.convert_element_type](args=(%p, f32))
  %y32 : f32[64, 48] = call_function[target=aten.add](args=(%p32, %b32))
  %q : f16[64, 48] = call_function[target=aten.mm](args=(%x, %w2))
  %ym : f16[64, 48] = call_function[target=aten.add](args=(%q, %bm))
  %z : f16[64, 48] = call_function[target=aten.addmm](args=(%b, %x, %w3))
  %r : f16[64, 48] = call_function[target=aten.relu](args=(%z,))
  return (%y, %y32, %ym, %r)
