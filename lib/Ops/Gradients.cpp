// Gradient rules (reverse-mode derivatives) of the primitive ops, kept together the way ATen's
// derivatives.yaml is: they share the broadcasting and masking helpers below.
#include "DecomposeHelpers.h"
#include "OpGroups.h"
#include "OpHelpers.h"

#include "tensorc/Support/StrCat.h"

#include <cmath>
#include <numeric>

namespace tensorc::ops {

namespace {

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
    AttrMap fillAttrs{{"size", Attribute(type.shape)},
                      {"fill_value", isFloating(type.dtype) ? Attribute(value)
                                                            : Attribute(int64_t(value))},
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
std::vector<Value *> only0(const Node &node, Value *g) {
  std::vector<Value *> grads(node.inputs().size(), nullptr);
  grads[0] = g;
  return grads;
}

// ---- Elementwise -------------------------------------------------------------------------

/// d out / d x times g for the one-input float ops, from x, out and g.
Expected<Value *> unaryDerivative(GradBuilder &b, OpId id, Value *x, Value *out, Value *g) {
  DType dt = x->type().dtype;
  auto k = [&](double value) { return b.scalar(value, dt); };
  switch (id) {
  case OpId::Neg:
    return b.unary(OpId::Neg, g);
  case OpId::Abs: {
    TC_ASSIGN_OR_RETURN(Value * sign, b.unary(OpId::Sign, x));
    return b.mul(g, sign);
  }
  case OpId::Exp:
    return b.mul(g, out);
  case OpId::Log:
    return b.div(g, x);
  case OpId::Sqrt: { // g / (2 sqrt(x))
    TC_ASSIGN_OR_RETURN(Value * twice, b.binaryScalar(OpId::Mul, out, 2.0));
    return b.div(g, twice);
  }
  case OpId::Rsqrt: { // -g out^3 / 2
    TC_ASSIGN_OR_RETURN(Value * sq, b.mul(out, out));
    TC_ASSIGN_OR_RETURN(Value * cube, b.mul(sq, out));
    TC_ASSIGN_OR_RETURN(Value * scaled, b.binaryScalar(OpId::Mul, cube, -0.5));
    return b.mul(g, scaled);
  }
  case OpId::Reciprocal: { // -g out^2
    TC_ASSIGN_OR_RETURN(Value * sq, b.mul(out, out));
    TC_ASSIGN_OR_RETURN(Value * neg, b.unary(OpId::Neg, sq));
    return b.mul(g, neg);
  }
  case OpId::Tanh: { // g (1 - out^2)
    TC_ASSIGN_OR_RETURN(Value * sq, b.mul(out, out));
    TC_ASSIGN_OR_RETURN(Value * one, k(1.0));
    TC_ASSIGN_OR_RETURN(Value * d, b.sub(one, sq));
    return b.mul(g, d);
  }
  case OpId::Sigmoid: { // g out (1 - out)
    TC_ASSIGN_OR_RETURN(Value * one, k(1.0));
    TC_ASSIGN_OR_RETURN(Value * rest, b.sub(one, out));
    TC_ASSIGN_OR_RETURN(Value * d, b.mul(out, rest));
    return b.mul(g, d);
  }
  case OpId::Erf: { // g 2/sqrt(pi) exp(-x^2)
    TC_ASSIGN_OR_RETURN(Value * sq, b.mul(x, x));
    TC_ASSIGN_OR_RETURN(Value * neg, b.unary(OpId::Neg, sq));
    TC_ASSIGN_OR_RETURN(Value * e, b.unary(OpId::Exp, neg));
    TC_ASSIGN_OR_RETURN(Value * d, b.binaryScalar(OpId::Mul, e, 2.0 / std::sqrt(M_PI)));
    return b.mul(g, d);
  }
  case OpId::Sin: {
    TC_ASSIGN_OR_RETURN(Value * c, b.unary(OpId::Cos, x));
    return b.mul(g, c);
  }
  case OpId::Cos: {
    TC_ASSIGN_OR_RETURN(Value * s, b.unary(OpId::Sin, x));
    TC_ASSIGN_OR_RETURN(Value * neg, b.unary(OpId::Neg, s));
    return b.mul(g, neg);
  }
  case OpId::Tan: { // g (1 + out^2)
    TC_ASSIGN_OR_RETURN(Value * sq, b.mul(out, out));
    TC_ASSIGN_OR_RETURN(Value * d, b.binaryScalar(OpId::Add, sq, 1.0));
    return b.mul(g, d);
  }
  case OpId::Sinh: {
    TC_ASSIGN_OR_RETURN(Value * c, b.unary(OpId::Cosh, x));
    return b.mul(g, c);
  }
  case OpId::Cosh: {
    TC_ASSIGN_OR_RETURN(Value * s, b.unary(OpId::Sinh, x));
    return b.mul(g, s);
  }
  case OpId::Asin:
  case OpId::Acos:
  case OpId::Atan:
  case OpId::Asinh:
  case OpId::Acosh:
  case OpId::Atanh: {
    // 1/sqrt(1-x^2), -1/sqrt(1-x^2), 1/(1+x^2), 1/sqrt(x^2+1), 1/sqrt(x^2-1), 1/(1-x^2).
    TC_ASSIGN_OR_RETURN(Value * sq, b.mul(x, x));
    TC_ASSIGN_OR_RETURN(Value * one, k(1.0));
    Value *base = nullptr;
    if (id == OpId::Asin || id == OpId::Acos || id == OpId::Atanh) {
      TC_ASSIGN_OR_RETURN(base, b.sub(one, sq));
    } else if (id == OpId::Acosh) {
      TC_ASSIGN_OR_RETURN(base, b.sub(sq, one));
    } else {
      TC_ASSIGN_OR_RETURN(base, b.add(sq, one));
    }
    if (id != OpId::Atan && id != OpId::Atanh) {
      TC_ASSIGN_OR_RETURN(base, b.unary(OpId::Sqrt, base));
    }
    TC_ASSIGN_OR_RETURN(Value * d, b.div(g, base));
    return id == OpId::Acos ? b.unary(OpId::Neg, d) : Expected<Value *>(d);
  }
  case OpId::Relu: {
    TC_ASSIGN_OR_RETURN(Value * zero, k(0.0));
    TC_ASSIGN_OR_RETURN(Value * positive, b.binary(OpId::Gt, out, zero));
    return b.mask(positive, g);
  }
  case OpId::Silu: { // g s (1 + x (1 - s)), s = sigmoid(x)
    TC_ASSIGN_OR_RETURN(Value * s, b.unary(OpId::Sigmoid, x));
    TC_ASSIGN_OR_RETURN(Value * one, k(1.0));
    TC_ASSIGN_OR_RETURN(Value * rest, b.sub(one, s));
    TC_ASSIGN_OR_RETURN(Value * xr, b.mul(x, rest));
    TC_ASSIGN_OR_RETURN(Value * inner, b.add(one, xr));
    TC_ASSIGN_OR_RETURN(Value * d, b.mul(s, inner));
    return b.mul(g, d);
  }
  default:
    return b.fail("no derivative for this elementwise op");
  }
}

template <OpId Id> Grads unaryGrad(GradContext &context, const OpRegistry &registry) {
  GradBuilder b(context, registry);
  TC_ASSIGN_OR_RETURN(Value * g, unaryDerivative(b, Id, b.input(0), b.result(), b.grad()));
  TC_ASSIGN_OR_RETURN(g, b.fit(g, b.input(0)));
  return only0(b.node(), g);
}

/// floor, ceil, round, sign: piecewise constant, zero almost everywhere; full_like, zeros_like:
/// independent of the input's values.
Grads zeroGrad(GradContext &context, const OpRegistry &) {
  return std::vector<Value *>(context.node().inputs().size(), nullptr);
}

Grads convertGrad(GradContext &context, const OpRegistry &registry) {
  GradBuilder b(context, registry);
  if (!isFloating(b.input(0)->type().dtype))
    return zeroGrad(context, registry);
  TC_ASSIGN_OR_RETURN(Value * g, b.cast(b.grad(), b.input(0)->type().dtype));
  return only0(b.node(), g);
}

Grads identityGrad(GradContext &context, const OpRegistry &registry) {
  GradBuilder b(context, registry);
  return only0(b.node(), b.grad());
}

template <bool Subtract> Grads addSubGrad(GradContext &context, const OpRegistry &registry) {
  GradBuilder b(context, registry);
  Value *g = b.grad();
  double alpha = b.attrs().at("alpha").asScalar();
  TC_ASSIGN_OR_RETURN(Value * ga, b.fit(g, b.input(0)));
  Value *gb = g;
  if (Subtract || alpha != 1.0) {
    TC_ASSIGN_OR_RETURN(gb, b.binaryScalar(OpId::Mul, g, Subtract ? -alpha : alpha));
  }
  TC_ASSIGN_OR_RETURN(gb, b.fit(gb, b.input(1)));
  return std::vector<Value *>{ga, gb};
}

Grads mulGrad(GradContext &context, const OpRegistry &registry) {
  GradBuilder b(context, registry);
  Value *g = b.grad(), *x = b.input(0), *y = b.input(1);
  TC_ASSIGN_OR_RETURN(Value * ga, b.mul(g, y));
  TC_ASSIGN_OR_RETURN(ga, b.fit(ga, x));
  TC_ASSIGN_OR_RETURN(Value * gb, b.mul(g, x));
  TC_ASSIGN_OR_RETURN(gb, b.fit(gb, y));
  return std::vector<Value *>{ga, gb};
}

Grads divGrad(GradContext &context, const OpRegistry &registry) {
  GradBuilder b(context, registry);
  if (!b.attrs().at("rounding_mode").isNone()) // floor/trunc division: piecewise constant
    return zeroGrad(context, registry);
  Value *g = b.grad(), *x = b.input(0), *y = b.input(1);
  TC_ASSIGN_OR_RETURN(Value * ga, b.div(g, y)); // g / y
  TC_ASSIGN_OR_RETURN(Value * q, b.div(b.result(), y));
  TC_ASSIGN_OR_RETURN(Value * gq, b.mul(g, q)); // -g x / y^2 = -g out / y
  TC_ASSIGN_OR_RETURN(Value * gb, b.unary(OpId::Neg, gq));
  TC_ASSIGN_OR_RETURN(ga, b.fit(ga, x));
  TC_ASSIGN_OR_RETURN(gb, b.fit(gb, y));
  return std::vector<Value *>{ga, gb};
}

Grads powGrad(GradContext &context, const OpRegistry &registry) {
  GradBuilder b(context, registry);
  Value *g = b.grad(), *x = b.input(0), *e = b.input(1), *out = b.result();
  DType dt = out->type().dtype;
  // d/dx = e x^(e-1); x^(e-1) as a pow keeps x = 0 finite where e >= 1.
  TC_ASSIGN_OR_RETURN(Value * em1, b.binaryScalar(OpId::Sub, e, 1.0));
  TC_ASSIGN_OR_RETURN(Value * xcast, b.cast(x, dt));
  TC_ASSIGN_OR_RETURN(Value * p, b.binary(OpId::Pow, xcast, em1));
  TC_ASSIGN_OR_RETURN(Value * ep, b.mul(e, p));
  TC_ASSIGN_OR_RETURN(Value * ga, b.mul(g, ep));
  TC_ASSIGN_OR_RETURN(ga, b.fit(ga, x));
  Value *gb = nullptr;
  if (isFloating(e->type().dtype)) {
    // d/de = out log(x), taken as 0 where x == 0 (torch's convention).
    TC_ASSIGN_OR_RETURN(Value * logx, b.unary(OpId::Log, xcast));
    TC_ASSIGN_OR_RETURN(Value * d, b.mul(out, logx));
    TC_ASSIGN_OR_RETURN(Value * zero, b.scalar(0.0, dt));
    TC_ASSIGN_OR_RETURN(Value * nonzero, b.binary(OpId::Ne, xcast, zero));
    TC_ASSIGN_OR_RETURN(Value * gd, b.mul(g, d));
    TC_ASSIGN_OR_RETURN(gb, b.mask(nonzero, gd));
    TC_ASSIGN_OR_RETURN(gb, b.fit(gb, e));
  }
  if (!isFloating(x->type().dtype))
    ga = nullptr;
  return std::vector<Value *>{ga, gb};
}

/// maximum/minimum: the gradient goes to the chosen input, split evenly on ties (as torch does).
template <OpId Id> Grads extremumGrad(GradContext &context, const OpRegistry &registry) {
  GradBuilder b(context, registry);
  Value *g = b.grad(), *x = b.input(0), *y = b.input(1);
  TC_ASSIGN_OR_RETURN(Value * xWins, b.binary(Id == OpId::Maximum ? OpId::Gt : OpId::Lt, x, y));
  TC_ASSIGN_OR_RETURN(Value * tie, b.binary(OpId::Eq, x, y));
  TC_ASSIGN_OR_RETURN(Value * half, b.binaryScalar(OpId::Mul, g, 0.5));
  TC_ASSIGN_OR_RETURN(Value * tieShare, b.mask(tie, half));
  TC_ASSIGN_OR_RETURN(Value * ga, b.emit(OpId::Where, {xWins, g, tieShare}));
  TC_ASSIGN_OR_RETURN(Value * yWins, b.binary(Id == OpId::Maximum ? OpId::Lt : OpId::Gt, x, y));
  TC_ASSIGN_OR_RETURN(Value * gb, b.emit(OpId::Where, {yWins, g, tieShare}));
  TC_ASSIGN_OR_RETURN(ga, b.fit(ga, x));
  TC_ASSIGN_OR_RETURN(gb, b.fit(gb, y));
  return std::vector<Value *>{ga, gb};
}

Grads whereGrad(GradContext &context, const OpRegistry &registry) {
  GradBuilder b(context, registry);
  Value *g = b.grad(), *cond = b.input(0);
  TC_ASSIGN_OR_RETURN(Value * ga, b.mask(cond, g));
  TC_ASSIGN_OR_RETURN(Value * notCond, b.unary(OpId::LogicalNot, cond));
  TC_ASSIGN_OR_RETURN(Value * gb, b.mask(notCond, g));
  TC_ASSIGN_OR_RETURN(ga, b.fit(ga, b.input(1)));
  TC_ASSIGN_OR_RETURN(gb, b.fit(gb, b.input(2)));
  return std::vector<Value *>{nullptr, ga, gb};
}

// ---- Reductions --------------------------------------------------------------------------

/// The reduced dims of a sum/amax node, normalized (all dims when the list is empty).
Expected<std::vector<size_t>> reducedDims(GradBuilder &b) {
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                      AttrReader(b.attrs()).getStaticInts("dim"));
  return normalizeDims(dims, b.input(0)->type().rank(), true);
}

/// A reduction's result gradient reshaped to keepdim form and broadcast over the input.
Expected<Value *> expandReduced(GradBuilder &b, Value *g) {
  const TensorType &in = b.input(0)->type();
  TC_ASSIGN_OR_RETURN(std::vector<size_t> dims, reducedDims(b));
  Shape kept = in.shape;
  for (size_t d : dims)
    kept[d] = SymInt(1);
  TC_ASSIGN_OR_RETURN(g, b.view(g, kept));
  return b.expand(g, in.shape);
}

Grads sumGrad(GradContext &context, const OpRegistry &registry) {
  GradBuilder b(context, registry);
  TC_ASSIGN_OR_RETURN(Value * g, expandReduced(b, b.grad()));
  TC_ASSIGN_OR_RETURN(g, b.cast(g, b.input(0)->type().dtype));
  return only0(b.node(), g);
}

/// amax/amin: the gradient is shared evenly among the elements equal to the extremum.
Grads extremumReduceGrad(GradContext &context, const OpRegistry &registry) {
  GradBuilder b(context, registry);
  Value *x = b.input(0);
  TC_ASSIGN_OR_RETURN(Value * out, expandReduced(b, b.result()));
  TC_ASSIGN_OR_RETURN(Value * hit, b.binary(OpId::Eq, x, out));
  TC_ASSIGN_OR_RETURN(Value * hits, b.cast(hit, x->type().dtype));
  TC_ASSIGN_OR_RETURN(std::vector<size_t> dims, reducedDims(b));
  std::vector<int64_t> dimList(dims.begin(), dims.end());
  TC_ASSIGN_OR_RETURN(Value * count, b.reduce(OpId::Sum, hits, Attribute(dimList), true));
  TC_ASSIGN_OR_RETURN(Value * g, expandReduced(b, b.grad()));
  TC_ASSIGN_OR_RETURN(Value * share, b.div(g, count));
  TC_ASSIGN_OR_RETURN(Value * gx, b.mul(share, hits));
  return only0(b.node(), gx);
}

// ---- Linear algebra ----------------------------------------------------------------------

/// mm and bmm: ga = g . b^T, gb = a^T . g.
template <OpId Id> Grads matmulGrad(GradContext &context, const OpRegistry &registry) {
  GradBuilder b(context, registry);
  Value *g = b.grad(), *x = b.input(0), *y = b.input(1);
  TC_ASSIGN_OR_RETURN(Value * yt, b.transposeLast2(y));
  TC_ASSIGN_OR_RETURN(Value * ga, b.emit(Id, {g, yt}));
  TC_ASSIGN_OR_RETURN(Value * xt, b.transposeLast2(x));
  TC_ASSIGN_OR_RETURN(Value * gb, b.emit(Id, {xt, g}));
  return std::vector<Value *>{ga, gb};
}

/// Static spatial dims of a convolution input/output, or an error naming the value.
Expected<std::vector<int64_t>> staticSpatial(GradBuilder &b, const Value *value) {
  std::optional<std::vector<int64_t>> dims = value->type().staticShape();
  if (!dims)
    return b.fail(strCat("the gradient needs static spatial dims; %", value->name(), " is ",
                         value->type().str()));
  return std::vector<int64_t>(dims->begin() + 2, dims->end());
}

Expected<std::vector<int64_t>> spatialList(GradBuilder &b, const char *name, size_t dims) {
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> values, AttrReader(b.attrs()).getStaticInts(name));
  if (values.size() == 1)
    values.assign(dims, values[0]);
  if (values.size() != dims)
    return b.fail(strCat(name, " has ", values.size(), " entries for ", dims, " spatial dims"));
  return values;
}

Grads convolutionGrad(GradContext &context, const OpRegistry &registry) {
  GradBuilder b(context, registry);
  Value *g = b.grad(), *x = b.input(0), *w = b.input(1);
  AttrReader attrs(b.attrs());
  if (attrs.getBool("transposed"))
    return b.fail("no gradient for transposed convolutions");
  size_t spatial = x->type().rank() - 2;
  int64_t groups = attrs.getInt("groups");
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> stride, spatialList(b, "stride", spatial));
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> padding, spatialList(b, "padding", spatial));
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> dilation, spatialList(b, "dilation", spatial));
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> inSize, staticSpatial(b, x));
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> outSize, staticSpatial(b, b.result()));
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, staticSpatial(b, w));

  // grad input: the transposed convolution of g with the same weight; output_padding recovers
  // the input rows the forward stride skipped.
  std::vector<int64_t> outputPadding(spatial);
  for (size_t d = 0; d < spatial; ++d)
    outputPadding[d] = inSize[d] - ((outSize[d] - 1) * stride[d] - 2 * padding[d] +
                                    dilation[d] * (kernel[d] - 1) + 1);
  AttrMap transposedAttrs{{"stride", Attribute(stride)},
                          {"padding", Attribute(padding)},
                          {"dilation", Attribute(dilation)},
                          {"transposed", Attribute(true)},
                          {"output_padding", Attribute(outputPadding)},
                          {"groups", Attribute(groups)}};
  TC_ASSIGN_OR_RETURN(Value * gx, b.emit(OpId::Convolution, {g, w, nullptr}, transposedAttrs));

  // grad weight: a convolution over the batch. With Cg = Cin / groups input channels per group,
  // x as [Cg, groups*N, spatial] (batch Cg) convolved with g as [Cout, N, out spatial] (groups
  // groups), stride and dilation swapped, gives [Cg, Cout, >= kernel].
  const Shape &xs = x->type().shape;
  SymInt n = xs[0];
  std::optional<int64_t> cin = xs[1].constant();
  if (!cin)
    return b.fail("the gradient needs a static channel count");
  int64_t cg = *cin / groups;
  Shape split{n, SymInt(groups), SymInt(cg)};
  for (int64_t s : inSize)
    split.emplace_back(s);
  TC_ASSIGN_OR_RETURN(Value * xv, b.view(x, split));
  std::vector<int64_t> order{2, 1, 0};
  for (size_t d = 0; d < spatial; ++d)
    order.push_back(int64_t(3 + d));
  TC_ASSIGN_OR_RETURN(Value * xp, b.permute(xv, order));
  Shape merged{SymInt(cg), SymInt(groups) * n};
  for (int64_t s : inSize)
    merged.emplace_back(s);
  TC_ASSIGN_OR_RETURN(Value * xm, b.view(xp, merged));
  std::vector<int64_t> swap01{1, 0};
  for (size_t d = 0; d < spatial; ++d)
    swap01.push_back(int64_t(2 + d));
  TC_ASSIGN_OR_RETURN(Value * gp, b.permute(g, swap01));
  AttrMap weightAttrs{{"stride", Attribute(dilation)},
                      {"padding", Attribute(padding)},
                      {"dilation", Attribute(stride)},
                      {"groups", Attribute(groups)}};
  TC_ASSIGN_OR_RETURN(Value * gw, b.emit(OpId::Convolution, {xm, gp, nullptr}, weightAttrs));
  for (size_t d = 0; d < spatial; ++d) {
    std::optional<int64_t> got = gw->type().shape[2 + d].constant();
    if (got && *got != kernel[d]) {
      TC_ASSIGN_OR_RETURN(gw, b.emit(OpId::Slice, {gw},
                                     {{"dim", Attribute(int64_t(2 + d))},
                                      {"start", Attribute(int64_t(0))},
                                      {"end", Attribute(kernel[d])}}));
    }
  }
  TC_ASSIGN_OR_RETURN(gw, b.permute(gw, swap01));
  TC_ASSIGN_OR_RETURN(gw, b.cast(gw, w->type().dtype));

  Value *gbias = nullptr;
  if (b.input(2)) {
    std::vector<int64_t> dims{0};
    for (size_t d = 0; d < spatial; ++d)
      dims.push_back(int64_t(2 + d));
    TC_ASSIGN_OR_RETURN(gbias, b.reduce(OpId::Sum, g, Attribute(dims), false));
    TC_ASSIGN_OR_RETURN(gbias, b.cast(gbias, b.input(2)->type().dtype));
  }
  return std::vector<Value *>{gx, gw, gbias};
}

