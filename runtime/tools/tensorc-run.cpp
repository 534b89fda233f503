// tensorc-run: runs a compiled bundle with the runtime alone (no compiler), for deployment checks.
#include "tensorc/Interp/Inputs.h"
#include "tensorc/Runtime/Model.h"
#include "tensorc/Runtime/RunInputs.h"
#include "tensorc/Runtime/Trainer.h"
#include "tensorc/Runtime/Tune.h"
#include "tensorc/Support/Limits.h"
#include "tensorc/Support/Printable.h"
#include "tensorc/Support/Safetensors.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace tensorc;

namespace {

constexpr const char *kUsage =
    "usage: tensorc-run BUNDLE [--inputs X.safetensors | --random-inputs SEED]\n"
    "                   [--dim NAME=VALUE]... [--outputs Y.safetensors] [--threads N]\n"
    "                   [--variant NAME] [--iterations N] [--device cpu|cuda]\n"
    "                   [--cuda-device N] [--cuda-graphs bundle|on|off] [--train-steps N]\n"
    "                   [--profile TRACE.json [--peak-gbps X] [--peak-gflops Y]]\n"
    "                   [--max-tensor-bytes SIZE] [--tune [--tune-margin X] [--tune-cache F] "
    "[--dry-run]]\n"
    "Runs a compiled bundle and prints each output. Random inputs (the default, seed 0) need a\n"
    "--dim for every symbolic dim. A training bundle's parameters and optimizer state, when\n"
    "--inputs lacks them, start as the bundle holds them; --train-steps N runs N training steps\n"
    "on the --inputs data, printing each step's loss. No input, output or intermediate tensor\n"
    "may exceed --max-tensor-bytes (default TENSORC_MAX_TENSOR_BYTES, else 4G). --profile writes\n"
    "a Chrome/Perfetto trace of every run (CPU: one event per thread chunk of each kernel launch;\n"
    "GPU: CUDA events around each launch) and prints a per-kernel table (time, share, bytes and\n"
    "FLOPs from the bundle's costs.json, percent of the roofline); the peaks are measured at\n"
    "startup (CPU) or read from the device (GPU) unless --peak-gbps/--peak-gflops give them.\n"
    "--tune (a -O max-autotune bundle, on a GPU) times each GEMM as its kernel and as cuBLASLt\n"
    "on the inputs and records the faster in the bundle's manifest (as `tensorc tune` does);\n"
    "cuBLASLt must be faster by --tune-margin (default 0.03; negative down to -1 prefers it);\n"
    "--tune-cache reads and extends a tuning cache (`tensorc tune --cache`).\n";

struct Options {
  std::string bundle;
  std::string inputsPath;
  uint64_t seed = 0;
  std::map<std::string, int64_t> dims;
  std::string outputsPath;
  rt::LoadOptions load;
  int64_t iterations = 0;
  int64_t trainSteps = 0;
  rt::ProfileReportOptions profile;
  int64_t threads = 0; // checked when loading, as the runtime checks LoadOptions::threads
  bool tune = false, dryRun = false;
  double tuneMargin = 0.03;
  std::string tuneCache;
};

Expected<double> parseDouble(const std::string &flag, const std::string &text) {
  char *end = nullptr;
  errno = 0;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !(value > 0))
    return makeError(flag, ": expected a positive number, got '", text, "'");
  return value;
}

Expected<int64_t> parseInt(const std::string &flag, const std::string &text) {
  char *end = nullptr;
  errno = 0;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE)
    return makeError(flag, ": expected an integer, got '", text, "'");
  return int64_t(value);
}

