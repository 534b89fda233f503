// The CSE pass.
#pragma once

#include "tensorc/Transforms/PassRegistry.h"

namespace tensorc {

/// Merges nodes with the same op, operands and attributes into the first one.
Status eliminateCommonSubexpressions(Graph &graph, const PassContext &context);

} // namespace tensorc
