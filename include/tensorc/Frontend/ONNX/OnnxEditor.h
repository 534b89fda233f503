// Editing an ONNX model as its protobuf (what `tensorc minify` reduces): cut it at values, turn
// values into inputs, remove nodes, change input dims; every edit leaves a valid ONNX model
// (nodes in order, unused initializers and inputs removed, value types from ONNX's shape
// inference).
#pragma once

#include "tensorc/Support/Status.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tensorc::onnx {

class OnnxModel {
public:
  /// Reads and parses `path` and runs ONNX shape inference for the types of its values. Models
  /// with external data are refused (a reduced model is written as one file).
  static Expected<OnnxModel> load(const std::string &path);
  OnnxModel(const OnnxModel &other);
  OnnxModel &operator=(const OnnxModel &other);
  OnnxModel(OnnxModel &&other) noexcept;
  OnnxModel &operator=(OnnxModel &&other) noexcept;
  ~OnnxModel();

  /// Writes the model (graph outputs typed, no value_info) to `path`.
  Status save(const std::string &path) const;

  size_t numNodes() const;
  /// Node `node`'s outputs (omitted optional outputs left out).
  std::vector<std::string> nodeOutputs(size_t node) const;
  /// How many inputs node `node` lists (omitted optional ones included, as "").
  size_t numNodeInputs(size_t node) const;
  /// "node 'conv1' (Conv)", named like the importer's messages.
  std::string describeNode(size_t node) const;
  /// The graph's output names.
  std::vector<std::string> outputs() const;
  /// Every node output's node: "node 'conv1' (Conv)" by output name (for reports).
  std::map<std::string, std::string> nodesByOutput() const;

  /// Makes `names` the graph outputs, then removes what they do not need.
  Status setOutputs(const std::vector<std::string> &names);
  /// Turns node outputs `names` into graph inputs of their inferred types (their producers go
  /// unless something else needs them), then removes what the outputs do not need.
  Status makeInputs(const std::vector<std::string> &names);
  /// Removes node `node`; what read its first output reads its input `input` instead, which must
  /// have the same type.
  Status bypassNode(size_t node, size_t input);
  /// The graph inputs that are not initializers, with their dims (-1 where symbolic or unknown).
  std::vector<std::pair<std::string, std::vector<int64_t>>> inputShapes() const;
  /// Sets dim `dim` of graph input `input` to `size` and infers the types again.
  Status setInputDim(const std::string &input, size_t dim, int64_t size);

private:
  struct Impl;
  explicit OnnxModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace tensorc::onnx
