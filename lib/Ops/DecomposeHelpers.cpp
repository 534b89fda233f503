// Emission helpers shared by the decomposition rules in lib/Ops/*.cpp.
#include "DecomposeHelpers.h"

#include "OpHelpers.h"

namespace tensorc::ops {

std::optional<int64_t> staticCount(const Shape &shape, const std::vector<int64_t> &dims) {
  if (shape.empty())
    return 1; // a 0-d tensor reduces over its one element
  Expected<std::vector<size_t>> normalized = normalizeDims(dims, shape.size(), true);
  if (!normalized)
    return std::nullopt;
  int64_t count = 1;
  for (size_t dim : *normalized) {
    std::optional<int64_t> size = shape[dim].constant();
    if (!size)
      return std::nullopt;
    count *= *size;
  }
  return count;
}

} // namespace tensorc::ops
