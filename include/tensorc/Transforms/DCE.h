// The DCE pass.
#pragma once

#include "tensorc/Transforms/PassRegistry.h"

namespace tensorc {

/// Removes nodes whose results nothing uses (outputs and their producers stay).
Status eliminateDeadCode(Graph &graph, const PassContext &context);

} // namespace tensorc