// ---- Pooling -----------------------------------------------------------------------------

/// max_pool: the argmax of each window (max_pool_with_indices) receives the window's gradient.
Grads maxPoolGrad(GradContext &context, const OpRegistry &registry) {
  GradBuilder b(context, registry);
  Value *x = b.input(0);
  size_t spatial = x->type().rank() - 2;
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, spatialList(b, "kernel_size", spatial));
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> stride,
                      AttrReader(b.attrs()).getStaticInts("stride"));
  if (stride.empty()) {
    stride = kernel;
  } else {
    TC_ASSIGN_OR_RETURN(stride, spatialList(b, "stride", spatial));
  }
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> padding, spatialList(b, "padding", spatial));
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> dilation, spatialList(b, "dilation", spatial));
  std::vector<int64_t> bothSides = padding;
  bothSides.insert(bothSides.end(), padding.begin(), padding.end());
  TC_ASSIGN_OR_RETURN(std::vector<Value *> pooled,
                      b.emitMulti(OpId::MaxPoolWithIndices, {x},
                                  {{"kernel_size", Attribute(kernel)},
                                   {"stride", Attribute(stride)},
                                   {"padding", Attribute(bothSides)},
                                   {"dilation", Attribute(dilation)},
                                   {"ceil_mode", b.attrs().at("ceil_mode")},
                                   {"storage_order", Attribute(int64_t(0))}}));
  // The indices are flat over the whole input: scatter into its flat form.
  SymInt flatOut = b.result()->type().numel();
  TC_ASSIGN_OR_RETURN(Value * index, b.view(pooled[1], {flatOut}));
  TC_ASSIGN_OR_RETURN(Value * src, b.view(b.grad(), {flatOut}));
  TensorType flatIn(x->type().dtype, {x->type().numel()});
  TC_ASSIGN_OR_RETURN(Value * gx, b.scatterAdd(flatIn, 0, index, src));
  TC_ASSIGN_OR_RETURN(gx, b.view(gx, x->type().shape));
  return only0(b.node(), gx);
}

