// `tensorc bisect`: compiled kernels against the interpreter one at a time, then the search over
// fusion limits and disabled passes for what breaks the model.
#include "tensorc/Debug/Bisect.h"

#include "Format.h"
#include "TempDir.h"

#include "tensorc/Codegen/CPU/Target.h"
#include "tensorc/Debug/Compare.h"
#include "tensorc/Frontend/ONNX/OnnxEditor.h"
#include "tensorc/Interp/Inputs.h"
#include "tensorc/Interp/Interpreter.h"
#include "tensorc/Pipeline/Compile.h"
#include "tensorc/Pipeline/Pipeline.h"
#include "tensorc/Runtime/Model.h"
#include "tensorc/Support/StrCat.h"

#include <map>
#include <optional>
#include <set>

namespace tensorc::debug {

namespace {

using loop::LoopNode;
using sched::Kernel;

/// Buffers a kernel writes (a GEMM whose epilogue is fused writes only the output of the
/// epilogue chain's last node).
std::vector<int> writtenBy(const loop::LoopProgram &program, const Kernel &kernel) {
  std::vector<int> written;
  for (size_t n = 0; n < kernel.nodes.size(); ++n) {
    const LoopNode &node = program.nodes[size_t(kernel.nodes[n])];
    if (node.kind == LoopNode::Kind::Extern) {
      written.insert(written.end(), node.externOutputs.begin(), node.externOutputs.end());
      continue;
    }
    if (kernel.kind == Kernel::Kind::Template && n + 1 < kernel.nodes.size())
      continue;
    written.push_back(node.output);
  }
  return written;
}

/// The outcome of one compiled kernel in the isolated run.
struct KernelOutcome {
  struct Checked {
    std::string buffer;
    std::vector<int64_t> shape;
    Comparison comparison;
  };
  std::vector<Checked> checked;
  std::vector<std::string> unchecked;  // written, but no graph value of that name
  std::vector<std::string> compiledIn; // read, but no interpreter value to isolate them with
  bool diverged() const {
    for (const Checked &check : checked)
      if (!check.comparison.matches)
        return true;
    return false;
  }
};

/// Before each launch, writes the interpreter's values into the buffers the kernel reads (so
/// each kernel is judged on exact inputs); after it, compares what it wrote.
class KernelChecker : public rt::LaunchObserver {
public:
  KernelChecker(const LoweredModel &lowered, const std::map<std::string, Tensor> &reference)
      : lowered_(lowered), reference_(reference), outcomes_(lowered.schedule.kernels.size()) {}

  Status beforeLaunch(size_t launch, rt::BufferAccess &buffers) override {
    if (launch >= outcomes_.size())
      return Status::ok(); // the output copies at the end
    const Kernel &kernel = lowered_.schedule.kernels[launch];
    std::vector<int> written = writtenBy(lowered_.program, kernel);
    for (int arg : kernel.args) {
      const loop::Buffer &buffer = lowered_.program.buffers[size_t(arg)];
      if (buffer.kind != loop::Buffer::Kind::Intermediate ||
          std::count(written.begin(), written.end(), arg))
        continue;
      auto it = reference_.find(buffer.name);
      if (it == reference_.end()) {
        outcomes_[launch].compiledIn.push_back(buffer.name);
        continue;
      }
      TC_RETURN_IF_ERROR(buffers.write(arg, it->second));
    }
    return Status::ok();
  }

  Status afterLaunch(size_t launch, rt::BufferAccess &buffers) override {
    if (launch >= outcomes_.size())
      return Status::ok();
    const Kernel &kernel = lowered_.schedule.kernels[launch];
    for (int id : writtenBy(lowered_.program, kernel)) {
      const loop::Buffer &buffer = lowered_.program.buffers[size_t(id)];
      auto it = reference_.find(buffer.name);
      if (it == reference_.end()) {
        outcomes_[launch].unchecked.push_back(buffer.name);
        continue;
      }
      TC_ASSIGN_OR_RETURN(Tensor actual, buffers.read(id));
      Tensor expected = it->second.reshaped(actual.shape());
      outcomes_[launch].checked.push_back(
          {buffer.name, actual.shape(), compareTensors(expected, actual)});
    }
    return Status::ok();
  }

