// Element-wise comparison with tolerances, reporting the worst element.
#include "tensorc/Debug/Compare.h"

#include "Format.h"

#include "tensorc/Support/StrCat.h"

#include <cmath>
#include <limits>

namespace tensorc::debug {

Tolerance toleranceFor(DType dtype) {
  if (dtype == DType::F16 || dtype == DType::BF16)
    return {2e-2, 1e-3};
  if (isFloating(dtype))
    return {1e-3, 1e-5};
  return {0.0, 0.0};
}

Comparison compareTensors(const Tensor &expected, const Tensor &actual) {
  Comparison result;
  result.tolerance = toleranceFor(expected.dtype());
  if (expected.dtype() != actual.dtype() || expected.shape() != actual.shape()) {
    result.matches = false;
    result.problem = strCat("is ", describeShape(actual.dtype(), actual.shape()), ", expected ",
                            describeShape(expected.dtype(), expected.shape()));
    return result;
  }
  bool exact = !isFloating(expected.dtype());
  for (int64_t i = 0; i < expected.numel(); ++i) {
    double want = exact ? double(expected.getInt(i)) : expected.getDouble(i);
    double got = exact ? double(actual.getInt(i)) : actual.getDouble(i);
    double excess = 0;
    if (exact) {
      if (expected.getInt(i) == actual.getInt(i))
        continue;
      excess = std::fabs(got - want);
    } else if (std::isnan(want) || std::isnan(got)) {
      if (std::isnan(want) && std::isnan(got))
        continue;
      excess = std::numeric_limits<double>::infinity();
    } else if (std::isinf(want) || std::isinf(got)) {
      if (want == got)
        continue;
      excess = std::numeric_limits<double>::infinity();
    } else {
      double allowed = result.tolerance.atol + result.tolerance.rtol * std::fabs(want);
      excess = std::fabs(got - want) - allowed;
      if (excess <= 0)
        continue;
    }
    ++result.mismatched;
    if (result.worst < 0 || excess > result.excess) {
      result.worst = i;
      result.excess = excess;
      result.expected = want;
      result.actual = got;
    }
  }
  result.matches = result.mismatched == 0;
  return result;
}

std::string formatIndex(const std::vector<int64_t> &shape, int64_t index) {
  std::vector<int64_t> coordinates(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] > 0) {
      coordinates[d] = index % shape[d];
      index /= shape[d];
    }
  }
  return "[" + join(coordinates, ", ") + "]";
}

std::string describeComparison(const Comparison &comparison, const std::vector<int64_t> &shape) {
  if (!comparison.problem.empty())
    return comparison.problem;
  int64_t numel = 1;
  for (int64_t dim : shape)
    numel *= dim;
  if (comparison.matches)
    return strCat("all ", numel, " elements within rtol ", formatShort(comparison.tolerance.rtol),
                  ", atol ", formatShort(comparison.tolerance.atol));
  double allowed =
      comparison.tolerance.atol + comparison.tolerance.rtol * std::fabs(comparison.expected);
  return strCat("element ", formatIndex(shape, comparison.worst), " is ",
                formatShort(comparison.actual), ", expected ", formatShort(comparison.expected),
                " (|diff| ", formatShort(std::fabs(comparison.actual - comparison.expected)),
                ", allowed ", formatShort(allowed), "); ", comparison.mismatched, " of ", numel,
                " elements differ (rtol ", formatShort(comparison.tolerance.rtol), ", atol ",
                formatShort(comparison.tolerance.atol), ")");
}

} // namespace tensorc::debug