/// avg_pool without padding effects: a depthwise convolution with a constant kernel, whose
/// gradient is the transposed convolution with that kernel.
Grads avgPoolGrad(GradContext &context, const OpRegistry &registry) {
  GradBuilder b(context, registry);
  Value *x = b.input(0);
  AttrReader attrs(b.attrs());
  size_t spatial = x->type().rank() - 2;
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, spatialList(b, "kernel_size", spatial));
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> stride, attrs.getStaticInts("stride"));
  if (stride.empty()) {
    stride = kernel;
  } else {
    TC_ASSIGN_OR_RETURN(stride, spatialList(b, "stride", spatial));
  }
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> padding, spatialList(b, "padding", spatial));
  bool padded = std::any_of(padding.begin(), padding.end(), [](int64_t p) { return p != 0; });
  if (attrs.getBool("ceil_mode") || !attrs.isNone("divisor_override") ||
      (padded && !attrs.getBool("count_include_pad")))
    return b.fail("no gradient for avg_pool with ceil_mode, divisor_override or padding "
                  "excluded from the count");
  std::optional<int64_t> channels = x->type().shape[1].constant();
  if (!channels)
    return b.fail("the gradient needs a static channel count");
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> inSize, staticSpatial(b, x));
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> outSize, staticSpatial(b, b.result()));
  int64_t window = std::accumulate(kernel.begin(), kernel.end(), int64_t(1),
                                   std::multiplies<int64_t>());
  Shape weightShape{SymInt(*channels), SymInt(1)};
  for (int64_t k : kernel)
    weightShape.emplace_back(k);
  TC_ASSIGN_OR_RETURN(Value * weight,
                      b.full(TensorType(x->type().dtype, weightShape), 1.0 / double(window)));
  std::vector<int64_t> outputPadding(spatial), one(spatial, 1);
  for (size_t d = 0; d < spatial; ++d)
    outputPadding[d] = inSize[d] - ((outSize[d] - 1) * stride[d] - 2 * padding[d] + kernel[d]);
  TC_ASSIGN_OR_RETURN(Value * gx, b.emit(OpId::Convolution, {b.grad(), weight, nullptr},
                                         {{"stride", Attribute(stride)},
                                          {"padding", Attribute(padding)},
                                          {"dilation", Attribute(one)},
                                          {"transposed", Attribute(true)},
                                          {"output_padding", Attribute(outputPadding)},
                                          {"groups", Attribute(*channels)}}));
  return only0(b.node(), gx);
}