  const std::vector<KernelOutcome> &outcomes() const { return outcomes_; }

private:
  const LoweredModel &lowered_;
  const std::map<std::string, Tensor> &reference_;
  std::vector<KernelOutcome> outcomes_;
};

std::string limitsText(const DebugLimits &limits) {
  std::vector<std::string> parts;
  if (limits.maxFusions >= 0)
    parts.push_back(strCat("--max-fusions ", limits.maxFusions));
  if (!limits.disabledFusions.empty())
    parts.push_back("--disable-fusions " + join(limits.disabledFusions, ","));
  if (!limits.disabledPasses.empty())
    parts.push_back("--disable-passes " + join(limits.disabledPasses, ","));
  return parts.empty() ? std::string("no limits") : join(parts, " ");
}

class Bisector {
public:
  Bisector(const std::string &path, const OpRegistry &registry, const BisectOptions &options,
           const std::function<void(const std::string &)> &print)
      : path_(path), registry_(registry), options_(options), print_(print) {}

  Expected<BisectResult> run() {
    TC_ASSIGN_OR_RETURN(TargetSet targets, parseTargets(options_.target));
    if (targets.cpu == targets.cuda)
      return makeError("bisect one target at a time: --target cpu or --target cuda");
    TC_ASSIGN_OR_RETURN(pipeline_, pipelineOptionsFor(targets, options_.fuseAttention, false));
    TC_ASSIGN_OR_RETURN(work_, TempDir::create("tensorc-bisect"));

    // The oracle: the interpreter on the model as written.
    PipelineOptions verifyOnly;
    verifyOnly.stopAfter = "verify";
    TC_ASSIGN_OR_RETURN(Graph source, runPipeline(path_, registry_, verifyOnly));
    for (const auto &node : source.nodes())
      for (const Value *output : node->outputs())
        sourceOps_[output->name()] = node->op().name;
    if (path_.size() > 5 && path_.compare(path_.size() - 5, 5, ".onnx") == 0) {
      // The ONNX nodes behind the graph's values (the importer names values after ONNX outputs).
      TC_ASSIGN_OR_RETURN(onnx::OnnxModel onnxModel, onnx::OnnxModel::load(path_));
      onnxNodes_ = onnxModel.nodesByOutput();
    }
    TC_ASSIGN_OR_RETURN(inputs_, makeInputs(source));
    Expected<std::vector<Tensor>> expected = interp::interpret(source, inputs_);
    if (!expected)
      return makeError(path_, ": the interpreter fails on the model: ", expected.error().message());
    expectedOutputs_ = std::move(*expected);
    outputNames_.clear();
    for (const Value *output : source.outputs())
      outputNames_.push_back(output->name());

    // The graph the compiler lowers, its kernels, and the interpreter's value of every buffer.
    TC_ASSIGN_OR_RETURN(Graph lowered, importModel(path_, registry_));
    if (Status staged = runGraphStages(lowered, registry_, pipeline_); !staged)
      return makeError(path_, ": ", staged.message());
    Expected<LoweredModel> loweredModel = lowerAndSchedule(lowered, pipeline_);
    if (!loweredModel)
      return makeError(path_, ": ", loweredModel.error().message());
    lowered_ = std::move(*loweredModel);
    std::set<std::string> wanted;
    for (const loop::Buffer &buffer : lowered_.program.buffers)
      if (buffer.kind == loop::Buffer::Kind::Intermediate)
        wanted.insert(buffer.name);
    std::map<std::string, Tensor> reference;
    Expected<std::vector<Tensor>> interpreted =
        interp::interpret(lowered, inputs_, {}, [&](const Value &value, const Tensor &tensor) {
          if (wanted.count(value.name()))
            reference[value.name()] = tensor;
          // A value stored channels-last (a CPU or CUDA convolution chain) is compared in the
          // NHWC buffer its kernel writes.
          if (wanted.count(value.name() + "_nhwc"))
            if (std::optional<Tensor> nhwc = toChannelsLast(tensor))
              reference[value.name() + "_nhwc"] = std::move(*nhwc);
        });
    if (!interpreted)
      return makeError(
          path_, ": the interpreter fails on the lowered graph: ", interpreted.error().message());
    loweredGraph_ = std::move(lowered);

    print_(strCat("bisect ", path_, " (target ", options_.target,
                  "): ", lowered_.schedule.kernels.size(),
                  " kernels against the interpreter's values of "
                  "the lowered graph, inputs ",
                  options_.inputsPath.empty()
                      ? strCat("random (seed ", options_.seed, ", ", describeDims(), ")")
                      : options_.inputsPath));
    BisectResult result;
    TC_RETURN_IF_ERROR(checkKernels(reference, result));

    // End to end: the model's outputs against the interpreter on the model as written.
    Expected<std::string> failure = failureWith(DebugLimits());
    if (!failure)
      return failure.takeError();
    result.outputsMatch = failure->empty();
    print_(result.outputsMatch ? "outputs: match the interpreter's on the model as written"
                               : "outputs: " + *failure);
    if (result.outputsMatch && result.kernelsDiverged == 0)
      return result;
    if (!options_.narrow)
      return result;
    if (result.outputsMatch) {
      print_("narrowing skipped: the outputs stay within tolerance");
      return result;
    }
    TC_RETURN_IF_ERROR(narrow(result));
    return result;
  }

private:
  /// `tensor` ([N, C, H, W]) as [N, H, W, C]; none for other ranks.
  static std::optional<Tensor> toChannelsLast(const Tensor &tensor) {
    const std::vector<int64_t> &s = tensor.shape();
    if (s.size() != 4)
      return std::nullopt;
    Expected<Tensor> out = Tensor::zeros(tensor.dtype(), {s[0], s[2], s[3], s[1]});
    if (!out)
      return std::nullopt;
    for (int64_t n = 0, at = 0; n < s[0]; ++n)
      for (int64_t c = 0; c < s[1]; ++c)
        for (int64_t h = 0; h < s[2]; ++h)
          for (int64_t w = 0; w < s[3]; ++w, ++at)
            out->setDouble(((n * s[2] + h) * s[3] + w) * s[1] + c, tensor.getDouble(at));
    return std::move(*out);
  }

