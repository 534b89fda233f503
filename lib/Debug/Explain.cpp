// `tensorc explain`: the pipeline up to the schedule, summarized on one page.
#include "tensorc/Debug/Explain.h"

#include "Format.h"

#include "tensorc/IR/Rewriter.h"
#include "tensorc/Pipeline/Pipeline.h"
#include "tensorc/Scheduler/KernelCost.h"
#include "tensorc/Support/StrCat.h"
#include "tensorc/Transforms/PassRegistry.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace tensorc::debug {

namespace {

using loop::LoopNode;

/// Op name -> node count.
using OpHistogram = std::map<std::string, int64_t>;

OpHistogram opHistogram(const Graph &graph) {
  OpHistogram histogram;
  for (const auto &node : graph.nodes())
    ++histogram[node->op().name];
  return histogram;
}

/// "aten.addmm x3, aten.gelu x2": most frequent first, then by name; at most `limit` entries.
std::string describeHistogram(const OpHistogram &histogram, size_t limit) {
  std::vector<std::pair<std::string, int64_t>> entries(histogram.begin(), histogram.end());
  std::stable_sort(entries.begin(), entries.end(),
                   [](const auto &a, const auto &b) { return a.second > b.second; });
  std::vector<std::string> parts;
  for (size_t i = 0; i < entries.size() && i < limit; ++i)
    parts.push_back(strCat(entries[i].first, " x", entries[i].second));
  if (entries.size() > limit)
    parts.push_back(strCat("... ", entries.size() - limit, " more"));
  return parts.empty() ? std::string("none") : join(parts, ", ");
}

int64_t countNodes(const OpHistogram &histogram) {
  int64_t total = 0;
  for (const auto &[op, count] : histogram)
    total += count;
  return total;
}

/// The op types one node decomposes into: the node alone in a graph, decomposed (what the
/// decompose pass does to every node of its kind with these operand types and attributes).
Expected<std::vector<std::string>> decompositionOf(const Node &node, const OpRegistry &registry) {
  TC_ASSIGN_OR_RETURN(Graph single, isolateNode(node));
  PassContext context{registry};
  TC_RETURN_IF_ERROR(runPasses(single, "decompose,dce", context));
  std::vector<std::string> ops;
  for (const auto &emitted : single.nodes())
    if (std::find(ops.begin(), ops.end(), emitted->op().name) == ops.end())
      ops.push_back(emitted->op().name);
  return ops;
}

/// Why lowering left `node` to its reference kernel: the conditions the lowering rules check.
std::string fallbackReason(const Node &node, bool gpuOnly) {
  const TensorType &out = node.output()->type();
  auto anyInputNot = [&](DType dtype) {
    for (const Value *input : node.inputs())
      if (input && input->type().dtype != dtype)
        return true;
    return false;
  };
  OpId op = node.opId();
  if (op == OpId::Mm || op == OpId::Bmm)
    return gpuOnly
               ? strCat("GEMM templates take one float dtype for operands and result; this one is ",
                        node.input(0)->type().str(), " x ", node.input(1)->type().str(), " -> ",
                        out.str())
               : strCat("the CPU GEMM template is f32 only; this one is ", out.str(),
                        " (f16/bf16 GEMMs are templates with --target cuda)");
  if (op == OpId::Convolution)
    return out.dtype != DType::F32 || anyInputNot(DType::F32)
               ? "the convolution template is f32 only"
               : "the convolution template takes 2-D, non-transposed convolutions whose dims "
                 "other than the batch are static";
  if (op == OpId::ScaledDotProductAttention)
    return gpuOnly ? "the attention template needs head dims of at most 256"
                   : "attention kernels exist for CUDA only (--target cuda)";
  if (op == OpId::Div)
    return "division with a rounding mode is left to the reference kernel";
  if (op == OpId::Cat)
    return "cat along a symbolic dim, or of more than 16 inputs";
  return strCat(
      "no lowering rule covers ", node.op().name, " with these operands (",
      [&] {
        std::vector<std::string> types;
        for (const Value *input : node.inputs())
          if (input)
            types.push_back(input->type().str());
        return join(types, ", ");
      }(),
      ")");
}

/// A refusal's reason without the names and shapes in it, to count refusals by reason:
/// "ranges [s0, 8] do not start with the kernel's rows [s0]" -> "ranges [..] do not start with
/// the kernel's rows [..]".
std::string reasonKind(const std::string &reason) {
  std::string kind;
  int depth = 0;
  for (char c : reason) {
    if (c == '[' || c == '(') {
      if (depth++ == 0)
        kind += c == '[' ? "[..]" : "(..)";
      continue;
    }
    if (c == ']' || c == ')') {
      depth = std::max(depth - 1, 0);
      continue;
    }
    if (depth == 0)
      kind += c;
  }
  // "reads fc_mm outside ..." / "the GEMM result fc_mm has ...": the value's name goes too.
  for (const char *prefix : {"reads ", "the GEMM result "}) {
    size_t at = kind.find(prefix);
    if (at == std::string::npos)
      continue;
    size_t start = at + std::string(prefix).size();
    size_t end = kind.find(' ', start);
    if (end != std::string::npos)
      kind.replace(start, end - start, "a value");
  }
  return kind;
}

const char *kernelKind(const loop::LoopProgram &program, const sched::Kernel &kernel) {
  switch (kernel.kind) {
  case sched::Kernel::Kind::Loop:
    return kernel.name.rfind("per_", 0) == 0   ? "persistent reduction (per_)"
           : kernel.name.rfind("red_", 0) == 0 ? "reduction (red_)"
                                               : "pointwise (poi_)";
  case sched::Kernel::Kind::Template:
    switch (program.nodes[size_t(kernel.nodes[0])].templateKind) {
    case LoopNode::TemplateKind::Gemm:
      return "GEMM template (tem_)";
    case LoopNode::TemplateKind::Conv2d:
      return "convolution template (tem_)";
    case LoopNode::TemplateKind::Attention:
      return "attention template (tem_)";
    }
    break;
  case sched::Kernel::Kind::Extern:
    return "reference-kernel fallback (ext_)";
  }
  return "?";
}

class Explainer {
public:
  Explainer(const std::string &path, const OpRegistry &registry, const ExplainOptions &options)
      : path_(path), registry_(registry), options_(options) {}

