// The tensorc driver: parses options and calls the libraries; the only place that exits.
#include "tensorc/Frontend/FX/FxParser.h"
#include "tensorc/IR/Printer.h"
#include "tensorc/Interp/Inputs.h"
#include "tensorc/Interp/Interpreter.h"
#include "tensorc/Ops/Registry.h"
#include "tensorc/Pipeline/Compile.h"
#include "tensorc/Pipeline/Pipeline.h"
#include "tensorc/Runtime/Model.h"
#include "tensorc/Runtime/RunInputs.h"
#include "tensorc/Runtime/Trainer.h"
#include "tensorc/Support/Limits.h"
#include "tensorc/Support/Log.h"
#include "tensorc/Support/Printable.h"
#include "tensorc/Support/Safetensors.h"
#include "tensorc/Support/SignalCleanup.h"
#include "tensorc/Support/StrCat.h"
#include "tensorc/Transforms/PassRegistry.h"

#include <CLI/CLI.hpp>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace {

using namespace tensorc;

int fail(const std::string &message) {
  // One line, whatever names from the model it quotes (no forged lines, no terminal escapes).
  std::cerr << "tensorc: error: " << printable(message) << "\n";
  return 1;
}

/// `--train` and its options, shared by compile, inspect and train.
struct TrainFlags {
  bool train = false;
  autodiff::TrainOptions options;
  std::string params;
  std::string partition = "min-cut";

  /// The options to compile with, or nullopt without --train.
  Expected<std::optional<autodiff::TrainOptions>> resolve() const {
    if (!train)
      return std::optional<autodiff::TrainOptions>();
    autodiff::TrainOptions resolved = options;
    std::stringstream list(params);
    for (std::string item; std::getline(list, item, ',');)
      if (!item.empty())
        resolved.params.push_back(item);
    TC_ASSIGN_OR_RETURN(resolved.partition, autodiff::parsePartitionKind(partition));
    return std::optional<autodiff::TrainOptions>(resolved);
  }
};

void addTrainOptions(CLI::App *command, TrainFlags &flags, bool always = false) {
  if (!always)
    command->add_flag("--train", flags.train,
                      "Compile a training step (forward, backward and optimizer update) instead "
                      "of inference");
  command
      ->add_option("--loss", flags.options.loss,
                   "Training loss: mse (against --label), cross_entropy (logits vs integer "
                   "labels), output (the model's scalar output)")
      ->check(CLI::IsMember({"mse", "cross_entropy", "output"}))
      ->capture_default_str();
  command->add_option("--label", flags.options.label, "Name of the label input")
      ->capture_default_str();
  command
      ->add_option("--optimizer", flags.options.optimizer,
                   "sgd, adamw, or none (the step returns gradients, updates nothing)")
      ->check(CLI::IsMember({"sgd", "adamw", "none"}))
      ->capture_default_str();
  command->add_option("--lr", flags.options.lr, "Learning rate")->capture_default_str();
  command->add_option("--momentum", flags.options.momentum, "SGD momentum")
      ->capture_default_str();
  command->add_option("--weight-decay", flags.options.weightDecay,
                      "Weight decay (decoupled for adamw, L2 for sgd)")
      ->capture_default_str();
  command->add_option("--params", flags.params,
                      "Comma-separated parameters to train (default: every float parameter)");
  command
      ->add_option("--partition", flags.partition,
                   "What the backward reads: min-cut (recompute cheap ops to save memory) or "
                   "default (save every value autograd would)")
      ->check(CLI::IsMember({"min-cut", "default"}))
      ->capture_default_str();
}

/// `--fuse-attention` / `--no-fuse-attention`, or neither (the target's default).
struct AttentionFlags {
  bool on = false, off = false;
  std::optional<bool> value() const {
    return on ? std::optional<bool>(true) : off ? std::optional<bool>(false) : std::nullopt;
  }
};

