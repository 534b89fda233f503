# RUN: tensorc run %s --interp --random-inputs 3 --dim n=5 | FileCheck %s
# RUN: not tensorc run %s --interp --random-inputs 3 2>&1 | FileCheck %s --check-prefix=NODIM
# RUN: not tensorc run %s 2>&1 | FileCheck %s --check-prefix=NOINTERP
# The interpreter runs a model on generated inputs and summarizes each output.

# CHECK: y: f32[5] mean=
# CHECK: n1: i64[] mean=5
# NODIM: error: input %x: f32[n, 3]: symbol 'n' has no value (give it with --dim NAME=VALUE)
# NOINTERP: error: {{.*}}.fx is a model, not a bundle: pass --interp
graph(%x: f32[n, 3]):
  %a : f32[n, 3] = call_function[target=aten.abs](args=(%x,))
  %y : f32[n] = call_function[target=aten.amax](args=(%a, [1]))
  %ones : i64[n] = call_function[target=aten.full](args=([n], 1))
  %n1 : i64[] = call_function[target=aten.sum](args=(%ones,))
  return (%y, %n1)
