// The tensorc driver: parses options and calls the libraries; the only place that exits.
#include "tensorc/Interp/Inputs.h"
#include "tensorc/Interp/Interpreter.h"
#include "tensorc/IR/Printer.h"
#include "tensorc/Ops/Registry.h"
#include "tensorc/Pipeline/Pipeline.h"
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
  Expected<Graph> graph = runPipeline(options.model, registry, pipeline);
  if (!graph)
    return fail(graph.error().message());
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
};

int runRun(const RunOptions &options, const OpRegistry &registry) {
  if (!options.interp)
    return fail(options.model + " is a model, not a bundle: pass --interp to run it on the "
                                 "reference interpreter");
  // The interpreter is the oracle for the model as written: run the imported, verified graph.
  PipelineOptions pipeline;
  pipeline.stopAfter = "verify";
  Expected<Graph> graph = runPipeline(options.model, registry, pipeline);
  if (!graph)
    return fail(graph.error().message());

  SymbolBindings bindings;
  for (const std::string &dim : options.dims) {
    size_t eq = dim.find('=');
    char *end = nullptr;
    long long value = eq == std::string::npos ? 0 : std::strtoll(dim.c_str() + eq + 1, &end, 10);
    if (eq == std::string::npos || !end || *end != '\0' || value < 0)
      return fail("--dim expects NAME=VALUE with a non-negative VALUE, got '" + dim + "'");
    bindings[dim.substr(0, eq)] = value;
  }
  Expected<std::vector<Tensor>> inputs =
      !options.inputs.empty() ? interp::loadInputs(*graph, options.inputs)
                              : interp::randomInputs(*graph, options.seed.value_or(0), bindings);
  if (!inputs)
    return fail(inputs.error().message());
  Expected<std::vector<Tensor>> outputs = interp::interpret(*graph, *inputs);
  if (!outputs)
    return fail(strCat(options.model, ": ", outputs.error().message()));

  std::vector<std::pair<std::string, Tensor>> named;
  for (size_t i = 0; i < outputs->size(); ++i) {
    const std::string &name = graph->outputs()[i]->name();
    std::cout << name << ": " << interp::summarizeTensor((*outputs)[i]) << "\n";
    named.emplace_back(name, (*outputs)[i]);
  }
  if (!options.outputs.empty()) {
    Status written = writeSafetensors(options.outputs, named);
    if (!written)
      return fail(written.message());
  }
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

  RunOptions run;
  CLI::App *runCommand = app.add_subcommand("run", "Run a model");
  runCommand->add_option("model", run.model, "Model file (.fx or .onnx)")->required();
  runCommand->add_flag("--interp", run.interp, "Run on the reference interpreter");
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
  if (*optCommand)
    return runOpt(opt, *registry);
  return fail("no command given (see --help)");
}
