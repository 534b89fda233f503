// The compilation pipeline: every stage one line of runStages, logged, timed and dumped by name.
#include "tensorc/Pipeline/Pipeline.h"

#include "tensorc/Codegen/Backend.h"
#include "tensorc/Codegen/CPU/PackGemmWeights.h"
#include "tensorc/Frontend/FX/FxParser.h"
#include "tensorc/Frontend/ONNX/OnnxImporter.h"
#include "tensorc/IR/Printer.h"
#include "tensorc/IR/Verifier.h"
#include "tensorc/Lowering/Lower.h"
#include "tensorc/Support/Log.h"
#include "tensorc/Support/StrCat.h"
#include "tensorc/Support/Timing.h"
#include "tensorc/Transforms/PassRegistry.h"

#include <algorithm>
#include <chrono>

namespace tensorc {

namespace {

size_t stageIndex(const std::string &stage) {
  const std::vector<std::string> &stages = stageNames();
  return size_t(std::find(stages.begin(), stages.end(), stage) - stages.begin());
}

/// What the stages read and write: the graph (import .. autodiff), then the loop IR and its
/// schedule (lower, fuse).
struct PipelineState {
  Graph &graph;
  LoweredModel &lowered;
  autodiff::TrainingSignature &training;
};

/// Runs the stages from `first` to `last` (stage names) that the options do not stop before:
/// times each, logs its output under the stage's category (graph stages: only when it changed)
/// and tells the caller (inspect dumps).
class StageRunner {
public:
  StageRunner(const PipelineOptions &options, const std::string &first, const std::string &last)
      : options_(options), first_(stageIndex(first)),
        last_(std::min(stageIndex(last), options.stopAfter == "all"
                                             ? stageNames().size() - 1
                                             : stageIndex(options.stopAfter))) {}

  /// A stage on the graph.
  Status graph(const std::string &stage, Graph &graph, const std::function<Status(Graph &)> &fn) {
    TC_RETURN_IF_ERROR(inOrder(stage));
    if (!wanted(stage))
      return Status::ok();
    bool show = log::enabled(stage) || options_.onStage;
    std::string before = show ? printGraph(graph) : "";
    TC_RETURN_IF_ERROR(timed(stage, [&] { return fn(graph); }));
    std::string after = show ? printGraph(graph) : "";
    bool changed = stage == stageNames().front() || before != after;
    log::debug(stage, changed ? "\n" + after : "(unchanged)");
    if (options_.onStage)
      options_.onStage(stage, graph, changed);
    return Status::ok();
  }

  /// A stage on the loop IR; `print` gives its output as text when someone reads it.
  Status loop(const std::string &stage, const std::function<Status()> &fn,
              const std::function<Expected<std::string>()> &print) {
    TC_RETURN_IF_ERROR(inOrder(stage));
    if (!wanted(stage))
      return Status::ok();
    TC_RETURN_IF_ERROR(timed(stage, fn));
    if (!log::enabled(stage) && !options_.onLoopStage)
      return Status::ok();
    TC_ASSIGN_OR_RETURN(std::string text, print());
    log::debug(stage, "\n" + text);
    if (options_.onLoopStage)
      options_.onLoopStage(stage, text);
    return Status::ok();
  }

private:
  /// runStages and stageNames() list the same stages in the same order.
  Status inOrder(const std::string &stage) {
    if (next_ >= stageNames().size() || stageNames()[next_] != stage)
      return makeError("internal error: pipeline stage '", stage,
                       "' does not follow stageNames()'s order");
    ++next_;
    return Status::ok();
  }

  bool wanted(const std::string &stage) const {
    size_t index = stageIndex(stage);
    return index >= first_ && index <= last_;
  }

  Status timed(const std::string &stage, const std::function<Status()> &fn) {
    if (options_.onStageStart)
      options_.onStageStart(stage);
    auto start = std::chrono::steady_clock::now();
    Status status = fn();
    double ms = timing::msSince(start);
    if (options_.timeStages)
      log::info(strCat("stage ", stage, ": ", ms, " ms"));
    else
      timing::report("stage " + stage, ms);
    return status;
  }

