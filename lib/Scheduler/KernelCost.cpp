// Bytes and operation counts per kernel, read off the loop IR (buffers, ranges, bodies).
#include "tensorc/Scheduler/KernelCost.h"

#include "tensorc/IR/Type.h"

#include <set>

namespace tensorc::sched {

namespace {

using loop::ExprKind;
using loop::LoopNode;

/// Operations in one evaluation of `body`: each distinct unary, binary and select node once (the
/// backends compute a shared subexpression once per element).
int64_t bodyOps(const loop::ExprRef &body) {
  std::set<const loop::Expr *> seen;
  std::vector<const loop::Expr *> stack{body.get()};
  int64_t ops = 0;
  while (!stack.empty()) {
    const loop::Expr *expr = stack.back();
    stack.pop_back();
    if (!expr || !seen.insert(expr).second)
      continue;
    switch (expr->kind) {
    case ExprKind::Unary:
    case ExprKind::Binary:
    case ExprKind::Select:
      ++ops;
      break;
    case ExprKind::Constant:
    case ExprKind::Load:
    case ExprKind::Index:
    case ExprKind::Cast:
    case ExprKind::IndirectLoad:
      break;
    }
    for (const loop::ExprRef &operand : expr->operands)
      stack.push_back(operand.get());
  }
  return ops;
}

SymInt templateFlops(const LoopNode &node) {
  switch (node.templateKind) {
  case LoopNode::TemplateKind::Gemm:
    return SymInt(2) * node.gemm.batch * node.gemm.m * node.gemm.n * node.gemm.k;
  case LoopNode::TemplateKind::Conv2d: {
    const LoopNode::Conv &conv = node.conv;
    return SymInt(2) * conv.n *
           SymInt(conv.oc * conv.oh * conv.ow * (conv.c / conv.groups) * conv.kh * conv.kw);
  }
  case LoopNode::TemplateKind::Attention: {
    const LoopNode::Attention &attention = node.attention;
    // Q.K^T and P.V, plus the softmax's exp, max, sum and scale per score.
    return attention.batch * attention.l * attention.s *
           SymInt(2 * attention.e + 2 * attention.ev + 4);
  }
  }
  return SymInt(0);
}

} // namespace

KernelCost estimateCost(const loop::LoopProgram &program, const Kernel &kernel) {
  KernelCost cost;
  for (int buffer : kernel.args) {
    const loop::Buffer &b = program.buffers[size_t(buffer)];
    cost.bytes = cost.bytes + b.numel() * SymInt(int64_t(dtypeSize(b.dtype)));
  }
  for (int id : kernel.nodes) {
    const LoopNode &node = program.nodes[size_t(id)];
    switch (node.kind) {
    case LoopNode::Kind::Pointwise:
      cost.flops = cost.flops + numel(node.ranges) * SymInt(bodyOps(node.body));
      break;
    case LoopNode::Kind::Reduction:
      cost.flops = cost.flops + numel(node.ranges) * numel(node.reductionRanges) *
                                    SymInt(bodyOps(node.body) + 1);
      break;
    case LoopNode::Kind::Template:
      cost.flops = cost.flops + templateFlops(node);
      break;
    case LoopNode::Kind::Extern:
      break;
    }
  }
  return cost;
}

} // namespace tensorc::sched
