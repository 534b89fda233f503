# RUN: tensorc bisect %s | FileCheck %s
# RUN: TENSORC_INJECT_BUG=tanh:accuracy tensorc bisect %s --dim s0=3 > tanh.txt; test $? -eq 2 && FileCheck %s --check-prefix=TANH < tanh.txt
# RUN: TENSORC_INJECT_BUG=relu:accuracy tensorc bisect %s --no-narrow > relu.txt; test $? -eq 2 && FileCheck %s --check-prefix=RELU < relu.txt
# RUN: TENSORC_INJECT_BUG=relu:compile-error not tensorc bisect %s 2>&1 | FileCheck %s --check-prefix=NOCOMPILE
# RUN: not tensorc bisect %s --target cpu,cuda 2>&1 | FileCheck %s --check-prefix=TWO
# `tensorc bisect`: compiled kernels one at a time against the interpreter (each fed the
# interpreter's inputs), then the fusion and pass search; TENSORC_INJECT_BUG (testing only) plants
# a code generation bug for it to find.

# The clean build: every kernel matches.
# CHECK: 2 kernels against the interpreter's values of the lowered graph, inputs random (seed 0, s0=2)
# CHECK-NEXT: all 2 kernels match (2 compared
# CHECK-NEXT: outputs: match the interpreter's on the model as written

# tanh(x) + 1 in the layer norm's kernel: that kernel is named with its fused nodes, their
# source nodes and the worst element; no fusion limit or pass fixes it.
# TANH: first divergent kernel: launch 1 of 2, per_fused_sum_div_sub_mul_1
# TANH-NEXT: fused node ln_mean_sum (sum) from %ln (aten.layer_norm)
# TANH-NEXT: fused node ln_sum (div, sub, mul, sum) from %ln (aten.layer_norm)
# TANH-NEXT: fused node out (div, sub, add, rsqrt, mul, tanh) from %out (aten.tanh)
# TANH-NEXT: ln_mean_sum matches
# TANH-NEXT: ln_sum matches
# TANH-NEXT: out DIVERGES: element [{{.*}}] is {{.*}}, expected {{.*}} (|diff| 1, allowed {{.*}}); 24 of 24 elements differ (rtol 0.001, atol 1e-05)
# TANH: outputs: output 'out' differs
# TANH: fusion: still fails with --max-fusions 0 (3 fusions made by default): not a fusion
# TANH: --disable-passes decompose: still fails
# TANH: verdict: the code generated for per_fused_sum_div_sub_mul_1 is wrong

# relu(x) + 1 before a layer norm: the kernel diverges, but the normalization hides it from the
# outputs, so there is nothing to narrow.
# RELU: first divergent kernel: launch 0 of 2, tem_mm_add_relu_0
# RELU: fused node act (add, relu) from %act (aten.relu)
# RELU: act DIVERGES
# RELU: outputs: match the interpreter's on the model as written
# NOCOMPILE: code generation of kernel tem_mm_add_relu_0 failed: injected bug (TENSORC_INJECT_BUG=relu:compile-error) (bisect checks values; `tensorc minify --check compile` reduces a model that does not compile)
# TWO: --target: cpu,cuda not in {cpu,cuda}
graph(%x: f32[s0, 16], %w: f32[8, 16], %b: f32[8], %g: f32[8], %beta: f32[8]):
  %wt : f32[16, 8] = call_function[target=aten.t](args=(%w,))
  %fc : f32[s0, 8] = call_function[target=aten.addmm](args=(%b, %x, %wt))
  %act : f32[s0, 8] = call_function[target=aten.relu](args=(%fc,))
  %ln : f32[s0, 8] = call_function[target=aten.layer_norm](args=(%act, [8], %g, %beta, 1e-05))
  %out : f32[s0, 8] = call_function[target=aten.tanh](args=(%ln,))
  return (%out,)
