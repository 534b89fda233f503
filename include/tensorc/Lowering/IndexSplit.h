// Index-set splitting of a pointwise body along one loop variable: where comparisons of that
// variable with constants decide which operand a select takes (a concatenation's inputs, a pad's
// border), the range is cut at the points where they change, and each piece gets the body
// specialized to it: the comparisons fold, the selects keep one branch, and the index arithmetic
// simplifies (`x2 % 32` inside [128, 160) reads `x2 - 128`), so code generators can vectorize
// each piece as a plain strided copy of one input.
#pragma once

#include "tensorc/Lowering/LoopIR.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tensorc::loop {

/// The body for `var` in [lo, hi), rebased: it reads `var + lo` wherever it read `var`, for
/// 0 <= var < hi - lo. Comparisons of an index affine in `var` with a constant that hold or fail
/// throughout fold to constants, selects and logical ops on constants fold, and every index is
/// simplified knowing the extents in `bounds` (the other loop variables) and of `var`.
ExprRef specializeIndexRange(const ExprRef &body, const std::string &var, int64_t lo, int64_t hi,
                             std::map<std::string, int64_t> bounds);

/// One piece of a split range: [lo, hi) and the body specialized to it (specializeIndexRange).
struct IndexPiece {
  int64_t lo = 0, hi = 0;
  ExprRef body;
};

/// `body` over `var` in [0, extent) cut at every point where a comparison of an index affine in
/// `var` with a constant changes value, one piece per interval. Empty when there is no such point
/// or the pieces would be more than `maxPieces`.
std::vector<IndexPiece> splitIndexRange(const ExprRef &body, const std::string &var, int64_t extent,
                                        const std::map<std::string, int64_t> &bounds,
                                        size_t maxPieces = 64);

} // namespace tensorc::loop