  std::string describeDims() const {
    std::vector<std::string> parts;
    for (const auto &[name, value] : dims_)
      parts.push_back(strCat(name, "=", value));
    return parts.empty() ? std::string("static shapes") : join(parts, ", ");
  }

  Expected<std::vector<Tensor>> makeInputs(const Graph &graph) {
    if (!options_.inputsPath.empty())
      return interp::loadInputs(graph, options_.inputsPath);
    dims_ = options_.dims;
    for (const Value *input : graph.userInputs())
      for (const SymInt &dim : input->type().shape)
        if (auto symbol = dim.symbolName())
          dims_.emplace(*symbol, 2);
    return interp::randomInputs(graph, options_.seed, dims_);
  }

  /// Compiles the model with `limits` into the work directory and loads it.
  Expected<std::unique_ptr<rt::Model>> compileAndLoad(const DebugLimits &limits) {
    CompileOptions compile;
    compile.outDir = work_.path() + "/bundle" + std::to_string(compiles_++);
    compile.target = options_.target;
    compile.fuseAttention = options_.fuseAttention;
    compile.quiet = true;
    compile.limits = limits;
    compile.cudaArchs = {options_.cudaArch};
    compile.cpuArchs = {cpu::hostArch()};
    std::string variant = options_.variant.empty() ? chosenVariant_ : options_.variant;
    if (!variant.empty())
      compile.variants = {variant};
    Expected<CompileSummary> compiled = compileModel(path_, registry_, compile);
    if (!compiled && limitsText(limits) == limitsText(DebugLimits()))
      return makeError(compiled.error().message(),
                       " (bisect checks values; `tensorc minify --check compile` reduces a model "
                       "that does not compile)");
    TC_RETURN_IF_ERROR(compiled.status());
    rt::LoadOptions load;
    load.device = options_.target;
    load.cudaDevice = options_.cudaDevice;
    load.variant = variant;
    TC_ASSIGN_OR_RETURN(std::unique_ptr<rt::Model> model, rt::Model::load(compile.outDir, load));
    if (chosenVariant_.empty())
      chosenVariant_ = model->variant();
    return model;
  }

