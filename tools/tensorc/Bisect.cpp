// `tensorc bisect`: the accuracy debugger (compiled kernels against the interpreter, then the
// fusion and pass search).
#include "Driver.h"

#include "tensorc/Debug/Bisect.h"

#include <iostream>
#include <memory>

namespace tensorc::driver {

namespace {

struct BisectCommand {
  std::string model;
  debug::BisectOptions options;
  AttentionFlags attention;
  std::optional<uint64_t> seed;
  std::vector<std::string> dims;
  bool noNarrow = false;
};

int runBisect(BisectCommand &command, const OpRegistry &registry) {
  command.options.fuseAttention = command.attention.value();
  command.options.seed = command.seed.value_or(0);
  command.options.narrow = !command.noNarrow;
  Expected<SymbolBindings> dims = parseDims(command.dims);
  if (!dims)
    return fail(dims.error().message());
  command.options.dims = *dims;
  Expected<debug::BisectResult> result =
      debug::bisectModel(command.model, registry, command.options,
                         [](const std::string &line) { std::cout << line << std::endl; });
  if (!result)
    return fail(result.error().message());
  // 0: everything matches; 2: a kernel or the outputs diverge (1 is an error).
  return result->kernelsDiverged == 0 && result->outputsMatch ? 0 : 2;
}

} // namespace

Subcommand addBisectCommand(CLI::App &app) {
  auto bisect = std::make_shared<BisectCommand>();
  CLI::App *command = app.add_subcommand(
      "bisect", "Accuracy debugger: run the compiled kernels one at a time against the "
                "interpreter, name the first that diverges, then search fusion limits and "
                "disabled passes for what breaks the model (exit 2 when something diverges)");
  command->add_option("model", bisect->model, "Model file (.fx or .onnx)")->required();
  command
      ->add_option("--target", bisect->options.target,
                   "cpu, or cuda (on a GPU: every launch synchronized and its outputs copied "
                   "back)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  addAttentionFlags(*command, bisect->attention);
  CLI::Option *inputs =
      command->add_option("--inputs", bisect->options.inputsPath,
                          "Inputs as a .safetensors file, one tensor per input name");
  command
      ->add_option("--random-inputs", bisect->seed,
                   "Generate inputs from SEED (default 0; floats in [-1, 1), ints in [0, 10))")
      ->excludes(inputs);
  command->add_option("--dim", bisect->dims,
                      "Value of a symbolic dim for generated inputs (default 2), e.g. --dim s0=4");
  command->add_option("--variant", bisect->options.variant,
                      "CPU variant to compile and run (default: the one the host runs)");
  command->add_option("--cuda-arch", bisect->options.cudaArch, "CUDA arch to compile for")
      ->capture_default_str();
  command->add_option("--cuda-device", bisect->options.cudaDevice, "GPU index");
  command->add_flag("--no-narrow", bisect->noNarrow,
                    "Only the kernel check and the outputs: skip the fusion and pass search");
  return {command, [bisect](const OpRegistry &registry) { return runBisect(*bisect, registry); }};
}

} // namespace tensorc::driver
