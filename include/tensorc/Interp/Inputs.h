// Model inputs for running a graph: from a safetensors file or generated from a seed, and a
// short printable summary of results.
#pragma once

#include "tensorc/IR/Graph.h"
#include "tensorc/Support/Tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tensorc::interp {

/// Reads one tensor per user input of `graph` from `path`, matched by placeholder name.
Expected<std::vector<Tensor>> loadInputs(const Graph &graph, const std::string &path);

/// The random inputs of `run --random-inputs SEED`, shared by the compiler's driver and the
/// runtime-only tensorc-run so that both feed a model the same data: one splitmix64 stream per
/// seed, tensors filled in order, floats uniform in [-1, 1), integers in [0, 10), bools fair.
class RandomInputs {
public:
  explicit RandomInputs(uint64_t seed) : state_(seed) {}
  /// The next tensor of `dtype` and `shape` from the stream.
  Expected<Tensor> next(DType dtype, const std::vector<int64_t> &shape);

private:
  uint64_t nextBits();
  uint64_t state_;
};

/// Deterministic inputs from `seed` (RandomInputs, one tensor per user input in order).
/// Symbolic dims take their value from `dims`; an unbound symbol is an error naming it.
Expected<std::vector<Tensor>> randomInputs(const Graph &graph, uint64_t seed,
                                           const SymbolBindings &dims);

/// "f32[64, 1024] mean=0.0012 min=-3.1 max=2.9 first=[0.1, ...]".
std::string summarizeTensor(const Tensor &tensor);

} // namespace tensorc::interp
