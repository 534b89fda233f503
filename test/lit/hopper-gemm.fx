# RUN: tensorc compile %s --target cuda --cuda-arch sm_90 --no-cache -o h 2>&1 | FileCheck %s --check-prefix=COMPILE --allow-empty
# RUN: FileCheck %s --check-prefix=MANIFEST < h/manifest.json
# RUN: FileCheck %s --check-prefix=BMANIFEST < h/manifest.json
# RUN: FileCheck %s --check-prefix=SOURCE < h/src/kernels.cu
# RUN: test -s h/cuda/sm_90a.0.cubin && test -s h/cuda/sm_90.0.cubin
# RUN: tensorc compile %s --target cuda --cuda-arch sm_80 --no-cache -o a 2>&1 | FileCheck %s --check-prefix=COMPILE --allow-empty
# RUN: FileCheck %s --check-prefix=AMPERE < a/manifest.json
# RUN: test ! -e a/cuda/sm_90a.0.cubin
# A GEMM big enough to give every SM a 128-row tile unsplit (1024 x 3072 x 768 in f16: 192
# tiles) gets a Hopper form when sm_90 is among the archs: the same function is the wgmma kernel
# in an sm_90a cubin of its module (TMA tensor maps, a persistent grid of 384-thread blocks) and
# the mma.sync kernel elsewhere, both taking the two maps first. The manifest says how the
# runtime encodes the maps (operand views, box rows) and launches the Hopper form. A small GEMM
# keeps mma.sync alone; sm_80 bundles have no Hopper forms.
# COMPILE-NOT: error
# MANIFEST: "cuda": [
# MANIFEST: "arch": "sm_90a",
# MANIFEST-NEXT: "file": "cuda/sm_90a.0.cubin",
# MANIFEST-NEXT: "kind": "cubin",
# MANIFEST: "cuda_sm90a": {
# MANIFEST-NEXT: "a": {
# MANIFEST-NEXT: "arg": 0,
# MANIFEST-NEXT: "batch_stride": 0,
# MANIFEST-NEXT: "box_rows": 128,
# MANIFEST-NEXT: "ld": 768,
# MANIFEST-NEXT: "offset": 0,
# MANIFEST-NEXT: "rows": 1024
# MANIFEST-NEXT: },
# MANIFEST-NEXT: "b": {
# MANIFEST-NEXT: "arg": 1,
# MANIFEST-NEXT: "batch_stride": 0,
# MANIFEST-NEXT: "box_rows": 128,
# MANIFEST-NEXT: "ld": 768,
# MANIFEST-NEXT: "offset": 0,
# MANIFEST-NEXT: "rows": 3072
# MANIFEST-NEXT: },
# MANIFEST-NEXT: "batch": 1,
# MANIFEST-NEXT: "block": 384,
# MANIFEST-NEXT: "blocks_per_sm": 1,
# MANIFEST-NEXT: "dtype": "f16",
# MANIFEST-NEXT: "k": 768,
# MANIFEST-NEXT: "smem": {{[0-9]+}},
# MANIFEST-NEXT: "units": 192
# MANIFEST-NEXT: },
# MANIFEST: "name": "tem_mm_relu_0",
# MANIFEST-NOT: "cuda_sm90a"
# MANIFEST: "name": "tem_mm_1",
# SOURCE: #if defined(__CUDA_ARCH_FEAT_SM90_ALL)
# SOURCE: {{^}}tem_mm_relu_0(const __grid_constant__ TkTensorMap tk_map_a, const __grid_constant__ TkTensorMap tk_map_b,
# 2-D GEMMs share both operands across their one batch entry.
# SOURCE: tk_gemm_wg<TkWgConfig<{{[^>]*}}>, false, false>
# SOURCE: #else
# SOURCE: {{^}}tem_mm_relu_0(const __grid_constant__ TkTensorMap tk_map_a, const __grid_constant__ TkTensorMap tk_map_b,
# SOURCE: tk_gemm_tc<
# SOURCE: #endif
# A batched product whose B is shared by the batch entries (the weight expanded): A's tensor map
# has 8 entries, B's one, and the kernel reads B at entry 0 for all of them.
# SOURCE: {{^}}tem_bmm_2(const __grid_constant__ TkTensorMap tk_map_a,
# SOURCE: tk_gemm_wg<TkWgConfig<{{[^>]*}}>, true, false>
# Bundles with Hopper forms are format version 4 (runtimes before them read up to 3).
# BMANIFEST: "format_version": 4,
# BMANIFEST: "name": "tem_mm_1",
# BMANIFEST: "cuda_sm90a": {
# BMANIFEST-NEXT: "a": {
# BMANIFEST-NEXT: "arg": {{[0-9]}},
# BMANIFEST-NEXT: "batch_stride": 786432,
# BMANIFEST: "b": {
# BMANIFEST-NEXT: "arg": {{[0-9]}},
# BMANIFEST-NEXT: "batch_stride": 0,
# BMANIFEST: "batch": 8,
# BMANIFEST: "name": "tem_bmm_2",
# AMPERE-NOT: sm_90a
# AMPERE: "format_version": 3,
# AMPERE-NOT: sm_90a
graph(%x: f16[1024, 768], %w: f16[3072, 768], %v: f16[64, 96], %u: f16[48, 96], %x3: f16[8, 1024, 768]):
  %wt : f16[768, 3072] = call_function[target=aten.t](args=(%w,))
  %y : f16[1024, 3072] = call_function[target=aten.mm](args=(%x, %wt))
  %r : f16[1024, 3072] = call_function[target=aten.relu](args=(%y,))
  %ut : f16[96, 48] = call_function[target=aten.t](args=(%u,))
  %s : f16[64, 48] = call_function[target=aten.mm](args=(%v, %ut))
  %we : f16[8, 768, 3072] = call_function[target=aten.expand](args=(%wt, [8, 768, 3072]))
  %z : f16[8, 1024, 3072] = call_function[target=aten.bmm](args=(%x3, %we))
  return (%r, %s, %z)