void addAttentionFlags(CLI::App &command, AttentionFlags &flags) {
  CLI::Option *on = command.add_flag(
      "--fuse-attention", flags.on,
      "--target cuda: run every softmax(Q.K^T*s [+mask]).V as one attention kernel (default: "
      "those of f16/bf16 with head dims multiples of 16 up to 128, which run on tensor cores; "
      "the others run on a slower scalar kernel)");
  command.add_flag("--no-fuse-attention", flags.off, "Keep attention as separate kernels")
      ->excludes(on);
}

struct InspectOptions {
  std::string model;
  std::string stage = "all";
  std::string outDir;
  TrainFlags train;
  std::string target = "cpu";
  AttentionFlags attention;
};

int runInspect(const InspectOptions &options, const OpRegistry &registry) {
  Expected<TargetSet> targets = parseTargets(options.target);
  if (!targets)
    return fail(targets.error().message());
  Expected<std::optional<autodiff::TrainOptions>> train = options.train.resolve();
  if (!train)
    return fail(train.error().message());
  Expected<PipelineOptions> configured =
      pipelineOptionsFor(*targets, options.attention.value(), train->has_value());
  if (!configured)
    return fail(configured.error().message());
  PipelineOptions pipeline = std::move(*configured);
  pipeline.stopAfter = options.stage;
  pipeline.train = *train;
  size_t index = 0;
  std::string error;
  if (!options.outDir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options.outDir, ec);
    if (ec)
      return fail(strCat(options.outDir, ": cannot create: ", ec.message()));
  }
  pipeline.onStage = [&](const std::string &stage, const Graph &graph, bool changed) {
    ++index;
    std::string text = printGraph(graph);
    if (!options.outDir.empty()) {
      char prefix[8];
      std::snprintf(prefix, sizeof prefix, "%02zu_", index);
      std::string path = options.outDir + "/" + prefix + stage + ".fx";
      std::ofstream out(path, std::ios::binary);
      out << text;
      if (!out && error.empty())
        error = path + ": write failed";
      return;
    }
    if (options.stage == "all")
      std::cout << "# ---- " << stage << " ----\n" << (changed ? text : "(unchanged)\n");
    else if (stage == options.stage)
      std::cout << text;
  };
  // The autodiff stage also shows the joint graph and both halves of its partition.
  pipeline.onAutodiff = [&](const autodiff::AutodiffReport &report) {
    std::string text = strCat("# ", autodiff::describeReport(report), "\n# saved: ",
                              join(report.chosen.saved, ", "), "\n# recomputed: ",
                              join(report.chosen.recomputed, ", "), "\n# ---- joint ----\n",
                              printGraph(report.joint.graph), "# ---- forward ----\n",
                              printGraph(report.chosen.forward), "# ---- backward ----\n",
                              printGraph(report.chosen.backward));
    if (!options.outDir.empty()) {
      std::string path = options.outDir + "/autodiff_partition.txt";
      std::ofstream out(path, std::ios::binary);
      out << text;
      if (!out && error.empty())
        error = path + ": write failed";
      return;
    }
    if (options.stage == "all" || options.stage == "autodiff")
      std::cout << text << "# ---- training step ----\n";
  };
  pipeline.onLoopStage = [&](const std::string &stage, const std::string &text) {
    ++index;
    if (!options.outDir.empty()) {
      char prefix[8];
      std::snprintf(prefix, sizeof prefix, "%02zu_", index);
      std::string path = options.outDir + "/" + prefix + stage + (stage == "cuda" ? ".cu" : ".txt");
      std::ofstream out(path, std::ios::binary);
      out << text;
      if (!out && error.empty())
        error = path + ": write failed";
      return;
    }
    if (options.stage == "all")
      std::cout << "# ---- " << stage << " ----\n" << text;
    else if (stage == options.stage)
      std::cout << text;
  };
  Expected<Graph> graph = runPipeline(options.model, registry, pipeline);
  if (!graph)
    return fail(graph.error().message());
  if (options.stage == "all" || isLoopStage(options.stage)) {
    Expected<LoweredModel> lowered = lowerAndSchedule(*graph, pipeline);
    if (!lowered)
      return fail(strCat(options.model, ": ", lowered.error().message()));
  }
  if (!error.empty())
    return fail(error);
  if (!options.outDir.empty())
    std::cerr << "tensorc: wrote " << index << " stage dump(s) to " << options.outDir << "\n";
  return 0;
}

