// What the minifier reduces: a model as a list of nodes in execution order over named values,
// with the edits delta debugging tries. Two kinds: tensorc's Graph (FX-text files, written back as
// .fx + .safetensors) and the ONNX protobuf (written back as .onnx).
#pragma once

#include "tensorc/IR/Graph.h"

#include <memory>
#include <string>
#include <vector>

namespace tensorc::debug {

class Reducible {
public:
  virtual ~Reducible() = default;
  virtual std::unique_ptr<Reducible> clone() const = 0;

  virtual size_t numNodes() const = 0;
  virtual std::vector<std::string> nodeOutputs(size_t node) const = 0;
  virtual size_t numNodeInputs(size_t node) const = 0;
  /// "%relu1 (aten.relu)" / "node 'Relu_3' (Relu)".
  virtual std::string describeNode(size_t node) const = 0;
  virtual std::vector<std::string> outputs() const = 0;

  /// Each edit prunes what the outputs no longer need; an edit that does not apply (no type for
  /// a value, a type mismatch, an inference failure) is an error and leaves nothing usable.
  virtual Status setOutputs(const std::vector<std::string> &values) = 0;
  virtual Status makeInputs(const std::vector<std::string> &values) = 0;
  virtual Status bypassNode(size_t node, size_t input) = 0;
  /// User inputs with their dims (-1: symbolic).
  virtual std::vector<std::pair<std::string, std::vector<int64_t>>> inputShapes() const = 0;
  virtual Status setInputDim(const std::string &input, size_t dim, int64_t size) = 0;

  /// Writes the model (its weights too) where `path` says; `path` ends in extension().
  virtual Status save(const std::string &path) const = 0;
  virtual const char *extension() const = 0;
};

/// Loads `path` by its extension (.fx or .onnx).
Expected<std::unique_ptr<Reducible>> loadReducible(const std::string &path,
                                                   const OpRegistry &registry);

} // namespace tensorc::debug
