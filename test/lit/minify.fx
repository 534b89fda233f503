# RUN: TENSORC_INJECT_BUG=relu:compile-error tensorc minify %s --check compile -o min.fx | FileCheck %s
# RUN: cat min.fx | FileCheck %s --check-prefix=MIN
# RUN: TENSORC_INJECT_BUG=relu:compile-error not tensorc compile min.fx -o b 2>&1 | FileCheck %s --check-prefix=STILL
# RUN: tensorc compile min.fx -o b2 2>&1 | FileCheck %s --check-prefix=CLEAN
# RUN: TENSORC_INJECT_BUG=tanh:accuracy tensorc minify %s --check accuracy -o acc.fx | FileCheck %s --check-prefix=ACC
# RUN: TENSORC_INJECT_BUG=relu:compile-error tensorc minify %s --check compile --match 'kernel tem_' -o m2.fx | FileCheck %s --check-prefix=MATCH
# RUN: not tensorc minify %s --check compile -o x.fx 2>&1 | FileCheck %s --check-prefix=PASSES
# RUN: not tensorc minify %s --check compile -o x.onnx 2>&1 | FileCheck %s --check-prefix=EXT
# `tensorc minify`: delta debugging to a small model that fails the same way, written as FX-text.

# The compile error (injected into kernels computing relu) reduces to the relu alone, fed by an
# input of the relu's operand's type, its dims shrunk to 1.
# CHECK: minify {{.*}} (--check compile): 5 nodes; fails: {{.*}}code generation of kernel tem_mm_add_relu_0 failed: injected bug (TENSORC_INJECT_BUG=relu:compile-error)
# CHECK: a reduction is kept while it fails with: injected bug (TENSORC_INJECT_BUG=relu:compile-error)
# CHECK: wrote min.fx: 5 -> 1 nodes (%act (aten.relu)), inputs fc [?, 1]
# MIN: graph(%fc: f32[s0, 1]):
# MIN-NEXT: %act : f32[s0, 1] = call_function[target=aten.relu](args=(%fc,))
# MIN-NEXT: return (%act,)
# STILL: code generation of kernel poi_fused_relu_0 failed: injected bug
# CLEAN: wrote b2 (1 kernels
# tanh(x) + 1 only matters where the outputs see it: the tanh and what feeds it.
# ACC: wrote acc.fx: 5 -> 1 nodes (%out (aten.tanh))
# ACC: still fails: output 'out' differs
# With --match, the reduction keeps the GEMM whose epilogue is the relu.
# MATCH: wrote m2.fx: 5 -> 2 nodes (%fc (aten.addmm), %act (aten.relu))
# MATCH: still fails: {{.*}}kernel tem_mm_add_relu_0 failed
# PASSES: the model does not fail --check compile (it passes)
# EXT: the reduced model of {{.*}} is written as .fx
graph(%x: f32[s0, 16], %w: f32[8, 16], %b: f32[8], %g: f32[8], %beta: f32[8]):
  %wt : f32[16, 8] = call_function[target=aten.t](args=(%w,))
  %fc : f32[s0, 8] = call_function[target=aten.addmm](args=(%b, %x, %wt))
  %act : f32[s0, 8] = call_function[target=aten.relu](args=(%fc,))
  %ln : f32[s0, 8] = call_function[target=aten.layer_norm](args=(%act, [8], %g, %beta, 1e-05))
  %out : f32[s0, 8] = call_function[target=aten.tanh](args=(%ln,))
  return (%out,)
