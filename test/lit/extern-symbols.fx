# RUN: d=$(mktemp -d) && tensorc compile %s -o $d/b 2>&1 | FileCheck %s --check-prefix=COMPILE && tensorc run $d/b --random-inputs 4 --dim s0=3 | FileCheck %s && tensorc run %s --interp --random-inputs 4 --dim s0=3 | FileCheck %s && rm -r $d
# A reference-kernel fallback whose attribute names a symbol its own inputs cannot bind: the
# view from [3*s0, 8] back to [s0, 3, 8] (an extern here) gets the model's binding of s0.
# COMPILE: fallbacks (run by the runtime's reference kernels): aten.view
# CHECK: y: f32[3, 3, 8] mean=
graph(%x: f32[s0, 3, 4], %w: f32[4, 8]):
  %flat : f32[3*s0, 4] = call_function[target=aten.reshape](args=(%x, [3*s0, 4]))
  %mm : f32[3*s0, 8] = call_function[target=aten.mm](args=(%flat, %w))
  %y : f32[s0, 3, 8] = call_function[target=aten.view](args=(%mm, [s0, 3, 8]))
  return (%y,)
