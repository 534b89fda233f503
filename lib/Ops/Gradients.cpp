// Gradient rules (reverse-mode derivatives) of the elementwise, reduction and view ops, kept
// together the way ATen's derivatives.yaml is (GradientsNN.cpp: matmul, convolution, pooling).
#include "GradBuilder.h"
#include "OpGroups.h"

#include "tensorc/Support/StrCat.h"

#include <cmath>
#include <numeric>

namespace tensorc::ops {

namespace {

// ---- Elementwise -------------------------------------------------------------------------

/// d out / d x times g for the one-input float ops, from x, out and g.
template <OpId Id>
Expected<Value *> unaryDerivative(GradBuilder &b, Value *x, Value *out, Value *g) {
  DType dt = x->type().dtype;
  auto k = [&](double value) { return b.scalar(value, dt); };
  if constexpr (Id == OpId::Neg) {
    return b.unary(OpId::Neg, g);
  } else if constexpr (Id == OpId::Abs) {
    TC_ASSIGN_OR_RETURN(Value * sign, b.unary(OpId::Sign, x));
    return b.mul(g, sign);
  } else if constexpr (Id == OpId::Exp) {
    return b.mul(g, out);
  } else if constexpr (Id == OpId::Log) {
    return b.div(g, x);
  } else if constexpr (Id == OpId::Sqrt) { // g / (2 sqrt(x))
    TC_ASSIGN_OR_RETURN(Value * twice, b.binaryScalar(OpId::Mul, out, 2.0));
    return b.div(g, twice);
  } else if constexpr (Id == OpId::Rsqrt) { // -g out^3 / 2
    TC_ASSIGN_OR_RETURN(Value * sq, b.mul(out, out));
    TC_ASSIGN_OR_RETURN(Value * cube, b.mul(sq, out));
    TC_ASSIGN_OR_RETURN(Value * scaled, b.binaryScalar(OpId::Mul, cube, -0.5));
    return b.mul(g, scaled);
  } else if constexpr (Id == OpId::Reciprocal) { // -g out^2
    TC_ASSIGN_OR_RETURN(Value * sq, b.mul(out, out));
    TC_ASSIGN_OR_RETURN(Value * neg, b.unary(OpId::Neg, sq));
    return b.mul(g, neg);
  } else if constexpr (Id == OpId::Tanh) { // g (1 - out^2)
    TC_ASSIGN_OR_RETURN(Value * sq, b.mul(out, out));
    TC_ASSIGN_OR_RETURN(Value * one, k(1.0));
    TC_ASSIGN_OR_RETURN(Value * d, b.sub(one, sq));
    return b.mul(g, d);
  } else if constexpr (Id == OpId::Sigmoid) { // g out (1 - out)
    TC_ASSIGN_OR_RETURN(Value * one, k(1.0));
    TC_ASSIGN_OR_RETURN(Value * rest, b.sub(one, out));
    TC_ASSIGN_OR_RETURN(Value * d, b.mul(out, rest));
    return b.mul(g, d);
  } else if constexpr (Id == OpId::Erf) { // g 2/sqrt(pi) exp(-x^2)
    TC_ASSIGN_OR_RETURN(Value * sq, b.mul(x, x));
    TC_ASSIGN_OR_RETURN(Value * neg, b.unary(OpId::Neg, sq));
    TC_ASSIGN_OR_RETURN(Value * e, b.unary(OpId::Exp, neg));
    TC_ASSIGN_OR_RETURN(Value * d, b.binaryScalar(OpId::Mul, e, 2.0 / std::sqrt(M_PI)));
    return b.mul(g, d);
  } else if constexpr (Id == OpId::Sin) {
    TC_ASSIGN_OR_RETURN(Value * c, b.unary(OpId::Cos, x));
    return b.mul(g, c);
  } else if constexpr (Id == OpId::Cos) {
    TC_ASSIGN_OR_RETURN(Value * s, b.unary(OpId::Sin, x));
    TC_ASSIGN_OR_RETURN(Value * neg, b.unary(OpId::Neg, s));
    return b.mul(g, neg);
  } else if constexpr (Id == OpId::Tan) { // g (1 + out^2)
    TC_ASSIGN_OR_RETURN(Value * sq, b.mul(out, out));
    TC_ASSIGN_OR_RETURN(Value * d, b.binaryScalar(OpId::Add, sq, 1.0));
    return b.mul(g, d);
  } else if constexpr (Id == OpId::Sinh) {
    TC_ASSIGN_OR_RETURN(Value * c, b.unary(OpId::Cosh, x));
    return b.mul(g, c);
  } else if constexpr (Id == OpId::Cosh) {
    TC_ASSIGN_OR_RETURN(Value * s, b.unary(OpId::Sinh, x));
    return b.mul(g, s);
  } else if constexpr (Id == OpId::Asin || Id == OpId::Acos || Id == OpId::Atan ||
                       Id == OpId::Asinh || Id == OpId::Acosh || Id == OpId::Atanh) {
    // 1/sqrt(1-x^2), -1/sqrt(1-x^2), 1/(1+x^2), 1/sqrt(x^2+1), 1/sqrt(x^2-1), 1/(1-x^2).
    TC_ASSIGN_OR_RETURN(Value * sq, b.mul(x, x));
    TC_ASSIGN_OR_RETURN(Value * one, k(1.0));
    Value *base = nullptr;
    if (Id == OpId::Asin || Id == OpId::Acos || Id == OpId::Atanh) {
      TC_ASSIGN_OR_RETURN(base, b.sub(one, sq));
    } else if (Id == OpId::Acosh) {
      TC_ASSIGN_OR_RETURN(base, b.sub(sq, one));
    } else {
      TC_ASSIGN_OR_RETURN(base, b.add(sq, one));
    }
    if (Id != OpId::Atan && Id != OpId::Atanh) {
      TC_ASSIGN_OR_RETURN(base, b.unary(OpId::Sqrt, base));
    }
    TC_ASSIGN_OR_RETURN(Value * d, b.div(g, base));
    return Id == OpId::Acos ? b.unary(OpId::Neg, d) : Expected<Value *>(d);
  } else if constexpr (Id == OpId::Relu) {
    TC_ASSIGN_OR_RETURN(Value * zero, k(0.0));
    TC_ASSIGN_OR_RETURN(Value * positive, b.binary(OpId::Gt, out, zero));
    return b.mask(positive, g);
  } else if constexpr (Id == OpId::Silu) { // g s (1 + x (1 - s)), s = sigmoid(x)
    TC_ASSIGN_OR_RETURN(Value * s, b.unary(OpId::Sigmoid, x));
    TC_ASSIGN_OR_RETURN(Value * one, k(1.0));
    TC_ASSIGN_OR_RETURN(Value * rest, b.sub(one, s));
    TC_ASSIGN_OR_RETURN(Value * xr, b.mul(x, rest));
    TC_ASSIGN_OR_RETURN(Value * inner, b.add(one, xr));
    TC_ASSIGN_OR_RETURN(Value * d, b.mul(s, inner));
    return b.mul(g, d);
  } else {
    static_assert(Id != Id, "no derivative for this elementwise op");
  }
}

template <OpId Id> Grads unaryGrad(GradContext &context, const OpRegistry &registry) {
  GradBuilder b(context, registry);
  TC_ASSIGN_OR_RETURN(Value * g, unaryDerivative<Id>(b, b.input(0), b.result(), b.grad()));
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

/// The reduced dims of a sum/amax node, normalized (all dims when the list is empty). A 0-d
/// input accepts dim 0 and -1 and has no dim to reduce, as in the op's inference.
Expected<std::vector<size_t>> reducedDims(GradBuilder &b) {
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                      AttrReader(b.attrs()).getStaticInts("dim"));
  size_t rank = b.input(0)->type().rank();
  TC_ASSIGN_OR_RETURN(std::vector<size_t> normalized, normalizeDims(dims, rank, true));
  if (rank == 0)
    normalized.clear();
  return normalized;
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
  TC_ASSIGN_OR_RETURN(size_t dim, normalizeShapeDim(attrs.getInt("dim"), in.size()));
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
                      normalizeShapeDim(node.attr("dim").asInt(), b.result()->type().rank()));
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
/// A 0-d self has its one element picked (index 0, checked by the kernel): the gradient as is.
Grads indexSelectGrad(GradContext &context, const OpRegistry &registry) {
  GradBuilder b(context, registry);
  const TensorType &out = b.result()->type();
  if (out.rank() == 0)
    return std::vector<Value *>{b.grad(), nullptr};
  TC_ASSIGN_OR_RETURN(size_t dim, normalizeShapeDim(b.node().attr("dim").asInt(), out.rank()));
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