struct OptOptions {
  std::string model;
  std::string passes;
  std::string output;
};

int runOpt(const OptOptions &options, const OpRegistry &registry) {
  PipelineOptions pipeline;
  pipeline.stopAfter = "verify";
  Expected<Graph> graph = runPipeline(options.model, registry, pipeline);
  if (!graph)
    return fail(graph.error().message());
  PassContext context{registry};
  Status status = runPasses(*graph, options.passes, context);
  if (!status)
    return fail(strCat(options.model, ": ", status.message()));
  if (options.output.empty()) {
    std::cout << printGraph(*graph);
    return 0;
  }
  Status saved = fx::saveFxFile(*graph, options.output);
  return saved ? 0 : fail(saved.message());
}

struct RunOptions {
  std::string model;
  bool interp = false;
  std::string inputs;
  std::optional<uint64_t> seed;
  std::vector<std::string> dims;
  std::string outputs;
  int threads = 0;
  std::string variant;
  std::string device = "cpu";
  int cudaDevice = 0;
  std::string cudaGraphs = "bundle";
};

Expected<SymbolBindings> parseDims(const std::vector<std::string> &dims) {
  SymbolBindings bindings;
  for (const std::string &dim : dims) {
    size_t eq = dim.find('=');
    char *end = nullptr;
    long long value = eq == std::string::npos ? 0 : std::strtoll(dim.c_str() + eq + 1, &end, 10);
    if (eq == std::string::npos || !end || *end != '\0' || value < 0)
      return makeError("--dim expects NAME=VALUE with a non-negative VALUE, got '", dim, "'");
    bindings[dim.substr(0, eq)] = value;
  }
  return bindings;
}

int writeOutputs(const std::string &path, const std::vector<std::string> &names,
                 const std::vector<Tensor> &outputs) {
  std::vector<std::pair<std::string, Tensor>> named;
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::cout << names[i] << ": " << interp::summarizeTensor(outputs[i]) << "\n";
    named.emplace_back(names[i], outputs[i]);
  }
  if (!path.empty()) {
    Status written = writeSafetensors(path, named);
    if (!written)
      return fail(written.message());
  }
  return 0;
}

/// Runs a compiled bundle with the runtime. Inputs come from the same generator as `--interp`,
/// so both runs of one seed see the same data.
int runBundle(const RunOptions &options) {
  rt::LoadOptions load;
  load.threads = options.threads;
  load.variant = options.variant;
  load.device = options.device;
  load.cudaDevice = options.cudaDevice;
  load.cudaGraphs = options.cudaGraphs == "bundle" ? -1 : options.cudaGraphs == "on" ? 1 : 0;
  Expected<std::unique_ptr<rt::Model>> model = rt::Model::load(options.model, load);
  if (!model)
    return fail(model.error().message());
  const bundle::Manifest &manifest = (*model)->manifest();
  Expected<SymbolBindings> bindings = parseDims(options.dims);
  if (!bindings)
    return fail(bindings.error().message());
  // The same inputs, checks and messages as the runtime-only tensorc-run.
  rt::RunInputOptions inputOptions;
  inputOptions.path = options.inputs;
  inputOptions.seed = options.seed.value_or(0);
  inputOptions.dims = *bindings;
  inputOptions.maxTensorBytes = load.maxTensorBytes;
  Expected<std::vector<Tensor>> inputs = rt::makeRunInputs(**model, inputOptions);
  if (!inputs)
    return fail(inputs.error().message());
  Expected<std::vector<Tensor>> outputs = (*model)->run(*inputs);
  if (!outputs)
    return fail(strCat(options.model, ": ", outputs.error().message()));
  std::vector<std::string> names;
  for (const bundle::TensorDesc &output : manifest.outputs)
    names.push_back(output.name);
  return writeOutputs(options.outputs, names, *outputs);
}

