# RUN: tensorc opt %s --passes=decompose | FileCheck %s
# Each rule rewrites its op into primitive ops with exactly the node's result type.

# softmax: amax(keepdim), sub, exp, sum(keepdim), div over the given dim.
# CHECK-LABEL: graph(%x: f32[s0, 8]):
# CHECK-NEXT:  %y_amax : f32[s0, 1] = call_function[target=aten.amax](args=(%x, [1], True))
# CHECK-NEXT:  %y_sub : f32[s0, 8] = call_function[target=aten.sub](args=(%x, %y_amax))
# CHECK-NEXT:  %y_exp : f32[s0, 8] = call_function[target=aten.exp](args=(%y_sub,))
# CHECK-NEXT:  %y_sum : f32[s0, 1] = call_function[target=aten.sum](args=(%y_exp, [1], True))
# CHECK-NEXT:  %y : f32[s0, 8] = call_function[target=aten.div](args=(%y_exp, %y_sum))
# CHECK-NEXT:  return (%y,)
graph(%x: f32[s0, 8]):
  %y : f32[s0, 8] = call_function[target=aten.softmax](args=(%x, 1))
  return (%y,)

# -----
# log_softmax with a dtype: cast first, then (x - max) - log(sum(exp(x - max))).
# CHECK-LABEL: graph(%x: f16[4, 8]):
# CHECK-NEXT:  %[[X:.*]] : f32[4, 8] = call_function[target=prims.convert_element_type](args=(%x, f32))
# CHECK-NEXT:  %[[MAX:.*]] : f32[4, 1] = call_function[target=aten.amax](args=(%[[X]], [1], True))
# CHECK-NEXT:  %[[SUB:.*]] : f32[4, 8] = call_function[target=aten.sub](args=(%[[X]], %[[MAX]]))
# CHECK-NEXT:  %[[EXP:.*]] : f32[4, 8] = call_function[target=aten.exp](args=(%[[SUB]],))
# CHECK-NEXT:  %[[SUM:.*]] : f32[4, 1] = call_function[target=aten.sum](args=(%[[EXP]], [1], True))
# CHECK-NEXT:  %[[LOG:.*]] : f32[4, 1] = call_function[target=aten.log](args=(%[[SUM]],))
# CHECK-NEXT:  %y : f32[4, 8] = call_function[target=aten.sub](args=(%[[SUB]], %[[LOG]]))
graph(%x: f16[4, 8]):
  %y : f32[4, 8] = call_function[target=aten.log_softmax](args=(%x, -1, torch.float32))
  return (%y,)

# -----
# mean over static dims: sum / count, the count a 0-d constant of the tensor's dtype.
# CHECK-LABEL: graph(%x: f32[s0, 5, 4]):
# CHECK-NEXT:  %y_sum : f32[s0, 4] = call_function[target=aten.sum](args=(%x, [1]))
# CHECK-NEXT:  %y_constant : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[5.0]})
# CHECK-NEXT:  %y : f32[s0, 4] = call_function[target=aten.div](args=(%y_sum, %y_constant))
graph(%x: f32[s0, 5, 4]):
  %y : f32[s0, 4] = call_function[target=aten.mean](args=(%x, [1]))
  return (%y,)

# -----
# mean over a symbolic dim is kept: the count is not a constant.
# CHECK-LABEL: graph(%x: f32[s0, 4]):
# CHECK-NEXT:  %y : f32[4] = call_function[target=aten.mean](args=(%x, [0]))
# CHECK-NEXT:  return (%y,)
graph(%x: f32[s0, 4]):
  %y : f32[4] = call_function[target=aten.mean](args=(%x, [0]))
  return (%y,)

# -----
# var: mean (itself decomposed), sub, mul, sum, div by N - correction.
# CHECK-LABEL: graph(%x: f32[3, 6]):
# CHECK-NEXT:  %[[SUM:.*]] : f32[3, 1] = call_function[target=aten.sum](args=(%x, [1], True))
# CHECK-NEXT:  %[[N:.*]] : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[6.0]})
# CHECK-NEXT:  %[[MEAN:.*]] : f32[3, 1] = call_function[target=aten.div](args=(%[[SUM]], %[[N]]))
# CHECK-NEXT:  %[[D:.*]] : f32[3, 6] = call_function[target=aten.sub](args=(%x, %[[MEAN]]))
# CHECK-NEXT:  %[[SQ:.*]] : f32[3, 6] = call_function[target=aten.mul](args=(%[[D]], %[[D]]))
# CHECK-NEXT:  %[[SS:.*]] : f32[3] = call_function[target=aten.sum](args=(%[[SQ]], [1]))
# CHECK-NEXT:  %[[DIV:.*]] : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[5.0]})
# CHECK-NEXT:  %y : f32[3] = call_function[target=aten.div](args=(%[[SS]], %[[DIV]]))
graph(%x: f32[3, 6]):
  %y : f32[3] = call_function[target=aten.var](args=(%x, [1]))
  return (%y,)

