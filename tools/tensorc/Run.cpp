// `tensorc run`: a compiled bundle with the runtime, or a model on the reference interpreter.
#include "Driver.h"

#include "tensorc/Interp/Inputs.h"
#include "tensorc/Interp/Interpreter.h"
#include "tensorc/Pipeline/Pipeline.h"
#include "tensorc/Runtime/Model.h"
#include "tensorc/Runtime/Profile.h"
#include "tensorc/Runtime/RunInputs.h"
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
  rt::ProfileReportOptions profile;
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
              << "; CUDA graphs " << (*model)->cudaGraphs() << "; GEMM library "
              << (*model)->gemmLibrary() << "\n";
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
  rt::Profiler profiler;
  if (!options.profile.tracePath.empty())
    (*model)->setProfiler(&profiler);
  Expected<std::vector<Tensor>> outputs = (*model)->run(*inputs);
  if (!outputs)
    return fail(strCat(options.model, ": ", outputs.error().message()));
  std::vector<std::string> names;
  for (const bundle::TensorDesc &output : manifest.outputs)
    names.push_back(output.name);
  if (int status = writeOutputs(options.outputs, names, *outputs); status != 0)
    return status;
  if (options.profile.tracePath.empty())
    return 0;
  (*model)->setProfiler(nullptr);
  Expected<std::string> table =
      rt::finishProfile(**model, profiler, options.model, options.profile);
  if (!table)
    return fail(table.error().message());
  std::cout << *table;
  return 0;
}

int runRun(const RunOptions &options, const OpRegistry &registry) {
  std::error_code ec;
  if (std::filesystem::is_directory(options.model, ec)) {
    if (options.interp)
      return fail(options.model + " is a bundle; --interp runs models (.fx, .onnx)");
    return runBundle(options);
  }
  if (!options.profile.tracePath.empty())
    return fail("--profile profiles compiled bundles, not the interpreter");
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
  CLI::Option *profile = command->add_option(
      "--profile", run->profile.tracePath,
      "Bundle: write a Chrome/Perfetto trace of the run (CPU: an event per thread chunk of each "
      "kernel launch; GPU: CUDA events per launch) and print a per-kernel roofline table");
  command
      ->add_option("--peak-gbps", run->profile.peakGbps,
                   "With --profile: memory bandwidth ceiling in GB/s (default: measured on the "
                   "CPU, read from the GPU's attributes)")
      ->needs(profile)
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--peak-gflops", run->profile.peakGflops,
                   "With --profile: compute ceiling in GFLOP/s (default: measured f32 FMA rate "
                   "on the CPU, f32 CUDA-core peak on the GPU)")
      ->needs(profile)
      ->check(CLI::PositiveNumber);
  return {command, [run](const OpRegistry &registry) { return runRun(*run, registry); }};
}

} // namespace tensorc::driver
