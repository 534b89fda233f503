# RUN: tensorc inspect %s | FileCheck %s
# RUN: d=$(mktemp -d) && tensorc inspect %s -o $d 2>&1 | FileCheck %s --check-prefix=WROTE && ls $d | FileCheck %s --check-prefix=FILES && rm -r $d
# RUN: tensorc inspect %s --stage simplify | FileCheck %s --check-prefix=SIMPLIFY
# RUN: tensorc inspect %s --stage fuse | FileCheck %s --check-prefix=FUSE
# RUN: not tensorc inspect %s --stage codegen 2>&1 | FileCheck %s --check-prefix=BADSTAGE
# Every stage prints in order; a stage that changes nothing says so; -o writes numbered files.

# CHECK: # ---- import ----
# CHECK: # ---- verify ----
# CHECK-NEXT: (unchanged)
# CHECK: # ---- loss ----
# CHECK-NEXT: (unchanged)
# CHECK: # ---- simplify ----
# CHECK-NOT: %two
# CHECK-NOT: %unused
# CHECK: # ---- decompose ----
# CHECK: aten.amax
# CHECK: aten.exp
# CHECK: aten.sum
# CHECK: aten.div
# CHECK: # ---- autodiff ----
# CHECK-NEXT: (unchanged)
# CHECK: # ---- lower ----
# CHECK: reduction s_amax over [2] reducing [3] with max
# CHECK: # ---- fuse ----
# CHECK: per_fused
# CHECK: # ---- cuda ----
# CHECK: __global__ void
# WROTE: wrote 9 stage dump(s)
# FILES: 01_import.fx
# FILES-NEXT: 02_verify.fx
# FILES-NEXT: 03_loss.fx
# FILES-NEXT: 04_simplify.fx
# FILES-NEXT: 05_decompose.fx
# FILES-NEXT: 06_autodiff.fx
# FILES-NEXT: 07_lower.txt
# FILES-NEXT: 08_fuse.txt
# FILES-NEXT: 09_cuda.cu
# SIMPLIFY: %scale : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[6.0]})
# SIMPLIFY-NOT: %unused
# BADSTAGE: error: unknown stage 'codegen' (stages: import, verify, loss, simplify, decompose, autodiff, lower, fuse, cuda, all)
# Softmax (amax, exp-sum, divide) becomes one kernel over the rows.
# FUSE: per_fused_mul_amax_sub_exp_0 rows [2] (x, s_amax, s_sum, s)
# FUSE-NEXT: reduction s_amax [2] reducing [3] with max
# FUSE-NEXT: reduction s_sum [2] reducing [3] with sum
# FUSE-NEXT: pointwise s [2, 3]
# FUSE: # 1 kernels
graph(%x: f32[2, 3]):
  %two : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[2.0]})
  %three : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[3.0]})
  %scale : f32[] = call_function[target=aten.mul](args=(%two, %three))
  %y : f32[2, 3] = call_function[target=aten.mul](args=(%x, %scale))
  %unused : f32[2, 3] = call_function[target=aten.exp](args=(%x,))
  %s : f32[2, 3] = call_function[target=aten.softmax](args=(%y, 1))
  return (%s,)
