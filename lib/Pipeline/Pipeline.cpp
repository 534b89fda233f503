// The compilation pipeline: each stage one line, logged and dumped by name.
#include "tensorc/Pipeline/Pipeline.h"
#ifdef TENSORC_HAVE_NVRTC
#include "tensorc/Codegen/CUDA/CudaCodegen.h"
#endif

#include "tensorc/Frontend/FX/FxParser.h"
#include "tensorc/Frontend/ONNX/OnnxImporter.h"
#include "tensorc/IR/Printer.h"
#include "tensorc/IR/Verifier.h"
#include "tensorc/Lowering/Lower.h"
#include "tensorc/Support/Log.h"
#include "tensorc/Support/StrCat.h"
#include "tensorc/Transforms/PassRegistry.h"

#include <algorithm>
#include <chrono>

namespace tensorc {

namespace {

bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Runs one stage: times it, logs the IR under the stage's category when it changed, and tells
/// the caller (inspect dumps).
class StageRunner {
public:
  StageRunner(Graph &graph, const PipelineOptions &options) : graph_(graph), options_(options) {}

  /// Returns false once the stop stage has run.
  template <typename Fn> Expected<bool> run(const std::string &stage, Fn &&fn) {
    std::string before = log::enabled(stage) || options_.onStage ? printGraph(graph_) : "";
    auto start = std::chrono::steady_clock::now();
    TC_RETURN_IF_ERROR(fn(graph_));
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                    .count();
    if (options_.timeStages)
      log::info(strCat("stage ", stage, ": ", ms, " ms"));
    std::string after = log::enabled(stage) || options_.onStage ? printGraph(graph_) : "";
    bool changed = stage == stageNames().front() || before != after;
    log::debug(stage, changed ? "\n" + after : "(unchanged)");
    if (options_.onStage)
      options_.onStage(stage, graph_, changed);
    return options_.stopAfter != stage;
  }

private:
  Graph &graph_;
  const PipelineOptions &options_;
};

} // namespace

const std::vector<std::string> &stageNames() {
  static const std::vector<std::string> names = {"import",    "verify",   "loss",
                                                 "simplify",  "decompose", "autodiff",
                                                 "lower",     "fuse",     "cuda"};
  return names;
}

bool isLoopStage(const std::string &stage) {
  return stage == "lower" || stage == "fuse" || stage == "cuda";
}

Expected<LoweredModel> lowerAndSchedule(const Graph &graph, const PipelineOptions &options) {
  auto timed = [&](const std::string &stage, auto &&fn) -> Status {
    auto start = std::chrono::steady_clock::now();
    Status status = fn();
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                    .count();
    if (options.timeStages)
      log::info(strCat("stage ", stage, ": ", ms, " ms"));
    return status;
  };
  LoweredModel model;
  TC_RETURN_IF_ERROR(timed("lower", [&]() -> Status {
    loop::LowerOptions lowering;
    lowering.halfPrecisionTemplates = options.gpuOnly;
    lowering.attentionTemplates = options.gpuOnly;
    lowering.fallback = options.fallback;
    TC_ASSIGN_OR_RETURN(model.program, loop::lower(graph, lowering));
    return Status::ok();
  }));
  std::string text = log::enabled("lower") || options.onLoopStage
                         ? loop::printProgram(model.program)
                         : "";
  log::debug("lower", "\n" + text);
  if (options.onLoopStage)
    options.onLoopStage("lower", text);
  if (options.stopAfter == "lower")
    return model;
  TC_RETURN_IF_ERROR(timed("fuse", [&]() -> Status {
    sched::ScheduleOptions scheduling;
    scheduling.anyFloatEpilogue = options.gpuOnly;
    TC_ASSIGN_OR_RETURN(model.schedule, sched::schedule(model.program, scheduling));
    return Status::ok();
  }));
  text = log::enabled("fuse") || options.onLoopStage
             ? sched::printSchedule(model.program, model.schedule)
             : "";
  log::debug("fuse", "\n" + text);
  if (options.onLoopStage)
    options.onLoopStage("fuse", text);
  if (options.stopAfter == "fuse" || !options.onLoopStage)
    return model;
  // The CUDA kernels the schedule renders to (what `compile --target cuda` hands to NVRTC).
#ifdef TENSORC_HAVE_NVRTC
  TC_ASSIGN_OR_RETURN(cuda::RenderedKernels rendered,
                      cuda::renderKernels(model.program, model.schedule));
  options.onLoopStage("cuda", rendered.source);
#else
  options.onLoopStage("cuda", "// this tensorc was built without the CUDA backend\n");
#endif
  return model;
}

Expected<TargetSet> parseTargets(const std::string &targets) {
  TargetSet set;
  for (size_t start = 0; start <= targets.size();) {
    size_t end = std::min(targets.find(',', start), targets.size());
    std::string name = targets.substr(start, end - start);
    if (name == "cpu")
      set.cpu = true;
    else if (name == "cuda")
      set.cuda = true;
    else
      return makeError("unknown target '", name, "' (expected cpu, cuda or cpu,cuda)");
    start = end + 1;
  }
  return set;
}

Expected<PipelineOptions> pipelineOptionsFor(const TargetSet &targets,
                                             std::optional<bool> fuseAttention, bool training) {
  PipelineOptions options;
  options.gpuOnly = targets.cuda && !targets.cpu;
  if (fuseAttention.value_or(false) && !options.gpuOnly)
    return makeError("--fuse-attention needs --target cuda (the CPU has no attention kernel)");
  if (fuseAttention.value_or(false) && training)
    return makeError("--fuse-attention has no gradient; leave it off with --train");
  if (fuseAttention)
    options.attentionFusion = *fuseAttention ? AttentionFusion::All : AttentionFusion::None;
  else // by default the heads that run on tensor cores, where fusing pays off
    options.attentionFusion =
        options.gpuOnly && !training ? AttentionFusion::TensorCore : AttentionFusion::None;
  return options;
}

Expected<Graph> importModel(const std::string &path, const OpRegistry &registry) {
  if (endsWith(path, ".fx"))
    return fx::loadFxFile(path, registry);
  if (endsWith(path, ".onnx"))
    return onnx::importOnnxFile(path, registry);
  return makeError(path, ": unknown model format (expected .fx or .onnx)");
}

namespace {

Status checkStopStage(const PipelineOptions &options) {
  const std::vector<std::string> &stages = stageNames();
  if (options.stopAfter != "all" &&
      std::find(stages.begin(), stages.end(), options.stopAfter) == stages.end())
    return makeError("unknown stage '", options.stopAfter, "' (stages: ", join(stages, ", "),
                     ", all)");
  return Status::ok();
}

/// The graph stages after import, in order; false once the stop stage has run.
Expected<bool> runGraphStagesWith(StageRunner &runner, const OpRegistry &registry,
                                  const PipelineOptions &options,
                                  autodiff::TrainingSignature *training) {
  TC_ASSIGN_OR_RETURN(bool more, runner.run("verify", [](Graph &g) { return verifyGraph(g); }));
  if (!more)
    return false;
  autodiff::TrainingSignature signature;
  // Training: parameters become inputs before anything could fold them into constants.
  TC_ASSIGN_OR_RETURN(more, runner.run("loss", [&](Graph &g) -> Status {
    if (!options.train)
      return Status::ok();
    TC_ASSIGN_OR_RETURN(signature, autodiff::attachLoss(g, *options.train, registry));
    return verifyGraph(g);
  }));
  if (!more)
    return false;
  PassContext context{registry};
  // Attention ops form before decompose splits softmax apart.
  const char *simplify = "constant-fold,fold-batchnorm,cse,dce";
  if (options.attentionFusion == AttentionFusion::TensorCore)
    simplify = "constant-fold,fold-batchnorm,cse,dce,fuse-tensor-core-attention,dce";
  else if (options.attentionFusion == AttentionFusion::All)
    simplify = "constant-fold,fold-batchnorm,cse,dce,fuse-attention,dce";
  TC_ASSIGN_OR_RETURN(more, runner.run("simplify", [&](Graph &g) {
    return runPasses(g, simplify, context);
  }));
  if (!more)
    return false;
  TC_ASSIGN_OR_RETURN(more, runner.run("decompose", [&](Graph &g) {
    return runPasses(g, "decompose,constant-fold,cse,dce", context);
  }));
  if (!more)
    return false;
  // No CSE after autodiff: it would merge the min-cut partition's recomputed nodes back into
  // the forward ones they copy.
  TC_ASSIGN_OR_RETURN(more, runner.run("autodiff", [&](Graph &g) -> Status {
    if (!options.train)
      return Status::ok();
    TC_ASSIGN_OR_RETURN(autodiff::AutodiffReport report,
                        autodiff::buildTrainingStep(g, *options.train, registry, signature));
    log::info(autodiff::describeReport(report));
    if (options.onAutodiff)
      options.onAutodiff(report);
    TC_RETURN_IF_ERROR(runPasses(g, "dce", context));
    return verifyGraph(g);
  }));
  if (training)
    *training = std::move(signature);
  return more;
}

} // namespace

Expected<Graph> runPipeline(const std::string &modelPath, const OpRegistry &registry,
                            const PipelineOptions &options,
                            autodiff::TrainingSignature *training) {
  TC_RETURN_IF_ERROR(checkStopStage(options));
  Graph graph;
  StageRunner runner(graph, options);
  // The pipeline, in order: import, then the graph stages; lower and fuse follow in
  // lowerAndSchedule.
  TC_ASSIGN_OR_RETURN(bool more, runner.run("import", [&](Graph &g) -> Status {
    TC_ASSIGN_OR_RETURN(g, importModel(modelPath, registry));
    return Status::ok();
  }));
  if (more)
    TC_RETURN_IF_ERROR(runGraphStagesWith(runner, registry, options, training).status());
  return graph;
}

Status runGraphStages(Graph &graph, const OpRegistry &registry, const PipelineOptions &options,
                      autodiff::TrainingSignature *training) {
  TC_RETURN_IF_ERROR(checkStopStage(options));
  StageRunner runner(graph, options);
  return runGraphStagesWith(runner, registry, options, training).status();
}

} // namespace tensorc
