// The builder gradient rules emit their ops with (Gradients.cpp, GradientsNN.cpp): the forward
// node, its result gradients, and the broadcasting and masking helpers the rules share.
#pragma once

#include "DecomposeHelpers.h"
#include "OpHelpers.h"

#include "tensorc/Support/StrCat.h"

#include <numeric>

namespace tensorc::ops {

using Grads = Expected<std::vector<Value *>>;

/// The builder a gradient rule uses: the forward node, its result gradients, and helpers that
/// fit a gradient back onto an input (undo broadcasting, restore the dtype).
class GradBuilder : public OpBuilder {
public:
  GradBuilder(GradContext &context, const OpRegistry &registry)
      : OpBuilder(context, registry, "differentiating " + context.node().describe()),
        context_(context) {}

  const Node &node() const { return context_.node(); }
  Value *input(size_t i) const { return node().input(i); }
  Value *result(size_t i = 0) const { return node().output(i); }
  Value *grad(size_t i = 0) const { return context_.resultGrad(i); }
  const AttrMap &attrs() const { return node().attrs(); }

  Error fail(const std::string &why) const { return makeError(what_, ": ", why); }

  /// Sums `g` over the dims broadcasting added to reach `shape` (leading dims, and size-1 dims
  /// that were expanded).
  Expected<Value *> sumTo(Value *g, const Shape &shape) {
    const Shape &from = g->type().shape;
    if (from == shape)
      return g;
    if (from.size() < shape.size())
      return fail(strCat("gradient ", g->type().str(), " has fewer dims than ", shapeStr(shape)));
    size_t lead = from.size() - shape.size();
    std::vector<int64_t> dims;
    for (size_t i = 0; i < lead; ++i)
      dims.push_back(int64_t(i));
    for (size_t i = 0; i < shape.size(); ++i)
      if (shape[i] == SymInt(1) && from[lead + i] != SymInt(1))
        dims.push_back(int64_t(lead + i));
    if (!dims.empty()) {
      TC_ASSIGN_OR_RETURN(g, reduce(OpId::Sum, g, Attribute(dims), true));
    }
    return view(g, shape);
  }

  /// `g` made the gradient of `x`: broadcasting undone, x's dtype.
  Expected<Value *> fit(Value *g, const Value *x) {
    TC_ASSIGN_OR_RETURN(g, sumTo(g, x->type().shape));
    return cast(g, x->type().dtype);
  }

  /// A tensor of `type` filled with `value`.
  Expected<Value *> full(const TensorType &type, double value) {
    AttrMap fillAttrs{
        {"size", Attribute(type.shape)},
        {"fill_value", isFloating(type.dtype) ? Attribute(value) : Attribute(int64_t(value))},
        {"dtype", Attribute(type.dtype)}};
    return emit(OpId::Full, {}, std::move(fillAttrs));
  }

  /// where(cond, a, 0): `a` where the mask holds, zero elsewhere.
  Expected<Value *> mask(Value *cond, Value *a) {
    TC_ASSIGN_OR_RETURN(Value * zero, scalar(0.0, a->type().dtype));
    return emit(OpId::Where, {cond, a, zero});
  }

  Expected<Value *> permute(Value *x, std::vector<int64_t> dims) {
    return emit(OpId::Permute, {x}, {{"dims", Attribute(dims)}});
  }

  /// x with its last two dims swapped.
  Expected<Value *> transposeLast2(Value *x) {
    std::vector<int64_t> dims(x->type().rank());
    std::iota(dims.begin(), dims.end(), 0);
    std::swap(dims[dims.size() - 1], dims[dims.size() - 2]);
    return permute(x, dims);
  }

  /// zeros(like).scatter(dim, index, src, reduce="add").
  Expected<Value *> scatterAdd(const TensorType &like, int64_t dim, Value *index, Value *src) {
    TC_ASSIGN_OR_RETURN(Value * zeros, full(like, 0.0));
    return emit(OpId::Scatter, {zeros, index, src},
                {{"dim", Attribute(dim)}, {"reduce", Attribute("add")}});
  }

private:
  GradContext &context_;
};

/// The gradient only of input 0 (the others, if any, get none).
inline std::vector<Value *> only0(const Node &node, Value *g) {
  std::vector<Value *> grads(node.inputs().size(), nullptr);
  grads[0] = g;
  return grads;
}

} // namespace tensorc::ops