  Expected<std::string> run() {
    TC_ASSIGN_OR_RETURN(TargetSet targets, parseTargets(options_.target));
    TC_ASSIGN_OR_RETURN(PipelineOptions pipeline,
                        pipelineOptionsFor(targets, options_.fuseAttention, false));
    TC_ASSIGN_OR_RETURN(Graph graph, importModel(path_, registry_));
    line("# tensorc explain ", path_, " (target ", options_.target, ")");
    describeImport(graph);

    // Snapshots of the graph stages, taken as the pipeline runs them.
    std::map<std::string, OpHistogram> after;
    std::map<std::string, std::vector<const Node *>> toDecompose;
    std::vector<std::string> decomposeNotes;
    pipeline.onStage = [&](const std::string &stage, const Graph &g, bool) {
      after[stage] = opHistogram(g);
      if (stage == "simplify")
        noteDecompositions(g, decomposeNotes);
    };
    Status staged = runGraphStages(graph, registry_, pipeline);
    if (!staged)
      return makeError(path_, ": ", staged.message());
    describeStage("simplify", imported_, after["simplify"],
                  pipeline.attentionFusion == AttentionFusion::None
                      ? "constant-fold, fold-batchnorm, cse, dce"
                      : "constant-fold, fold-batchnorm, cse, dce, fuse-attention, dce");
    describeStage("decompose", after["simplify"], after["decompose"],
                  "decompose, constant-fold, cse, dce");
    for (const std::string &note : limited(decomposeNotes, "decomposition rules"))
      line("  ", note);

    Expected<LoweredModel> lowered = lowerAndSchedule(graph, pipeline);
    if (!lowered)
      return makeError(path_, ": ", lowered.error().message());
    bindSymbols(lowered->program);
    describeFallbacks(graph, lowered->program, pipeline.gpuOnly);
    describeKernels(lowered->program, lowered->schedule);
    describeFusion(lowered->program, lowered->schedule);
    describeMemory(graph, lowered->program, lowered->schedule);
    describeCosts(lowered->program, lowered->schedule);
    return out_.str();
  }

private:
  template <typename... Parts> void line(const Parts &...parts) {
    out_ << strCat(parts...) << "\n";
  }

  std::vector<std::string> limited(const std::vector<std::string> &items, const char *what) {
    std::vector<std::string> kept(items.begin(),
                                  items.begin() + std::min(items.size(), options_.listLimit));
    if (items.size() > options_.listLimit)
      kept.push_back(strCat("... ", items.size() - options_.listLimit, " more ", what));
    return kept;
  }

  void describeImport(const Graph &graph) {
    OpHistogram histogram = opHistogram(graph);
    imported_ = histogram;
    line("imported: ", countNodes(histogram), " nodes of ", histogram.size(),
         " op types: ", describeHistogram(histogram, options_.listLimit));
    std::vector<std::string> inputs;
    for (const Value *input : graph.userInputs())
      inputs.push_back(strCat(input->name(), " ", input->type().str()));
    int64_t weightBytes = 0;
    for (const auto &[name, tensor] : graph.weights())
      weightBytes += int64_t(tensor.nbytes());
    line("  inputs: ", inputs.empty() ? std::string("none") : join(inputs, ", "), "; ",
         graph.weights().size(), " parameters, ", formatBytes(double(weightBytes)));
  }

