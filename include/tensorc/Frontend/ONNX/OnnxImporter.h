// ONNX frontend: ModelProto (opsets 7-22 of the default domain) -> Graph of registry ops.
#pragma once

#include "tensorc/IR/Graph.h"

#include <map>
#include <string>
#include <vector>

namespace tensorc::onnx {

struct ImportOptions {
  /// Graph inputs to specialize: each becomes a constant with this value (dtype and shape must
  /// match the declaration) instead of a user input. Shape-like inputs (Reshape's target, Tile's
  /// repeats...) must be known when compiling ahead of time.
  std::map<std::string, Tensor> specializedInputs;
  /// The most bytes a tensor computed at import time may take (a converter's mask or identity
  /// matrix); 0 = TENSORC_MAX_TENSOR_BYTES or kDefaultMaxTensorBytes (Support/Limits.h).
  /// Constant folding is separately limited to small results, decided before evaluating.
  int64_t maxTensorBytes = 0;
};

/// Imports the model at `path`. Initializers become parameters (weights); Constant nodes and
/// shape arithmetic fold to constants when shapes are static and stay symbolic otherwise;
/// dim_params become symbols and unknown dims fresh symbols. The graph's user inputs are the
/// ONNX graph inputs that are not initializers, in order; its outputs are the ONNX outputs.
/// Rejections name the node (name and op_type), initializer or file, and why; unsupported ops
/// are reported together with their counts.
Expected<Graph> importOnnxFile(const std::string &path, const OpRegistry &registry,
                               const ImportOptions &options = {});

/// The same for a serialized ModelProto in memory; external data is read from `modelDir`.
/// Errors do not name a file (importOnnxFile prefixes the path).
Expected<Graph> importOnnxBytes(const std::string &bytes, const std::string &modelDir,
                                const OpRegistry &registry, const ImportOptions &options = {});
/// Names of the model's graph inputs that are not initializers, in order (what the user feeds).
Expected<std::vector<std::string>> listOnnxInputs(const std::string &path);

/// Reads a serialized TensorProto (ONNX test data `input_0.pb`). External data is refused.
Expected<Tensor> readTensorProtoFile(const std::string &path);

} // namespace tensorc::onnx