Expected<Options> parseArgs(int argc, char **argv) {
  Options options;
  bool randomGiven = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> Expected<std::string> {
      if (i + 1 >= argc)
        return makeError(arg, " needs a value");
      return std::string(argv[++i]);
    };
    if (arg == "--inputs") {
      TC_ASSIGN_OR_RETURN(options.inputsPath, value());
    } else if (arg == "--random-inputs") {
      TC_ASSIGN_OR_RETURN(std::string text, value());
      TC_ASSIGN_OR_RETURN(int64_t seed, parseInt(arg, text));
      options.seed = uint64_t(seed);
      randomGiven = true;
    } else if (arg == "--dim") {
      TC_ASSIGN_OR_RETURN(std::string text, value());
      size_t eq = text.find('=');
      if (eq == std::string::npos || eq == 0)
        return makeError("--dim: expected NAME=VALUE, got '", text, "'");
      TC_ASSIGN_OR_RETURN(int64_t size,
                          parseInt("--dim " + text.substr(0, eq), text.substr(eq + 1)));
      options.dims[text.substr(0, eq)] = size;
    } else if (arg == "--outputs") {
      TC_ASSIGN_OR_RETURN(options.outputsPath, value());
    } else if (arg == "--threads") {
      TC_ASSIGN_OR_RETURN(std::string text, value());
      TC_ASSIGN_OR_RETURN(options.threads, parseInt(arg, text));
    } else if (arg == "--max-tensor-bytes") {
      TC_ASSIGN_OR_RETURN(std::string text, value());
      Expected<int64_t> bytes = parseByteSize(text);
      if (!bytes)
        return bytes.takeError().withContext(arg);
      options.load.maxTensorBytes = *bytes;
    } else if (arg == "--variant") {
      TC_ASSIGN_OR_RETURN(options.load.variant, value());
    } else if (arg == "--device") {
      TC_ASSIGN_OR_RETURN(options.load.device, value());
    } else if (arg == "--cuda-device") {
      TC_ASSIGN_OR_RETURN(std::string text, value());
      TC_ASSIGN_OR_RETURN(int64_t device, parseInt(arg, text));
      if (device < 0 || device > 1024)
        return makeError("--cuda-device: no device ", device);
      options.load.cudaDevice = int(device);
    } else if (arg == "--cuda-graphs") {
      TC_ASSIGN_OR_RETURN(std::string text, value());
      if (text != "bundle" && text != "on" && text != "off")
        return makeError("--cuda-graphs: expected bundle, on or off, got '", text, "'");
      options.load.cudaGraphs = text == "bundle" ? -1 : text == "on" ? 1 : 0;
    } else if (arg == "--train-steps") {
      TC_ASSIGN_OR_RETURN(std::string text, value());
      TC_ASSIGN_OR_RETURN(options.trainSteps, parseInt(arg, text));
    } else if (arg == "--profile") {
      TC_ASSIGN_OR_RETURN(options.profile.tracePath, value());
    } else if (arg == "--peak-gbps" || arg == "--peak-gflops") {
      TC_ASSIGN_OR_RETURN(std::string text, value());
      TC_ASSIGN_OR_RETURN(double peak, parseDouble(arg, text));
      (arg == "--peak-gbps" ? options.profile.peakGbps : options.profile.peakGflops) = peak;
    } else if (arg == "--tune") {
      options.tune = true;
    } else if (arg == "--tune-margin") {
      TC_ASSIGN_OR_RETURN(std::string text, value());
      char *end = nullptr;
      options.tuneMargin = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || !(options.tuneMargin >= -1 && options.tuneMargin <= 0.9))
        return makeError("--tune-margin: expected a number from -1 to 0.9, got '", text, "'");
    } else if (arg == "--tune-cache") {
      TC_ASSIGN_OR_RETURN(options.tuneCache, value());
    } else if (arg == "--dry-run") {
      options.dryRun = true;
    } else if (arg == "--iterations") {
      TC_ASSIGN_OR_RETURN(std::string text, value());
      TC_ASSIGN_OR_RETURN(options.iterations, parseInt(arg, text));
    } else if (!arg.empty() && arg[0] == '-') {
      return makeError("unknown option '", arg, "'");
    } else if (options.bundle.empty()) {
      options.bundle = arg;
    } else {
      return makeError("unexpected argument '", arg, "'");
    }
  }
  if (options.bundle.empty())
    return makeError("no bundle directory given");
  if (options.profile.tracePath.empty() &&
      (options.profile.peakGbps > 0 || options.profile.peakGflops > 0))
    return makeError("--peak-gbps and --peak-gflops go with --profile");
  if (randomGiven && !options.inputsPath.empty())
    return makeError("--inputs and --random-inputs exclude each other");
  if ((options.dryRun || options.tuneMargin != 0.03 || !options.tuneCache.empty()) && !options.tune)
    return makeError("--dry-run, --tune-margin and --tune-cache go with --tune");
  return options;
}

