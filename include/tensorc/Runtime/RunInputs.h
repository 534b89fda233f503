// The inputs of one run of a bundle, as both runners (`tensorc run OUT`, `tensorc-run`) make
// them: read from a safetensors file or generated from a seed, with the same checks and messages.
#pragma once

#include "tensorc/Runtime/Model.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tensorc::rt {

struct RunInputOptions {
  /// A .safetensors file with one tensor per input name; empty: generate them from `seed`.
  std::string path;
  uint64_t seed = 0;
  /// Values of the bundle's symbolic dims for generated inputs (`--dim NAME=VALUE`).
  std::map<std::string, int64_t> dims;
  /// The most bytes one generated input may take; 0 = TENSORC_MAX_TENSOR_BYTES or the default.
  int64_t maxTensorBytes = 0;
};

/// One tensor per manifest input, in order. From a file: every input by name (a training
/// bundle's state inputs the file lacks start from the bundle's values), and a tensor the bundle
/// does not take is an error (a misspelt name would otherwise be ignored). Generated: floats
/// uniform in [-1, 1), integers in [0, 10), bools fair, from splitmix64 as the interpreter's
/// random inputs (so `run OUT --random-inputs S` and `run MODEL --interp --random-inputs S` see
/// the same data); every symbolic dim must be given a value, and a value for a dim the bundle
/// does not have is an error. Errors name the input.
Expected<std::vector<Tensor>> makeRunInputs(Model &model, const RunInputOptions &options);

} // namespace tensorc::rt
