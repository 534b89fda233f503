# GEMM epilogues away from their products (GPU test kit, test/gpu/make_model_kit.py), BERT-sized:
# %qh  the bias add and head split of a Q product, [128, 768] stored as [12, 128, 64] by the
#      GEMM's epilogue at permuted positions
# %o2  two products on x: the first's epilogue a chain of two nodes (h1 realized: two readers)
#      scheduled after the second product and a row mean, kept in place; the second's reads the
#      mean, so its kernel moves past the mean's
graph(%x: f32[128, 768], %r: f32[128, 768], %wq: f32[768, 768], %bq: f32[768], %w1: f32[768, 768], %b1: f32[768], %w2: f32[768, 768], %b2: f32[768]):
  %wqt : f32[768, 768] = call_function[target=aten.t](args=(%wq,))
  %q : f32[128, 768] = call_function[target=aten.addmm](args=(%bq, %x, %wqt))
  %qv : f32[128, 12, 64] = call_function[target=aten.view](args=(%q, [128, 12, 64]))
  %qh : f32[12, 128, 64] = call_function[target=aten.transpose](args=(%qv, 0, 1))
  %t1 : f32[768, 768] = call_function[target=aten.t](args=(%w1,))
  %t2 : f32[768, 768] = call_function[target=aten.t](args=(%w2,))
  %y1 : f32[128, 768] = call_function[target=aten.addmm](args=(%b1, %x, %t1))
  %y2 : f32[128, 768] = call_function[target=aten.addmm](args=(%b2, %x, %t2))
  %m : f32[128, 1] = call_function[target=aten.mean](args=(%r, [1], True))
  %g1 : f32[128, 768] = call_function[target=aten.gelu](args=(%y1,), kwargs={approximate='none'})
  %h1 : f32[128, 768] = call_function[target=aten.gelu](args=(%g1,), kwargs={approximate='tanh'})
  %s1 : f32[128, 768] = call_function[target=aten.sigmoid](args=(%h1,))
  %u1 : f32[128, 768] = call_function[target=aten.mul](args=(%h1, %s1))
  %v1 : f32[128, 768] = call_function[target=aten.gelu](args=(%u1,), kwargs={approximate='tanh'})
  %q1 : f32[128, 768] = call_function[target=aten.sigmoid](args=(%v1,))
  %z1 : f32[128, 768] = call_function[target=aten.mul](args=(%v1, %q1))
  %o1 : f32[128, 768] = call_function[target=aten.add](args=(%z1, %r))
  %g2 : f32[128, 768] = call_function[target=aten.tanh](args=(%y2,))
  %k2 : f32[128, 768] = call_function[target=aten.sub](args=(%g2, %m))
  %o2 : f32[128, 768] = call_function[target=aten.mul](args=(%k2, %o1))
  return (%qh, %o2)
