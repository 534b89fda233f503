// Fallbacks: an op run on its reference kernel by the runtime (an Extern node holding the op as a
// one-node FX-text graph), and the ops that have no generated kernel at all.
#include "Rules.h"

#include "tensorc/IR/Printer.h"
#include "tensorc/IR/Rewriter.h"

#include <algorithm>

namespace tensorc::loop {

Status LowerContext::fallback(const Node &node, const std::string &reason) {
  if (options_.fallback == FallbackPolicy::Error)
    return makeError("node '", node.output()->name(), "' (", node.op().name,
                     "): no generated kernel (", reason,
                     "); --fallback=error forbids running it on its reference kernel");
  LoopNode loop;
  loop.kind = LoopNode::Kind::Extern;
  loop.name = node.output()->name();
  loop.externOp = node.op().name;
  loop.externReason = reason;
  for (size_t i = 0; i < node.inputs().size(); ++i)
    if (const Value *input = node.input(i))
      loop.externInputs.push_back(realize(input));
  TC_ASSIGN_OR_RETURN(Graph single, isolateNode(node));
  loop.externGraph = printGraph(single);
  for (size_t i = 0; i < node.numOutputs(); ++i) {
    const Value *output = node.output(i);
    int id = addBuffer(output->name(), Buffer::Kind::Intermediate, output->type());
    loop.externOutputs.push_back(id);
    setBuffer(output, id);
    origins_[output] = {shortName(node.op())};
  }
  loop.output = loop.externOutputs.empty() ? -1 : loop.externOutputs[0];
  loop.origins = {shortName(node.op())};
  if (std::find(program_.fallbacks.begin(), program_.fallbacks.end(), node.op().name) ==
      program_.fallbacks.end())
    program_.fallbacks.push_back(node.op().name);
  addNode(std::move(loop));
  return Status::ok();
}

void addExternRules(RuleTable &table) {
  table.fallback({OpId::NonZero, OpId::Unique, OpId::Compress, OpId::NonMaxSuppression},
                 "its result shape depends on the data");
  table.fallback({OpId::Cumsum}, "no scan kernel yet");
  table.fallback({OpId::Topk}, "no selection kernel yet");
  table.fallback({OpId::ReverseSequence, OpId::RoiAlign, OpId::GridSample, OpId::Dft, OpId::Stft},
                 "no lowering rule yet");
  table.fallback({OpId::Det}, "no lowering rule yet (a factorization)");
}

} // namespace tensorc::loop
