// Reductions: a reduction node over the kept dims (x*) reducing the others (r*), its input inlined
// into the body.
#include "Rules.h"

#include "tensorc/Lowering/ExprVisitor.h"

namespace tensorc::loop {

namespace {

/// Merges adjacent reduction dims r_i, r_(i+1) into one when every index of `body` steps r_i as
/// r_(i+1) times its extent (an NHWC tensor's H and W reduced as one run of pixels): one loop
/// with no div/mod to split it (NVRTC 13.0 crashes on such a split with strided loads), and the
/// same elements in the same order. Applied to CUDA-only compiles (LowerOptions::channelsLastConv).
ExprRef collapseReductionDims(ExprRef body, std::vector<SymInt> &ranges) {
  for (size_t i = 0; i + 1 < ranges.size();) {
    std::optional<int64_t> inner = ranges[i + 1].constant();
    std::string outerVar = reductionVar(i), innerVar = reductionVar(i + 1);
    bool mergeable = inner.has_value();
    forEachExpr(body, [&](const Expr &expr) {
      if (!mergeable || (expr.kind != ExprKind::Load && expr.kind != ExprKind::IndirectLoad &&
                         expr.kind != ExprKind::Index))
        return;
      SymInt base = expr.index.substitute({{outerVar, SymInt(0)}, {innerVar, SymInt(0)}});
      SymInt outer = expr.index.substitute({{outerVar, SymInt(1)}, {innerVar, SymInt(0)}}) - base;
      SymInt step = expr.index.substitute({{outerVar, SymInt(0)}, {innerVar, SymInt(1)}}) - base;
      SymInt rebuilt = base + outer * SymInt::symbol(outerVar) + step * SymInt::symbol(innerVar);
      mergeable = rebuilt == expr.index && outer == step * SymInt(*inner);
    });
    if (!mergeable) {
      ++i;
      continue;
    }
    // r_i * inner + r_(i+1) becomes r_i over the product; later dims move down by one.
    std::map<std::string, SymInt> rename = {{outerVar, SymInt(0)},
                                            {innerVar, SymInt::symbol(outerVar)}};
    for (size_t j = i + 2; j < ranges.size(); ++j)
      rename[reductionVar(j)] = SymInt::symbol(reductionVar(j - 1));
    body = mutateWith(body, [&](const ExprRef &expr) {
      if (expr->kind != ExprKind::Load && expr->kind != ExprKind::IndirectLoad &&
          expr->kind != ExprKind::Index)
        return expr;
      return withIndex(expr, expr->index.substitute(rename));
    });
    ranges[i] = ranges[i] * ranges[i + 1];
    ranges.erase(ranges.begin() + std::ptrdiff_t(i + 1));
  }
  return body;
}

constexpr std::pair<OpId, ReduceOp> kReductions[] = {
    {OpId::Sum, ReduceOp::Sum},  {OpId::Prod, ReduceOp::Prod},     {OpId::Amax, ReduceOp::Max},
    {OpId::Amin, ReduceOp::Min}, {OpId::Argmax, ReduceOp::ArgMax}, {OpId::Argmin, ReduceOp::ArgMin},
};

Status lowerReduction(LowerContext &context, const Node &node) {
  const Value *input = node.input(0);
  const std::vector<SymInt> &inShape = input->type().shape;
  const TensorType &outType = node.output()->type();
  AttrReader attrs(node.attrs());
  std::vector<bool> reduced(inShape.size(), false);
  bool keepdim = attrs.getBool("keepdim");
  ReduceOp op = ReduceOp::Sum;
  for (const auto &[id, reduceOp] : kReductions)
    if (id == node.opId())
      op = reduceOp;
  // Before the dims are read: a 0-d input accepts dim 0 and -1 but has no dim to mark.
  if (inShape.empty())
    return context.fallback(node, "a reduction of a scalar");
  if (op == ReduceOp::ArgMax || op == ReduceOp::ArgMin) {
    if (attrs.isNone("dim")) {
      if (keepdim)
        return context.fallback(node, "an index over all dims kept as size-1 dims");
      reduced.assign(inShape.size(), true);
    } else {
      int64_t dim = attrs.getInt("dim");
      reduced[size_t(dim < 0 ? dim + int64_t(inShape.size()) : dim)] = true;
    }
  } else {
    TC_ASSIGN_OR_RETURN(std::vector<int64_t> dims, attrs.getStaticInts("dim"));
    if (dims.empty())
      reduced.assign(inShape.size(), true);
    for (int64_t dim : dims)
      reduced[size_t(dim < 0 ? dim + int64_t(inShape.size()) : dim)] = true;
  }

  LoopNode loop;
  loop.kind = LoopNode::Kind::Reduction;
  loop.name = node.output()->name();
  loop.reduceOp = op;
  // Output dims of size 1 (kept reduced dims among them) get no loop variable.
  Index inIndex;
  for (size_t i = 0; i < inShape.size(); ++i) {
    if (reduced[i]) {
      inIndex.push_back(SymInt::symbol(reductionVar(loop.reductionRanges.size())));
      loop.reductionRanges.push_back(inShape[i]);
    } else if (isOne(inShape[i])) {
      inIndex.push_back(SymInt(0));
    } else {
      inIndex.push_back(SymInt::symbol(loopVar(loop.ranges.size())));
      loop.ranges.push_back(inShape[i]);
    }
  }
  DType bodyType =
      (op == ReduceOp::ArgMax || op == ReduceOp::ArgMin) ? input->type().dtype : outType.dtype;
  ExprRef body = makeCast(context.value(input).load(inIndex), bodyType);
  loop.body = context.simplifyBody(body, loop.ranges, loop.reductionRanges);
  // (CUDA only: CPU compiles with channels-last convolutions keep their reductions as they were.)
  if (context.options().channelsLastConv && !context.options().channelsLastNeedsConstantWeights &&
      op != ReduceOp::ArgMax && op != ReduceOp::ArgMin) {
    // On simplified indices: views (a flatten, then a split) fold back to plain strides first.
    size_t dims = loop.reductionRanges.size();
    loop.body = collapseReductionDims(loop.body, loop.reductionRanges);
    if (loop.reductionRanges.size() != dims)
      loop.body = context.simplifyBody(loop.body, loop.ranges, loop.reductionRanges);
  }
  loop.origins = context.mergedOrigins(node);
  int id = context.addBuffer(node.output()->name(), Buffer::Kind::Intermediate, outType);
  loop.output = id;
  context.addNode(std::move(loop));
  context.setBuffer(node.output(), id);
  return Status::ok();
}

} // namespace

void addReductionRules(RuleTable &table) {
  for (const auto &entry : kReductions)
    table.add({entry.first}, lowerReduction);
  table.fallback(
      {OpId::Mean, OpId::Var, OpId::Softmax, OpId::LogSoftmax, OpId::BatchNorm, OpId::LayerNorm},
      "decomposed before lowering; this case was not");
}

} // namespace tensorc::loop
