// The kernel walker: checks every scheduled kernel once for all backends and dispatches it by kind.
#include "tensorc/Codegen/Common/KernelWalker.h"

#include "tensorc/Lowering/ExprVisitor.h"

#include <map>
#include <optional>
#include <set>

namespace tensorc::codegen {

using loop::LoopNode;

namespace {

Status checkArgs(const loop::LoopProgram &program, const sched::Kernel &kernel) {
  std::set<int> argSet(kernel.args.begin(), kernel.args.end());
  if (argSet.size() != kernel.args.size())
    return makeError("kernel ", kernel.name, ": a buffer appears twice in its args");
  for (int buffer : kernel.args)
    if (buffer < 0 || size_t(buffer) >= program.buffers.size())
      return makeError("kernel ", kernel.name, ": arg buffer ", buffer, " does not exist");
  for (int id : kernel.nodes)
    if (id < 0 || size_t(id) >= program.nodes.size())
      return makeError("kernel ", kernel.name, ": node ", id, " does not exist");
  return Status::ok();
}

Status walkLoop(const loop::LoopProgram &program, const sched::Kernel &kernel,
                KernelVisitor &visitor) {
  size_t k = kernel.outerRanges.size();
  LoopKernel loopKernel;
  loopKernel.elementwise = true;
  for (int id : kernel.nodes) {
    const LoopNode &node = program.nodes[size_t(id)];
    if (node.kind != LoopNode::Kind::Pointwise && node.kind != LoopNode::Kind::Reduction)
      return makeError("kernel ", kernel.name, ": node ", node.name,
                       " is neither pointwise nor a reduction");
    if (node.ranges.size() < k)
      return makeError("kernel ", kernel.name, ": node ", node.name,
                       " has fewer dims than the kernel's outer ranges");
    loopKernel.elementwise =
        loopKernel.elementwise && node.kind == LoopNode::Kind::Pointwise && node.ranges.size() == k;
    loopKernel.stages.push_back(&node);
  }
  return visitor.loopKernel(loopKernel);
}

/// The epilogue chain kernel.nodes[1...] as one pointwise node (see TemplateKernel). Each link
/// reads earlier links' results only at its own index (the scheduler's rule, checked again here);
/// such a load becomes the earlier link's body, cast to the load's dtype as storing the result
/// in its buffer and loading it back would.
Status composeEpilogue(const loop::LoopProgram &program, const sched::Kernel &kernel,
                       TemplateKernel &t) {
  std::map<int, loop::ExprRef> results; // buffer -> the body computing it, composed
  loop::ExprRef body;
  for (size_t i = 1; i < kernel.nodes.size(); ++i) {
    const LoopNode &link = program.nodes[size_t(kernel.nodes[i])];
    if (link.kind != LoopNode::Kind::Pointwise)
      return makeError("kernel ", kernel.name, ": epilogue ", link.name, " is not pointwise");
    if (link.ranges != t.epilogue->ranges)
      return makeError("kernel ", kernel.name, ": epilogue ", link.name, " ranges over ",
                       loop::printDims(link.ranges), ", the chain over ",
                       loop::printDims(t.epilogue->ranges));
    SymInt identity = sched::rowMajorFlat(link.ranges, link.ranges.size());
    std::string misuse;
    body = loop::mutateWith(link.body, [&](const loop::ExprRef &expr) -> loop::ExprRef {
      if (expr->kind != loop::ExprKind::Load && expr->kind != loop::ExprKind::IndirectLoad)
        return nullptr;
      auto result = results.find(expr->buffer);
      if (result == results.end())
        return nullptr;
      if (expr->kind == loop::ExprKind::IndirectLoad || expr->index != identity) {
        misuse = program.buffers[size_t(expr->buffer)].name;
        return nullptr;
      }
      loop::ExprRef value = result->second;
      DType stored = program.buffers[size_t(expr->buffer)].dtype;
      if (value->dtype != stored)
        value = loop::makeCast(value, stored);
      return value->dtype == expr->dtype ? value : loop::makeCast(value, expr->dtype);
    });
    if (!misuse.empty())
      return makeError("kernel ", kernel.name, ": epilogue ", link.name, " reads ", misuse,
                       " of its chain other than at its own index");
    results[link.output] = body;
  }
  auto composed = std::make_shared<LoopNode>(program.nodes[size_t(kernel.nodes.back())]);
  composed->body = body;
  t.composed = composed;
  t.epilogue = composed.get();
  return Status::ok();
}

Status walkTemplate(const loop::LoopProgram &program, const sched::Kernel &kernel,
                    KernelVisitor &visitor) {
  if (kernel.nodes.empty())
    return makeError("kernel ", kernel.name, ": a template kernel without nodes");
  TemplateKernel t;
  t.node = &program.nodes[size_t(kernel.nodes[0])];
  t.epilogue = kernel.nodes.size() > 1 ? &program.nodes[size_t(kernel.nodes[1])] : nullptr;
  const LoopNode &node = *t.node;
  if (node.kind != LoopNode::Kind::Template)
    return makeError("kernel ", kernel.name, ": first node ", node.name, " is not a template");
  if (t.epilogue && t.epilogue->kind != LoopNode::Kind::Pointwise)
    return makeError("kernel ", kernel.name, ": epilogue ", t.epilogue->name, " is not pointwise");
  if (kernel.nodes.size() > 2)
    TC_RETURN_IF_ERROR(composeEpilogue(program, kernel, t));
  t.output = t.epilogue ? t.epilogue->output : node.output;
  switch (node.templateKind) {
  case LoopNode::TemplateKind::Gemm:
    if (node.ranges.size() < 2)
      return makeError("kernel ", kernel.name, ": GEMM ", node.name,
                       " must range over [..., m, n]");
    for (const loop::StridedView *view : {&node.gemm.a, &node.gemm.b})
      if (view->strides.size() != 2 && view->strides.size() != 3)
        return makeError("kernel ", kernel.name, ": GEMM operand views need 2 or 3 strides");
    return visitor.gemmKernel(t);
  case LoopNode::TemplateKind::Conv2d:
    if (node.ranges.size() != 4 || node.conv.weight.strides.size() != 4)
      return makeError("kernel ", kernel.name, ": convolution ", node.name,
                       " needs a 4-D output and weight");
    return visitor.convKernel(t);
  case LoopNode::TemplateKind::Attention: {
    if (t.epilogue)
      return makeError("kernel ", kernel.name, ": attention takes no epilogue");
    const LoopNode::Attention &a = node.attention;
    size_t rank = a.batchDims.size() + 2;
    if (a.mask.buffer >= 0 && a.mask.strides.size() != rank)
      return makeError("kernel ", kernel.name, ": the attention mask needs ", rank, " strides");
    return visitor.attentionKernel(t);
  }
  }
  return makeError("kernel ", kernel.name, ": unknown template kind");
}

} // namespace

EpilogueLayout epilogueLayout(const LoopNode &templateNode, const LoopNode &epilogue,
                              size_t columnDims) {
  const std::vector<SymInt> &dims = templateNode.ranges;
  size_t rowDim = dims.size() - 1 - columnDims;
  bool keepsUnitDims = epilogue.ranges.size() == dims.size();
  EpilogueLayout layout;
  size_t var = 0;
  for (size_t d = 0; d < dims.size(); ++d) {
    bool dropped = !keepsUnitDims && dims[d].constant() == std::optional<int64_t>(1);
    if (dropped)
      continue;
    if (d < rowDim) {
      layout.outerRanges.push_back(dims[d]);
      layout.outerVars.push_back(loop::loopVar(var));
    } else if (d == rowDim) {
      layout.rowVar = loop::loopVar(var);
    } else {
      layout.columnRanges.push_back(dims[d]);
      layout.columnVars.push_back(loop::loopVar(var));
    }
    ++var;
  }
  return layout;
}

Status walkKernel(const loop::LoopProgram &program, const sched::Kernel &kernel,
                  KernelVisitor &visitor) {
  TC_RETURN_IF_ERROR(checkArgs(program, kernel));
  switch (kernel.kind) {
  case sched::Kernel::Kind::Loop:
    return walkLoop(program, kernel, visitor);
  case sched::Kernel::Kind::Template:
    return walkTemplate(program, kernel, visitor);
  case sched::Kernel::Kind::Extern:
    return makeError("kernel ", kernel.name, ": an extern kernel has no generated code");
  }
  return makeError("kernel ", kernel.name, ": unknown kernel kind");
}

} // namespace tensorc::codegen
