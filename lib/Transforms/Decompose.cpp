// Decompose: rewrites ops with a decomposition rule (OpDef::decompose) into primitive ops.
#include "tensorc/Transforms/Decompose.h"

#include "tensorc/IR/Rewriter.h"
#include "tensorc/Support/Log.h"
#include "tensorc/Support/StrCat.h"

#include <set>

namespace tensorc {

namespace {

/// Rules may emit ops that have rules of their own (var emits mean); a chain longer than this
/// means two rules feed each other.
constexpr int kMaxRounds = 16;

/// "amax, sub, exp" for the nodes `graph` gained from index `first` on.
std::string emittedOps(const Graph &graph, size_t first) {
  std::vector<std::string> names;
  for (size_t i = first; i < graph.nodes().size(); ++i)
    names.push_back(graph.nodes()[i]->op().name);
  return names.empty() ? std::string("no new nodes") : join(names, ", ");
}

} // namespace

Status decompose(Graph &graph, const PassContext &context) {
  std::set<std::string> lastRewritten;
  for (int round = 0; round < kMaxRounds; ++round) {
    std::set<std::string> rewritten;
    auto rewrite =
        [&](RewriteContext &rewriteContext) -> Expected<std::optional<std::vector<Value *>>> {
      const Node &node = rewriteContext.node();
      if (!node.op().decompose)
        return std::optional<std::vector<Value *>>();
      size_t first = rewriteContext.graph().nodes().size();
      Expected<std::optional<std::vector<Value *>>> replacement =
          node.op().decompose(rewriteContext, context.registry);
      if (!replacement)
        return replacement.takeError().withContext(strCat("decomposing ", node.describe()));
      if (*replacement) {
        rewritten.insert(node.op().name);
        if (log::enabled("decompose"))
          log::debug("decompose",
                     strCat(node.describe(), " -> ", emittedOps(rewriteContext.graph(), first)));
      }
      return replacement;
    };
    TC_ASSIGN_OR_RETURN(Graph result, rewriteGraph(graph, rewrite));
    if (rewritten.empty())
      return Status::ok(); // keep the original: nothing to rename or renumber
    graph = std::move(result);
    lastRewritten = std::move(rewritten);
  }
  return makeError("decomposition did not converge after ", kMaxRounds,
                   " rounds; still rewriting: ", join(lastRewritten, ", "));
}

} // namespace tensorc