  /// "" when the model compiled with `limits` gives the interpreter's outputs, else why not
  /// (a compile or run error counts as a failure too). Errors only for the unlimited compile.
  Expected<std::string> failureWith(const DebugLimits &limits) {
    std::string key = limitsText(limits);
    if (auto it = failures_.find(key); it != failures_.end())
      return it->second;
    std::string failure;
    Expected<std::unique_ptr<rt::Model>> model = compileAndLoad(limits);
    if (!model) {
      if (key == limitsText(DebugLimits()))
        return model.takeError();
      failure = "does not compile: " + model.error().message();
    } else {
      Expected<std::vector<Tensor>> outputs = (*model)->run(inputs_);
      if (!outputs) {
        failure = "the run fails: " + outputs.error().message();
      } else {
        for (size_t i = 0; i < outputs->size() && failure.empty(); ++i) {
          Comparison comparison = compareTensors(expectedOutputs_[i], (*outputs)[i]);
          if (!comparison.matches)
            failure =
                strCat("output '", outputNames_[i],
                       "' differs: ", describeComparison(comparison, expectedOutputs_[i].shape()));
        }
      }
    }
    failures_[key] = failure;
    return failure;
  }

  /// "%relu1 (aten.relu)": the model's value a lowered value comes from: the same name, or the
  /// longest model value name it extends with "_..." (decompositions name their nodes so).
  std::string sourceOf(const std::string &name) const {
    std::string best;
    for (auto it = sourceOps_.begin(); it != sourceOps_.end(); ++it) {
      const std::string &candidate = it->first;
      if ((name == candidate ||
           (name.size() > candidate.size() && name.compare(0, candidate.size(), candidate) == 0 &&
            name[candidate.size()] == '_')) &&
          candidate.size() > best.size())
        best = candidate;
    }
    if (best.empty())
      return "no node of the model (a value the compiler made)";
    auto onnxNode = onnxNodes_.find(best);
    return strCat("%", best, " (", sourceOps_.at(best), ")",
                  onnxNode == onnxNodes_.end() ? std::string() : ", ONNX " + onnxNode->second);
  }

  Status checkKernels(const std::map<std::string, Tensor> &reference, BisectResult &result) {
    TC_ASSIGN_OR_RETURN(std::unique_ptr<rt::Model> model, compileAndLoad(DebugLimits()));
    const bundle::Manifest &manifest = model->manifest();
    const sched::Schedule &schedule = lowered_.schedule;
    if (manifest.launches.size() < schedule.kernels.size())
      return makeError("internal: the bundle has ", manifest.launches.size(), " launches for ",
                       schedule.kernels.size(), " kernels");
    for (size_t i = 0; i < schedule.kernels.size(); ++i) {
      const Kernel &kernel = schedule.kernels[i];
      std::string expected = kernel.kind == Kernel::Kind::Extern
                                 ? lowered_.program.nodes[size_t(kernel.nodes[0])].externOp
                                 : kernel.name;
      if (manifest.launches[i].name != expected)
        return makeError("internal: launch ", i, " is ", manifest.launches[i].name,
                         ", but the schedule's kernel ", i, " is ", expected);
    }
    KernelChecker checker(lowered_, reference);
    model->setLaunchObserver(&checker);
    Expected<std::vector<Tensor>> outputs = model->run(inputs_);
    model->setLaunchObserver(nullptr);
    if (!outputs)
      return makeError(path_, ": the isolated run fails: ", outputs.error().message());

    const std::vector<KernelOutcome> &outcomes = checker.outcomes();
    std::vector<std::string> uncheckedKernels;
    size_t compared = 0;
    for (size_t i = 0; i < outcomes.size(); ++i) {
      const KernelOutcome &outcome = outcomes[i];
      if (outcome.checked.empty()) {
        uncheckedKernels.push_back(
            strCat(schedule.kernels[i].name, " (", join(outcome.unchecked, ", "), ")"));
        continue;
      }
      ++compared;
      if (!outcome.diverged())
        continue;
      ++result.kernelsDiverged;
      if (result.firstDivergent.empty()) {
        result.firstDivergent = schedule.kernels[i].name;
        describeDivergence(i, outcome);
      }
    }
    result.kernelsChecked = compared;
    std::string note;
    if (!uncheckedKernels.empty())
      note = strCat("; not compared, no interpreter value of what they write: ",
                    join(uncheckedKernels, ", "));
    if (result.kernelsDiverged == 0)
      print_(strCat("all ", schedule.kernels.size(), " kernels match (", compared,
                    " compared with rtol/atol 1e-3/1e-5 for f32, 2e-2/1e-3 for f16 and bf16, "
                    "exact for integers",
                    note, ")"));
    else
      print_(strCat(result.kernelsDiverged, " of ", compared,
                    " compared kernels diverge; the "
                    "first is ",
                    result.firstDivergent, note));
    return Status::ok();
  }

