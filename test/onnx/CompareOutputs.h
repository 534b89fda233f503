// Compares a model's outputs with the expected ones of an ONNX test data set.
#pragma once

#include "tensorc/Support/Tensor.h"

#include <optional>
#include <string>
#include <vector>

namespace tensorc::conformance {

struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-5;
};

/// Why `got` does not match `want`, or nullopt when it does. Counts, then per output dtype and
/// shape, then values: floats within atol + rtol * |want| (NaN matches NaN, infinities must be
/// equal), integers and bools exactly. The message starts with the output ("output 1: ...").
std::optional<std::string> compareOutputs(const std::vector<Tensor> &got,
                                          const std::vector<Tensor> &want,
                                          const Tolerance &tolerance);

} // namespace tensorc::conformance
