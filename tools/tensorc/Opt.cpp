// `tensorc opt`: named graph passes on a model, printed or written as FX-text (like mlir-opt).
#include "Driver.h"

#include "tensorc/Frontend/FX/FxParser.h"
#include "tensorc/IR/Printer.h"
#include "tensorc/Pipeline/Pipeline.h"
#include "tensorc/Support/StrCat.h"
#include "tensorc/Transforms/PassRegistry.h"

#include <iostream>
#include <memory>

namespace tensorc::driver {

namespace {

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

} // namespace

Subcommand addOptCommand(CLI::App &app) {
  auto opt = std::make_shared<OptOptions>();
  std::vector<std::string> passNames;
  for (const PassInfo &pass : allPasses())
    passNames.push_back(pass.name + " (" + pass.description + ")");
  CLI::App *command =
      app.add_subcommand("opt", "Run graph passes on a model and print the result (like mlir-opt)");
  command->add_option("model", opt->model, "Model file (.fx or .onnx)")->required();
  command
      ->add_option("--passes", opt->passes,
                   "Comma-separated passes to run in order: " + join(passNames, ", "))
      ->required();
  command->add_option("-o,--output", opt->output,
                      "Write FX-text (and its .safetensors weights) here instead of stdout");
  return {command, [opt](const OpRegistry &registry) { return runOpt(*opt, registry); }};
}

} // namespace tensorc::driver
