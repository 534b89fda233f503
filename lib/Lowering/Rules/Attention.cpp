// Attention: softmax(q.k^T * scale [+ mask]).v as one template over dense q, k, v and mask (the
// CUDA flash or row kernel), when enabled for the target.
#include "Rules.h"

namespace tensorc::loop {

namespace {

/// Dense operands (realized when they are views), constant head dims of at most 256.
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
  a.q = context.realize(node.input(0));
  a.k = context.realize(node.input(1));
  a.v = context.realize(node.input(2));
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
