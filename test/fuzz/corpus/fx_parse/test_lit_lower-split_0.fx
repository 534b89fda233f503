# RUN: tensorc inspect %s --stage fuse | FileCheck %s --check-prefix=FUSE
# RUN: d=$(mktemp -d) && tensorc compile %s -o $d/b 2>&1 | FileCheck %s --check-prefix=COMPILE && tensorc run $d/b --random-inputs 4 --dim s0=3 | FileCheck %s && tensorc run %s --interp --random-inputs 4 --dim s0=3 | FileCheck %s && rm -r $d
# A fused QKV split over a symbolic batch lowers to views of the GEMM result: no reference-kernel
# fallback, the consumers read q, k and v at offsets 0, 4 and 8 of each row, and the compiled
# bundle matches the interpreter.
# FUSE-NOT: extern
# FUSE: gemm mm [s0, 12]
# FUSE: poi_fused_mm_mul_add
# FUSE-NOT: extern
# COMPILE: 0 fallback op types
# CHECK: o: f32[3, 4] mean=0.379252 min=-0.740588 max=1.20697
# CHECK: v: f32[3, 4] mean=0.211581 min=-0.726901 max=1.25969
graph(%x: f32[s0, 4], %w: f32[4, 12]):
  %mm : f32[s0, 12] = call_function[target=aten.mm](args=(%x, %w))
  %sp : (f32[s0, 4], f32[s0, 4], f32[s0, 4]) = call_function[target=aten.split_with_sizes](args=(%mm, [4, 4, 4], -1))
  %q : f32[s0, 4] = call_function[target=getitem](args=(%sp, 0))
  %k : f32[s0, 4] = call_function[target=getitem](args=(%sp, 1))
  %v : f32[s0, 4] = call_function[target=getitem](args=(%sp, 2))
  %qk : f32[s0, 4] = call_function[target=aten.mul](args=(%q, %k))
  %o : f32[s0, 4] = call_function[target=aten.add](args=(%qk, %v))
  return (%o, %v)