  void describeDivergence(size_t index, const KernelOutcome &outcome) {
    const Kernel &kernel = lowered_.schedule.kernels[index];
    print_(strCat("first divergent kernel: launch ", index, " of ",
                  lowered_.schedule.kernels.size(), ", ", kernel.name));
    for (int id : kernel.nodes) {
      const LoopNode &node = lowered_.program.nodes[size_t(id)];
      print_(strCat("  fused node ", node.name, " (", join(node.origins, ", "), ") from ",
                    sourceOf(node.name)));
    }
    for (const KernelOutcome::Checked &check : outcome.checked)
      print_(strCat("  ", check.buffer, " ", check.comparison.matches ? "matches" : "DIVERGES",
                    ": ", describeComparison(check.comparison, check.shape)));
    if (!outcome.compiledIn.empty())
      print_("  (inputs from compiled kernels, no interpreter value: " +
             join(outcome.compiledIn, ", ") + ")");
  }

  /// Binary search over --max-fusions, then each fusion kind and graph pass disabled alone.
  Status narrow(BisectResult &result) {
    print_("narrowing (recompiling with limits; each compile is checked end to end):");
    int64_t total = 0;
    std::map<std::string, int64_t> kinds;
    for (const sched::FusionDecision &decision : lowered_.schedule.decisions)
      if (decision.fused) {
        ++total;
        ++kinds[sched::fusionKindName(decision.kind)];
      }
    std::string fusionCulprit;
    std::vector<std::string> fixes; // fusion kinds and passes whose absence makes it match
    DebugLimits none;
    none.maxFusions = 0;
    TC_ASSIGN_OR_RETURN(std::string unfused, failureWith(none));
    if (total == 0) {
      print_("  fusion: the schedule makes no fusion");
    } else if (!unfused.empty()) {
      print_(strCat("  fusion: still fails with --max-fusions 0 (", total,
                    " fusions made by default): not a fusion"));
    } else {
      int64_t passing = 0, failing = total;
      Expected<int64_t> first =
          firstFailingLimit(passing, failing, [&](int64_t k) -> Expected<bool> {
            DebugLimits limits;
            limits.maxFusions = k;
            TC_ASSIGN_OR_RETURN(std::string failure, failureWith(limits));
            print_(strCat("  --max-fusions ", k, ": ", failure.empty() ? "matches" : "fails"));
            return !failure.empty();
          });
      if (!first)
        return first.takeError();
      fusionCulprit = strCat("fusion #", *first, " (", describeFusion(*first), ")");
      print_(strCat("  fusion: --max-fusions ", *first - 1, " matches, ", *first,
                    " fails: fusion #", *first, " breaks it: ", describeFusion(*first)));
    }
    for (const auto &[kind, count] : kinds) {
      DebugLimits limits;
      limits.disabledFusions = {kind};
      TC_ASSIGN_OR_RETURN(std::string failure, failureWith(limits));
      print_(strCat("  --disable-fusions ", kind, " (", count,
                    " made): ", failure.empty() ? "matches" : "still fails"));
      if (failure.empty())
        fixes.push_back(kind + " fusion");
    }
    std::vector<std::string> passes = {"constant-fold", "fold-batchnorm", "cse", "dce"};
    if (pipeline_.attentionFusion == AttentionFusion::Tiled)
      passes.push_back("fuse-tiled-attention");
    else if (pipeline_.attentionFusion == AttentionFusion::All)
      passes.push_back("fuse-attention");
    passes.push_back("decompose");
    for (const std::string &pass : passes) {
      DebugLimits limits;
      limits.disabledPasses = {pass};
      TC_ASSIGN_OR_RETURN(std::string failure, failureWith(limits));
      std::string outcome = failure.empty()                             ? "matches"
                            : failure.rfind("does not compile", 0) == 0 ? "does not compile"
                                                                        : "still fails";
      print_(strCat("  --disable-passes ", pass, ": ", outcome));
      if (failure.empty())
        fixes.push_back("pass " + pass);
    }
    // A kernel that diverges on the interpreter's own inputs is wrong code for its part of the
    // lowered graph, unless it is right unfused; passes whose absence hides it only route its ops
    // elsewhere. Without such a kernel, the lowered graph itself differs: a pass is to blame.
    if (!fusionCulprit.empty()) {
      result.culprit = fusionCulprit;
      print_("verdict: " + fusionCulprit + " breaks it: the kernels match unfused");
    } else if (!result.firstDivergent.empty()) {
      result.culprit = "code generation of " + result.firstDivergent;
      print_("verdict: the code generated for " + result.firstDivergent +
             " is wrong: it diverges on the interpreter's inputs and no fusion limit fixes it" +
             (fixes.empty() ? std::string()
                            : " (without " + join(fixes, ", ") +
                                  " the model avoids it: its ops then compile differently or run "
                                  "on reference kernels)"));
    } else if (!fixes.empty()) {
      result.culprit = fixes.front();
      print_("verdict: " + join(fixes, ", ") + (fixes.size() == 1 ? " breaks it" : " each fix it") +
             ": every kernel matches the lowered graph, whose values differ from the model's");
    } else {
      print_("verdict: every kernel matches the lowered graph, yet the outputs differ, and no "
             "single pass or fusion limit explains it");
    }
    return Status::ok();
  }