// ---- Views and data movement -------------------------------------------------------------

/// view, squeeze, unsqueeze: the gradient viewed back.
Grads viewBackGrad(GradContext &context, const OpRegistry &registry) {
  GradBuilder b(context, registry);
  TC_ASSIGN_OR_RETURN(Value * g, b.view(b.grad(), b.input(0)->type().shape));
  return only0(b.node(), g);
}

Grads permuteGrad(GradContext &context, const OpRegistry &registry) {
  GradBuilder b(context, registry);
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> dims, AttrReader(b.attrs()).getStaticInts("dims"));
  size_t rank = dims.size();
  std::vector<int64_t> inverse(rank);
  for (size_t i = 0; i < rank; ++i) {
    TC_ASSIGN_OR_RETURN(size_t d, normalizeDim(dims[i], rank));
    inverse[d] = int64_t(i);
  }
  TC_ASSIGN_OR_RETURN(Value * g, b.permute(b.grad(), inverse));
  return only0(b.node(), g);
}

Grads expandGrad(GradContext &context, const OpRegistry &registry) {
  GradBuilder b(context, registry);
  TC_ASSIGN_OR_RETURN(Value * g, b.sumTo(b.grad(), b.input(0)->type().shape));
  return only0(b.node(), g);
}

/// slice with step 1: the gradient padded back with zeros.
Grads sliceGrad(GradContext &context, const OpRegistry &registry) {
  GradBuilder b(context, registry);
  AttrReader attrs(b.attrs());
  const Shape &in = b.input(0)->type().shape;
  TC_ASSIGN_OR_RETURN(size_t dim, normalizeDim(attrs.getInt("dim"), in.size()));
  if (attrs.getInt("step") != 1)
    return b.fail("no gradient for slices with a step other than 1");
  SymInt size = in[dim];
  SymInt outSize = b.result()->type().shape[dim];
  // Where the slice starts: the before-padding. Negative or out-of-range starts need the size.
  int64_t start = attrs.isNone("start") ? 0 : attrs.getInt("start");
  std::optional<int64_t> staticSize = size.constant();
  if (start < 0) {
    if (!staticSize)
      return b.fail("the gradient of a negative start needs a static dim");
    start = std::max<int64_t>(0, start + *staticSize);
  }
  if (staticSize)
    start = std::min(start, *staticSize);
  SymInt after = size - SymInt(start) - outSize;
  // aten.pad lists (before, after) pairs from the last dim backwards.
  std::vector<SymInt> pads(2 * (in.size() - dim), SymInt(0));
  size_t pair = in.size() - 1 - dim;
  pads[2 * pair] = SymInt(start);
  pads[2 * pair + 1] = after;
  TC_ASSIGN_OR_RETURN(Value * g, b.emit(OpId::Pad, {b.grad()},
                                        {{"pad", Attribute(pads)},
                                         {"mode", Attribute("constant")},
                                         {"value", Attribute(0.0)}}));
  return only0(b.node(), g);
}

