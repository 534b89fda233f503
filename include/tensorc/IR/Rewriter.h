// Rewriter: rebuilds a graph node by node, letting a pass replace any node with new ones.
#pragma once

#include "tensorc/IR/Graph.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tensorc {

/// Emits nodes into a graph under one naming scheme ("<base>_<op>"), prefixing errors with a
/// context line. What decomposition and gradient rules build with.
class NodeEmitter {
public:
  NodeEmitter(Graph &target, std::string nameBase, std::string errorContext)
      : target_(target), nameBase_(std::move(nameBase)), errorContext_(std::move(errorContext)) {}
  virtual ~NodeEmitter() = default;

  Graph &graph() { return target_; }
  /// Emits `op` into the graph; names derive from the base name ("<base>_<op>").
  Expected<Value *> emit(const OpDef &op, std::vector<Value *> inputs, AttrMap attrs = {});
  Expected<std::vector<Value *>> emitMulti(const OpDef &op, std::vector<Value *> inputs,
                                           AttrMap attrs = {});
  /// A prims.constant node holding `tensor`.
  Expected<Value *> constant(const OpDef &constantOp, Tensor tensor);

private:
  Graph &target_;
  std::string nameBase_;
  std::string errorContext_;
};

/// What a rewrite callback sees for one node of the source graph: its operands already mapped
/// into the graph being built, and a way to emit replacement nodes there.
class RewriteContext : public NodeEmitter {
public:
  RewriteContext(Graph &target, const Node &node, std::vector<Value *> operands)
      : NodeEmitter(target, node.name(), "rewriting " + node.describe()), node_(node),
        operands_(std::move(operands)) {}

  /// The source node being rewritten.
  const Node &node() const { return node_; }
  /// Operand i of the source node, mapped into the new graph (nullptr for None).
  Value *operand(size_t i) const { return operands_[i]; }
  const std::vector<Value *> &operands() const { return operands_; }

private:
  const Node &node_;
  std::vector<Value *> operands_;
};

/// What a gradient rule sees: a node of the joint graph (its inputs and results are values of
/// that graph) and the gradient flowing into each result (nullptr where none does). The rule
/// emits the backward ops into the same graph.
class GradContext : public NodeEmitter {
public:
  GradContext(Graph &joint, const Node &node, std::vector<Value *> resultGrads)
      : NodeEmitter(joint, node.name() + "_grad", "differentiating " + node.describe()),
        node_(node), resultGrads_(std::move(resultGrads)) {}
  const Node &node() const { return node_; }
  /// The gradient of result i, or nullptr when nothing downstream depends on it.
  Value *resultGrad(size_t i) const { return resultGrads_[i]; }

private:
  const Node &node_;
  std::vector<Value *> resultGrads_;
};

/// Returns replacement values for the node's results, or std::nullopt to copy the node as it is.
/// Replacement values must have the results' types (checked).
using RewriteFn = std::function<Expected<std::optional<std::vector<Value *>>>(RewriteContext &)>;

/// Builds a new graph from `source`: placeholders and weights are copied, each node is offered
/// to `rewrite`, results keep their names where the replacement's name is free, and the outputs
/// follow. Nodes whose results nothing uses are kept (DCE removes them).
Expected<Graph> rewriteGraph(const Graph &source, const RewriteFn &rewrite);

/// Copies `node` into `target` on `operands`, keeping its name, result names and result types
/// (data-dependent dims keep their symbols); a taken result name gets a fresh one.
Expected<Node *> copyNode(Graph &target, const Node &node, std::vector<Value *> operands);

/// Where each value of a source graph went in a graph built from it, for passes that rebuild a
/// graph node by node rather than edit it.
class ValueMap {
public:
  /// Adds the placeholders of `source` to `target`, mapped, and gives `target` its weights.
  static Expected<ValueMap> withInputs(const Graph &source, Graph &target);

  Value *at(const Value *value) const { return mapped_.at(value); }
  void set(const Value *from, Value *to) { mapped_[from] = to; }
  /// The node's operands in the target graph (nullptr for None).
  std::vector<Value *> operands(const Node &node) const;
  /// `values` in the target graph (a graph's outputs).
  std::vector<Value *> map(const std::vector<Value *> &values) const;
  /// Maps the results of `node` to those of `copy`.
  void mapResults(const Node &node, const Node &copy);
  /// copyNode of `node` on its mapped operands; its results are mapped to the copy's.
  Expected<Node *> copy(Graph &target, const Node &node);

private:
  std::map<const Value *, Value *> mapped_;
};

/// A copy of `source`: its placeholders, weights, nodes (copyNode) and outputs.
Expected<Graph> cloneGraph(const Graph &source);

/// `node` alone in a graph: placeholders "in<i>" for its operands (None stays None), the copy,
/// and its results as the outputs.
Expected<Graph> isolateNode(const Node &node);

/// Users of each value (node inputs; graph outputs count as a use with a nullptr user).
std::map<const Value *, std::vector<const Node *>> computeUsers(const Graph &graph);

} // namespace tensorc
