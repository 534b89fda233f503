// ConvertContext: what an ONNX op converter sees (its node, inputs, attributes) and how it emits
// registry ops (the converters and their table: OnnxConverters.h).
#pragma once

#include "tensorc/IR/Graph.h"

#include <map>
#include <onnx/onnx_pb.h>
#include <optional>
#include <string>
#include <vector>

namespace tensorc::onnx {

/// A 1-D (or 0-d) i64 value known at import time element by element, possibly symbolically:
/// what Shape -> Gather -> Concat chains compute. `scalar` marks a 0-d value.
struct SymVector {
  std::vector<SymInt> elements;
  bool scalar = false;
};

/// Import-time state shared by all converters of one model.
class ImportState;

/// The graph size past which inlineGraph refuses (unrolled Loop/Scan bodies, nested ones
/// multiplied): room for 1000 iterations of a 50-node body, while a hostile model of nested
/// Scans stops within seconds even under the sanitizers.
constexpr size_t kMaxNodesWhenInlining = 50000;

class ConvertContext {
public:
  ConvertContext(ImportState &state, const ::onnx::NodeProto &node, int64_t opset)
      : state_(state), node_(node), opset_(opset) {}

  const ::onnx::NodeProto &node() const { return node_; }
  /// The model's default-domain opset version.
  int64_t opset() const { return opset_; }
  /// "node 'conv1' (Conv)" for messages.
  std::string describe() const;
  /// An error about this node: "node 'conv1' (Conv): <message>".
  Error error(const std::string &message) const;

  // ---- Inputs --------------------------------------------------------------------------------
  size_t numInputs() const { return size_t(node_.input_size()); }
  /// Present: listed and not the empty name (ONNX's way to omit an optional input).
  bool hasInput(size_t i) const;
  /// The graph value of input i (materializing a symbolic shape vector is an error).
  Expected<Value *> input(size_t i);
  /// input(i) of an optional input; nullptr when it is absent.
  Expected<Value *> optionalInput(size_t i);
  /// Type of input i (also for symbolic vectors: i64[n]).
  Expected<TensorType> inputType(size_t i);
  /// The input's data when known at import time (initializers, Constant, folded subgraphs).
  std::optional<Tensor> constantInput(size_t i);
  /// An integer input known element by element, possibly symbolically (shape arithmetic).
  std::optional<SymVector> symbolicInput(size_t i);
  /// An integer input that must be known at import time; `what` names it in the error.
  Expected<std::vector<int64_t>> constantInts(size_t i, const std::string &what);
  /// Float input known at import time (Resize scales).
  Expected<std::vector<double>> constantFloats(size_t i, const std::string &what);

  // ---- Attributes ----------------------------------------------------------------------------
  bool hasAttr(const std::string &name) const;
  int64_t intAttr(const std::string &name, int64_t defaultValue) const;
  double floatAttr(const std::string &name, double defaultValue) const;
  std::string stringAttr(const std::string &name, const std::string &defaultValue) const;
  std::vector<int64_t> intsAttr(const std::string &name,
                                const std::vector<int64_t> &defaultValue = {}) const;
  std::vector<double> floatsAttr(const std::string &name) const;
  /// A tensor-valued attribute (Constant's value, ConstantOfShape's value).
  Expected<Tensor> tensorAttr(const std::string &name) const;
  /// Errors if the node carries an attribute not in `known` (so no semantics are dropped).
  Status checkAttrs(std::initializer_list<const char *> known) const;
  /// The first attribute read above with a type other than the accessor's ("attribute 'group' is
  /// a STRING, expected an INT"); the accessor returned its default. The importer reports it in
  /// place of whatever the converter made of the default.
  const std::optional<std::string> &attrTypeError() const { return attrTypeError_; }

  // ---- Emitting ------------------------------------------------------------------------------
  /// Adds a registry op; folds it at import time when every operand is a known constant and the
  /// result is small. Returns the first result.
  Expected<Value *> emit(std::string_view op, std::vector<Value *> inputs, AttrMap attrs = {});
  /// Same, returning every result (split_with_sizes).
  Expected<std::vector<Value *>> emitMulti(std::string_view op, std::vector<Value *> inputs,
                                           AttrMap attrs = {});
  /// A prims.constant node holding `tensor`.
  Expected<Value *> constant(Tensor tensor);
  /// A zero-filled tensor for a constant the converter computes itself (a mask, an identity),
  /// within the import's tensor size limit; `what` names it in the error.
  Expected<Tensor> newTensor(DType dtype, std::vector<int64_t> shape, const std::string &what);
  /// A dim computed in floating point (Resize's scaled sizes): an error naming `what` unless it
  /// is finite, non-negative and small enough to multiply with others (below 2^62).
  Expected<int64_t> dimFromDouble(double value, const std::string &what) const;
  /// A 0-d constant of `dtype` holding `value`.
  Expected<Value *> scalar(double value, DType dtype);
  /// `value` converted to `dtype` (no node when it already has it).
  Expected<Value *> cast(Value *value, DType dtype);

  // ---- Subgraphs -----------------------------------------------------------------------------
  /// The GRAPH attribute `name` (If's branches, Loop's and Scan's body).
  Expected<const ::onnx::GraphProto *> graphAttr(const std::string &name) const;
  /// Converts `body` in place, its inputs bound to `inputs` (outer values stay visible, as ONNX
  /// scoping says), and returns its outputs. Each call emits a fresh copy: Loop and Scan unroll
  /// by calling it once per iteration. An error once the graph has kMaxNodesWhenInlining nodes.
  Expected<std::vector<Value *>> inlineGraph(const ::onnx::GraphProto &body,
                                             const std::vector<Value *> &inputs);

  // ---- Outputs -------------------------------------------------------------------------------
  size_t numOutputs() const { return size_t(node_.output_size()); }
  bool hasOutput(size_t i) const;
  /// Binds ONNX output i to `value` (renamed after the ONNX output when it has a generated name).
  Status setOutput(size_t i, Value *value);
  /// Binds ONNX output i to an import-time integer vector; constant ones also get a graph value.
  Status setSymbolicOutput(size_t i, SymVector vector);

private:
  const ::onnx::AttributeProto *findAttr(const std::string &name) const;
  /// findAttr, or nullptr (and a recorded attrTypeError) when it holds another type.
  const ::onnx::AttributeProto *findTypedAttr(const std::string &name, int type) const;
  std::string valueHint(std::string_view op) const;
  ImportState &state_;
  const ::onnx::NodeProto &node_;
  int64_t opset_;
  mutable std::optional<std::string> attrTypeError_;
};

/// Shape arithmetic at import time: when inputs 0 and 1 are integer vectors known element by
/// element and at least one element is symbolic, computes `op` ('+', '-', '*', '/' floor) with
/// broadcasting, binds output 0 to the result and returns true; returns false to let the caller
/// emit the tensor op.
Expected<bool> foldSymbolicBinary(ConvertContext &context, char op);

} // namespace tensorc::onnx
