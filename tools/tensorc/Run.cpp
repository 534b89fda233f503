// `tensorc run`: a compiled bundle with the runtime, or a model on the reference interpreter.
#include "Driver.h"

#include "tensorc/Interp/Inputs.h"
#include "tensorc/Interp/Interpreter.h"
#include "tensorc/Pipeline/Pipeline.h"
#include "tensorc/Runtime/Model.h"
#include "tensorc/Support/StrCat.h"

#include <filesystem>
#include <iostream>
#include <memory>

namespace tensorc::driver {

namespace {

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
  if (options.device == "cuda") // on stderr: stdout may carry the outputs
    std::cerr << "tensorc: " << options.model << " on " << (*model)->deviceDescription()
              << "; CUDA graphs " << (*model)->cudaGraphs() << "\n";
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
      !options.inputs.empty()
          ? interp::loadInputs(signature, options.inputs)
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

Subcommand addRunCommand(CLI::App &app) {
  auto run = std::make_shared<RunOptions>();
  CLI::App *command = app.add_subcommand("run", "Run a model (--interp) or a compiled bundle");
  command->add_option("model", run->model, "Model file (.fx or .onnx) or bundle directory")
      ->required();
  command->add_option("--threads", run->threads, "Bundle: worker threads (0 = all cores)");
  command->add_option("--variant", run->variant,
                      "Bundle: force a CPU variant (e.g. x86_64 to skip AVX-512)");
  command->add_flag("--interp", run->interp, "Run on the reference interpreter");
  command
      ->add_option("--device", run->device,
                   "Bundle: cpu, or cuda (the bundle's CUDA kernels on a GPU)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  command->add_option("--cuda-device", run->cudaDevice, "Bundle: GPU index for --device cuda");
  command
      ->add_option("--cuda-graphs", run->cudaGraphs,
                   "Bundle: CUDA-graph replay: on, off, or as compiled (-O reduce-overhead)")
      ->check(CLI::IsMember({"bundle", "on", "off"}))
      ->capture_default_str();
  CLI::Option *inputsOption = command->add_option(
      "--inputs", run->inputs, "Inputs as a .safetensors file, one tensor per input name");
  command
      ->add_option("--random-inputs", run->seed,
                   "Generate inputs from SEED (floats in [-1, 1), ints in [0, 10))")
      ->excludes(inputsOption);
  command->add_option("--dim", run->dims,
                      "Value of a symbolic dim for generated inputs, e.g. --dim s0=64");
  command->add_option("--outputs", run->outputs, "Write the outputs to a .safetensors file");
  return {command, [run](const OpRegistry &registry) { return runRun(*run, registry); }};
}

} // namespace tensorc::driver