# -----
# layer_norm: mean, centered square mean, eps, rsqrt, scale by weight, add bias.
# CHECK-LABEL: graph(%x: f32[s0, 8], %w: f32[8], %b: f32[8]):
# CHECK:       %[[MEAN:.*]] : f32[s0, 1] = call_function[target=aten.div]
# CHECK-NEXT:  %[[D:.*]] : f32[s0, 8] = call_function[target=aten.sub](args=(%x, %[[MEAN]]))
# CHECK-NEXT:  %[[SQ:.*]] : f32[s0, 8] = call_function[target=aten.mul](args=(%[[D]], %[[D]]))
# CHECK-NEXT:  %[[SS:.*]] : f32[s0, 1] = call_function[target=aten.sum](args=(%[[SQ]], [1], True))
# CHECK:       %[[VAR:.*]] : f32[s0, 1] = call_function[target=aten.div](args=(%[[SS]],
# CHECK:       %[[EPS:.*]] : f32[s0, 1] = call_function[target=aten.add](args=(%[[VAR]],
# CHECK-NEXT:  %[[RSTD:.*]] : f32[s0, 1] = call_function[target=aten.rsqrt](args=(%[[EPS]],))
# CHECK-NEXT:  %[[NORM:.*]] : f32[s0, 8] = call_function[target=aten.mul](args=(%[[D]], %[[RSTD]]))
# CHECK-NEXT:  %[[SCALED:.*]] : f32[s0, 8] = call_function[target=aten.mul](args=(%[[NORM]], %w))
# CHECK-NEXT:  %y : f32[s0, 8] = call_function[target=aten.add](args=(%[[SCALED]], %b))
# CHECK-NOT:   aten.layer_norm
graph(%x: f32[s0, 8], %w: f32[8], %b: f32[8]):
  %y : f32[s0, 8] = call_function[target=aten.layer_norm](args=(%x, [8], %w, %b))
  return (%y,)

# -----
# batch_norm in inference: per-channel vectors viewed as [C, 1, 1].
# CHECK-LABEL: graph(%x: f32[s0, 3, 4, 4], %w: f32[3], %b: f32[3], %m: f32[3], %v: f32[3]):
# CHECK-NEXT:  %[[M:.*]] : f32[3, 1, 1] = call_function[target=aten.view](args=(%m, [3, 1, 1]))
# CHECK-NEXT:  %[[V:.*]] : f32[3, 1, 1] = call_function[target=aten.view](args=(%v, [3, 1, 1]))
# CHECK-NEXT:  %[[EPS:.*]] : f32[] = call_function[target=prims.constant]
# CHECK-NEXT:  %[[VE:.*]] : f32[3, 1, 1] = call_function[target=aten.add](args=(%[[V]], %[[EPS]]))
# CHECK-NEXT:  %[[RSTD:.*]] : f32[3, 1, 1] = call_function[target=aten.rsqrt](args=(%[[VE]],))
# CHECK-NEXT:  %[[D:.*]] : f32[s0, 3, 4, 4] = call_function[target=aten.sub](args=(%x, %[[M]]))
# CHECK-NEXT:  %[[N:.*]] : f32[s0, 3, 4, 4] = call_function[target=aten.mul](args=(%[[D]], %[[RSTD]]))
# CHECK-NEXT:  %[[W:.*]] : f32[3, 1, 1] = call_function[target=aten.view](args=(%w, [3, 1, 1]))
# CHECK-NEXT:  %[[S:.*]] : f32[s0, 3, 4, 4] = call_function[target=aten.mul](args=(%[[N]], %[[W]]))
# CHECK-NEXT:  %[[B:.*]] : f32[3, 1, 1] = call_function[target=aten.view](args=(%b, [3, 1, 1]))
# CHECK-NEXT:  %y : f32[s0, 3, 4, 4] = call_function[target=aten.add](args=(%[[S]], %[[B]]))
graph(%x: f32[s0, 3, 4, 4], %w: f32[3], %b: f32[3], %m: f32[3], %v: f32[3]):
  %y : f32[s0, 3, 4, 4] = call_function[target=aten.batch_norm](args=(%x, %w, %b, %m, %v, False, 0.1, 1e-05))
  return (%y,)

