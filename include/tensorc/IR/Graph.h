// Graph, Node and Value: the typed, SSA graph IR every stage reads and writes.
#pragma once

#include "tensorc/IR/Attribute.h"
#include "tensorc/IR/OpDef.h"
#include "tensorc/IR/Type.h"
#include "tensorc/Support/Status.h"
#include "tensorc/Support/Tensor.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace tensorc {

class Node;

/// A typed SSA value: a graph input (placeholder) or one result of a node.
class Value {
public:
  const std::string &name() const { return name_; }
  const TensorType &type() const { return type_; }
  /// The node producing this value, or nullptr for a graph input.
  Node *producer() const { return producer_; }
  unsigned resultIndex() const { return resultIndex_; }
  bool isGraphInput() const { return producer_ == nullptr; }

private:
  friend class Graph;
  Value(std::string name, TensorType type, Node *producer, unsigned resultIndex)
      : name_(std::move(name)), type_(std::move(type)), producer_(producer),
        resultIndex_(resultIndex) {}
  std::string name_;
  TensorType type_;
  Node *producer_;
  unsigned resultIndex_;
};

/// One op application. Inputs are the op's tensor parameters in schema order, flattened (a
/// TensorList contributes all its tensors); a None optional tensor is a nullptr entry.
class Node {
public:
  const OpDef &op() const { return *op_; }
  OpId opId() const { return op_->id; }
  const std::string &name() const { return name_; }
  const std::vector<Value *> &inputs() const { return inputs_; }
  Value *input(size_t i) const { return inputs_[i]; }
  const AttrMap &attrs() const { return attrs_; }
  const Attribute &attr(const std::string &name) const { return attrs_.at(name); }
  size_t numOutputs() const { return outputs_.size(); }
  Value *output(size_t i = 0) const { return outputs_[i].get(); }
  std::vector<Value *> outputs() const;
  /// "%name = aten.add" style, for messages.
  std::string describe() const;

private:
  friend class Graph;
  const OpDef *op_ = nullptr;
  std::string name_;
  std::vector<Value *> inputs_;
  AttrMap attrs_;
  std::vector<std::unique_ptr<Value>> outputs_;
};

/// Parameter and constant data by placeholder name; a placeholder with data here is a parameter.
using WeightMap = std::map<std::string, Tensor>;

class Graph {
public:
  Graph() = default;
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;
  Graph(Graph &&) = default;
  Graph &operator=(Graph &&) = default;

  /// Adds a placeholder; errors if the name is taken or not a valid identifier.
  Expected<Value *> addInput(const std::string &name, TensorType type);
  /// Checked constructor: fills attribute defaults, checks arity and attribute kinds, infers the
  /// result types, and names the node (`nameHint` made unique). A multi-result node names its
  /// results `<node>_<i>` unless `resultNames` gives them. A data-dependent dim gets a fresh
  /// symbol `<node>_d<k>`, or the symbol `declaredTypes` has there (a parsed graph keeps its
  /// names). Errors name the node and op.
  Expected<Node *> addNode(const OpDef &op, std::vector<Value *> inputs, AttrMap attrs,
                           const std::string &nameHint = "",
                           const std::vector<std::string> &resultNames = {},
                           const std::vector<TensorType> *declaredTypes = nullptr);
  /// Renames a value (and its node, when it is the node's only result); errors if the name is
  /// taken or not an identifier.
  Status renameValue(Value *value, const std::string &name);
  void setOutputs(std::vector<Value *> outputs) { outputs_ = std::move(outputs); }

  const std::vector<std::unique_ptr<Value>> &inputs() const { return inputs_; }
  const std::vector<std::unique_ptr<Node>> &nodes() const { return nodes_; }
  const std::vector<Value *> &outputs() const { return outputs_; }

  WeightMap &weights() { return weights_; }
  const WeightMap &weights() const { return weights_; }
  bool isParameter(const Value *value) const {
    return value->isGraphInput() && weights_.count(value->name()) != 0;
  }
  /// Placeholders without data: what a caller must supply, in signature order.
  std::vector<Value *> userInputs() const;

  /// A fresh name derived from `hint` ("add" -> "add_1" when taken).
  std::string uniqueName(const std::string &hint) const;
  bool hasName(const std::string &name) const { return names_.count(name) != 0; }
  Value *findValue(const std::string &name) const;

private:
  std::vector<std::unique_ptr<Value>> inputs_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<Value *> outputs_;
  WeightMap weights_;
  std::set<std::string> names_;
  std::map<std::string, Value *> valuesByName_;
  /// Next suffix to try per base name, so naming many copies (unrolled loops) stays linear.
  mutable std::map<std::string, size_t> nextSuffix_;
};

/// Runs `op`'s inference on `inputs` with `attrs` (defaults filled, kinds checked): the types a
/// node would get. Used by addNode, the verifier and the interpreter (with concrete types).
Expected<std::vector<TensorType>> inferTypes(const OpDef &op,
                                             const std::vector<const TensorType *> &inputs,
                                             AttrMap &attrs);

/// The data of a value that is a constant, a parameter or a prims.constant result; else nullptr.
const Tensor *constantData(const Graph &graph, const Value *value);

/// Structural equality: same placeholders, nodes (ops, operands by position, attributes, names,
/// types), outputs and weights. What `parse(print(g)) == g` checks.
bool graphsEqual(const Graph &a, const Graph &b, std::string *difference = nullptr);

} // namespace tensorc
