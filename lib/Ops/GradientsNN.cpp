// Gradient rules of matrix products, convolution and pooling.
#include "GradBuilder.h"
#include "OpGroups.h"

#include <cmath>

namespace tensorc::ops {

namespace {

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
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> stride, AttrReader(b.attrs()).getStaticInts("stride"));
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
  int64_t window =
      std::accumulate(kernel.begin(), kernel.end(), int64_t(1), std::multiplies<int64_t>());
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

} // namespace

Status registerNNGradientRules(OpRegistry &registry) {
  TC_RETURN_IF_ERROR(registry.setGradient(OpId::Mm, matmulGrad<OpId::Mm>));
  TC_RETURN_IF_ERROR(registry.setGradient(OpId::Bmm, matmulGrad<OpId::Bmm>));
  TC_RETURN_IF_ERROR(registry.setGradient(OpId::Convolution, convolutionGrad));
  TC_RETURN_IF_ERROR(registry.setGradient(OpId::MaxPool, maxPoolGrad));
  return registry.setGradient(OpId::AvgPool, avgPoolGrad);
}

} // namespace tensorc::ops
