// fuse-attention: matmul -> [scale] -> [+ mask | where(bool mask, ., -inf)] -> softmax ->
// [where(isnan(.), 0, .)] -> matmul becomes one attention op. The scale may also stand on the
// matmul's operands (q * a and k^T * b, as torch's exporter writes sqrt(scale) on each); the NaN
// guard (torch's safe softmax) becomes the op's safe_softmax. A second mask added through a
// reshape of the scores and back (Swin's shifted windows: scores + bias, viewed as [b, windows,
// heads, l, s] + the window mask, viewed back) joins the first in one mask of the scores' shape.
#include "tensorc/Transforms/FuseAttention.h"

#include "tensorc/IR/Rewriter.h"
#include "tensorc/Support/Log.h"

#include <limits>

namespace tensorc {

namespace {

/// The single value of a constant of one element: a parameter or a prims.constant result.
std::optional<double> scalarConstant(const Graph &graph, const Value *value) {
  const Tensor *data = constantData(graph, value);
  if (!data || data->numel() != 1 || !isFloating(data->dtype()))
    return std::nullopt;
  return data->getDouble(0);
}

bool isMatmul(const Node *node) {
  return node && (node->opId() == OpId::Matmul || node->opId() == OpId::Bmm);
}

bool isReshape(const Node *node) {
  return node && (node->opId() == OpId::Reshape || node->opId() == OpId::View);
}

/// Normalizes a possibly negative dim of a rank-`rank` tensor.
int64_t normalizeDim(int64_t dim, size_t rank) { return dim < 0 ? dim + int64_t(rank) : dim; }

/// Whether `node` swaps exactly the last two dims of its rank-`rank` input.
bool swapsLastTwo(const Node &node, size_t rank) {
  if (rank < 2)
    return false;
  AttrReader attrs(node.attrs());
  if (node.opId() == OpId::Transpose) {
    int64_t a = normalizeDim(attrs.getInt("dim0"), rank),
            b = normalizeDim(attrs.getInt("dim1"), rank);
    return std::min(a, b) == int64_t(rank) - 2 && std::max(a, b) == int64_t(rank) - 1;
  }
  if (node.opId() == OpId::Permute) {
    Expected<std::vector<int64_t>> dims = attrs.getStaticInts("dims");
    if (!dims || dims->size() != rank)
      return false;
    for (size_t d = 0; d < rank; ++d) {
      int64_t want = d + 2 < rank    ? int64_t(d)
                     : d + 2 == rank ? int64_t(rank) - 1
                                     : int64_t(rank) - 2;
      if (normalizeDim((*dims)[d], rank) != want)
        return false;
    }
    return true;
  }
  return false;
}

/// fuse-attention, for every match or only for heads a tiled CUDA kernel runs.
Status fuseAttentionWhere(Graph &graph, const PassContext &context, bool tiledOnly) {
  // Uses in the source graph, by value name (the rewriter keeps names of copied values).
  std::map<std::string, size_t> uses;
  for (const auto &[value, users] : computeUsers(graph))
    uses[value->name()] = users.size();
  const OpDef *attentionDef = context.registry.get(OpId::ScaledDotProductAttention);
  const OpDef *transposeDef = context.registry.get(OpId::Transpose);
  if (!attentionDef || !transposeDef)
    return makeError("fuse-attention: the registry lacks aten.scaled_dot_product_attention or "
                     "aten.transpose");
  const OpDef &attentionOp = *attentionDef, &transposeOp = *transposeDef;
  auto usesOf = [&](const Value *value) {
    auto it = uses.find(value->name());
    return it == uses.end() ? size_t(0) : it->second;
  };
  auto usedOnce = [&](const Value *value) { return usesOf(value) == 1; };
  auto rewrite = [&](RewriteContext &ctx) -> Expected<std::optional<std::vector<Value *>>> {
    const Node &node = ctx.node();
    if (!isMatmul(&node))
      return std::optional<std::vector<Value *>>();
    auto skip = [&](const std::string &why) -> std::optional<std::vector<Value *>> {
      log::debug("fuse-attention", "not fusing at " + node.describe() + ": " + why);
      return std::nullopt;
    };
    Graph &target = ctx.graph();
    Value *probs = ctx.operand(0), *value = ctx.operand(1);
    // Torch's safe softmax as exported: where(isnan(p), 0, p), p used by those two nodes only.
    bool safe = false;
    if (const Node *guard = probs->producer(); guard && guard->opId() == OpId::Where) {
      const Node *isNan = guard->input(0)->producer();
      std::optional<double> zero = scalarConstant(target, guard->input(1));
      Value *guarded = guard->input(2);
      if (!isNan || isNan->opId() != OpId::IsNan || isNan->input(0) != guarded || !zero ||
          *zero != 0.0 || !guarded->producer() || guarded->producer()->opId() != OpId::Softmax)
        return std::optional<std::vector<Value *>>(); // not attention: nothing to say
      if (!usedOnce(probs) || !usedOnce(guard->input(0)) || usesOf(guarded) != 2)
        return skip("the guarded probabilities have other users");
      probs = guarded;
      safe = true;
    }
    const Node *softmax = probs->producer();
    if (!softmax || softmax->opId() != OpId::Softmax)
      return std::optional<std::vector<Value *>>(); // not attention: nothing to say
    size_t rank = probs->type().rank();
    AttrReader softmaxAttrs(softmax->attrs());
    if (normalizeDim(softmaxAttrs.getInt("dim"), rank) != int64_t(rank) - 1)
      return skip("the softmax is not over the last dim");
    if (!softmaxAttrs.isNone("dtype"))
      return skip("the softmax converts its dtype");
    if (!safe && !usedOnce(probs))
      return skip("the probabilities have other users");
    Value *scores = softmax->input(0);
    if (!usedOnce(scores))
      return skip("the scores have other users");

    // scores = [scaled + mask | mask + scaled | scaled], scaled = [qk * c | c * qk | qk / c | qk].
    Value *mask = nullptr;
    double scale = 1.0;
    auto matchScaled = [&](Value *candidate) -> Value * {
      const Node *producer = candidate->producer();
      if (isMatmul(producer))
        return candidate;
      if (!producer || !usedOnce(candidate))
        return nullptr;
      if (producer->opId() == OpId::Div && isMatmul(producer->input(0)->producer())) {
        std::optional<double> c = scalarConstant(target, producer->input(1));
        if (!c || *c == 0)
          return nullptr;
        scale = 1.0 / *c;
        return producer->input(0);
      }
      if (producer->opId() == OpId::Mul)
        for (size_t side : {0, 1})
          if (isMatmul(producer->input(side)->producer()))
            if (std::optional<double> c = scalarConstant(target, producer->input(1 - side))) {
              scale = *c;
              return producer->input(side);
            }
      return nullptr;
    };
    // scaled, or scaled + added (either side): the scaled matmul's value, `added` the other term.
    auto matchMasked = [&](Value *candidate, Value *&added) -> Value * {
      added = nullptr;
      if (Value *found = matchScaled(candidate))
        return found;
      const Node *producer = candidate->producer();
      if (!producer || producer->opId() != OpId::Add || !usedOnce(candidate))
        return nullptr;
      for (size_t side : {0, 1})
        if (Value *found = matchScaled(producer->input(side))) {
          added = producer->input(1 - side);
          return found;
        }
      return nullptr;
    };
    // A bool mask: where(keep, scaled, -inf), or where(drop, -inf, scaled) (ONNX's masked_fill).
    Value *qk = matchMasked(scores, mask);
    const Node *combine = scores->producer();
    bool dropMask = false;
    if (!qk && combine && combine->opId() == OpId::Where &&
               combine->input(0)->type().dtype == DType::Bool) {
      for (size_t side : {1, 2}) {
        std::optional<double> fill = scalarConstant(target, combine->input(3 - side));
        if (!fill || *fill != -std::numeric_limits<double>::infinity() ||
            combine->input(side)->type() != scores->type())
          continue;
        if ((qk = matchScaled(combine->input(side)))) {
          mask = combine->input(0);
          dropMask = side == 2;
          break;
        }
      }
    }
    // Swin's shifted windows: scores = reshape(reshape(scaled [+ mask1]) + mask2), the outer
    // reshape back to the shape of `scaled`, mask2 broadcasting into the inner view.
    Value *viewMask = nullptr, *viewed = nullptr;
    if (!qk && isReshape(combine) && usedOnce(combine->input(0))) {
      const Node *add = combine->input(0)->producer();
      for (size_t side : {0, 1}) {
        if (!add || add->opId() != OpId::Add)
          break;
        Value *inner = add->input(side);
        const Node *view = inner->producer();
        if (!isReshape(view) || !usedOnce(inner) ||
            inner->type().shape != add->output()->type().shape)
          continue;
        Value *pre = view->input(0);
        if (pre->type().shape != scores->type().shape)
          continue;
        Value *first = nullptr;
        Value *found = matchMasked(pre, first);
        if (!found)
          continue;
        qk = found;
        mask = first;
        viewMask = add->input(1 - side);
        viewed = inner;
        break;
      }
    }
    if (!qk)
      return skip("the softmax input is not a (scaled) matmul, plus a mask or masked by one");
    if (!usedOnce(qk))
      return skip("Q.K^T has other users");
    const Node *qkNode = qk->producer();
    Value *query = qkNode->input(0), *keyT = qkNode->input(1);
    // Scales on the operands: (q * a) . (k^T * b) = (q . k^T) * ab.
    auto unscale = [&](Value *&operand) {
      const Node *producer = operand->producer();
      if (!producer || producer->opId() != OpId::Mul || !usedOnce(operand))
        return;
      for (size_t side : {0, 1})
        if (std::optional<double> c = scalarConstant(target, producer->input(1 - side));
            c && producer->input(side)->type() == operand->type()) {
          scale *= *c;
          operand = producer->input(side);
          return;
        }
    };
    unscale(query);
    unscale(keyT);
    const TensorType &q = query->type(), &kt = keyT->type(), &v = value->type();
    if (q.rank() != rank || kt.rank() != rank || v.rank() != rank || rank < 2)
      return skip("query, key and value ranks differ (broadcasting matmuls are not fused)");
    for (size_t d = 0; d + 2 < rank; ++d)
      if (q.shape[d] != kt.shape[d] || q.shape[d] != v.shape[d])
        return skip("batch dims differ");
    if (!isFloating(q.dtype) || kt.dtype != q.dtype || v.dtype != q.dtype)
      return skip("query, key and value do not share a floating dtype");
    if (mask && mask->type().dtype != q.dtype && mask->type().dtype != DType::Bool)
      return skip("the mask's dtype differs from the query's");
    if (viewMask && (viewMask->type().dtype != q.dtype || (mask && mask->type().dtype != q.dtype)))
      return skip("the masks added through the view are not of the query's dtype");
    if (tiledOnly && !tiledAttentionShape(q.dtype, q.shape[rank - 1], v.shape[rank - 1]))
      return skip("no tiled kernel for these heads (f16/bf16 head dims multiples of 16 up to "
                  "128; f32 e a multiple of 4 and ev of 16, up to 64)");
    Value *key = nullptr;
    if (keyT->producer() && swapsLastTwo(*keyT->producer(), rank)) {
      key = keyT->producer()->input(0);
    } else {
      TC_ASSIGN_OR_RETURN(key,
                          ctx.emit(transposeOp, {keyT},
                                   {{"dim0", int64_t(rank) - 2}, {"dim1", int64_t(rank) - 1}}));
    }
    if (viewMask) { // mask = reshape([reshape(expand(mask1)) +] mask2 over the view, back)
      const OpDef *reshapeDef = context.registry.get(OpId::Reshape);
      const OpDef *expandDef = context.registry.get(OpId::Expand);
      const OpDef *addDef = context.registry.get(OpId::Add);
      if (!reshapeDef || !expandDef || !addDef)
        return makeError("fuse-attention: the registry lacks aten.reshape, aten.expand or aten.add");
      auto shapeAttr = [](const char *name, const std::vector<SymInt> &shape) {
        return AttrMap{{name, Attribute(shape)}};
      };
      Value *summed = viewMask;
      if (mask) {
        TC_ASSIGN_OR_RETURN(Value * full,
                            ctx.emit(*expandDef, {mask}, shapeAttr("size", scores->type().shape)));
        TC_ASSIGN_OR_RETURN(Value * asViewed,
                            ctx.emit(*reshapeDef, {full}, shapeAttr("shape", viewed->type().shape)));
        TC_ASSIGN_OR_RETURN(summed, ctx.emit(*addDef, {asViewed, viewMask}));
      } else {
        TC_ASSIGN_OR_RETURN(summed,
                            ctx.emit(*expandDef, {viewMask}, shapeAttr("size", viewed->type().shape)));
      }
      TC_ASSIGN_OR_RETURN(mask,
                          ctx.emit(*reshapeDef, {summed}, shapeAttr("shape", scores->type().shape)));
    }
    if (dropMask) {
      const OpDef *notDef = context.registry.get(OpId::LogicalNot);
      if (!notDef)
        return makeError("fuse-attention: the registry lacks aten.logical_not");
      TC_ASSIGN_OR_RETURN(mask, ctx.emit(*notDef, {mask}, {}));
    }
    Expected<Value *> fused =
        ctx.emit(attentionOp, {query, key, value, mask},
                 {{"scale", Attribute(scale)}, {"safe_softmax", Attribute(safe)}});
    if (!fused)
      return skip(fused.error().message());
    if ((*fused)->type() != node.output()->type())
      return skip("the fused result's type " + (*fused)->type().str() + " differs");
    log::debug("fuse-attention", "fused " + node.describe() +
                                     (safe ? " (safe softmax, scale " : " (scale ") +
                                     std::to_string(scale) +
                                     (!mask                               ? ")"
                                      : mask->type().dtype == DType::Bool ? ", with a bool mask)"
                                                                          : ", with a mask)"));
    return std::optional<std::vector<Value *>>(std::vector<Value *>{*fused});
  };
  TC_ASSIGN_OR_RETURN(Graph rewritten, rewriteGraph(graph, rewrite));
  graph = std::move(rewritten);
  return Status::ok();
}

} // namespace

Status fuseAttention(Graph &graph, const PassContext &context) {
  return fuseAttentionWhere(graph, context, false);
}

Status fuseTiledAttention(Graph &graph, const PassContext &context) {
  return fuseAttentionWhere(graph, context, true);
}

} // namespace tensorc
