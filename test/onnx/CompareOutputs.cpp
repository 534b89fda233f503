// Output comparison for the conformance runner: dtype, shape, then values within tolerance.
#include "CompareOutputs.h"

#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tensorc::conformance {
namespace {

std::string formatShape(const std::vector<int64_t> &shape) {
  return strCat("[", join(shape, ", "), "]");
}

/// The multi-index of `flatIndex` in a row-major tensor of `shape`.
std::string formatIndex(const std::vector<int64_t> &shape, int64_t flatIndex) {
  std::vector<int64_t> index(shape.size());
  for (size_t axis = shape.size(); axis-- > 0;) {
    index[axis] = flatIndex % shape[axis];
    flatIndex /= shape[axis];
  }
  return formatShape(index);
}

std::string formatValue(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.7g", value);
  return buffer;
}

bool floatsMatch(double got, double want, const Tolerance &tolerance) {
  if (std::isnan(want))
    return std::isnan(got);
  if (std::isinf(want))
    return got == want;
  return std::fabs(got - want) <= tolerance.atol + tolerance.rtol * std::fabs(want);
}

std::optional<std::string> compareTensor(const Tensor &got, const Tensor &want,
                                         const Tolerance &tolerance) {
  if (got.dtype() != want.dtype())
    return strCat("dtype ", dtypeName(got.dtype()), " vs expected ", dtypeName(want.dtype()));
  if (got.shape() != want.shape())
    return strCat("shape ", formatShape(got.shape()), " vs expected ", formatShape(want.shape()));
  if (!got.defined())
    return std::string("no data");
  bool floating = isFloating(want.dtype());
  int64_t mismatches = 0, first = -1;
  double maxAbsDiff = 0;
  for (int64_t i = 0, n = want.numel(); i < n; ++i) {
    bool match;
    if (floating) {
      double g = got.getDouble(i), w = want.getDouble(i);
      match = floatsMatch(g, w, tolerance);
      if (!match && std::isfinite(g) && std::isfinite(w))
        maxAbsDiff = std::max(maxAbsDiff, std::fabs(g - w));
    } else {
      match = got.getInt(i) == want.getInt(i);
    }
    if (!match && mismatches++ == 0)
      first = i;
  }
  if (mismatches == 0)
    return std::nullopt;
  std::string at = formatIndex(want.shape(), first);
  if (!floating)
    return strCat(mismatches, " of ", want.numel(), " values differ, first at ", at, ": ",
                  got.getInt(first), " vs expected ", want.getInt(first));
  return strCat(mismatches, " of ", want.numel(), " values differ, first at ", at, ": ",
                formatValue(got.getDouble(first)), " vs expected ",
                formatValue(want.getDouble(first)), " (max abs diff ", formatValue(maxAbsDiff),
                ")");
}

} // namespace

std::optional<std::string> compareOutputs(const std::vector<Tensor> &got,
                                          const std::vector<Tensor> &want,
                                          const Tolerance &tolerance) {
  if (got.size() != want.size())
    return strCat(got.size(), " outputs vs ", want.size(), " expected");
  for (size_t i = 0; i < want.size(); ++i)
    if (std::optional<std::string> why = compareTensor(got[i], want[i], tolerance))
      return strCat("output ", i, ": ", *why);
  return std::nullopt;
}

} // namespace tensorc::conformance
