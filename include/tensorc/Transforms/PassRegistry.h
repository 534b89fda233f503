// Graph passes by name: what `tensorc opt --passes=a,b` and the pipeline stages run.
#pragma once

#include "tensorc/IR/Graph.h"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tensorc {

/// What every graph pass receives.
struct PassContext {
  const OpRegistry &registry;
};

using GraphPassFn = Status (*)(Graph &, const PassContext &);

struct PassInfo {
  std::string name;
  std::string description;
  GraphPassFn run;
};

/// Every graph pass, in a stable order.
const std::vector<PassInfo> &allPasses();
const PassInfo *findPass(std::string_view name);

/// Runs the comma-separated `passList` in order, verifying the graph after each pass (a pass that
/// breaks an invariant is reported by name). `afterPass` sees each pass's result.
Status runPasses(Graph &graph, std::string_view passList, const PassContext &context,
                 const std::function<void(const std::string &, const Graph &)> &afterPass = {});

} // namespace tensorc
