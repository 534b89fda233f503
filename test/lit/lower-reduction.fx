# RUN: tensorc inspect %s --stage lower | FileCheck %s
# RUN: d=$(mktemp -d) && tensorc compile %s -o $d/b > /dev/null 2>&1 && tensorc run $d/b --random-inputs 6 --dim s0=3 --outputs $d/c.safetensors > /dev/null && tensorc run %s --interp --random-inputs 6 --dim s0=3 --outputs $d/i.safetensors > /dev/null && python3 %S/compare_outputs.py $d/c.safetensors $d/i.safetensors && rm -r $d
# Reductions lower to reduction nodes: kept output dims are the loop variables x*, reduced dims
# the reduction variables r* (size-1 output dims get none), the input inlined into the body.
# The compiled bundle matches the interpreter.
# A row sum with keepdim: one row per x0, 8 columns reduced.
# CHECK-LABEL: reduction s over [s0] reducing [8] with sum origins=[sum]
# CHECK-NEXT: t0 : f32 = load(x, r0 + 8*x0)
# CHECK-NEXT: -> t0
# A column maximum of exp(x): the pointwise producer is inlined, dim 0 reduced.
# CHECK-LABEL: reduction m over [8] reducing [s0] with max origins=[exp, amax]
# CHECK-NEXT: t0 : f32 = load(x, 8*r0 + x0)
# CHECK-NEXT: t1 : f32 = exp(t0)
# CHECK-NEXT: -> t1
# argmax reduces values of the input's dtype into i64 positions.
# CHECK-LABEL: reduction a over [s0] reducing [8] with argmax origins=[argmax]
# CHECK-NEXT: t0 : f32 = load(x, r0 + 8*x0)
# A full product: no loop variables, every dim reduced.
# CHECK-LABEL: reduction p over [] reducing [s0, 8] with prod origins=[prod]
# CHECK-NEXT: t0 : f32 = load(x, 8*r0 + r1)
# mean decomposes into a sum and a division, which reads the sum as a pointwise node.
# CHECK-LABEL: reduction mu_sum over [s0] reducing [8] with sum
# CHECK: pointwise mu over [s0] origins=[div]
# CHECK-NEXT: t0 : f32 = load(mu_sum, x0)
# CHECK-NEXT: t1 : f32 = div(t0, 8)
# CHECK-NOT: extern
graph(%x: f32[s0, 8]):
  %s : f32[s0, 1] = call_function[target=aten.sum](args=(%x, [-1], True))
  %e : f32[s0, 8] = call_function[target=aten.exp](args=(%x,))
  %m : f32[8] = call_function[target=aten.amax](args=(%e, [0]))
  %a : i64[s0] = call_function[target=aten.argmax](args=(%x, 1))
  %p : f32[] = call_function[target=aten.prod](args=(%x,))
  %mu : f32[s0] = call_function[target=aten.mean](args=(%x, [1]))
  return (%s, %m, %a, %p, %mu)
