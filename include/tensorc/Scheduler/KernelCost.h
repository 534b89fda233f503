// Static cost estimates of scheduled kernels from the loop IR: bytes moved and arithmetic
// operations, as expressions over the shape symbols (the profiler's roofline, `tensorc explain`).
#pragma once

#include "tensorc/Scheduler/Schedule.h"

namespace tensorc::sched {

struct KernelCost {
  /// Bytes the kernel must move at least: every argument buffer read or written once (what a
  /// roofline divides by; reuse through caches is not counted again).
  SymInt bytes;
  /// Arithmetic operations: for loop kernels each unary, binary or select of a body once per
  /// iteration (shared subexpressions once) plus one per reduced element; 2*M*N*K for GEMMs and
  /// the implicit GEMM of a convolution; 0 for reference-kernel fallbacks (unknown).
  SymInt flops;
};

/// The estimate for `kernel` of `program`'s schedule.
KernelCost estimateCost(const loop::LoopProgram &program, const Kernel &kernel);

} // namespace tensorc::sched
