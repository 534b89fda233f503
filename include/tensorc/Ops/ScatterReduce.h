// The reductions a scatter's `reduce` attribute names (aten.scatter, prims.scatter_nd), read by
// the ops' definitions and by their lowering.
#pragma once

#include "tensorc/Support/Status.h"

#include <string>

namespace tensorc::ops {

/// How a scatter combines an update with the element it lands on (None: replaces it).
enum class ScatterReduce { None, Add, Mul, Max, Min };

/// The `reduce` attribute: none, add (sum), mul (multiply, prod), max (amax) or min (amin).
Expected<ScatterReduce> parseScatterReduce(const std::string &name);

} // namespace tensorc::ops
