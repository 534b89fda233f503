// `tensorc explain`: one page on how a model compiles (ops, decompositions, fallbacks, kernels,
// fusions, memory, costs).
#include "Driver.h"

#include "tensorc/Debug/Explain.h"

#include <iostream>
#include <memory>

namespace tensorc::driver {

namespace {

struct ExplainCommand {
  std::string model;
  debug::ExplainOptions options;
  AttentionFlags attention;
  std::vector<std::string> dims;
};

int runExplain(ExplainCommand &command, const OpRegistry &registry) {
  command.options.fuseAttention = command.attention.value();
  Expected<SymbolBindings> dims = parseDims(command.dims);
  if (!dims)
    return fail(dims.error().message());
  command.options.dims = *dims;
  Expected<std::string> text = debug::explainModel(command.model, registry, command.options);
  if (!text)
    return fail(text.error().message());
  std::cout << *text;
  return 0;
}

} // namespace

Subcommand addExplainCommand(CLI::App &app) {
  auto explain = std::make_shared<ExplainCommand>();
  CLI::App *command = app.add_subcommand(
      "explain", "One page on how a model compiles: ops, decompositions, fallbacks and why, "
                 "kernels, fusions made and refused, memory plan, largest kernels");
  command->add_option("model", explain->model, "Model file (.fx or .onnx)")->required();
  command
      ->add_option("--target", explain->options.target,
                   "Lower and fuse as `compile --target` does: cpu, cuda, or cpu,cuda")
      ->capture_default_str();
  addAttentionFlags(*command, explain->attention);
  command->add_option("--dim", explain->dims,
                      "Symbol value for sizes and costs, e.g. --dim s0=8 (default 64)");
  command->add_option("--limit", explain->options.listLimit, "Longest list printed per section")
      ->capture_default_str();
  return {command,
          [explain](const OpRegistry &registry) { return runExplain(*explain, registry); }};
}

} // namespace tensorc::driver
