# RUN: d=$(mktemp -d) && python3 -c "import sys; sys.path.insert(0, '%S/../../models'); import numpy as np, safetensors_np as s; g = np.random.default_rng(3); s.save('$d/m.safetensors', {'w': g.standard_normal((24, 40)).astype(np.float32), 'v': g.standard_normal((600, 40)).astype(np.float32), 'b': g.standard_normal(40).astype(np.float32)})" && cp %s $d/m.fx && tensorc compile $d/m.fx -o $d/b -q && FileCheck %s < $d/b/src/x86_64.ll && FileCheck %s < $d/b/src/x86_64-avx512.ll && tensorc run $d/b --random-inputs 5 --dim s0=29 --threads 2 --variant x86_64 --outputs $d/c.safetensors > /dev/null && tensorc run $d/m.fx --interp --random-inputs 5 --dim s0=29 --outputs $d/i.safetensors > /dev/null && python3 %S/compare_outputs.py $d/c.safetensors $d/i.safetensors && rm -r $d
# CPU GEMMs with an epilogue: the micro-kernel writes each tile to a frame scratch tile and the
# epilogue reads it there and writes the output once (in place it took two rounds of stores per
# output line). That is for one K block (K = 24); with several (K = 600: blocks of 256) the
# output holds the partial sums and the last block's epilogue runs in place, so LLVM drops the
# scratch. Both match the interpreter (29 rows: a tail of rows, 2 threads). The weights come
# from m.safetensors beside the model, so B is packed at compile time (the packed-B driver).
# CHECK-LABEL: define void @tem_mm_add_relu_1(
# CHECK-NOT: %epi.scratch
# CHECK: call void @tensorc.ukernel.
# CHECK-LABEL: define void @tem_mm_add_relu_0(
# CHECK: %epi.scratch{{.*}} = alloca
# CHECK: call void @tensorc.ukernel.
graph(%x: f32[s0, 24], %w: f32[24, 40], %b: f32[40], %y: f32[s0, 600], %v: f32[600, 40]):
  %m : f32[s0, 40] = call_function[target=aten.mm](args=(%x, %w))
  %a : f32[s0, 40] = call_function[target=aten.add](args=(%m, %b))
  %r : f32[s0, 40] = call_function[target=aten.relu](args=(%a,))
  %n : f32[s0, 40] = call_function[target=aten.mm](args=(%y, %v))
  %c : f32[s0, 40] = call_function[target=aten.add](args=(%n, %b))
  %s : f32[s0, 40] = call_function[target=aten.relu](args=(%c,))
  return (%r, %s)