struct CompileCommand {
  std::string model;
  CompileOptions options;
  TrainFlags train;
  AttentionFlags attention;
  std::string cpuArchs = "x86_64";
  std::string cudaArchs = "sm_90";
  std::string emit = "bundle";
  std::string mode = "default";
};

std::vector<std::string> splitList(const std::string &text) {
  std::vector<std::string> items;
  std::stringstream stream(text);
  for (std::string item; std::getline(stream, item, ',');)
    if (!item.empty())
      items.push_back(item);
  return items;
}

int runCompile(CompileCommand &command, const OpRegistry &registry) {
  command.options.cpuArchs = splitList(command.cpuArchs);
  command.options.cudaArchs = splitList(command.cudaArchs);
  command.options.cudaGraphs = command.mode == "reduce-overhead";
  command.options.fuseAttention = command.attention.value();
  command.options.emit =
      command.emit == "so" ? CompileOptions::Emit::SharedObject : CompileOptions::Emit::Bundle;
  Expected<std::optional<autodiff::TrainOptions>> train = command.train.resolve();
  if (!train)
    return fail(train.error().message());
  command.options.train = *train;
  Expected<CompileSummary> summary = compileModel(command.model, registry, command.options);
  if (!summary)
    return fail(summary.error().message());
  std::cerr << "tensorc: wrote " << command.options.outDir << " (" << summary->kernels
            << " kernels, " << summary->fallbacks << " fallback op types, arena peak "
            << summary->peakBytes << " bytes at example sizes; CPU: "
            << (summary->variants.empty() ? "none" : join(summary->variants, ", "));
  if (!summary->cudaArchs.empty())
    std::cerr << "; CUDA: " << join(summary->cudaArchs, ", ") << " + PTX";
  std::cerr << ")\n";
  return 0;
}

int runRun(const RunOptions &options, const OpRegistry &registry) {
  std::error_code ec;
  if (std::filesystem::is_directory(options.model, ec)) {
    if (options.interp)
      return fail(options.model + " is a bundle; --interp runs models (.fx, .onnx)");
    return runBundle(options);
  }
  if (!options.interp)
    return fail(options.model + " is a model, not a bundle: pass --interp to run it on the "
                                 "reference interpreter, or compile it first");
  // The interpreter is the oracle for the model as written: run the imported, verified graph.
  PipelineOptions pipeline;
  pipeline.stopAfter = "verify";
  Expected<Graph> graph = runPipeline(options.model, registry, pipeline);
  if (!graph)
    return fail(graph.error().message());

  Expected<SymbolBindings> bindings = parseDims(options.dims);
  if (!bindings)
    return fail(bindings.error().message());
  Expected<std::vector<Tensor>> inputs =
      !options.inputs.empty() ? interp::loadInputs(*graph, options.inputs)
                              : interp::randomInputs(*graph, options.seed.value_or(0), *bindings);
  if (!inputs)
    return fail(inputs.error().message());
  Expected<std::vector<Tensor>> outputs = interp::interpret(*graph, *inputs);
  if (!outputs)
    return fail(strCat(options.model, ": ", outputs.error().message()));

  std::vector<std::string> names;
  for (const Value *output : graph->outputs())
    names.push_back(output->name());
  return writeOutputs(options.outputs, names, *outputs);
}

struct TrainCommand {
  std::string model;
  std::string data;
  int64_t steps = 1;
  bool interp = false;
  TrainFlags train;
  std::string saveState, loadState, outputs;
  int threads = 0;
  std::string device = "cpu";
  int cudaDevice = 0;
};

