// The fold-batchnorm pass.
#pragma once

#include "tensorc/Transforms/PassRegistry.h"

namespace tensorc {

/// Folds an inference batch norm into the convolution feeding it when the convolution has no
/// other user and every parameter is a constant: W' = W * s, b' = (b - mean) * s + beta with
/// s = gamma / sqrt(var + eps), per output channel. The batch norm then costs nothing.
Status foldBatchNorm(Graph &graph, const PassContext &context);

} // namespace tensorc
