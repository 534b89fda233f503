// Dead-code elimination: drops nodes whose results no live node and no graph output uses.
#include "tensorc/IR/Rewriter.h"
#include "tensorc/Transforms/DCE.h"

#include "tensorc/Support/Log.h"
#include "tensorc/Support/StrCat.h"

#include <map>
#include <set>

namespace tensorc {

namespace {

/// Nodes whose results reach a graph output, found by walking the graph backwards once (operands
/// are defined before their users, so one reverse sweep is transitive).
std::set<const Node *> liveNodes(const Graph &graph) {
  std::set<const Value *> used(graph.outputs().begin(), graph.outputs().end());
  std::set<const Node *> live;
  for (auto it = graph.nodes().rbegin(); it != graph.nodes().rend(); ++it) {
    const Node &node = **it;
    bool isLive = false;
    for (const Value *output : node.outputs())
      isLive = isLive || used.count(output) != 0;
    if (!isLive)
      continue;
    live.insert(&node);
    for (const Value *input : node.inputs())
      if (input)
        used.insert(input);
  }
  return live;
}

} // namespace

Status eliminateDeadCode(Graph &graph, const PassContext &) {
  std::set<const Node *> live = liveNodes(graph);
  if (live.size() == graph.nodes().size())
    return Status::ok();

  // Placeholders stay even when unused: they are the model's signature, and unused weights are
  // the Freeze pass's to drop (it knows whether the bundle still needs them).
  Graph target;
  TC_ASSIGN_OR_RETURN(ValueMap mapped, ValueMap::withInputs(graph, target));

  for (const auto &node : graph.nodes()) {
    if (!live.count(node.get())) {
      log::debug("dce", strCat("removed ", node->describe(), ": no result is used"));
      continue;
    }
    TC_RETURN_IF_ERROR(mapped.copy(target, *node).status());
  }

  target.setOutputs(mapped.map(graph.outputs()));
  graph = std::move(target);
  return Status::ok();
}

} // namespace tensorc