# -----
# batch_norm in training uses batch statistics: kept.
# CHECK-LABEL: graph(%x: f32[2, 3, 4], %w: f32[3], %b: f32[3]):
# CHECK-NEXT:  %y : f32[2, 3, 4] = call_function[target=aten.batch_norm](args=(%x, %w, %b, None, None, True))
# CHECK-NEXT:  return (%y,)
graph(%x: f32[2, 3, 4], %w: f32[3], %b: f32[3]):
  %y : f32[2, 3, 4] = call_function[target=aten.batch_norm](args=(%x, %w, %b, None, None, True, 0.1, 1e-05))
  return (%y,)

# -----
# gelu (erf form): 0.5 * x * (1 + erf(x / sqrt(2))).
# CHECK-LABEL: graph(%x: f32[s0, 16]):
# CHECK-NEXT:  %[[C:.*]] : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[0.70710676{{[0-9]*}}]})
# CHECK-NEXT:  %[[A:.*]] : f32[s0, 16] = call_function[target=aten.mul](args=(%x, %[[C]]))
# CHECK-NEXT:  %[[E:.*]] : f32[s0, 16] = call_function[target=aten.erf](args=(%[[A]],))
# CHECK-NEXT:  %[[ONE:.*]] : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[1.0]})
# CHECK-NEXT:  %[[P:.*]] : f32[s0, 16] = call_function[target=aten.add](args=(%[[E]], %[[ONE]]))
# CHECK-NEXT:  %[[HALF:.*]] : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[0.5]})
# CHECK-NEXT:  %[[H:.*]] : f32[s0, 16] = call_function[target=aten.mul](args=(%x, %[[HALF]]))
# CHECK-NEXT:  %y : f32[s0, 16] = call_function[target=aten.mul](args=(%[[H]], %[[P]]))
graph(%x: f32[s0, 16]):
  %y : f32[s0, 16] = call_function[target=aten.gelu](args=(%x,), kwargs={approximate='none'})
  return (%y,)

# -----
# gelu (tanh form): 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))); f16 keeps f32 scalars.
# CHECK-LABEL: graph(%x: f16[16]):
# CHECK-NEXT:  %[[SQ:.*]] : f16[16] = call_function[target=aten.mul](args=(%x, %x))
# CHECK-NEXT:  %[[CUBE:.*]] : f16[16] = call_function[target=aten.mul](args=(%[[SQ]], %x))
# CHECK-NEXT:  %[[K:.*]] : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[0.04471499{{[0-9]*}}]})
# CHECK-NEXT:  %[[KC:.*]] : f16[16] = call_function[target=aten.mul](args=(%[[CUBE]], %[[K]]))
# CHECK-NEXT:  %[[IN:.*]] : f16[16] = call_function[target=aten.add](args=(%x, %[[KC]]))
# CHECK-NEXT:  %[[B:.*]] : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[0.79788458{{[0-9]*}}]})
# CHECK-NEXT:  %[[S:.*]] : f16[16] = call_function[target=aten.mul](args=(%[[IN]], %[[B]]))
# CHECK-NEXT:  %[[T:.*]] : f16[16] = call_function[target=aten.tanh](args=(%[[S]],))
# CHECK:       %y : f16[16] = call_function[target=aten.mul]
graph(%x: f16[16]):
  %y : f16[16] = call_function[target=aten.gelu](args=(%x,), kwargs={approximate='tanh'})
  return (%y,)

# -----
# silu: x * sigmoid(x).
# CHECK-LABEL: graph(%x: f32[s0, 16]):
# CHECK-NEXT:  %[[S:.*]] : f32[s0, 16] = call_function[target=aten.sigmoid](args=(%x,))
# CHECK-NEXT:  %y : f32[s0, 16] = call_function[target=aten.mul](args=(%x, %[[S]]))
graph(%x: f32[s0, 16]):
  %y : f32[s0, 16] = call_function[target=aten.silu](args=(%x,))
  return (%y,)

