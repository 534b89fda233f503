# RUN: tensorc inspect %s | FileCheck %s
# RUN: d=$(mktemp -d) && tensorc inspect %s -o $d 2>&1 | FileCheck %s --check-prefix=WROTE && ls $d | FileCheck %s --check-prefix=FILES && rm -r $d
# RUN: tensorc inspect %s --stage simplify | FileCheck %s --check-prefix=SIMPLIFY
# RUN: not tensorc inspect %s --stage lower 2>&1 | FileCheck %s --check-prefix=BADSTAGE
# Every stage prints in order; a stage that changes nothing says so; -o writes numbered files.

# CHECK: # ---- import ----
# CHECK: # ---- verify ----
# CHECK-NEXT: (unchanged)
# CHECK: # ---- simplify ----
# CHECK-NOT: %two
# CHECK-NOT: %unused
# CHECK: # ---- decompose ----
# CHECK: aten.amax
# CHECK: aten.exp
# CHECK: aten.sum
# CHECK: aten.div
# WROTE: wrote 4 stage dump(s)
# FILES: 01_import.fx
# FILES-NEXT: 02_verify.fx
# FILES-NEXT: 03_simplify.fx
# FILES-NEXT: 04_decompose.fx
# SIMPLIFY: %scale : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[6.0]})
# SIMPLIFY-NOT: %unused
# BADSTAGE: error: unknown stage 'lower' (stages: import, verify, simplify, decompose, all)
graph(%x: f32[2, 3]):
  %two : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[2.0]})
  %three : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[3.0]})
  %scale : f32[] = call_function[target=aten.mul](args=(%two, %three))
  %y : f32[2, 3] = call_function[target=aten.mul](args=(%x, %scale))
  %unused : f32[2, 3] = call_function[target=aten.exp](args=(%x,))
  %s : f32[2, 3] = call_function[target=aten.softmax](args=(%y, 1))
  return (%s,)
