// The state one ONNX import shares between its converters, and helpers of both the importer
// proper (OnnxImporter.cpp) and ConvertContext (ConvertContext.cpp).
#pragma once

#include "ConvertContext.h"
#include "tensorc/Ops/Registry.h"
#include "tensorc/Support/Limits.h"

#include <map>
#include <set>
#include <string>

namespace tensorc::onnx {

/// Import-time state shared by the converters of one model.
class ImportState {
public:
  ImportState(const OpRegistry &registry, std::string modelDir)
      : registry(registry), modelDir(std::move(modelDir)) {}

  const OpRegistry &registry;
  std::string modelDir;
  Graph graph;
  /// ONNX value name -> graph value (bound lazily for symbolic vectors).
  std::map<std::string, Value *> values;
  /// ONNX value name -> integer vector known at import time (shape arithmetic).
  std::map<std::string, SymVector> symbolic;
  /// Graph values whose data is known at import time.
  std::map<const Value *, Tensor> constants;
  /// Values already renamed after an ONNX output.
  std::set<const Value *> named;
  size_t freshSymbols = 0;
  int64_t opset = 0;
  /// The most bytes one tensor a converter computes at import time may take (Limits.h).
  int64_t maxTensorBytes = kDefaultMaxTensorBytes;
};

/// Converts the nodes of `graph` in order (the top graph or an inlined subgraph).
Status convertNodes(const ::onnx::GraphProto &graph, ImportState &state);

/// Subgraphs (If branches, Loop and Scan bodies) nest at most this deep: real models nest a few
/// levels, and each level costs native stack in the parser and the converters.
constexpr int kMaxSubgraphDepth = 16;

/// Errors when a type's constant dims make a byte count of 2^62 or more (or overflow 64 bits).
Status checkStaticSize(const TensorType &type, const std::string &what);
/// The integer vector (every element constant) as an i64 tensor.
Tensor tensorFromSymVector(const SymVector &vector);
bool allConstant(const SymVector &vector);

} // namespace tensorc::onnx
