# RUN: not tensorc inspect %s 2>&1 | FileCheck %s
# Malformed FX-text: each case must fail with file:line:col and the reason.

# CHECK: :6:38: error: unknown op 'aten.frobnicate' (at 'aten.frobnicate')
graph(%x: f32[4]):
  %y : f32[4] = call_function[target=aten.frobnicate](args=(%x,))
  return (%y,)

# -----
# CHECK: error: %y: aten.add: shapes [4] and [5] do not broadcast
graph(%x: f32[4], %z: f32[5]):
  %y : f32[4] = call_function[target=aten.add](args=(%x, %z))
  return (%y,)

# -----
# CHECK: error: declared type f32[4] but inference gives bool[4]
graph(%x: f32[4]):
  %y : f32[4] = call_function[target=aten.isnan](args=(%x,))
  return (%y,)

# -----
# CHECK: error: unknown value %nope
graph(%x: f32[4]):
  return (%nope,)

# -----
# CHECK: error: expected a tensor type such as f32[2, 3]
graph(%x: [4]):
  return (%x,)

# -----
# CHECK: error: aten.gelu has no parameter 'approx'
graph(%x: f32[4]):
  %y : f32[4] = call_function[target=aten.gelu](args=(%x,), kwargs={approx='tanh'})
  return (%y,)