# -----
# clamp: maximum with min, then minimum with max (both propagate NaN).
# CHECK-LABEL: graph(%x: f32[16]):
# CHECK-NEXT:  %[[LO:.*]] : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[-1.0]})
# CHECK-NEXT:  %[[MAX:.*]] : f32[16] = call_function[target=aten.maximum](args=(%x, %[[LO]]))
# CHECK-NEXT:  %[[HI:.*]] : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[6.0]})
# CHECK-NEXT:  %y : f32[16] = call_function[target=aten.minimum](args=(%[[MAX]], %[[HI]]))
graph(%x: f32[16]):
  %y : f32[16] = call_function[target=aten.clamp](args=(%x, -1.0, 6))
  return (%y,)

# -----
# addmm: mm, alpha and beta scaling, add; a scale of 1 emits nothing.
# CHECK-LABEL: graph(%x: f32[s0, 6], %w: f32[6, 5], %b: f32[5]):
# CHECK-NEXT:  %[[MM:.*]] : f32[s0, 5] = call_function[target=aten.mm](args=(%x, %w))
# CHECK-NEXT:  %y : f32[s0, 5] = call_function[target=aten.add](args=(%[[MM]], %b))
# CHECK-NEXT:  %[[MM2:.*]] : f32[s0, 5] = call_function[target=aten.mm](args=(%x, %w))
# CHECK-NEXT:  %[[ALPHA:.*]] : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[2.0]})
# CHECK-NEXT:  %[[SMM:.*]] : f32[s0, 5] = call_function[target=aten.mul](args=(%[[MM2]], %[[ALPHA]]))
# CHECK-NEXT:  %[[BETA:.*]] : f32[] = call_function[target=prims.constant](args=(), kwargs={value=tensor<f32[]>[0.5]})
# CHECK-NEXT:  %[[SB:.*]] : f32[5] = call_function[target=aten.mul](args=(%b, %[[BETA]]))
# CHECK-NEXT:  %z : f32[s0, 5] = call_function[target=aten.add](args=(%[[SMM]], %[[SB]]))
graph(%x: f32[s0, 6], %w: f32[6, 5], %b: f32[5]):
  %y : f32[s0, 5] = call_function[target=aten.addmm](args=(%b, %x, %w))
  %z : f32[s0, 5] = call_function[target=aten.addmm](args=(%b, %x, %w), kwargs={beta=0.5, alpha=2})
  return (%y, %z)

# -----
# matmul: a batched left operand folds into the rows of one mm; batched pairs use bmm.
# CHECK-LABEL: graph(%x: f32[s0, 4, 6], %w: f32[6, 5], %y: f32[2, 6, 5]):
# CHECK-NEXT:  %[[ROWS:.*]] : f32[4*s0, 6] = call_function[target=aten.view](args=(%x, [4*s0, 6]))
# CHECK-NEXT:  %[[MM:.*]] : f32[4*s0, 5] = call_function[target=aten.mm](args=(%[[ROWS]], %w))
# CHECK-NEXT:  %a : f32[s0, 4, 5] = call_function[target=aten.view](args=(%[[MM]], [s0, 4, 5]))
# CHECK-NEXT:  %[[EX:.*]] : f32[2, 4, 6] = call_function[target=aten.expand](args=(%x, [2, 4, 6]))
# CHECK-NEXT:  %c : f32[2, 4, 5] = call_function[target=aten.bmm](args=(%[[EX]], %y))
graph(%x: f32[s0, 4, 6], %w: f32[6, 5], %y: f32[2, 6, 5]):
  %a : f32[s0, 4, 5] = call_function[target=aten.matmul](args=(%x, %w))
  %c : f32[2, 4, 5] = call_function[target=aten.matmul](args=(%x, %y))
  return (%a, %c)

# -----
# t and transpose become permutes; reshape becomes view.
# CHECK-LABEL: graph(%x: f32[s0, 3, 4], %w: f32[3, 4]):
# CHECK-NEXT:  %a : f32[4, 3] = call_function[target=aten.permute](args=(%w, [1, 0]))
# CHECK-NEXT:  %b : f32[s0, 4, 3] = call_function[target=aten.permute](args=(%x, [0, 2, 1]))
# CHECK-NEXT:  %c : f32[s0, 12] = call_function[target=aten.view](args=(%x, [s0, -1]))
graph(%x: f32[s0, 3, 4], %w: f32[3, 4]):
  %a : f32[4, 3] = call_function[target=aten.t](args=(%w,))
  %b : f32[s0, 4, 3] = call_function[target=aten.transpose](args=(%x, 1, 2))
  %c : f32[s0, 12] = call_function[target=aten.reshape](args=(%x, [s0, -1]))
  return (%a, %b, %c)
