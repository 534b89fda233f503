// The compilation pipeline as one readable list of stages (DESIGN.md §1).
#pragma once

#include "tensorc/Autodiff/Training.h"
#include "tensorc/IR/Graph.h"
#include "tensorc/Lowering/LoopIR.h"
#include "tensorc/Lowering/Lower.h"
#include "tensorc/Scheduler/Schedule.h"

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tensorc {

/// The stages in order (runStages in Pipeline.cpp runs them, one line each); their names are also
/// dump-file names and log categories. The last, `cuda`, renders the CUDA source for `inspect`;
/// `compile` hands the schedule to each target's backend instead (compileGraph).
const std::vector<std::string> &stageNames();

/// Which softmax(Q.K^T [+ mask]).V patterns the simplify stage makes one attention op.
enum class AttentionFusion : uint8_t {
  None,
  Tiled, // heads the CUDA backend has a tiled kernel for (fuse-tiled-attention)
  All,   // every match (fuse-attention); others run on the CUDA warp-per-row kernel
};

/// Debugging limits (`tensorc bisect`; `--disable-passes`, `--disable-fusions`, `--max-fusions`):
/// graph passes the simplify and decompose stages skip, and fusions the scheduler refuses.
struct DebugLimits {
  std::set<std::string> disabledPasses;  // constant-fold, cse, dce, fold-batchnorm, decompose...
  int64_t maxFusions = -1;               // -1: no limit
  std::set<std::string> disabledFusions; // pointwise, reduction, epilogue
  /// An error naming an unknown pass or fusion kind.
  Status validate() const;
};

/// The passes of the simplify and decompose stages (what DebugLimits may disable), in order.
std::vector<std::string> disablablePasses();

struct PipelineOptions {
  /// Stop after this stage ("all" runs every stage).
  std::string stopAfter = "all";
  /// Called after each stage with its name, the graph, and whether the stage changed it.
  std::function<void(const std::string &stage, const Graph &graph, bool changed)> onStage;
  /// Called after each LoopIR stage (lower, fuse) with its name and printed IR.
  std::function<void(const std::string &stage, const std::string &text)> onLoopStage;
  /// Log each stage's wall time (category "time").
  bool timeStages = false;
  /// Called with a stage's name before it runs (the compile's progress line). May be empty.
  std::function<void(const std::string &stage)> onStageStart;
  /// Code for GPUs only (`--target cuda`): f16/bf16 GEMMs become templates and epilogues may
  /// store any float dtype (the CPU GEMM is f32-only).
  bool gpuOnly = false;
  /// `--matmul-precision high`: the CUDA stage renders f32 GEMMs and convolutions on TF32 tensor
  /// cores (compile takes it from CompileOptions::tf32).
  bool tf32 = false;
  /// CPU-only inference: convolutions with constant weights run channels-last on the CPU's
  /// NHWC kernels (weights packed at compile time), NHWC kept between them.
  bool cpuChannelsLast = false;
  /// Which attention patterns the simplify stage fuses into one op (GPU-only compiles).
  AttentionFusion attentionFusion = AttentionFusion::None;
  /// `--fallback`: whether an op without a generated kernel may run on its reference kernel.
  loop::FallbackPolicy fallback = loop::FallbackPolicy::Allow;
  /// Compile a training step (`--train`): the loss stage attaches the loss, the autodiff stage
  /// builds gradients and the optimizer update. Unset: both stages leave the graph alone.
  std::optional<autodiff::TrainOptions> train;
  /// Called after the autodiff stage with its joint graph and partitions (inspect prints them).
  std::function<void(const autodiff::AutodiffReport &report)> onAutodiff;
  DebugLimits limits;
};

/// The backends a `--target` list names ("cpu", "cuda" or "cpu,cuda").
struct TargetSet {
  bool cpu = false, cuda = false;
};
Expected<TargetSet> parseTargets(const std::string &targets);

/// Pipeline options for code on `targets`: gpuOnly for CUDA alone; attention fusion as asked
/// (unset: the tensor-core shapes for CUDA alone, except for `training` steps; none otherwise).
/// Asking for it is an error when the CPU needs code too (the CPU has no attention kernel) and
/// for `training` steps (the attention op has no gradient).
Expected<PipelineOptions> pipelineOptionsFor(const TargetSet &targets,
                                             std::optional<bool> fuseAttention, bool training);

// Windows onto the one pipeline: each runs a span of its stages, up to options.stopAfter.

/// Runs the stages after import (verify, loss, simplify, decompose, autodiff) on an already
/// imported graph. With options.train, `training` (if given) receives how the step's inputs and
/// outputs carry state between steps.
Status runGraphStages(Graph &graph, const OpRegistry &registry, const PipelineOptions &options,
                      autodiff::TrainingSignature *training = nullptr);

/// Graph stages end at "autodiff"; the stages after it work on LoopIR.
bool isLoopStage(const std::string &stage);

/// The LoopIR stages: lower the decomposed graph, then fuse and plan buffers (and, for a caller
/// of onLoopStage, render the CUDA source).
struct LoweredModel {
  loop::LoopProgram program;
  sched::Schedule schedule;
};
Expected<LoweredModel> lowerAndSchedule(const Graph &graph, const PipelineOptions &options);

/// What `compile` runs before code generation: verify .. fuse on an imported graph.
Status runCompileStages(Graph &graph, const OpRegistry &registry, const PipelineOptions &options,
                        LoweredModel &lowered, autodiff::TrainingSignature &training);

/// Loads a model by its extension: .fx (with side .safetensors weights) or .onnx.
Expected<Graph> importModel(const std::string &path, const OpRegistry &registry);

/// Imports `modelPath` and runs the graph stages up to `options.stopAfter`.
Expected<Graph> runPipeline(const std::string &modelPath, const OpRegistry &registry,
                            const PipelineOptions &options,
                            autodiff::TrainingSignature *training = nullptr);

} // namespace tensorc
