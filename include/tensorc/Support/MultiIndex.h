// Stepping through a multi-index (a position in a box of extents), as nested loops would.
#pragma once

#include <cstddef>
#include <vector>

namespace tensorc {

/// Advances `index` to the next multi-index in row-major order (the last dim fastest), dim d
/// running over [0, extent(d)). Returns false, with `index` back at all zeros, after the last one.
template <typename Index, typename Extent>
bool nextMultiIndex(std::vector<Index> &index, Extent extent) {
  for (size_t d = index.size(); d-- > 0;) {
    if (++index[d] < Index(extent(d)))
      return true;
    index[d] = 0;
  }
  return false;
}

} // namespace tensorc