/// The training step of a model file on the interpreter (the oracle for compiled steps).
Expected<std::unique_ptr<rt::Trainer>> interpretedTrainer(const TrainCommand &command,
                                                          const OpRegistry &registry,
                                                          std::shared_ptr<Graph> &graph) {
  TC_ASSIGN_OR_RETURN(std::optional<autodiff::TrainOptions> train, command.train.resolve());
  PipelineOptions pipeline;
  pipeline.stopAfter = "autodiff";
  pipeline.train = train;
  autodiff::TrainingSignature signature;
  TC_ASSIGN_OR_RETURN(Graph stepGraph, runPipeline(command.model, registry, pipeline, &signature));
  graph = std::make_shared<Graph>(std::move(stepGraph));
  rt::Trainer::Step step;
  auto describe = [](const Value *value) -> Expected<bundle::TensorDesc> {
    bundle::TensorDesc desc;
    desc.name = value->name();
    desc.dtype = value->type().dtype;
    for (const SymInt &dim : value->type().shape) {
      TC_ASSIGN_OR_RETURN(bundle::SizeExpr expr, bundle::SizeExpr::parse(dim.str()));
      desc.shape.push_back(std::move(expr));
    }
    return desc;
  };
  for (const Value *input : graph->userInputs()) {
    TC_ASSIGN_OR_RETURN(step.inputs.emplace_back(), describe(input));
  }
  for (const Value *output : graph->outputs()) {
    TC_ASSIGN_OR_RETURN(step.outputs.emplace_back(), describe(output));
  }
  step.training = trainingInfo(signature);
  std::shared_ptr<Graph> held = graph;
  step.run = [held](const std::vector<Tensor> &inputs) { return interp::interpret(*held, inputs); };
  std::map<std::string, Tensor> initial(signature.initialParams.begin(),
                                        signature.initialParams.end());
  return rt::Trainer::create(std::move(step), std::move(initial));
}

