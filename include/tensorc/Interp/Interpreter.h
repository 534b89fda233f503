// The reference interpreter: runs any Graph on the CPU with the registry's reference kernels.
#pragma once

#include "tensorc/IR/Graph.h"
#include "tensorc/Support/Limits.h"
#include "tensorc/Support/Tensor.h"

#include <functional>
#include <vector>

namespace tensorc::interp {

/// Runs one op's reference kernel on concrete inputs (nullptr for a None optional tensor) with
/// concrete attributes: infers the output types, allocates the outputs and fills them. A result
/// of more than `maxTensorBytes` is an error before anything is allocated.
Expected<std::vector<Tensor>> evaluateOp(const OpDef &op, const std::vector<const Tensor *> &inputs,
                                         AttrMap attrs,
                                         int64_t maxTensorBytes = kDefaultMaxTensorBytes);

/// Runs `graph` on `userInputs` (one tensor per placeholder without weight data, in signature
/// order). Binds the symbols of the input shapes, checks dtypes and shapes against the
/// signature, and frees each intermediate after its last use. Errors name the node at fault.
/// `known` seeds the symbol bindings: symbols a one-op graph cut out of a model (a bundle's extern
/// fallback) uses in attributes or in dims that are expressions, which its inputs alone cannot
/// bind.
/// No result may take more than `maxTensorBytes` (0: TENSORC_MAX_TENSOR_BYTES or the default of
/// Support/Limits.h); the error names the node and the size.
Expected<std::vector<Tensor>> interpret(const Graph &graph, const std::vector<Tensor> &userInputs,
                                        const SymbolBindings &known = {},
                                        int64_t maxTensorBytes = 0);

/// Sees every node result as the interpreter computes it (before intermediates are freed).
using ValueObserver = std::function<void(const Value &value, const Tensor &tensor)>;
/// interpret() calling `observe` with each node result (`tensorc bisect` keeps the values the
/// compiled kernels write, to compare them one kernel at a time).
Expected<std::vector<Tensor>> interpret(const Graph &graph, const std::vector<Tensor> &userInputs,
                                        const SymbolBindings &known, const ValueObserver &observe,
                                        int64_t maxTensorBytes = 0);

} // namespace tensorc::interp