  /// "simplify (passes): 120 -> 98 nodes; removed aten.batch_norm x53; added ...".
  void describeStage(const std::string &stage, const OpHistogram &before,
                     const OpHistogram &afterStage, const std::string &passes) {
    OpHistogram removed, added;
    std::set<std::string> ops;
    for (const auto &[op, count] : before)
      ops.insert(op);
    for (const auto &[op, count] : afterStage)
      ops.insert(op);
    for (const std::string &op : ops) {
      int64_t was = before.count(op) ? before.at(op) : 0;
      int64_t is = afterStage.count(op) ? afterStage.at(op) : 0;
      if (is < was)
        removed[op] = was - is;
      else if (is > was)
        added[op] = is - was;
    }
    line(stage, " (", passes, "): ", countNodes(before), " -> ", countNodes(afterStage), " nodes");
    if (!removed.empty())
      line("  fewer: ", describeHistogram(removed, options_.listLimit));
    if (!added.empty())
      line("  more: ", describeHistogram(added, options_.listLimit));
  }

  /// For each op type of the simplified graph with a decomposition rule: what it becomes.
  void noteDecompositions(const Graph &graph, std::vector<std::string> &notes) {
    std::map<std::string, int64_t> counts;
    std::map<std::string, const Node *> first;
    for (const auto &node : graph.nodes()) {
      if (!node->op().decompose)
        continue;
      if (!counts[node->op().name]++)
        first[node->op().name] = node.get();
    }
    for (const auto &[op, count] : counts) {
      Expected<std::vector<std::string>> ops = decompositionOf(*first[op], registry_);
      if (!ops) {
        notes.push_back(
            strCat(op, " x", count, ": cannot decompose alone (", ops.error().message(), ")"));
        continue;
      }
      if (ops->size() == 1 && ops->front() == op)
        notes.push_back(strCat(op, " x", count, ": kept (its rule declines these operands)"));
      else
        notes.push_back(strCat(op, " x", count, " -> ", join(*ops, ", ")));
    }
  }

  void bindSymbols(const loop::LoopProgram &program) {
    bindings_ = options_.dims;
    for (const std::string &symbol : program.symbols)
      bindings_.emplace(symbol, 64);
    std::vector<std::string> text;
    for (const auto &[symbol, value] : bindings_)
      text.push_back(strCat(symbol, "=", value));
    sizes_ = text.empty() ? std::string("static sizes") : "at " + join(text, ", ");
  }

  double evaluate(const SymInt &value) const {
    Expected<int64_t> result = value.evaluate(bindings_);
    return result ? double(*result) : 0.0;
  }

  void describeFallbacks(const Graph &graph, const loop::LoopProgram &program, bool gpuOnly) {
    std::vector<std::string> notes;
    for (const LoopNode &node : program.nodes) {
      if (node.kind != LoopNode::Kind::Extern)
        continue;
      const Value *value = graph.findValue(node.name);
      std::string reason = value && value->producer() ? fallbackReason(*value->producer(), gpuOnly)
                                                      : std::string("no lowering rule");
      notes.push_back(strCat(node.externOp, " (%", node.name, "): ", reason));
    }
    line("fallbacks (reference kernels run by the runtime): ",
         notes.empty() ? std::string("none") : std::to_string(notes.size()));
    for (const std::string &note : limited(notes, "fallbacks"))
      line("  ", note);
  }

  void describeKernels(const loop::LoopProgram &program, const sched::Schedule &schedule) {
    std::map<std::string, int64_t> kinds;
    for (const sched::Kernel &kernel : schedule.kernels)
      ++kinds[kernelKind(program, kernel)];
    std::vector<std::string> parts;
    for (const auto &[kind, count] : kinds)
      parts.push_back(strCat(count, " ", kind));
    line("kernels: ", schedule.kernels.size(), " from ", program.nodes.size(),
         " loop nodes: ", parts.empty() ? std::string("none") : join(parts, ", "));
  }