/// constant-mode pad with non-negative pads: the gradient sliced back out.
Grads padGrad(GradContext &context, const OpRegistry &registry) {
  GradBuilder b(context, registry);
  AttrReader attrs(b.attrs());
  if (attrs.getString("mode") != "constant")
    return b.fail("no gradient for reflect/replicate/circular padding");
  const std::vector<SymInt> &pads = attrs.getInts("pad");
  const Shape &in = b.input(0)->type().shape;
  Value *g = b.grad();
  for (size_t pair = 0; 2 * pair + 1 < pads.size(); ++pair) {
    size_t dim = in.size() - 1 - pair;
    std::optional<int64_t> before = pads[2 * pair].constant(), after = pads[2 * pair + 1].constant();
    if (!before || !after || *before < 0 || *after < 0)
      return b.fail("the gradient needs constant, non-negative pads");
    if (*before == 0 && *after == 0)
      continue;
    // end as start + size: symbolic sizes are fine since the slice is in range.
    SymInt end = SymInt(*before) + in[dim];
    std::optional<int64_t> endValue = end.constant();
    AttrMap sliceAttrs{{"dim", Attribute(int64_t(dim))}, {"start", Attribute(*before)}};
    if (endValue)
      sliceAttrs.emplace("end", Attribute(*endValue));
    else if (*after != 0)
      return b.fail("the gradient of padding after a symbolic dim is not supported");
    TC_ASSIGN_OR_RETURN(g, b.emit(OpId::Slice, {g}, std::move(sliceAttrs)));
  }
  return only0(b.node(), g);
}

