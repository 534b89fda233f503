// OpBuilder: emits registry ops by id into a graph, with the small helpers rules share (0-d
// scalars of the right dtype, casts, views, reductions). Used by decomposition and gradient rules
// (lib/Ops) and by the training-step construction (lib/Autodiff).
#pragma once

#include "tensorc/IR/Rewriter.h"

#include <string>
#include <vector>

namespace tensorc::ops {

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

} // namespace tensorc::ops