  void describeFusion(const loop::LoopProgram &program, const sched::Schedule &schedule) {
    std::map<std::string, int64_t> made, refused;
    std::vector<std::string> refusals;
    for (const sched::FusionDecision &decision : schedule.decisions) {
      std::string kind = sched::fusionKindName(decision.kind);
      if (decision.fused) {
        ++made[kind];
        continue;
      }
      ++refused[kind];
      refusals.push_back(
          strCat(program.nodes[size_t(decision.node)].name, " (", kind, "): ", decision.reason));
    }
    auto counts = [](const std::map<std::string, int64_t> &byKind) {
      int64_t total = 0;
      std::vector<std::string> parts;
      for (const auto &[kind, count] : byKind) {
        total += count;
        parts.push_back(strCat(count, " ", kind));
      }
      return parts.empty() ? std::string("0") : strCat(total, " (", join(parts, ", "), ")");
    };
    line("fusion: ", counts(made), " made, ", counts(refused), " refused");
    std::map<std::string, int64_t> byReason;
    for (const sched::FusionDecision &decision : schedule.decisions)
      if (!decision.fused)
        ++byReason[reasonKind(decision.reason)];
    std::vector<std::pair<std::string, int64_t>> reasons(byReason.begin(), byReason.end());
    std::stable_sort(reasons.begin(), reasons.end(),
                     [](const auto &a, const auto &b) { return a.second > b.second; });
    std::vector<std::string> reasonLines;
    for (const auto &[reason, count] : reasons)
      reasonLines.push_back(strCat(count, " x ", reason));
    for (const std::string &reason : limited(reasonLines, "reasons"))
      line("  refused because: ", reason);
    for (const std::string &refusal : limited(refusals, "refusals (--log schedule lists all)"))
      line("  refused ", refusal);
  }

  void describeMemory(const Graph &graph, const loop::LoopProgram &program,
                      const sched::Schedule &schedule) {
    double inputs = 0, outputs = 0;
    for (const Value *input : graph.userInputs())
      inputs += evaluate(input->type().numel()) * double(dtypeSize(input->type().dtype));
    for (int buffer : program.outputs)
      outputs += evaluate(program.buffers[size_t(buffer)].numel()) *
                 double(dtypeSize(program.buffers[size_t(buffer)].dtype));
    // Intermediates some kernel touches (a GEMM result its epilogue replaced has no memory).
    std::set<int> used;
    for (const sched::Kernel &kernel : schedule.kernels)
      used.insert(kernel.args.begin(), kernel.args.end());
    double naive = 0;
    for (int b : used) {
      const loop::Buffer &buffer = program.buffers[size_t(b)];
      if (buffer.kind == loop::Buffer::Kind::Intermediate &&
          std::count(program.outputs.begin(), program.outputs.end(), b) == 0)
        naive += evaluate(buffer.numel()) * double(dtypeSize(buffer.dtype));
    }
    line("memory plan: arena ", schedule.plan.arenaBytes.str(),
         " bytes = ", formatBytes(evaluate(schedule.plan.arenaBytes)), " peak ", sizes_, " (",
         formatBytes(naive), " of intermediates without reuse); inputs ", formatBytes(inputs),
         ", outputs ", formatBytes(outputs));
  }

  void describeCosts(const loop::LoopProgram &program, const sched::Schedule &schedule) {
    struct Entry {
      std::string name;
      double flops, bytes;
    };
    std::vector<Entry> entries;
    double totalFlops = 0, totalBytes = 0;
    for (const sched::Kernel &kernel : schedule.kernels) {
      sched::KernelCost cost = sched::estimateCost(program, kernel);
      entries.push_back({kernel.name, evaluate(cost.flops), evaluate(cost.bytes)});
      totalFlops += entries.back().flops;
      totalBytes += entries.back().bytes;
    }
    // Largest by operations, then bytes (ties in launch order).
    std::stable_sort(entries.begin(), entries.end(), [](const Entry &a, const Entry &b) {
      return a.flops != b.flops ? a.flops > b.flops : a.bytes > b.bytes;
    });
    line("estimated cost ", sizes_, ": ", formatCount(totalFlops, "FLOP"), ", ",
         formatBytes(totalBytes), " moved; largest kernels:");
    for (size_t i = 0; i < entries.size() && i < options_.listLimit; ++i)
      line("  ", entries[i].name, ": ", formatCount(entries[i].flops, "FLOP"), ", ",
           formatBytes(entries[i].bytes), " (",
           formatFixed(entries[i].bytes > 0 ? entries[i].flops / entries[i].bytes : 0.0, 2),
           " FLOP/byte)");
  }

  const std::string &path_;
  const OpRegistry &registry_;
  const ExplainOptions &options_;
  OpHistogram imported_;
  SymbolBindings bindings_;
  std::string sizes_;
  std::ostringstream out_;
};

} // namespace

Expected<std::string> explainModel(const std::string &modelPath, const OpRegistry &registry,
                                   const ExplainOptions &options) {
  return Explainer(modelPath, registry, options).run();
}

} // namespace tensorc::debug
