# RUN: tensorc inspect %s --stage lower | FileCheck %s
# RUN: d=$(mktemp -d) && tensorc compile %s -o $d/b > /dev/null 2>&1 && tensorc run $d/b --random-inputs 2 --outputs $d/c.safetensors > /dev/null && tensorc run %s --interp --random-inputs 2 --outputs $d/i.safetensors > /dev/null && python3 %S/compare_outputs.py $d/c.safetensors $d/i.safetensors && rm -r $d
# A pointwise value with several users, one of them (through a view) a matrix product's operand,
# gets a buffer of its own: the product reads it through the view's strides and the other users
# load it, rather than the view being copied into a buffer of its own while the others recompute
# the value from its inputs (a post-norm transformer's LayerNorm output feeds the next projection
# and the residual add).
# CHECK-LABEL: pointwise y over [2, 4, 8] origins=[sub, mul]
# CHECK-NEXT: t0 : f32 = load(x, 32*x0 + 8*x1 + x2)
# CHECK: template gemm m batch=1 m=8 n=8 k=8 origins=[mm]
# CHECK-NEXT: a = y offset 0 strides [0, 8, 1]
# CHECK: pointwise o over [2, 4, 8] origins=[mm, add]
# CHECK-NEXT: t0 : f32 = load(m, 32*x0 + 8*x1 + x2)
# CHECK-NEXT: t1 : f32 = load(y, 32*x0 + 8*x1 + x2)
# CHECK-NOT: pointwise v
graph(%x: f32[2, 4, 8], %w: f32[8, 8]):
  %d : f32[2, 4, 8] = call_function[target=aten.sub](args=(%x, 1.5))
  %y : f32[2, 4, 8] = call_function[target=aten.mul](args=(%d, %d))
  %v : f32[8, 8] = call_function[target=aten.view](args=(%y, [8, 8]))
  %m : f32[8, 8] = call_function[target=aten.mm](args=(%v, %w))
  %mv : f32[2, 4, 8] = call_function[target=aten.view](args=(%m, [2, 4, 8]))
  %o : f32[2, 4, 8] = call_function[target=aten.add](args=(%mv, %y))
  return (%o,)
