// `tensorc opt`: named graph passes on a model, printed or written as FX-text, or loop IR
// passes on a .loop file (like mlir-opt).
#include "Driver.h"

#include "tensorc/Frontend/FX/FxParser.h"
#include "tensorc/IR/Printer.h"
#include "tensorc/Pipeline/LoopOpt.h"
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
  LoopOptOptions loop; // .loop files
};

int runOpt(const OptOptions &options, const OpRegistry &registry) {
  if (options.model.size() > 5 && options.model.substr(options.model.size() - 5) == ".loop") {
    LoopOptOptions loop = options.loop;
    loop.passes = options.passes;
    Expected<std::string> text = runLoopOpt(options.model, loop);
    if (!text)
      return fail(text.error().message());
    std::cout << *text;
    return 0;
  }
  if (options.loop.emit != "auto" || options.loop.target != "cpu")
    return fail("--emit and --target apply to loop IR (.loop) files");
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
  CLI::App *command = app.add_subcommand(
      "opt", "Run graph passes on a model, or loop IR passes on a .loop file, and print the "
             "result (like mlir-opt)");
  command->add_option("model", opt->model, "Model file (.fx or .onnx) or loop IR (.loop)")
      ->required();
  command
      ->add_option("--passes", opt->passes,
                   "Comma-separated passes to run in order: " + join(passNames, ", ") +
                       "; on .loop files: verify, fuse")
      ->required();
  command->add_option("-o,--output", opt->output,
                      "Write FX-text (and its .safetensors weights) here instead of stdout");
  command
      ->add_option("--emit", opt->loop.emit,
                   ".loop files: what to print: auto (the schedule after fuse, else the loop "
                   "IR), loop, schedule, cpu-ll (LLVM IR), cuda (CUDA C++)")
      ->check(CLI::IsMember({"auto", "loop", "schedule", "cpu-ll", "cuda"}))
      ->capture_default_str();
  command
      ->add_option("--target", opt->loop.target,
                   ".loop files: schedule as for cpu, cuda or cpu,cuda")
      ->capture_default_str();
  return {command, [opt](const OpRegistry &registry) { return runOpt(*opt, registry); }};
}

} // namespace tensorc::driver
