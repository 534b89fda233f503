// Model inputs for running a graph: from a safetensors file or generated from a seed, and a
// short printable summary of results.
#pragma once

#include "tensorc/IR/Graph.h"
#include "tensorc/Support/Tensor.h"

#include <string>
#include <vector>

namespace tensorc::interp {

/// Reads one tensor per user input of `graph` from `path`, matched by placeholder name.
Expected<std::vector<Tensor>> loadInputs(const Graph &graph, const std::string &path);

/// Deterministic inputs from `seed`: floats uniform in [-1, 1), integers in [0, 10), bools fair.
/// Symbolic dims take their value from `dims`; an unbound symbol is an error naming it.
Expected<std::vector<Tensor>> randomInputs(const Graph &graph, uint64_t seed,
                                           const SymbolBindings &dims);

/// "f32[64, 1024] mean=0.0012 min=-3.1 max=2.9 first=[0.1, ...]".
std::string summarizeTensor(const Tensor &tensor);

} // namespace tensorc::interp
