# RUN: not tensorc inspect %s 2>&1 | FileCheck %s
# Malformed FX-text: each case must fail with file:line:col and the reason.

# CHECK: :6:38: error: unknown op 'aten.frobnicate' (at 'aten.frobnicate')
graph(%x: f32[4]):
  %y : f32[4] = call_function[target=aten.frobnicate](args=(%x,))
  return (%y,)
