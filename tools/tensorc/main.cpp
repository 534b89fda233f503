// The tensorc driver: parses options and calls the libraries; the only place that exits.
#include "tensorc/Interp/Inputs.h"
#include "tensorc/Interp/Interpreter.h"
#include "tensorc/IR/Printer.h"
#include "tensorc/Ops/Registry.h"
#include "tensorc/Pipeline/Compile.h"
#include "tensorc/Pipeline/Pipeline.h"
#include "tensorc/Runtime/Model.h"
#include "tensorc/Support/Log.h"
#include "tensorc/Support/Safetensors.h"
#include "tensorc/Support/StrCat.h"
#include "tensorc/Frontend/FX/FxParser.h"
#include "tensorc/Transforms/PassRegistry.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace {

using namespace tensorc;

int fail(const std::string &message) {
  std::cerr << "tensorc: error: " << message << "\n";
  return 1;
}

struct InspectOptions {
  std::string model;
  std::string stage = "all";
  std::string outDir;
};

int runInspect(const InspectOptions &options, const OpRegistry &registry) {
  PipelineOptions pipeline;
  pipeline.stopAfter = options.stage;
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
  Graph signature; // placeholders shaped like the bundle's inputs
  for (const bundle::TensorDesc &input : manifest.inputs) {
    Shape shape;
    for (const bundle::SizeExpr &dim : input.shape) {
      if (auto symbol = dim.symbolName()) {
        shape.push_back(SymInt::symbol(*symbol));
        continue;
      }
      Expected<int64_t> value = dim.evaluate({});
      if (!value)
        return fail(strCat(options.model, ": input '", input.name, "' has dim ", dim.text(),
                           ", which random inputs cannot size"));
      shape.push_back(SymInt(*value));
    }
    Expected<Value *> added = signature.addInput(input.name, TensorType(input.dtype, shape));
    if (!added)
      return fail(added.error().message());
  }
  Expected<SymbolBindings> bindings = parseDims(options.dims);
  if (!bindings)
    return fail(bindings.error().message());
  Expected<std::vector<Tensor>> inputs =
      !options.inputs.empty() ? interp::loadInputs(signature, options.inputs)
                              : interp::randomInputs(signature, options.seed.value_or(0), *bindings);
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
  command.options.emit =
      command.emit == "so" ? CompileOptions::Emit::SharedObject : CompileOptions::Emit::Bundle;
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

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"tensorc: an ahead-of-time model compiler"};
  app.set_version_flag("--version", std::string("tensorc ") + TENSORC_VERSION);
  app.require_subcommand(1);
  std::string logCategories;
  app.add_option("--log", logCategories,
                 "Debug logging for comma-separated categories (stage names, 'time', 'all'); "
                 "also TENSORC_LOG");

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
  compileCommand->add_flag(
      "--fuse-attention", compile.options.fuseAttention,
      "--target cuda: run softmax(Q.K^T*s [+mask]).V as one attention kernel (scores never "
      "stored; slower than the unfused kernels for short sequences)");
  compileCommand
      ->add_option("-O", compile.mode,
                   "default, or reduce-overhead (CUDA: replay the launch list as a CUDA graph)")
      ->check(CLI::IsMember({"default", "reduce-overhead"}))
      ->capture_default_str();
  compileCommand
      ->add_option("--cpu-arch", compile.cpuArchs,
                   "Comma-separated CPU architectures: x86_64 (AVX2 + AVX-512), aarch64 (NEON)")
      ->capture_default_str();

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
  return fail("no command given (see --help)");
}
