// Emission helpers shared by the decomposition rules in lib/Ops/*.cpp.
#pragma once

#include "tensorc/IR/Rewriter.h"
#include "tensorc/Ops/OpBuilder.h"

#include <optional>
#include <vector>

namespace tensorc::ops {

/// What a decomposition rule returns: replacement values, or std::nullopt to keep the node.
using DecomposeResult = Expected<std::optional<std::vector<Value *>>>;

inline DecomposeResult keepNode() { return std::optional<std::vector<Value *>>(); }
inline DecomposeResult replaceWith(Value *value) {
  return std::optional<std::vector<Value *>>(std::vector<Value *>{value});
}

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
