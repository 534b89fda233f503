# RUN: tensorc compile %s --target cpu,cuda -O max-autotune --no-tune -o ma 2>&1 | FileCheck %s --check-prefix=COMPILE --allow-empty
# RUN: FileCheck %s --check-prefix=MANIFEST < ma/manifest.json
# RUN: FileCheck %s --check-prefix=SOURCE < ma/src/kernels.cu
# RUN: tensorc compile %s --target cuda -O reduce-overhead -o ro && FileCheck %s --check-prefix=PLAIN < ro/manifest.json
# RUN: not tensorc tune ro 2>&1 | FileCheck %s --check-prefix=NOCALLS
# RUN: not tensorc tune missing 2>&1 | FileCheck %s --check-prefix=MISSING
# RUN: cp ma/manifest.json before.json && CUDA_VISIBLE_DEVICES= not tensorc tune ma 2>&1 | FileCheck %s --check-prefix=NOGPU && cmp before.json ma/manifest.json && test -z "$(ls -A ma | grep -e tune -e tmp)"
# RUN: CUDA_VISIBLE_DEVICES= tensorc compile %s --target cuda -O max-autotune -o tuned 2>&1 | FileCheck %s --check-prefix=LATER
# RUN: tensorc run ma --random-inputs 1 --outputs cpu.safetensors && python3 -c "import json; m = json.load(open('ma/manifest.json')); m['launches'][0]['cuda_gemm']['library'] = 'cublaslt'; json.dump(m, open('ma/manifest.json', 'w'))" && tensorc run ma --random-inputs 1 --outputs chosen.safetensors && cmp cpu.safetensors chosen.safetensors
# RUN: printf '{"format": 1, "entries": {"sm_90|f32->f32|1x64x48x96|A:k,ld96,bs0,a16|B:k,ld96,bs0,a16|epilogue|tem_mm_add_relu": {"library": "cublaslt", "algo": 2}}}' > cache.json
# RUN: CUDA_VISIBLE_DEVICES= tensorc compile %s --target cuda -O max-autotune --tuning-cache cache.json --no-cache -o cached 2>&1 | FileCheck %s --check-prefix=CACHED && FileCheck %s --check-prefix=CHOSEN < cached/manifest.json
# RUN: not tensorc compile %s --target cuda --tuning-cache cache.json -o plain 2>&1 | FileCheck %s --check-prefix=NEEDS
# -O max-autotune: every GEMM template also carries a library call (its operands as strided views
# of its arguments, its sizes, and an epilogue function that applies its fused epilogue to a
# product computed elsewhere), which `tensorc tune` times against the generated kernel on a GPU;
# other compiles have none. Without a GPU, tune says so and leaves the bundle as it was, and a
# compile says when to tune. The CPU runtime runs its own kernels whatever the choice. A tuning
# cache (made by `tensorc tune --cache` on the GPU machine) gives a compile its choices without a
# GPU, by arch, sizes, layouts and what the kernel's epilogue computes.
# COMPILE-NOT: error
# MANIFEST: "cuda_gemm": {
# MANIFEST-NEXT: "a": {
# MANIFEST-NEXT: "arg": 0,
# MANIFEST-NEXT: "batch_stride": 0,
# MANIFEST-NEXT: "k_contiguous": true,
# MANIFEST-NEXT: "ld": 96,
# MANIFEST-NEXT: "offset": 0
# MANIFEST-NEXT: },
# MANIFEST-NEXT: "b": {
# MANIFEST-NEXT: "arg": {{[0-9]}},
# MANIFEST: "batch": 1,
# MANIFEST-NEXT: "dtype": "f32",
# MANIFEST-NEXT: "epilogue_grid": 3,
# MANIFEST-NEXT: "k": 96,
# MANIFEST-NEXT: "m": 64,
# MANIFEST-NEXT: "n": 48,
# MANIFEST-NEXT: "output": {{[0-9]}}
# MANIFEST-NEXT: },
# MANIFEST: "matmul_precision": "highest",
# SOURCE: extern "C" __global__ void __launch_bounds__(256) tem_mm_add_relu_0_product_epilogue({{.*}}, const float *__restrict__ tk_product) {
# SOURCE-NEXT: TC_GRID_DEPENDENCY_WAIT();
# SOURCE: reinterpret_cast<float4 *>(tk_p)[0] = reinterpret_cast<const float4 *>(tk_product + tk_i * 4)[0];
# PLAIN-NOT: cuda_gemm
# NOCALLS: tensorc: error: ro: no GEMM has a library call; compile the model with -O max-autotune
# MISSING: tensorc: error: missing: not a bundle directory
# NOGPU: tensorc: error: ma: tuning needs a GPU (
# LATER: tensorc: -O max-autotune: no GPU here ({{.*}}); GEMMs keep their generated kernels until `tensorc tune tuned` runs on the GPU machine
# CACHED: tuning cache cache.json: 1 of 1 GEMMs found for sm_90, 1 of them on cuBLASLt
# CACHED: no GPU here ({{.*}}); GEMMs keep their generated kernels where the tuning cache has no choice until `tensorc tune cached` runs on the GPU machine
# CHOSEN: "algo": 2,
# CHOSEN-NEXT: "b": {
# CHOSEN: "library": "cublaslt",
# NEEDS: tensorc: error: cache.json: a tuning cache needs GEMM library calls (--target cuda -O max-autotune)
graph(%x: f32[64, 96], %w: f32[48, 96], %b: f32[48]):
  %wt : f32[96, 48] = call_function[target=aten.t](args=(%w,))
  %y : f32[64, 48] = call_function[target=aten.addmm](args=(%b, %x, %wt))
  %r : f32[64, 48] = call_function[target=aten.relu](args=(%y,))
  return (%r,)
