// Comparing compiled results with the interpreter's: per-dtype tolerances and the worst element.
#pragma once

#include "tensorc/Support/Tensor.h"

#include <optional>
#include <string>

namespace tensorc::debug {

/// |actual - expected| <= atol + rtol * |expected| (NaN matches NaN, infinities must be equal).
struct Tolerance {
  double rtol = 1e-3, atol = 1e-5;
};
/// f32 (and f64): rtol 1e-3, atol 1e-5 (DESIGN §8); f16 and bf16: rtol 2e-2, atol 1e-3 (what the
/// GPU kits use against the f32 interpreter, with an absolute floor for values near zero);
/// integers and bools: exact.
Tolerance toleranceFor(DType dtype);

/// The outcome of comparing two tensors of one shape.
struct Comparison {
  bool matches = true;
  std::string problem;    // set when the dtypes or shapes differ
  int64_t mismatched = 0; // elements outside the tolerance
  int64_t worst = -1;     // flat index of the element furthest outside it (-1: none)
  double expected = 0, actual = 0;
  double excess = 0; // |actual - expected| - allowed, at `worst` (infinite for NaN vs number)
  Tolerance tolerance;
};
Comparison compareTensors(const Tensor &expected, const Tensor &actual);

/// "[1, 2, 3]": the multi-index of flat index `index` in `shape`.
std::string formatIndex(const std::vector<int64_t> &shape, int64_t index);

/// One line: "element [0, 3] is 1.5, expected 0.5 (|diff| 1, allowed 0.0005; 12 of 64 elements
/// differ; rtol 0.001, atol 1e-05)", or the dtype/shape problem.
std::string describeComparison(const Comparison &comparison, const std::vector<int64_t> &shape);

} // namespace tensorc::debug