Grads catGrad(GradContext &context, const OpRegistry &registry) {
  GradBuilder b(context, registry);
  const Node &node = b.node();
  TC_ASSIGN_OR_RETURN(size_t dim,
                      normalizeDim(node.attr("dim").asInt(), b.result()->type().rank()));
  std::vector<SymInt> sizes;
  for (const Value *in : node.inputs())
    sizes.push_back(in->type().shape[dim]);
  if (sizes.size() == 1)
    return std::vector<Value *>{b.grad()};
  return b.emitMulti(OpId::Split, {b.grad()},
                     {{"split_sizes", Attribute(sizes)}, {"dim", Attribute(int64_t(dim))}});
}

Grads splitGrad(GradContext &context, const OpRegistry &registry) {
  GradBuilder b(context, registry);
  const Node &node = b.node();
  std::vector<Value *> parts;
  for (size_t i = 0; i < node.numOutputs(); ++i) {
    Value *g = b.grad(i);
    if (!g) {
      TC_ASSIGN_OR_RETURN(g, b.full(node.output(i)->type(), 0.0));
    }
    parts.push_back(g);
  }
  TC_ASSIGN_OR_RETURN(Value * g, b.emit(OpId::Cat, parts, {{"dim", node.attr("dim")}}));
  return only0(node, g);
}

