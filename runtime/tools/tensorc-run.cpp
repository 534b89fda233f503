// tensorc-run: runs a compiled bundle with the runtime alone (no compiler), for deployment checks.
#include "tensorc/Interp/Inputs.h"
#include "tensorc/Runtime/Model.h"
#include "tensorc/Runtime/Trainer.h"
#include "tensorc/Support/Safetensors.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

using namespace tensorc;

namespace {

constexpr const char *kUsage =
    "usage: tensorc-run BUNDLE [--inputs X.safetensors | --random-inputs SEED]\n"
    "                   [--dim NAME=VALUE]... [--outputs Y.safetensors] [--threads N]\n"
    "                   [--variant NAME] [--iterations N] [--device cpu|cuda]\n"
    "                   [--cuda-device N] [--cuda-graphs bundle|on|off] [--train-steps N]\n"
    "Runs a compiled bundle and prints each output. Random inputs (the default, seed 0) give\n"
    "every symbolic dim the size 2 unless --dim sets it. A training bundle's parameters and\n"
    "optimizer state, when --inputs lacks them, start as the bundle holds them; --train-steps N\n"
    "runs N training steps on the --inputs data, printing each step's loss.\n";

struct Options {
  std::string bundle;
  std::string inputsPath;
  uint64_t seed = 0;
  std::map<std::string, int64_t> dims;
  std::string outputsPath;
  rt::LoadOptions load;
  int64_t iterations = 0;
  int64_t trainSteps = 0;
};

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
      TC_ASSIGN_OR_RETURN(int64_t threads, parseInt(arg, text));
      options.load.threads = int(threads);
    } else if (arg == "--variant") {
      TC_ASSIGN_OR_RETURN(options.load.variant, value());
    } else if (arg == "--device") {
      TC_ASSIGN_OR_RETURN(options.load.device, value());
    } else if (arg == "--cuda-device") {
      TC_ASSIGN_OR_RETURN(std::string text, value());
      TC_ASSIGN_OR_RETURN(int64_t device, parseInt(arg, text));
      options.load.cudaDevice = int(device);
    } else if (arg == "--cuda-graphs") {
      TC_ASSIGN_OR_RETURN(std::string text, value());
      if (text != "bundle" && text != "on" && text != "off")
        return makeError("--cuda-graphs: expected bundle, on or off, got '", text, "'");
      options.load.cudaGraphs = text == "bundle" ? -1 : text == "on" ? 1 : 0;
    } else if (arg == "--train-steps") {
      TC_ASSIGN_OR_RETURN(std::string text, value());
      TC_ASSIGN_OR_RETURN(options.trainSteps, parseInt(arg, text));
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
  if (randomGiven && !options.inputsPath.empty())
    return makeError("--inputs and --random-inputs exclude each other");
  return options;
}

Expected<std::vector<Tensor>> makeInputs(rt::Model &model, const Options &options) {
  const bundle::Manifest &manifest = model.manifest();
  std::vector<Tensor> inputs;
  if (!options.inputsPath.empty()) {
    TC_ASSIGN_OR_RETURN(auto tensors, readSafetensors(options.inputsPath));
    std::unique_ptr<rt::Trainer> initial; // a training bundle's starting state
    if (manifest.training) {
      TC_ASSIGN_OR_RETURN(initial, rt::Trainer::forModel(model));
    }
    for (const bundle::TensorDesc &desc : manifest.inputs) {
      auto it = tensors.find(desc.name);
      if (it != tensors.end()) {
        inputs.push_back(it->second);
        continue;
      }
      auto state = initial ? initial->state().find(desc.name) : std::map<std::string, Tensor>::const_iterator();
      if (!initial || state == initial->state().end())
        return makeError(options.inputsPath, ": no tensor named '", desc.name, "'");
      inputs.push_back(state->second);
    }
    return inputs;
  }
  std::map<std::string, int64_t> dims = options.dims;
  for (const std::string &symbol : manifest.symbols)
    dims.emplace(symbol, 2);
  // The interpreter's generator, so both tools feed a model the same inputs for a seed and dims.
  interp::RandomInputs random(options.seed);
  for (const bundle::TensorDesc &desc : manifest.inputs) {
    std::vector<int64_t> shape;
    for (const bundle::SizeExpr &dim : desc.shape) {
      Expected<int64_t> size = dim.evaluate(dims);
      if (!size)
        return size.takeError().withContext("input '" + desc.name + "'");
      shape.push_back(*size);
    }
    TC_ASSIGN_OR_RETURN(Tensor tensor, random.next(desc.dtype, shape));
    inputs.push_back(std::move(tensor));
  }
  return inputs;
}

Status runTool(const Options &options) {
  TC_ASSIGN_OR_RETURN(auto model, rt::Model::load(options.bundle, options.load));
  const bundle::Manifest &manifest = model->manifest();
  if (options.load.device == "cuda")
    std::printf("%s: %s, on %s; CUDA graphs %s\n", options.bundle.c_str(),
                manifest.model.empty() ? "model" : manifest.model.c_str(),
                model->deviceDescription().c_str(), model->cudaGraphs().c_str());
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
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                    .count();
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
  TC_ASSIGN_OR_RETURN(std::vector<Tensor> inputs, makeInputs(*model, options));
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
    std::fprintf(stderr, "tensorc-run: error: %s\n%s", options.error().message().c_str(), kUsage);
    return 2;
  }
  Status status = runTool(*options);
  if (!status) {
    std::fprintf(stderr, "tensorc-run: error: %s\n", status.message().c_str());
    return 1;
  }
  return 0;
}
