// Emission helpers shared by the decomposition rules in lib/Ops/*.cpp.
#pragma once

#include "tensorc/IR/Rewriter.h"

#include <optional>
#include <vector>

namespace tensorc::ops {

/// What a decomposition rule returns: replacement values, or std::nullopt to keep the node.
using DecomposeResult = Expected<std::optional<std::vector<Value *>>>;

inline DecomposeResult keepNode() { return std::optional<std::vector<Value *>>(); }
inline DecomposeResult replaceWith(Value *value) {
  return std::optional<std::vector<Value *>>(std::vector<Value *>{value});
}

/// Emits ops for one rule (decomposition or gradient): looks ops up by id, fills attributes and
/// builds the 0-d constants that scale tensors without changing their dtype.
class OpBuilder {
public:
  /// `what` names the rule's node in errors ("decomposing %x = aten.gelu").
  OpBuilder(NodeEmitter &emitter, const OpRegistry &registry, std::string what)
      : emitter_(emitter), registry_(registry), what_(std::move(what)) {}

  Expected<Value *> emit(OpId id, std::vector<Value *> inputs, AttrMap attrs = {});
  Expected<std::vector<Value *>> emitMulti(OpId id, std::vector<Value *> inputs,
                                           AttrMap attrs = {});

  /// A 0-d constant holding `value` that combines with a `like`-dtype tensor into `like`: floats
  /// of that dtype (f32 for f16/bf16, since 0-d operands promote weakly and f32 keeps the digits),
  /// integers and bools of that dtype.
  Expected<Value *> scalar(double value, DType like);
  /// A Scalar attribute (int, float or bool) as such a constant; ints stay exact.
  Expected<Value *> scalar(const Attribute &value, DType like);

  Expected<Value *> unary(OpId id, Value *x) { return emit(id, {x}); }
  Expected<Value *> binary(OpId id, Value *a, Value *b) { return emit(id, {a, b}); }
  Expected<Value *> add(Value *a, Value *b) { return binary(OpId::Add, a, b); }
  Expected<Value *> sub(Value *a, Value *b) { return binary(OpId::Sub, a, b); }
  Expected<Value *> mul(Value *a, Value *b) { return binary(OpId::Mul, a, b); }
  Expected<Value *> div(Value *a, Value *b) { return binary(OpId::Div, a, b); }
  /// x <op> scalar, with the scalar typed by x's dtype.
  Expected<Value *> binaryScalar(OpId id, Value *x, double value);

  /// x converted to `dtype` (x itself when it already is).
  Expected<Value *> cast(Value *x, DType dtype);
  /// x viewed as `shape` (x itself when it already has it).
  Expected<Value *> view(Value *x, Shape shape);
  /// x broadcast to `shape` (x itself when it already has it).
  Expected<Value *> expand(Value *x, Shape shape);
  /// A reduction (sum, amax, ...) over `dims` (int list attribute) with keepdim.
  Expected<Value *> reduce(OpId id, Value *x, const Attribute &dims, bool keepdim);

protected:
  NodeEmitter &emitter_;
  const OpRegistry &registry_;
  std::string what_;
};

/// The builder a decomposition rule uses: the node being decomposed and its mapped operands.
class DecomposeBuilder : public OpBuilder {
public:
  DecomposeBuilder(RewriteContext &rewrite, const OpRegistry &registry)
      : OpBuilder(rewrite, registry, "decomposing " + rewrite.node().describe()),
        rewrite_(rewrite) {}

  const Node &node() const { return rewrite_.node(); }
  Value *operand(size_t i) const { return rewrite_.operand(i); }
  /// The type of the node's result `i`: what the replacement must have.
  const TensorType &resultType(size_t i = 0) const { return node().output(i)->type(); }

private:
  RewriteContext &rewrite_;
};

/// `def` with its decomposition rule set, for registration: `add(withDecompose(makeOp(...), f))`.
inline OpDef withDecompose(OpDef def, DecomposeFn rule) {
  def.decompose = rule;
  return def;
}

/// The number of elements in `dims` of `shape` (all dims when `dims` is empty), when static.
std::optional<int64_t> staticCount(const Shape &shape, const std::vector<int64_t> &dims);

} // namespace tensorc::ops
