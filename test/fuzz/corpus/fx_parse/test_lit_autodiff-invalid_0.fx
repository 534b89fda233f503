# RUN: d=$(mktemp -d) && python3 -c "import sys; sys.path.insert(0, '%S/../../models'); import numpy as np, safetensors_np as s; s.save('$d/m.safetensors', {'w': np.ones(4, np.float32)})" && cp %s $d/m.fx && not tensorc compile $d/m.fx --train -o $d/b 2>&1 | FileCheck %s && test ! -e $d/b && rm -r $d
# Models `compile --train` rejects, each with a message naming what is wrong; nothing is written.

# An op without a gradient rule on the path to a parameter.
# CHECK: no gradient rule for aten.cumsum (%c = aten.cumsum)
graph(%x: f32[2, 4], %w: f32[4]):
  %m : f32[2, 4] = call_function[target=aten.mul](args=(%x, %w))
  %c : f32[2, 4] = call_function[target=aten.cumsum](args=(%m, 1))
  return (%c,)
