# RUN: tensorc inspect %s --stage all | FileCheck %s
# The verify stage leaves a valid graph unchanged, and says so.

# CHECK: # ---- import ----
# CHECK-NEXT: graph(%x: f32[2, s1]):
# CHECK: # ---- verify ----
# CHECK-NEXT: (unchanged)
graph(%x: f32[2, s1]):
  %e : f32[2, s1] = call_function[target=aten.exp](args=(%x,))
  %s : f32[2, 1] = call_function[target=aten.sum](args=(%e, [1], True))
  %d : f32[2, s1] = call_function[target=aten.div](args=(%e, %s))
  return (%d,)