/// gather(self, dim, index): the gradient scattered (added) back to where it was read.
Grads gatherGrad(GradContext &context, const OpRegistry &registry) {
  GradBuilder b(context, registry);
  Value *index = b.input(1);
  TC_ASSIGN_OR_RETURN(Value * g, b.scatterAdd(b.input(0)->type(), b.node().attr("dim").asInt(),
                                              index, b.grad()));
  return std::vector<Value *>{g, nullptr};
}

/// index_select(self, dim, index): as gather, with the index broadcast over the other dims.
Grads indexSelectGrad(GradContext &context, const OpRegistry &registry) {
  GradBuilder b(context, registry);
  const TensorType &out = b.result()->type();
  TC_ASSIGN_OR_RETURN(size_t dim, normalizeDim(b.node().attr("dim").asInt(), out.rank()));
  Shape indexShape(out.rank(), SymInt(1));
  indexShape[dim] = out.shape[dim];
  TC_ASSIGN_OR_RETURN(Value * index, b.view(b.input(1), indexShape));
  TC_ASSIGN_OR_RETURN(index, b.expand(index, out.shape));
  TC_ASSIGN_OR_RETURN(Value * g,
                      b.scatterAdd(b.input(0)->type(), int64_t(dim), index, b.grad()));
  return std::vector<Value *>{g, nullptr};
}

