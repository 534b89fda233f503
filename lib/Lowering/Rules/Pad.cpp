// pad as an index remap of its input, in every ONNX mode: constant (a masked load, the fill value
// outside), reflect and replicate/edge (a select among in-bounds loads), circular/wrap (a modulo).
// No run-time offsets: the input's loader is read at affine positions, so a producer inlines.
#include "Sampling.h"

namespace tensorc::loop {

namespace {

/// One padded dim: its input size and the padding before it (negative: cropped).
struct PaddedDim {
  size_t dim;
  int64_t size, before, after;
};

/// The value at `index` of a reflect or replicate pad, dims from `k` on still to remap: for each
/// dim, a select among the loads for the positions before, inside and after the input.
ExprRef remapped(const Loader &source, const std::vector<PaddedDim> &dims, bool reflect, size_t k,
                 Index index) {
  if (k == dims.size())
    return source(index);
  const PaddedDim &p = dims[k];
  SymInt pos = index[p.dim] - SymInt(p.before);
  int64_t below = std::max<int64_t>(p.before, 0);
  SymInt before = reflect ? wrapInto(-pos, p.size, 2 * p.size) : SymInt(0);
  SymInt after =
      reflect ? wrapInto(SymInt(2 * (p.size - 1)) - pos, p.size, 2 * p.size) : SymInt(p.size - 1);
  Index at = index;
  at[p.dim] = wrapInto(pos, p.size, below);
  ExprRef value = remapped(source, dims, reflect, k + 1, at);
  ExprRef position = indexExpr(pos);
  at[p.dim] = after;
  value = makeSelect(makeBinary(BinaryOp::Ge, position, i64Constant(p.size)),
                     remapped(source, dims, reflect, k + 1, at), value);
  at[p.dim] = before;
  return makeSelect(makeBinary(BinaryOp::Lt, position, i64Constant(0)),
                    remapped(source, dims, reflect, k + 1, at), value);
}

} // namespace

Status lowerPad(LowerContext &context, const Node &node) {
  const TensorType &inType = node.input(0)->type();
  AttrReader attrs(node.attrs());
  const std::string &mode = attrs.getString("mode");
  Expected<std::vector<int64_t>> pads = attrs.getStaticInts("pad");
  if (!pads)
    return context.fallback(node, "symbolic pad widths");
  std::vector<PaddedDim> dims;
  for (size_t k = 0; k < pads->size() / 2; ++k) {
    int64_t before = (*pads)[2 * k], after = (*pads)[2 * k + 1];
    if (before == 0 && after == 0)
      continue;
    size_t dim = inType.rank() - 1 - k;
    std::optional<int64_t> size = inType.shape[dim].constant();
    if (!size)
      return context.fallback(node, "padding of a symbolic dim");
    if (*size == 0 || node.output()->type().shape[dim] == SymInt(0))
      return context.fallback(node, "padding of an empty dim"); // only a fill, or nothing
    dims.push_back({dim, *size, before, after});
  }
  if (node.output()->type().numel().constant() == std::optional<int64_t>(0))
    return context.fallback(node, "an empty result");
  const Value *input = node.input(0);
  DType dtype = node.output()->type().dtype;
  // Reflect and replicate read the input up to 3 times per padded dim.
  int64_t reads = 1;
  if (mode == "reflect" || mode == "replicate")
    for (size_t k = 0; k < dims.size(); ++k)
      reads *= 3;
  if (context.value(input).buffer < 0 &&
      context.value(input).cost * reads >= context.options().realizeCostThreshold) {
    if (context.options().channelsLastWindows)
      context.materialize(input);
    else
      context.realize(input);
  }
  Loader source = context.value(input).load;
  Loader load;
  if (mode == "constant") {
    double fill = attrs.isNone("value") ? 0.0 : attrs.getFloat("value");
    ExprRef fillValue =
        isFloating(dtype) ? makeConstant(fill, dtype) : makeIntConstant(int64_t(fill), dtype);
    load = [source, dims, fillValue](const Index &index) {
      Index at = index;
      ExprRef mask;
      for (const PaddedDim &p : dims) {
        SymInt pos = index[p.dim] - SymInt(p.before);
        ExprRef inside = insideMask(pos, p.size, -p.before, p.size + p.after - 1);
        if (inside)
          mask = allOf(mask, inside);
        at[p.dim] = wrapInto(pos, p.size, std::max<int64_t>(p.before, 0));
      }
      ExprRef value = source(at);
      return mask ? makeSelect(mask, value, fillValue) : value;
    };
  } else if (mode == "circular") {
    load = [source, dims](const Index &index) {
      Index at = index;
      for (const PaddedDim &p : dims)
        at[p.dim] =
            wrapInto(index[p.dim] - SymInt(p.before), p.size, std::max<int64_t>(p.before, 0));
      return source(at);
    };
  } else if (mode == "reflect" || mode == "replicate") {
    bool reflect = mode == "reflect";
    load = [source, dims, reflect](const Index &index) {
      return remapped(source, dims, reflect, 0, index);
    };
  } else {
    return context.fallback(node, "padding mode '" + mode + "'");
  }
  int cost = context.inputCost(node) + (mode == "constant" ? 3 : 4) * int(dims.size());
  context.setPointwise(node.output(), load, cost, false, context.mergedOrigins(node));
  return Status::ok();
}

} // namespace tensorc::loop
