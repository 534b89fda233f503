# RUN: d=$(mktemp -d) && python3 -c "import sys; sys.path.insert(0, '%S/../../models'); import numpy as np, safetensors_np as s; s.save('$d/m.safetensors', {'w': np.full((3, 4), 0.5, np.float32), 'b': np.zeros(3, np.float32)})" && cp %s $d/m.fx && tensorc inspect $d/m.fx --train --stage autodiff 2>/dev/null | FileCheck %s && tensorc inspect $d/m.fx --train --partition default --stage autodiff 2>/dev/null | FileCheck %s --check-prefix=DEFAULT && rm -r $d
# The autodiff stage of a linear layer with relu under an MSE loss: the joint graph, both halves
# of its partition and the training step. Min-cut saves the GEMM result (and the loss's element
# count) and recomputes the bias add, the relu and the difference in the backward; the default
# partition saves what the backward reads.
# CHECK: # autodiff: 10 forward and 25 backward nodes; saved for the backward (symbols counted as 64): default 1540 bytes, min-cut 772 bytes; using min-cut: 2 saved tensors, 3 nodes recomputed
# CHECK: # saved: y_mm, loss_sum_1
# CHECK: # recomputed: y, r, loss_sub
# CHECK: # ---- joint ----
# CHECK: %loss_grad_seed : f32[] = call_function[target=aten.full]
# CHECK: # ---- forward ----
# CHECK: return (%loss, %y_mm, %loss_sum_1)
# CHECK: # ---- backward ----
# CHECK: graph(%y_mm: f32[s0, 3], %loss_sum_1: f32[], %x: f32[s0, 4], %b: f32[3], %label: f32[s0, 3]):
# CHECK: %y : f32[s0, 3] = call_function[target=aten.add](args=(%y_mm, %b))
# CHECK: # ---- training step ----
# CHECK: graph(%x: f32[s0, 4], %w: f32[3, 4], %b: f32[3], %label: f32[s0, 3]):
# CHECK: %y_recompute : f32[s0, 3] = call_function[target=aten.add](args=(%y_mm, %b))
# CHECK: %w_next : f32[3, 4] = call_function[target=aten.sub]
# CHECK: return (%loss, %w_next, %b_next)
# DEFAULT: using default: {{[0-9]+}} saved tensors, 0 nodes recomputed
graph(%x: f32[s0, 4], %w: f32[3, 4], %b: f32[3]):
  %t : f32[4, 3] = call_function[target=aten.t](args=(%w,))
  %y : f32[s0, 3] = call_function[target=aten.addmm](args=(%b, %x, %t))
  %r : f32[s0, 3] = call_function[target=aten.relu](args=(%y,))
  return (%r,)
