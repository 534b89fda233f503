// Attention: softmax(q.k^T * scale [+ mask]).v as one template over dense q, k, v and mask (the
// CUDA flash or row kernel), when enabled for the target.
#include "Rules.h"

namespace tensorc::loop {

namespace {

/// `value` read in place when it is a strided view whose head dim has unit stride and whose
/// offset and other strides are constant multiples of 8 elements (the flash kernel copies 16-byte
/// chunks of rows: the heads of a Q/K/V projection's result qualify); else a dense copy.
StridedView attentionOperand(LowerContext &context, const Value *value) {
  const std::vector<SymInt> &shape = value->type().shape;
  StridedView view = context.stridedView(value);
  auto aligned = [](const SymInt &n) {
    std::optional<int64_t> c = n.constant();
    return c && *c % 8 == 0;
  };
  bool usable = view.strides.back() == SymInt(1) && aligned(view.offset);
  for (size_t d = 0; d + 1 < shape.size(); ++d)
    usable = usable && (aligned(view.strides[d]) || isOne(shape[d]));
  if (usable)
    return view;
  return {context.realize(value), SymInt(0), contiguousStrides(shape)};
}

/// Whether a 4-D attention result is read only as [b, l, h, ev] (permute [0, 2, 1, 3], what
/// merging the heads back does): then it is stored so and those reads are dense.
bool storedHeadsLast(LowerContext &context, const Node &node) {
  if (node.output()->type().rank() != 4)
    return false;
  const std::vector<const Node *> &users = context.users(node.output());
  if (users.empty())
    return false;
  for (const Node *user : users)
    if (!user || user->opId() != OpId::Permute ||
        user->attr("dims").asInts() !=
            std::vector<SymInt>{SymInt(0), SymInt(2), SymInt(1), SymInt(3)})
      return false;
  return true;
}

/// Strided operands (see attentionOperand), constant head dims of at most 256.
Status lowerAttention(LowerContext &context, const Node &node) {
  const TensorType &q = node.input(0)->type(), &v = node.input(2)->type();
  const TensorType &outType = node.output()->type();
  size_t rank = q.rank();
  const Value *mask = node.inputs().size() > 3 ? node.input(3) : nullptr;
  std::optional<int64_t> e = q.shape[rank - 1].constant(), ev = v.shape[rank - 1].constant();
  if (!context.options().attentionTemplates)
    return context.fallback(node, "attention kernels are CUDA-only (--target cuda)");
  if (!e || !ev || *e < 1 || *ev < 1 || *e > 256 || *ev > 256 || rank < 2)
    return context.fallback(node, "head dims must be static, from 1 to 256");
  LoopNode loop;
  loop.templateKind = LoopNode::TemplateKind::Attention;
  LoopNode::Attention &a = loop.attention;
  a.q = attentionOperand(context, node.input(0));
  a.k = attentionOperand(context, node.input(1));
  a.v = attentionOperand(context, node.input(2));
  for (size_t d = 0; d + 2 < rank; ++d) {
    a.batch = a.batch * q.shape[d];
    a.batchDims.push_back(q.shape[d]);
  }
  a.l = q.shape[rank - 2];
  a.s = node.input(1)->type().shape[rank - 2];
  if (mask) {
    // Dense row-major strides of the mask, aligned to the scores' trailing dims [..., l, s];
    // its size-1 dims and the dims it lacks broadcast (stride 0).
    const TensorType &m = mask->type();
    a.mask.buffer = context.realize(mask);
    a.mask.offset = SymInt(0);
    a.mask.strides.assign(rank, SymInt(0));
    SymInt stride(1);
    for (size_t i = 0; i < m.rank(); ++i) {
      const SymInt &dim = m.shape[m.rank() - 1 - i];
      if (dim.constant() != std::optional<int64_t>(1))
        a.mask.strides[rank - 1 - i] = stride;
      stride = stride * dim;
    }
  }
  a.e = *e;
  a.ev = *ev;
  a.scale = AttrReader(node.attrs()).getFloat("scale");
  a.safeSoftmax = AttrReader(node.attrs()).getBool("safe_softmax");
  loop.origins = {shortName(node.op())};
  if (storedHeadsLast(context, node)) {
    // Stored [b, l, h, ev]; the value reads that buffer through its permutation. The buffer
    // has a name of its own: it is not the value's layout (what `tensorc bisect` compares).
    const std::vector<SymInt> &s = outType.shape;
    std::vector<SymInt> stored = {s[0], s[2], s[1], s[3]};
    std::vector<SymInt> dense = contiguousStrides(stored);
    a.outStrides = {dense[0], dense[2], dense[1], dense[3]};
    int id = context.addTemplate(std::move(loop),
                                 context.uniqueBufferName(node.output()->name() + "_heads_merged"),
                                 TensorType(outType.dtype, stored));
    context.setPermutedView(node.output(), id, {0, 2, 1, 3});
    context.setOrigins(node.output(), {shortName(node.op())});
    return Status::ok();
  }
  int id = context.addTemplate(std::move(loop), node.output()->name(), outType);
  context.setBuffer(node.output(), id);
  context.setOrigins(node.output(), {shortName(node.op())});
  return Status::ok();
}

} // namespace

void addAttentionRules(RuleTable &table) {
  table.add({OpId::ScaledDotProductAttention}, lowerAttention);
}

} // namespace tensorc::loop
