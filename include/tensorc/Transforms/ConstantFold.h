// The ConstantFold pass.
#pragma once

#include "tensorc/Transforms/PassRegistry.h"

namespace tensorc {

/// Evaluates nodes whose operands are all constants (prims.constant) with the reference kernels and replaces them by constants, up to a size limit.
Status foldConstants(Graph &graph, const PassContext &context);

} // namespace tensorc
