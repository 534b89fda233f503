// `tensorc minify`: delta debugging of a failing model down to a small one that fails the same
// way.
#include "Driver.h"

#include "tensorc/Debug/Minify.h"

#include <filesystem>
#include <iostream>
#include <memory>

namespace tensorc::driver {

namespace {

struct MinifyCommand {
  std::string model;
  debug::MinifyOptions options;
  std::vector<std::string> dims;
  std::optional<uint64_t> seed;
};

int runMinify(MinifyCommand &command, const OpRegistry &registry) {
  Expected<SymbolBindings> dims = parseDims(command.dims);
  if (!dims)
    return fail(dims.error().message());
  command.options.dims = *dims;
  command.options.seed = command.seed.value_or(0);
  if (command.options.output.empty()) {
    // model.onnx -> model.min.onnx in the current directory.
    std::filesystem::path path(command.model);
    command.options.output = path.stem().string() + ".min" + path.extension().string();
  }
  Expected<debug::MinifyResult> result =
      debug::minifyModel(command.model, registry, command.options,
                         [](const std::string &line) { std::cout << line << std::endl; });
  if (!result)
    return fail(result.error().message());
  return 0;
}

} // namespace

Subcommand addMinifyCommand(CLI::App &app) {
  auto minify = std::make_shared<MinifyCommand>();
  CLI::App *command = app.add_subcommand(
      "minify", "Reduce a model that fails to compile, fails or crashes when run, or gives wrong "
                "numbers, to a small model that still fails the same way (delta debugging)");
  command->add_option("model", minify->model, "Model file (.fx or .onnx)")->required();
  command
      ->add_option("--check", minify->options.check,
                   "What must keep failing: compile, run (errors or crashes), or accuracy "
                   "(outputs against the interpreter)")
      ->check(CLI::IsMember({"compile", "run", "accuracy"}))
      ->required();
  command->add_option("-o,--output", minify->options.output,
                      "The reduced model: .onnx for ONNX models, .fx (+ .safetensors) for "
                      "FX-text (default: MODEL's stem + .min in the current directory)");
  command->add_option("--match", minify->options.match,
                      "The failure must contain this text (default: the model's own failure, "
                      "its innermost message with digits ignored)");
  command->add_option("--target", minify->options.target, "cpu or cuda: what is compiled and run")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  command->add_option("--variant", minify->options.variant,
                      "CPU variant to compile and run (default: every one, the host's pick)");
  command->add_option("--cuda-arch", minify->options.cudaArch, "CUDA arch to compile for")
      ->capture_default_str();
  command->add_option("--cuda-device", minify->options.cudaDevice, "GPU index");
  command->add_option("--random-inputs", minify->seed, "Seed of the inputs (default 0)");
  command->add_option("--dim", minify->dims, "Value of a symbolic dim (default 2)");
  command->add_option("--timeout", minify->options.timeoutSeconds, "Seconds per check")
      ->capture_default_str();
  command->add_option("--max-checks", minify->options.maxChecks, "Most checks to run")
      ->capture_default_str();
  return {command, [minify](const OpRegistry &registry) { return runMinify(*minify, registry); }};
}

} // namespace tensorc::driver
