// The merge-parallel-matmuls pass.
#pragma once

#include "tensorc/Transforms/PassRegistry.h"

namespace tensorc {

/// Matrix products of one operand by constant weights, mm(x, W1), mm(x, W2), ... (the Q, K and V
/// projections of an attention layer), become one product by the weights side by side,
/// mm(x, [W1 | W2 | ...]), whose column slices replace the products: one GEMM of N1 + N2 + ...
/// columns instead of several narrow ones, each of which leaves most of a large GPU idle at
/// small batch. The weights must be constants (parameters or prims.constant), 2-D and of one
/// dtype and K; the merged weight is a new parameter. Each output element is still one K-long
/// dot product (its summation order follows the wider GEMM's tiles and K split).
Status mergeParallelMatmuls(Graph &graph, const PassContext &context);

} // namespace tensorc