/// embedding(weight, indices): each looked-up row accumulates its gradient.
Grads embeddingGrad(GradContext &context, const OpRegistry &registry) {
  GradBuilder b(context, registry);
  Value *weight = b.input(0), *indices = b.input(1);
  SymInt rows = indices->type().numel();
  SymInt width = weight->type().shape[1];
  TC_ASSIGN_OR_RETURN(Value * index, b.view(indices, {rows, SymInt(1)}));
  TC_ASSIGN_OR_RETURN(index, b.expand(index, {rows, width}));
  TC_ASSIGN_OR_RETURN(Value * src, b.view(b.grad(), {rows, width}));
  TC_ASSIGN_OR_RETURN(Value * g, b.scatterAdd(weight->type(), 0, index, src));
  return std::vector<Value *>{g, nullptr};
}

} // namespace

Status registerGradientRules(OpRegistry &registry) {
  struct Rule {
    OpId id;
    GradientFn fn;
  };
  const Rule rules[] = {
      {OpId::Neg, unaryGrad<OpId::Neg>},
      {OpId::Abs, unaryGrad<OpId::Abs>},
      {OpId::Exp, unaryGrad<OpId::Exp>},
      {OpId::Log, unaryGrad<OpId::Log>},
      {OpId::Sqrt, unaryGrad<OpId::Sqrt>},
      {OpId::Rsqrt, unaryGrad<OpId::Rsqrt>},
      {OpId::Reciprocal, unaryGrad<OpId::Reciprocal>},
      {OpId::Tanh, unaryGrad<OpId::Tanh>},
      {OpId::Sigmoid, unaryGrad<OpId::Sigmoid>},
      {OpId::Erf, unaryGrad<OpId::Erf>},
      {OpId::Sin, unaryGrad<OpId::Sin>},
      {OpId::Cos, unaryGrad<OpId::Cos>},
      {OpId::Tan, unaryGrad<OpId::Tan>},
      {OpId::Asin, unaryGrad<OpId::Asin>},
      {OpId::Acos, unaryGrad<OpId::Acos>},
      {OpId::Atan, unaryGrad<OpId::Atan>},
      {OpId::Sinh, unaryGrad<OpId::Sinh>},
      {OpId::Cosh, unaryGrad<OpId::Cosh>},
      {OpId::Asinh, unaryGrad<OpId::Asinh>},
      {OpId::Acosh, unaryGrad<OpId::Acosh>},
      {OpId::Atanh, unaryGrad<OpId::Atanh>},
      {OpId::Relu, unaryGrad<OpId::Relu>},
      {OpId::Silu, unaryGrad<OpId::Silu>},
      {OpId::Floor, zeroGrad},
      {OpId::Ceil, zeroGrad},
      {OpId::Round, zeroGrad},
      {OpId::Sign, zeroGrad},
      {OpId::FullLike, zeroGrad}, // only the input's shape matters
      {OpId::ZerosLike, zeroGrad},
      {OpId::ConvertElementType, convertGrad},
      {OpId::Clone, identityGrad},
      {OpId::Add, addSubGrad<false>},
      {OpId::Sub, addSubGrad<true>},
      {OpId::Mul, mulGrad},
      {OpId::Div, divGrad},
      {OpId::Pow, powGrad},
      {OpId::Maximum, extremumGrad<OpId::Maximum>},
      {OpId::Minimum, extremumGrad<OpId::Minimum>},
      {OpId::Where, whereGrad},
      {OpId::Sum, sumGrad},
      {OpId::Amax, extremumReduceGrad},
      {OpId::Amin, extremumReduceGrad},
      {OpId::Mm, matmulGrad<OpId::Mm>},
      {OpId::Bmm, matmulGrad<OpId::Bmm>},
      {OpId::Convolution, convolutionGrad},
      {OpId::MaxPool, maxPoolGrad},
      {OpId::AvgPool, avgPoolGrad},
      {OpId::View, viewBackGrad},
      {OpId::Squeeze, viewBackGrad},
      {OpId::Unsqueeze, viewBackGrad},
      {OpId::Permute, permuteGrad},
      {OpId::Expand, expandGrad},
      {OpId::Slice, sliceGrad},
      {OpId::Pad, padGrad},
      {OpId::Cat, catGrad},
      {OpId::Split, splitGrad},
      {OpId::Gather, gatherGrad},
      {OpId::IndexSelect, indexSelectGrad},
      {OpId::Embedding, embeddingGrad},
  };
  for (const Rule &rule : rules)
    TC_RETURN_IF_ERROR(registry.setGradient(rule.id, rule.fn));
  return Status::ok();
}

} // namespace tensorc::ops
