// Attention: aten.scaled_dot_product_attention, softmax(query . key^T * scale [+ mask | masked by a
// bool mask]) . value. With `safe_softmax`, a row whose softmax is undefined (every key masked
// out: 0 / 0; NaN or infinite scores) weighs every value by 0 and gives 0, as torch's
// _safe_softmax (and the exporters' `where(isnan(softmax), 0, softmax)`) do.
// The fuse-attention pass forms it from the unfused pattern for GPU compiles; the CUDA backend
// runs it as one kernel, everything else on this reference kernel.
#include "OpGroups.h"
#include "OpHelpers.h"

#include "tensorc/Support/StrCat.h"

#include <cmath>
#include <limits>
#include <vector>

namespace tensorc::ops {
namespace {

/// query [..., L, E], key [..., S, E], value [..., S, Ev] with equal leading dims, one float
/// dtype; attn_mask broadcasts to [..., L, S]: additive (query's dtype) or bool (true: the key
/// takes part, as torch's; false: its score is -inf). Result [..., L, Ev].
Expected<std::vector<TensorType>> inferAttention(const InferContext &ctx) {
  const TensorType &q = ctx.input(0), &k = ctx.input(1), &v = ctx.input(2);
  if (!isFloating(q.dtype) || k.dtype != q.dtype || v.dtype != q.dtype)
    return makeError("query, key and value must share one floating dtype, got ", q.str(), ", ",
                     k.str(), ", ", v.str());
  size_t rank = q.rank();
  if (rank < 2 || k.rank() != rank || v.rank() != rank)
    return makeError("query, key and value must have one rank of at least 2, got ", q.str(), ", ",
                     k.str(), ", ", v.str());
  for (size_t d = 0; d + 2 < rank; ++d)
    if (!mayBeEqual(q.shape[d], k.shape[d]) || !mayBeEqual(q.shape[d], v.shape[d]))
      return makeError("batch dims differ: ", q.str(), ", ", k.str(), ", ", v.str());
  const SymInt &e = q.shape[rank - 1], &s = k.shape[rank - 2];
  if (!mayBeEqual(k.shape[rank - 1], e))
    return makeError("key ", k.str(), " must end in the query's embedding dim ", e.str());
  if (!mayBeEqual(v.shape[rank - 2], s))
    return makeError("value ", v.str(), " must have the key's sequence length ", s.str());
  if (ctx.hasInput(3)) {
    const TensorType &mask = ctx.input(3);
    std::vector<SymInt> scores(q.shape.begin(), q.shape.end() - 1);
    scores.push_back(s);
    bool fits = (mask.dtype == q.dtype || mask.dtype == DType::Bool) && mask.rank() <= rank;
    for (size_t i = 0; fits && i < mask.rank(); ++i) {
      const SymInt &dim = mask.shape[mask.rank() - 1 - i];
      fits = dim.constant() == std::optional<int64_t>(1) || mayBeEqual(dim, scores[rank - 1 - i]);
    }
    if (!fits)
      return makeError("attn_mask ", mask.str(), " does not broadcast to the scores ",
                       TensorType(q.dtype, scores).str());
  }
  std::vector<SymInt> out(q.shape.begin(), q.shape.end() - 1);
  out.push_back(v.shape[rank - 1]);
  return std::vector<TensorType>{TensorType(q.dtype, out)};
}

/// In double, one query row at a time: scores, their softmax, the weighted sum of values.
Status runAttention(KernelContext &ctx) {
  const Tensor &q = ctx.input(0), &k = ctx.input(1), &v = ctx.input(2);
  const Tensor *mask = ctx.hasInput(3) ? &ctx.input(3) : nullptr;
  Tensor &out = ctx.output(0);
  size_t rank = q.rank();
  int64_t l = q.dim(rank - 2), e = q.dim(rank - 1), s = k.dim(rank - 2), ev = v.dim(rank - 1);
  int64_t batch = (l != 0 && e != 0) ? q.numel() / (l * e) : 0;
  double scale = ctx.getFloat("scale");
  bool safe = ctx.getBool("safe_softmax");
  // The mask's element for (batch b, row i, key j), broadcasting its size-1 dims.
  std::vector<int64_t> maskStrides;
  if (mask) {
    maskStrides.assign(rank, 0);
    int64_t stride = 1;
    for (size_t i = 0; i < mask->rank(); ++i) {
      size_t d = mask->rank() - 1 - i;
      if (mask->dim(d) != 1)
        maskStrides[rank - 1 - i] = stride;
      stride *= mask->dim(d);
    }
  }
  std::vector<double> scores(size_t(std::max<int64_t>(s, 0)));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < l; ++i) {
      double best = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < s; ++j) {
        double dot = 0;
        for (int64_t x = 0; x < e; ++x)
          dot += q.getDouble((b * l + i) * e + x) * k.getDouble((b * s + j) * e + x);
        double score = dot * scale;
        if (mask) {
          // Batch index b flattens the leading dims: unflatten it against the query's shape.
          int64_t offset = i * maskStrides[rank - 2] + j * maskStrides[rank - 1], rest = b;
          for (size_t d = rank - 2; d-- > 0;) {
            offset += (rest % q.dim(d)) * maskStrides[d];
            rest /= q.dim(d);
          }
          if (mask->dtype() == DType::Bool)
            score = mask->getInt(offset) ? score : -std::numeric_limits<double>::infinity();
          else
            score += mask->getDouble(offset);
        }
        scores[size_t(j)] = score;
        best = std::max(best, score);
      }
      double total = 0;
      for (int64_t j = 0; j < s; ++j)
        total += scores[size_t(j)] = std::exp(scores[size_t(j)] - best);
      if (safe && !(total > 0 && std::isfinite(total))) {
        for (int64_t x = 0; x < ev; ++x)
          out.setDouble((b * l + i) * ev + x, 0.0);
        continue;
      }
      for (int64_t x = 0; x < ev; ++x) {
        double sum = 0;
        for (int64_t j = 0; j < s; ++j)
          sum += scores[size_t(j)] * v.getDouble((b * s + j) * ev + x);
        out.setDouble((b * l + i) * ev + x, sum / total);
      }
    }
  return Status::ok();
}

} // namespace

Status registerAttentionOps(OpRegistry &registry) {
  return registry.add(makeOp(OpId::ScaledDotProductAttention,
                             {tensorParam("query"), tensorParam("key"), tensorParam("value"),
                              optionalTensorParam("attn_mask"), attrParam("scale", AttrKind::Float),
                              attrParam("safe_softmax", AttrKind::Bool, Attribute(false),
                                        /*kwargOnly=*/true)},
                             inferAttention, runAttention));
}

} // namespace tensorc::ops