int runTrain(const TrainCommand &command, const OpRegistry &registry) {
  std::error_code ec;
  bool isBundle = std::filesystem::is_directory(command.model, ec);
  if (isBundle && command.interp)
    return fail(command.model + " is a bundle; --interp trains models (.fx, .onnx)");
  if (!isBundle && !command.interp)
    return fail(command.model + " is a model, not a bundle: compile it with --train first, or "
                                "pass --interp to train it on the reference interpreter");
  if (command.steps < 1)
    return fail("--steps must be at least 1");
  std::unique_ptr<rt::Model> model;
  std::shared_ptr<Graph> graph;
  std::unique_ptr<rt::Trainer> trainer;
  if (isBundle) {
    rt::LoadOptions load;
    load.threads = command.threads;
    load.device = command.device;
    load.cudaDevice = command.cudaDevice;
    Expected<std::unique_ptr<rt::Model>> loaded = rt::Model::load(command.model, load);
    if (!loaded)
      return fail(loaded.error().message());
    model = std::move(*loaded);
    Expected<std::unique_ptr<rt::Trainer>> created = rt::Trainer::forModel(*model);
    if (!created)
      return fail(created.error().message());
    trainer = std::move(*created);
  } else {
    Expected<std::unique_ptr<rt::Trainer>> created = interpretedTrainer(command, registry, graph);
    if (!created)
      return fail(created.error().message());
    trainer = std::move(*created);
  }
  if (!command.loadState.empty())
    if (Status loaded = trainer->loadState(command.loadState); !loaded)
      return fail(loaded.message());
  Expected<std::map<std::string, Tensor>> data = readSafetensors(command.data);
  if (!data)
    return fail(data.error().message());
  std::vector<Tensor> outputs;
  for (int64_t i = 0; i < command.steps; ++i) {
    Expected<double> loss = trainer->step(*data, &outputs);
    if (!loss)
      return fail(strCat(command.model, ": step ", i + 1, ": ", loss.error().message()));
    std::printf("step %" PRId64 ": loss %.9g\n", i + 1, *loss);
  }
  std::fflush(stdout);
  if (!command.outputs.empty()) {
    std::vector<std::pair<std::string, Tensor>> named;
    for (size_t i = 0; i < outputs.size(); ++i)
      named.emplace_back(trainer->outputDescs()[i].name, outputs[i]);
    if (Status written = writeSafetensors(command.outputs, named); !written)
      return fail(written.message());
  }
  if (!command.saveState.empty())
    if (Status saved = trainer->saveState(command.saveState); !saved)
      return fail(saved.message());
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"tensorc: an ahead-of-time model compiler"};
  app.set_version_flag("--version", std::string("tensorc ") + TENSORC_VERSION);
  app.require_subcommand(1);
  std::string logCategories;
  app.add_option("--log", logCategories,
                 "Debug logging for comma-separated categories (stage names, 'time', 'all'); "
                 "also TENSORC_LOG");
  std::string maxTensorBytes;
  app.add_option("--max-tensor-bytes", maxTensorBytes,
                 "The most bytes one tensor may take when tensorc makes it (import-time "
                 "constants, the interpreter's and the runtime's tensors), e.g. 16G; also "
                 "TENSORC_MAX_TENSOR_BYTES (default 4G)");

  InspectOptions inspect;
  CLI::App *inspectCommand =
      app.add_subcommand("inspect", "Print the IR after each pipeline stage");
  inspectCommand->add_option("model", inspect.model, "Model file (.fx or .onnx)")->required();
  inspectCommand
      ->add_option("--stage", inspect.stage,
                   "Stop after this stage and print its IR (" +
                       join(stageNames(), "|") + "|all); 'all' prints every stage")
      ->capture_default_str();
  inspectCommand->add_option("-o,--output-dir", inspect.outDir,
                             "Write one numbered file per stage (01_import.fx, ...) to DIR");
  addTrainOptions(inspectCommand, inspect.train);
  inspectCommand
      ->add_option("--target", inspect.target,
                   "Lower and render as `compile --target` does: cpu, cuda, or cpu,cuda")
      ->capture_default_str();
  addAttentionFlags(*inspectCommand, inspect.attention);

  OptOptions opt;
  std::vector<std::string> passNames;
  for (const PassInfo &pass : allPasses())
    passNames.push_back(pass.name + " (" + pass.description + ")");
  CLI::App *optCommand = app.add_subcommand(
      "opt", "Run graph passes on a model and print the result (like mlir-opt)");
  optCommand->add_option("model", opt.model, "Model file (.fx or .onnx)")->required();
  optCommand
      ->add_option("--passes", opt.passes,
                   "Comma-separated passes to run in order: " + join(passNames, ", "))
      ->required();
  optCommand->add_option("-o,--output", opt.output,
                         "Write FX-text (and its .safetensors weights) here instead of stdout");

  CompileCommand compile;
  CLI::App *compileCommand =
      app.add_subcommand("compile", "Compile a model into a bundle directory or a model .so");
  compileCommand->add_option("model", compile.model, "Model file (.fx or .onnx)")->required();
  compileCommand
      ->add_option("-o,--output", compile.options.outDir,
                   "Bundle directory (or, with --emit=so, shared object) to write")
      ->required();
  compileCommand
      ->add_option("--emit", compile.emit,
                   "bundle: a bundle directory; so: one shared object with kernels, weights and "
                   "runtime inside, exporting the C ABI (tensorc.h)")
      ->check(CLI::IsMember({"bundle", "so"}))
      ->capture_default_str();
  compileCommand
      ->add_option("--target", compile.options.target,
                   "Comma-separated backends: cpu, cuda (kernels via NVRTC), or cpu,cuda")
      ->capture_default_str();
  compileCommand
      ->add_option("--cuda-arch", compile.cudaArchs,
                   "Comma-separated CUDA archs to emit cubins for (PTX for the lowest), e.g. "
                   "sm_80,sm_90")
      ->capture_default_str();
  addAttentionFlags(*compileCommand, compile.attention);
  compileCommand
      ->add_option("-O", compile.mode,
                   "default, or reduce-overhead (CUDA: replay the launch list as a CUDA graph)")
      ->check(CLI::IsMember({"default", "reduce-overhead"}))
      ->capture_default_str();
  compileCommand
      ->add_option("--cpu-arch", compile.cpuArchs,
                   "Comma-separated CPU architectures: x86_64 (AVX2 + AVX-512), aarch64 (NEON)")
      ->capture_default_str();
  addTrainOptions(compileCommand, compile.train);

  TrainCommand train;
  CLI::App *trainCommand = app.add_subcommand(
      "train", "Run training steps of a training bundle (or, with --interp, of a model)");
  trainCommand->add_option("model", train.model, "Training bundle directory, or model (--interp)")
      ->required();
  trainCommand->add_option("--data", train.data,
                           ".safetensors with one tensor per data input (model inputs, label)")
      ->required();
  trainCommand->add_option("--steps", train.steps, "Steps to run on that batch")
      ->capture_default_str();
  trainCommand->add_flag("--interp", train.interp,
                         "Train the model on the reference interpreter (takes --loss etc.)");
  addTrainOptions(trainCommand, train.train, /*always=*/true);
  trainCommand->add_option("--load-state", train.loadState,
                           "Start from parameters and optimizer state saved by --save-state");
  trainCommand->add_option("--save-state", train.saveState,
                           "Write the parameters and optimizer state after the last step");
  trainCommand->add_option("--outputs", train.outputs,
                           "Write the last step's outputs (loss, updated state or gradients)");
  trainCommand->add_option("--threads", train.threads, "Bundle: worker threads (0 = all cores)");
  trainCommand
      ->add_option("--device", train.device, "Bundle: cpu, or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  trainCommand->add_option("--cuda-device", train.cudaDevice, "Bundle: GPU index");

  RunOptions run;
  CLI::App *runCommand = app.add_subcommand("run", "Run a model (--interp) or a compiled bundle");
  runCommand->add_option("model", run.model, "Model file (.fx or .onnx) or bundle directory")
      ->required();
  runCommand->add_option("--threads", run.threads, "Bundle: worker threads (0 = all cores)");
  runCommand->add_option("--variant", run.variant,
                         "Bundle: force a CPU variant (e.g. x86_64 to skip AVX-512)");
  runCommand->add_flag("--interp", run.interp, "Run on the reference interpreter");
  runCommand
      ->add_option("--device", run.device,
                   "Bundle: cpu, or cuda (the bundle's CUDA kernels on a GPU)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  runCommand->add_option("--cuda-device", run.cudaDevice, "Bundle: GPU index for --device cuda");
  runCommand
      ->add_option("--cuda-graphs", run.cudaGraphs,
                   "Bundle: CUDA-graph replay: on, off, or as compiled (-O reduce-overhead)")
      ->check(CLI::IsMember({"bundle", "on", "off"}))
      ->capture_default_str();
  CLI::Option *inputsOption = runCommand->add_option(
      "--inputs", run.inputs, "Inputs as a .safetensors file, one tensor per input name");
  runCommand
      ->add_option("--random-inputs", run.seed,
                   "Generate inputs from SEED (floats in [-1, 1), ints in [0, 10))")
      ->excludes(inputsOption);
  runCommand->add_option("--dim", run.dims,
                         "Value of a symbolic dim for generated inputs, e.g. --dim s0=64");
  runCommand->add_option("--outputs", run.outputs, "Write the outputs to a .safetensors file");

  CLI11_PARSE(app, argc, argv);
  // An interrupted compile removes its staging directory (and kills the linker it started).
  cleanup::installSignalHandlers();

  // One limit for every layer: the flag sets the variable they all read.
  if (!maxTensorBytes.empty()) {
    Expected<int64_t> bytes = parseByteSize(maxTensorBytes);
    if (!bytes)
      return fail("--max-tensor-bytes: " + bytes.error().message());
    ::setenv(kMaxTensorBytesEnv, std::to_string(*bytes).c_str(), 1);
  }
  if (Expected<int64_t> bytes = maxTensorBytesFromEnv(); !bytes)
    return fail(bytes.error().message());
  if (const char *env = std::getenv("TENSORC_LOG"))
    log::enableCategories(env);
  log::enableCategories(logCategories);

  Expected<OpRegistry> registry = ops::buildCoreRegistry();
  if (!registry)
    return fail(registry.error().message());
  if (*inspectCommand)
    return runInspect(inspect, *registry);
  if (*runCommand)
    return runRun(run, *registry);
  if (*compileCommand)
    return runCompile(compile, *registry);
  if (*optCommand)
    return runOpt(opt, *registry);
  if (*trainCommand) {
    train.train.train = true;
    return runTrain(train, *registry);
  }
  return fail("no command given (see --help)");
}
