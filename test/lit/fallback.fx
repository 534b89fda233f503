# RUN: tensorc inspect %s --stage lower | FileCheck %s --check-prefix=LOWER
# RUN: d=$(mktemp -d) && tensorc compile %s -o $d/b 2>&1 | FileCheck %s --check-prefix=ALLOW && test -d $d/b && rm -r $d
# RUN: d=$(mktemp -d) && not tensorc compile %s -o $d/b --fallback=error 2>&1 | FileCheck %s --check-prefix=ERROR && test ! -e $d/b && rm -r $d
# RUN: not tensorc compile %s -o /dev/null --fallback=sometimes 2>&1 | FileCheck %s --check-prefix=BAD
# An op with no generated kernel runs on its reference kernel (an extern node saying why), or,
# with --fallback=error, is an error naming the node, the op and the reason, and no bundle is
# written.
# LOWER: pointwise e over [4, 8] origins=[exp]
# LOWER: extern aten.cumsum (e) -> (c) origins=[cumsum] reason="no scan kernel yet"
# LOWER-NEXT: | graph(%in0: f32[4, 8]):
# ALLOW: fallbacks (run by the runtime's reference kernels): aten.cumsum
# ERROR: tensorc: error: {{.*}}: node 'c' (aten.cumsum): no generated kernel (no scan kernel yet); --fallback=error forbids running it on its reference kernel
# BAD: --fallback: sometimes not in {allow,error}
graph(%x: f32[4, 8]):
  %e : f32[4, 8] = call_function[target=aten.exp](args=(%x,))
  %c : f32[4, 8] = call_function[target=aten.cumsum](args=(%e, 1))
  return (%c,)
# -----
# A rule falls back for the cases it does not handle, saying which: a GEMM of i64.
# LOWER: extern aten.mm (a, b) -> (m) origins=[mm] reason="no i64 GEMM template for this target (f32, or f16/bf16 for CUDA alone)"
# ALLOW: fallbacks (run by the runtime's reference kernels): aten.mm
# ERROR: node 'm' (aten.mm): no generated kernel (no i64 GEMM template for this target
# BAD: --fallback
graph(%a: i64[2, 3], %b: i64[3, 4]):
  %m : i64[2, 4] = call_function[target=aten.mm](args=(%a, %b))
  return (%m,)
