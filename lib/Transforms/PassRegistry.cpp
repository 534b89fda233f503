// The table of graph passes and the runner behind `tensorc opt`.
#include "tensorc/Transforms/PassRegistry.h"

#include "tensorc/IR/Verifier.h"
#include "tensorc/Support/Log.h"
#include "tensorc/Support/StrCat.h"
#include "tensorc/Support/Timing.h"
#include "tensorc/Transforms/CSE.h"
#include "tensorc/Transforms/ConstantFold.h"
#include "tensorc/Transforms/DCE.h"
#include "tensorc/Transforms/Decompose.h"
#include "tensorc/Transforms/FoldBatchNorm.h"
#include "tensorc/Transforms/FuseAttention.h"
#include "tensorc/Transforms/MergeMatmuls.h"

namespace tensorc {

const std::vector<PassInfo> &allPasses() {
  static const std::vector<PassInfo> passes = {
      {"constant-fold", "evaluate nodes whose operands are all constants", foldConstants},
      {"cse", "merge identical nodes", eliminateCommonSubexpressions},
      {"dce", "remove nodes nothing uses", eliminateDeadCode},
      {"decompose", "rewrite high-level ops into primitive ops", decompose},
      {"fold-batchnorm", "fold inference batch norms into the convolutions before them",
       foldBatchNorm},
      {"fuse-attention", "softmax(Q.K^T * scale [+ mask]).V into one attention op", fuseAttention},
      {"fuse-tiled-attention",
       "fuse-attention for the heads the CUDA backend has a tiled kernel for (f16/bf16 head dims "
       "multiples of 16 up to 128, f32 up to 64)",
       fuseTiledAttention},
      {"merge-parallel-matmuls",
       "products of one operand by constant weights into one product and column slices",
       mergeParallelMatmuls},
  };
  return passes;
}

const PassInfo *findPass(std::string_view name) {
  for (const PassInfo &pass : allPasses())
    if (pass.name == name)
      return &pass;
  return nullptr;
}

Status runPasses(Graph &graph, std::string_view passList, const PassContext &context,
                 const std::function<void(const std::string &, const Graph &)> &afterPass) {
  while (!passList.empty()) {
    size_t comma = passList.find(',');
    std::string name(passList.substr(0, comma));
    passList = comma == std::string_view::npos ? std::string_view() : passList.substr(comma + 1);
    if (name.empty())
      continue;
    const PassInfo *pass = findPass(name);
    if (!pass) {
      std::vector<std::string> known;
      for (const PassInfo &info : allPasses())
        known.push_back(info.name);
      return makeError("unknown pass '", name, "' (passes: ", join(known, ", "), ")");
    }
    timing::Scope passTime("  pass " + name);
    Status status = pass->run(graph, context);
    if (!status)
      return status.takeError().withContext("pass " + name);
    passTime.stop();
    timing::Scope verifyTime("  verify after " + name);
    Status verified = verifyGraph(graph);
    verifyTime.stop();
    if (!verified)
      return verified.takeError().withContext("after pass " + name + ", the graph is invalid");
    if (afterPass)
      afterPass(name, graph);
  }
  return Status::ok();
}

} // namespace tensorc
