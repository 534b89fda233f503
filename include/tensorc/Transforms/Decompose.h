// The Decompose pass.
#pragma once

#include "tensorc/Transforms/PassRegistry.h"

namespace tensorc {

/// Rewrites ops that have a decomposition rule in the registry into primitive ops, repeatedly, until only primitives remain.
Status decompose(Graph &graph, const PassContext &context);

} // namespace tensorc