  /// The k-th fusion (1-based) the scheduler makes under --max-fusions k.
  std::string describeFusion(int64_t k) {
    PipelineOptions limited = pipeline_;
    limited.limits.maxFusions = k;
    Expected<LoweredModel> schedule = lowerAndSchedule(loweredGraph_, limited);
    if (!schedule)
      return schedule.error().message();
    int64_t seen = 0;
    for (const sched::FusionDecision &decision : schedule->schedule.decisions) {
      if (!decision.fused || ++seen != k)
        continue;
      std::string kernel;
      for (const Kernel &candidate : schedule->schedule.kernels)
        if (std::count(candidate.nodes.begin(), candidate.nodes.end(), decision.node))
          kernel = candidate.name;
      return strCat(sched::fusionKindName(decision.kind), ": ", decision.reason, ", in kernel ",
                    kernel);
    }
    return "?";
  }

  const std::string &path_;
  const OpRegistry &registry_;
  const BisectOptions &options_;
  const std::function<void(const std::string &)> &print_;
  PipelineOptions pipeline_;
  TempDir work_;
  SymbolBindings dims_;
  std::vector<Tensor> inputs_;
  std::vector<Tensor> expectedOutputs_;
  std::vector<std::string> outputNames_;
  std::map<std::string, std::string> sourceOps_;
  std::map<std::string, std::string> onnxNodes_; // ONNX output name -> "node 'x' (Op)"
  LoweredModel lowered_;
  Graph loweredGraph_; // the graph after the graph stages, what lowering reads
  std::string chosenVariant_;
  size_t compiles_ = 0;
  std::map<std::string, std::string> failures_;
};

} // namespace

Expected<int64_t> firstFailingLimit(int64_t passing, int64_t failing,
                                    const std::function<Expected<bool>(int64_t)> &fails) {
  if (passing >= failing)
    return makeError("internal: the passing limit ", passing, " is not below the failing ",
                     failing);
  while (failing - passing > 1) {
    int64_t middle = passing + (failing - passing) / 2;
    TC_ASSIGN_OR_RETURN(bool failed, fails(middle));
    (failed ? failing : passing) = middle;
  }
  return failing;
}

Expected<BisectResult> bisectModel(const std::string &modelPath, const OpRegistry &registry,
                                   const BisectOptions &options,
                                   const std::function<void(const std::string &)> &print) {
  return Bisector(modelPath, registry, options, print).run();
}

} // namespace tensorc::debug