  const PipelineOptions &options_;
  size_t first_, last_;
  size_t next_ = 0;
};

/// `passes` without those the debugging limits disable.
std::string enabledPasses(const std::string &passes, const DebugLimits &limits) {
  std::vector<std::string> kept;
  for (size_t start = 0; start < passes.size();) {
    size_t end = std::min(passes.find(',', start), passes.size());
    std::string pass = passes.substr(start, end - start);
    if (!limits.disabledPasses.count(pass))
      kept.push_back(pass);
    start = end + 1;
  }
  return join(kept, ",");
}

Status checkStopStage(const PipelineOptions &options) {
  TC_RETURN_IF_ERROR(options.limits.validate());
  const std::vector<std::string> &stages = stageNames();
  if (options.stopAfter != "all" &&
      std::find(stages.begin(), stages.end(), options.stopAfter) == stages.end())
    return makeError("unknown stage '", options.stopAfter, "' (stages: ", join(stages, ", "),
                     ", all)");
  return Status::ok();
}

/// The simplify stage's passes: attention ops form before decompose splits softmax apart.
const char *simplifyPasses(AttentionFusion fusion) {
  switch (fusion) {
  case AttentionFusion::None:
    return "constant-fold,fold-batchnorm,cse,dce";
  case AttentionFusion::Tiled:
    return "constant-fold,fold-batchnorm,cse,dce,fuse-tiled-attention,dce";
  case AttentionFusion::All:
    return "constant-fold,fold-batchnorm,cse,dce,fuse-attention,dce";
  }
  return "";
}

/// The pipeline, in order: one line per stage (stageNames() lists the same names). Stages
/// outside [first, last] and after options.stopAfter are skipped.
Status runStages(PipelineState state, const std::string &modelPath, const OpRegistry *registry,
                 const PipelineOptions &options, const std::string &first,
                 const std::string &last) {
  TC_RETURN_IF_ERROR(checkStopStage(options));
  StageRunner run(options, first, last);
  auto passes = [&](Graph &g, const char *list) {
    PassContext context{*registry};
    return runPasses(g, enabledPasses(list, options.limits), context);
  };
  Graph &graph = state.graph;
  TC_RETURN_IF_ERROR(run.graph("import", graph, [&](Graph &g) -> Status {
    TC_ASSIGN_OR_RETURN(g, importModel(modelPath, *registry));
    return Status::ok();
  }));
  TC_RETURN_IF_ERROR(run.graph("verify", graph, verifyGraph));
  // Training: parameters become inputs before anything could fold them into constants.
  TC_RETURN_IF_ERROR(run.graph("loss", graph, [&](Graph &g) -> Status {
    if (!options.train)
      return Status::ok();
    TC_ASSIGN_OR_RETURN(state.training, autodiff::attachLoss(g, *options.train, *registry));
    return verifyGraph(g);
  }));
  TC_RETURN_IF_ERROR(run.graph("simplify", graph, [&](Graph &g) {
    return passes(g, simplifyPasses(options.attentionFusion));
  }));
  // GPU-only compiles merge products of one operand (Q/K/V projections) into one wider GEMM: at
  // small batch each narrow one left most SMs idle. The CPU splits its GEMMs into tasks anyway.
  TC_RETURN_IF_ERROR(run.graph("decompose", graph, [&](Graph &g) {
    return passes(g, options.gpuOnly ? "decompose,constant-fold,cse,dce,merge-parallel-matmuls,dce"
                                     : "decompose,constant-fold,cse,dce");
  }));
  // No CSE after autodiff: it would merge the min-cut partition's recomputed nodes back into
  // the forward ones they copy.
  TC_RETURN_IF_ERROR(run.graph("autodiff", graph, [&](Graph &g) -> Status {
    if (!options.train)
      return Status::ok();
    TC_ASSIGN_OR_RETURN(autodiff::AutodiffReport report,
                        autodiff::buildTrainingStep(g, *options.train, *registry, state.training));
    log::info(autodiff::describeReport(report));
    if (options.onAutodiff)
      options.onAutodiff(report);
    PassContext context{*registry};
    TC_RETURN_IF_ERROR(runPasses(g, "dce", context)); // not a debugging limit's to skip
    return verifyGraph(g);
  }));
  LoweredModel &lowered = state.lowered;
  TC_RETURN_IF_ERROR(run.loop(
      "lower",
      [&]() -> Status {
        loop::LowerOptions lowering;
        lowering.halfPrecisionTemplates = options.gpuOnly;
        lowering.fallback = options.fallback;
        lowering.attentionTemplates = options.gpuOnly;
        lowering.channelsLastConv = options.gpuOnly || options.cpuChannelsLast;
        lowering.channelsLastNeedsConstantWeights = !options.gpuOnly;
        lowering.channelsLastWindows = options.cpuChannelsLast;
        TC_ASSIGN_OR_RETURN(lowered.program, loop::lower(graph, lowering));
        return Status::ok();
      },
      [&]() -> Expected<std::string> { return loop::printProgram(lowered.program); }));
  TC_RETURN_IF_ERROR(run.loop(
      "fuse",
      [&]() -> Status {
        sched::ScheduleOptions scheduling;
        scheduling.anyFloatEpilogue = options.gpuOnly;
        // Epilogues that store at a permutation of the product (head splits, window reverses)
        // stay off in compiles: they store element by element, and on an H100 the Q/K/V GEMMs
        // of BERT f32 took 42 us with them against 16 us plain (BERT f32 2.33 -> 2.83 ms, Swin-T
        // f32 1.72 -> 1.89 ms), far more than the transpose kernels they remove. `tensorc opt`
        // keeps them for loop-IR work until they store vectors.
        scheduling.permutedEpilogue = false;
        // CPU-only inference: a convolution's residual add writes over the residual.
        if (options.cpuChannelsLast)
          scheduling.writesOutputOnce = cpu::templateWritesOutputOnce;
        scheduling.maxFusions = options.limits.maxFusions;
        scheduling.disabledFusions = options.limits.disabledFusions;
        TC_ASSIGN_OR_RETURN(lowered.schedule, sched::schedule(lowered.program, scheduling));
        return Status::ok();
      },
      [&]() -> Expected<std::string> {
        return sched::printSchedule(lowered.program, lowered.schedule);
      }));
  // What `compile --target cuda` hands NVRTC, for people (inspect); compile runs every target's
  // backend on the schedule itself (compileGraph).
  TC_RETURN_IF_ERROR(run.loop(
      "cuda", []() { return Status::ok(); },
      [&]() -> Expected<std::string> {
        codegen::CudaBackendOptions cuda;
        cuda.validate = false;
        cuda.tf32 = options.tf32;
        TC_ASSIGN_OR_RETURN(std::unique_ptr<codegen::Backend> backend,
                            codegen::createCudaBackend(cuda));
        TC_ASSIGN_OR_RETURN(std::string source, backend->source(lowered.program, lowered.schedule));
        return strCat("// --matmul-precision ", options.tf32 ? "high" : "highest", "\n", source);
      }));
  return Status::ok();
}

} // namespace

const std::vector<std::string> &stageNames() {
  static const std::vector<std::string> names = {
      "import", "verify", "loss", "simplify", "decompose", "autodiff", "lower", "fuse", "cuda"};
  return names;
}

std::vector<std::string> disablablePasses() {
  return {"constant-fold", "fold-batchnorm",        "cse",
          "dce",           "fuse-attention",        "fuse-tiled-attention",
          "decompose",     "merge-parallel-matmuls"};
}

Status DebugLimits::validate() const {
  std::vector<std::string> passes = disablablePasses();
  for (const std::string &pass : disabledPasses)
    if (std::find(passes.begin(), passes.end(), pass) == passes.end())
      return makeError("cannot disable pass '", pass, "' (passes: ", join(passes, ", "), ")");
  for (const std::string &kind : disabledFusions)
    if (kind != "pointwise" && kind != "reduction" && kind != "epilogue")
      return makeError("unknown fusion kind '", kind, "' (pointwise, reduction, epilogue)");
  return Status::ok();
}

bool isLoopStage(const std::string &stage) {
  size_t index = stageIndex(stage);
  return index >= stageIndex("lower") && index < stageNames().size();
}

Expected<LoweredModel> lowerAndSchedule(const Graph &graph, const PipelineOptions &options) {
  LoweredModel lowered;
  autodiff::TrainingSignature training;
  // Only the loop stages run: the graph is read, never written.
  TC_RETURN_IF_ERROR(runStages({const_cast<Graph &>(graph), lowered, training}, "", nullptr,
                               options, "lower", stageNames().back()));
  return lowered;
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
  options.cpuChannelsLast = targets.cpu && !targets.cuda && !training;
  if (fuseAttention.value_or(false) && !options.gpuOnly)
    return makeError("--fuse-attention needs --target cuda (the CPU has no attention kernel)");
  if (fuseAttention.value_or(false) && training)
    return makeError("--fuse-attention has no gradient; leave it off with --train");
  if (fuseAttention)
    options.attentionFusion = *fuseAttention ? AttentionFusion::All : AttentionFusion::None;
  else // by default the heads that run on tensor cores, where fusing pays off
    options.attentionFusion =
        options.gpuOnly && !training ? AttentionFusion::Tiled : AttentionFusion::None;
  return options;
}

Expected<Graph> importModel(const std::string &path, const OpRegistry &registry) {
  if (path.ends_with(".fx"))
    return fx::loadFxFile(path, registry);
  if (path.ends_with(".onnx"))
    return onnx::importOnnxFile(path, registry);
  return makeError(path, ": unknown model format (expected .fx or .onnx)");
}

Expected<Graph> runPipeline(const std::string &modelPath, const OpRegistry &registry,
                            const PipelineOptions &options, autodiff::TrainingSignature *training) {
  Graph graph;
  LoweredModel lowered;
  autodiff::TrainingSignature signature;
  TC_RETURN_IF_ERROR(
      runStages({graph, lowered, signature}, modelPath, &registry, options, "import", "autodiff"));
  if (training)
    *training = std::move(signature);
  return graph;
}

Status runGraphStages(Graph &graph, const OpRegistry &registry, const PipelineOptions &options,
                      autodiff::TrainingSignature *training) {
  LoweredModel lowered;
  autodiff::TrainingSignature signature;
  TC_RETURN_IF_ERROR(
      runStages({graph, lowered, signature}, "", &registry, options, "verify", "autodiff"));
  if (training)
    *training = std::move(signature);
  return Status::ok();
}

Status runCompileStages(Graph &graph, const OpRegistry &registry, const PipelineOptions &options,
                        LoweredModel &lowered, autodiff::TrainingSignature &training) {
  PipelineOptions untilFuse = options;
  untilFuse.stopAfter = "fuse";
  return runStages({graph, lowered, training}, "", &registry, untilFuse, "verify", "fuse");
}

} // namespace tensorc
