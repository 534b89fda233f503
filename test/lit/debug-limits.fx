# RUN: tensorc inspect %s --stage fuse --max-fusions 1 | FileCheck %s --check-prefix=MAX1
# RUN: tensorc inspect %s --stage fuse --disable-fusions epilogue | FileCheck %s --check-prefix=NOEPI
# RUN: tensorc inspect %s --stage fuse --max-fusions 0 | FileCheck %s --check-prefix=NONE
# RUN: tensorc inspect %s --stage decompose --disable-passes decompose | FileCheck %s --check-prefix=NODECOMP
# RUN: tensorc --log schedule inspect %s --stage fuse --max-fusions 1 2>&1 | FileCheck %s --check-prefix=LOG
# RUN: not tensorc inspect %s --disable-passes nonsense 2>&1 | FileCheck %s --check-prefix=BADPASS
# RUN: not tensorc inspect %s --disable-fusions sideways 2>&1 | FileCheck %s --check-prefix=BADKIND
# The debugging limits `tensorc bisect` searches over: at most K fusions (in scheduling order), fusion
# kinds refused, graph passes skipped.

# One fusion allowed: the GEMM keeps its bias epilogue, the layer norm's stages stay apart.
# MAX1-LABEL: tem_mm_add_0
# MAX1: # epilogue fc fused into fc_mm
# MAX1: red_fused_sum_1 rows [s0]
# MAX1-NOT: # fused
# MAX1: # 4 kernels
# Epilogues refused, the row fusions of the layer norm are still made.
# NOEPI-LABEL: tem_mm_0
# NOEPI-NEXT: gemm fc_mm [s0, 16]
# NOEPI-NEXT: per_fused_add_sum_div_sub_1 rows [s0]
# NOEPI: # fused ln_mean_sum into rows [s0]; fused ln_sum into rows [s0]
# No fusion at all: every node is its own kernel.
# NONE-NOT: # fused
# NONE-NOT: # epilogue
# NONE: # 5 kernels
# Decompose skipped: layer_norm stays one op (it runs on its reference kernel).
# NODECOMP: aten.layer_norm
# LOG: epilogue fc fused into fc_mm
# LOG: not fusing ln_sum: --max-fusions 1 reached
# BADPASS: cannot disable pass 'nonsense'
# BADKIND: unknown fusion kind 'sideways'
graph(%x: f32[s0, 8], %w: f32[16, 8], %b: f32[16], %g: f32[16], %beta: f32[16]):
  %wt : f32[8, 16] = call_function[target=aten.t](args=(%w,))
  %fc : f32[s0, 16] = call_function[target=aten.addmm](args=(%b, %x, %wt))
  %ln : f32[s0, 16] = call_function[target=aten.layer_norm](args=(%fc, [16], %g, %beta, 1e-05))
  %silu : f32[s0, 16] = call_function[target=aten.silu](args=(%ln,))
  return (%silu,)
