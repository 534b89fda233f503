// Legalization: torch's arithmetic rules rewritten once into plain operations, before any backend
// (Halide's lower_euclidean_div/mod; STYLE 16), so that the CPU and CUDA emitters only print
// operations whose meaning is the same in every language.
#pragma once

#include "tensorc/Lowering/LoopIR.h"
#include "tensorc/Support/Status.h"

namespace tensorc::codegen {

/// What a target computes natively; the rest is expanded into plain operations.
struct LegalizeOptions {
  /// pow of two float tensors (CUDA's powf). Without it pow is expanded into exp and log with
  /// C's sign and special-value rules (the CPU's kernels call no libm).
  bool nativeFloatPow = false;
};

/// `program` with every body rewritten into plain operations, which mean the same in LLVM IR and
/// in C. Afterwards:
/// - Nothing is computed in f16 or bf16: loads of f16/bf16 buffers give f32, arithmetic runs in
///   f32, and a cast to f16/bf16 is `cast(cast(x: f32, f16), f32)`: a rounding to that precision
///   of a value still held in f32. Stores round f32 values into f16/bf16 buffers.
/// - Loads read their buffer's dtype (f32 for f16/bf16 buffers); Index expressions are i64.
/// - Casts to bool are `x != 0` (NaN is true); float-to-integer casts truncate toward zero, to
///   8/16-bit integers through i32 and to u32 through i64 (wrapping as torch does on x86); casts
///   to f16/bf16 come from f32 only.
/// - Integer div, fmod and remainder divide by a divisor that is never 0 (nor -1 when signed):
///   torch's results for those (x for x / 0, -x for x / -1, 0 for x % +-1) are selected around
///   the plain division; remainder is Python's (the sign of the divisor), fmod C's.
/// - Shift amounts are within the operand's width (torch: 0, or -1 for >> of negatives, past it).
/// - pow: exponents 0, +-0.5, +-1, 2, 3 and -2 as torch special-cases them (sqrt, rsqrt,
///   reciprocal, products); integer pow by square-and-multiply (negative exponents: 1, +-1 or 0);
///   float pow native or expanded (options).
/// - bool arithmetic as logic (add: or, mul: and, sub/xor: !=, max: or, min: and); relu as
///   maximum(x, 0); sign, logical_not, reciprocal, isnan of integers as comparisons and
///   constants; logical_and/or/xor of non-bools compare with 0 first.
/// - maximum/minimum of floats stay: they are IEEE 754-2019 maximum/minimum (NaN-propagating,
///   as torch's), a plain operation each backend provides.
/// Ops invalid for a dtype (bitwise ops of floats, exp of integers) are left for the emitter to
/// reject. Node ids, buffers and the schedule's references stay valid.
loop::LoopProgram legalize(const loop::LoopProgram &program, const LegalizeOptions &options);

} // namespace tensorc::codegen