Status runTool(Options options) {
  if (options.threads < 0 || options.threads > rt::kMaxThreads) // the runtime's own words
    return makeError("threads must be 0 (one per core) or 1 to ", rt::kMaxThreads, ", got ",
                     options.threads);
  options.load.threads = int(options.threads);
  if (options.tune) {
    rt::TuneOptions tune;
    tune.bundle = options.bundle;
    tune.inputs = options.inputsPath;
    tune.seed = options.seed;
    tune.dims = options.dims;
    tune.cudaDevice = options.load.cudaDevice;
    tune.dryRun = options.dryRun;
    tune.margin = options.tuneMargin;
    tune.cache = options.tuneCache;
    std::ostringstream report;
    Status tuned = rt::tuneBundle(tune, report);
    std::fputs(report.str().c_str(), stdout);
    return tuned;
  }
  TC_ASSIGN_OR_RETURN(auto model, rt::Model::load(options.bundle, options.load));
  const bundle::Manifest &manifest = model->manifest();
  if (options.load.device == "cuda")
    std::printf("%s: %s, on %s; CUDA graphs %s; GEMM library %s\n", options.bundle.c_str(),
                manifest.model.empty() ? "model" : manifest.model.c_str(),
                model->deviceDescription().c_str(), model->cudaGraphs().c_str(),
                model->gemmLibrary().c_str());
  else
    std::printf("%s: %s, variant %s, %d threads\n", options.bundle.c_str(),
                manifest.model.empty() ? "model" : manifest.model.c_str(),
                model->variant().empty() ? "(none)" : model->variant().c_str(),
                model->numThreads());
  if (options.trainSteps > 0) {
    if (options.inputsPath.empty())
      return makeError("--train-steps needs --inputs with the data inputs");
    TC_ASSIGN_OR_RETURN(auto trainer, rt::Trainer::forModel(*model));
    TC_ASSIGN_OR_RETURN(auto data, readSafetensors(options.inputsPath));
    std::vector<Tensor> outputs;
    auto start = std::chrono::steady_clock::now();
    for (int64_t step = 1; step <= options.trainSteps; ++step) {
      TC_ASSIGN_OR_RETURN(double loss, trainer->step(data, &outputs));
      std::printf("step %lld: loss %.9g\n", static_cast<long long>(step), loss);
    }
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::printf("%lld steps in %.3f ms (%.4f ms per step; the state passes through host memory "
                "between steps)\n",
                static_cast<long long>(options.trainSteps), ms, ms / double(options.trainSteps));
    if (!options.outputsPath.empty()) {
      std::vector<std::pair<std::string, Tensor>> named;
      for (size_t i = 0; i < outputs.size(); ++i)
        named.emplace_back(manifest.outputs[i].name, outputs[i]);
      TC_RETURN_IF_ERROR(writeSafetensors(options.outputsPath, named));
    }
    return Status::ok();
  }
  rt::RunInputOptions inputOptions;
  inputOptions.path = options.inputsPath;
  inputOptions.seed = options.seed;
  inputOptions.dims = options.dims;
  inputOptions.maxTensorBytes = options.load.maxTensorBytes;
  TC_ASSIGN_OR_RETURN(std::vector<Tensor> inputs, rt::makeRunInputs(*model, inputOptions));
  rt::Profiler profiler;
  if (!options.profile.tracePath.empty())
    model->setProfiler(&profiler);
  TC_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, model->run(inputs));
  for (size_t i = 0; i < outputs.size(); ++i)
    std::printf("%s: %s\n", manifest.outputs[i].name.c_str(),
                interp::summarizeTensor(outputs[i]).c_str());

  if (!options.outputsPath.empty()) {
    std::vector<std::pair<std::string, Tensor>> named;
    for (size_t i = 0; i < outputs.size(); ++i)
      named.emplace_back(manifest.outputs[i].name, outputs[i]);
    TC_RETURN_IF_ERROR(writeSafetensors(options.outputsPath, named));
  }

  if (options.iterations > 0) {
    // On a GPU a few untimed runs first let clocks and lazy driver work settle (on the CPU the
    // run above is the warm-up, which bench/run.py's CPU-time accounting relies on).
    if (options.load.device == "cuda") {
      TC_RETURN_IF_ERROR(model->time(inputs, 5).status());
    }
    TC_ASSIGN_OR_RETURN(std::vector<double> times, model->time(inputs, options.iterations));
    std::sort(times.begin(), times.end());
    std::printf("median %.4f ms per run over %lld runs (min %.4f, max %.4f)%s\n",
                times[times.size() / 2], static_cast<long long>(times.size()), times.front(),
                times.back(),
                options.load.device == "cuda" ? " [device-resident inputs, kernels only]" : "");
  }
  if (!options.profile.tracePath.empty()) {
    model->setProfiler(nullptr);
    TC_ASSIGN_OR_RETURN(std::string table,
                        rt::finishProfile(*model, profiler, options.bundle, options.profile));
    std::fputs(table.c_str(), stdout);
  }
  return Status::ok();
}

} // namespace

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::fputs(kUsage, stdout);
      return 0;
    }
  Expected<Options> options = parseArgs(argc, argv);
  if (!options) {
    std::fprintf(stderr, "tensorc-run: error: %s\n%s", printable(options.error().message()).c_str(),
                 kUsage);
    return 2;
  }
  Status status = runTool(*options);
  if (!status) {
    std::fprintf(stderr, "tensorc-run: error: %s\n", printable(status.message()).c_str());
    return 1;
  }
  return 0;
}
