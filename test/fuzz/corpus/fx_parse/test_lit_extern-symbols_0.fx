# RUN: d=$(mktemp -d) && tensorc compile %s -o $d/b 2>&1 | FileCheck %s --check-prefix=COMPILE && tensorc run $d/b --random-inputs 4 --dim s0=2 --dim s1=5 | FileCheck %s && tensorc run %s --interp --random-inputs 4 --dim s0=2 --dim s1=5 | FileCheck %s && rm -r $d
# A reference-kernel fallback whose attribute names a symbol its own inputs cannot bind: the view
# from [s0, 3*s1] back to [s0, 3, s1] (a symbolic dim after the first of the split: an extern)
# gets the model's binding of s1.
# COMPILE: fallbacks (run by the runtime's reference kernels): aten.view
# CHECK: o: f32[2, 3, 5] mean=0.235019 min=-0.893389 max=1.68631
graph(%x: f32[s0, 3, s1], %z: f32[s1]):
  %flat : f32[s0, 3*s1] = call_function[target=aten.reshape](args=(%x, [s0, 3*s1]))
  %r : f32[s0, 3*s1] = call_function[target=aten.relu](args=(%flat,))
  %y : f32[s0, 3, s1] = call_function[target=aten.view](args=(%r, [s0, 3, s1]))
  %o : f32[s0, 3, s1] = call_function[target=aten.add](args=(%y, %z))
  return (%o,)
