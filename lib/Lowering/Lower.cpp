// Graph -> LoopProgram: each node by its op's rule (lib/Lowering/Rules, one file per op family),
// inputs as buffers, outputs realized, unread weights dropped.
#include "tensorc/Lowering/Lower.h"

#include "LowerContext.h"
#include "Rules/Rules.h"
#include "tensorc/Lowering/LoopVerifier.h"

namespace tensorc::loop {

Expected<FallbackPolicy> parseFallbackPolicy(const std::string &text) {
  for (auto [name, policy] :
       {std::pair{"allow", FallbackPolicy::Allow}, {"error", FallbackPolicy::Error}})
    if (text == name)
      return policy;
  return makeError("unknown --fallback '", text, "' (allow or error)");
}

Expected<LoopProgram> lower(const Graph &graph, const LowerOptions &options) {
  TC_ASSIGN_OR_RETURN(const RuleTable *rules, ruleTable());
  LowerContext context(graph, options);
  LoopProgram &program = context.program();
  std::set<std::string> symbols;
  for (const auto &input : graph.inputs())
    for (const SymInt &dim : input->type().shape)
      dim.collectSymbols(symbols);
  for (const std::string &symbol : symbols)
    if (symbol.size() > 1 && (symbol[0] == 'x' || symbol[0] == 'r') &&
        symbol.find_first_not_of("0123456789", 1) == std::string::npos)
      return makeError("shape symbol '", symbol, "' clashes with a loop variable name; rename it");
  program.symbols.assign(symbols.begin(), symbols.end());

  int64_t userIndex = 0;
  for (const auto &input : graph.inputs()) {
    bool weight = graph.isParameter(input.get());
    // A one-element weight (an exporter's scalar initializer: gelu's 0.5, pow's 3.0, an epsilon)
    // is a literal, as a one-element prims.constant is: it fuses into its users as an immediate
    // and simplifications that need a constant (pow by 3) see one. Weights are constants of the
    // bundle; parameters a training step updates are inputs by now, not weights.
    if (weight && graph.weights().at(input->name()).numel() == 1 && input->type().isStatic()) {
      context.setConstant(input.get(), graph.weights().at(input->name()));
      continue;
    }
    int id = context.addBuffer(input->name(), weight ? Buffer::Kind::Weight : Buffer::Kind::Input,
                               input->type());
    if (weight)
      program.weights[input->name()] = graph.weights().at(input->name());
    else
      program.buffers[size_t(id)].inputIndex = userIndex++;
    context.setBuffer(input.get(), id);
  }
  for (const auto &node : graph.nodes()) {
    const RuleTable::Entry &entry = rules->get(node->opId());
    TC_RETURN_IF_ERROR(entry.rule ? entry.rule(context, *node)
                                  : context.fallback(*node, entry.fallbackReason));
  }
  for (Value *output : graph.outputs())
    program.outputs.push_back(context.realize(output));
  // Only weights something reads go into the bundle (folding can leave originals unused).
  std::set<int> read(program.outputs.begin(), program.outputs.end());
  for (const LoopNode &node : program.nodes)
    for (int buffer : node.reads())
      read.insert(buffer);
  for (const Buffer &buffer : program.buffers)
    if (buffer.kind == Buffer::Kind::Weight && !read.count(buffer.id))
      program.weights.erase(buffer.name);
#ifndef NDEBUG
  if (Status verified = verifyProgram(program); !verified)
    return makeError("internal: lowering produced invalid loop IR: ", verified.message());
#endif
  return std::move(program);
}

} // namespace tensorc::loop
