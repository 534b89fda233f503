// `tensorc inspect`: the IR after each pipeline stage, printed or written as numbered files.
#include "Driver.h"

#include "tensorc/IR/Printer.h"
#include "tensorc/Pipeline/Pipeline.h"
#include "tensorc/Support/StrCat.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

namespace tensorc::driver {

namespace {

struct InspectOptions {
  std::string model;
  std::string stage = "all";
  std::string outDir;
  TrainFlags train;
  std::string target = "cpu";
  AttentionFlags attention;
  LimitFlags limits;
  std::string matmulPrecision = "highest";
};

int runInspect(const InspectOptions &options, const OpRegistry &registry) {
  Expected<TargetSet> targets = parseTargets(options.target);
  if (!targets)
    return fail(targets.error().message());
  Expected<std::optional<autodiff::TrainOptions>> train = options.train.resolve();
  if (!train)
    return fail(train.error().message());
  Expected<PipelineOptions> configured =
      pipelineOptionsFor(*targets, options.attention.value(), train->has_value());
  if (!configured)
    return fail(configured.error().message());
  PipelineOptions pipeline = std::move(*configured);
  pipeline.stopAfter = options.stage;
  pipeline.train = *train;
  pipeline.limits = options.limits.resolve();
  pipeline.tf32 = options.matmulPrecision == "high";
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
  // The autodiff stage also shows the joint graph and both halves of its partition.
  pipeline.onAutodiff = [&](const autodiff::AutodiffReport &report) {
    std::string text = strCat(
        "# ", autodiff::describeReport(report), "\n# saved: ", join(report.chosen.saved, ", "),
        "\n# recomputed: ", join(report.chosen.recomputed, ", "), "\n# ---- joint ----\n",
        printGraph(report.joint.graph), "# ---- forward ----\n", printGraph(report.chosen.forward),
        "# ---- backward ----\n", printGraph(report.chosen.backward));
    if (!options.outDir.empty()) {
      std::string path = options.outDir + "/autodiff_partition.txt";
      std::ofstream out(path, std::ios::binary);
      out << text;
      if (!out && error.empty())
        error = path + ": write failed";
      return;
    }
    if (options.stage == "all" || options.stage == "autodiff")
      std::cout << text << "# ---- training step ----\n";
  };
  pipeline.onLoopStage = [&](const std::string &stage, const std::string &text) {
    ++index;
    if (!options.outDir.empty()) {
      char prefix[8];
      std::snprintf(prefix, sizeof prefix, "%02zu_", index);
      std::string path = options.outDir + "/" + prefix + stage + (stage == "cuda" ? ".cu" : ".txt");
      std::ofstream out(path, std::ios::binary);
      out << text;
      if (!out && error.empty())
        error = path + ": write failed";
      return;
    }
    if (options.stage == "all")
      std::cout << "# ---- " << stage << " ----\n" << text;
    else if (stage == options.stage)
      std::cout << text;
  };
  Expected<Graph> graph = runPipeline(options.model, registry, pipeline);
  if (!graph)
    return fail(graph.error().message());
  if (options.stage == "all" || isLoopStage(options.stage)) {
    Expected<LoweredModel> lowered = lowerAndSchedule(*graph, pipeline);
    if (!lowered)
      return fail(strCat(options.model, ": ", lowered.error().message()));
  }
  if (!error.empty())
    return fail(error);
  if (!options.outDir.empty())
    std::cerr << "tensorc: wrote " << index << " stage dump(s) to " << options.outDir << "\n";
  return 0;
}

} // namespace

Subcommand addInspectCommand(CLI::App &app) {
  auto inspect = std::make_shared<InspectOptions>();
  CLI::App *command = app.add_subcommand("inspect", "Print the IR after each pipeline stage");
  command->add_option("model", inspect->model, "Model file (.fx or .onnx)")->required();
  command
      ->add_option("--stage", inspect->stage,
                   "Stop after this stage and print its IR (" + join(stageNames(), "|") +
                       "|all); 'all' prints every stage")
      ->capture_default_str();
  command->add_option("-o,--output-dir", inspect->outDir,
                      "Write one numbered file per stage (01_import.fx, ...) to DIR");
  addTrainOptions(command, inspect->train);
  command
      ->add_option("--target", inspect->target,
                   "Lower and render as `compile --target` does: cpu, cuda, or cpu,cuda")
      ->capture_default_str();
  addAttentionFlags(*command, inspect->attention);
  addMatmulPrecisionFlag(*command, inspect->matmulPrecision);
  addLimitFlags(*command, inspect->limits);
  return {command,
          [inspect](const OpRegistry &registry) { return runInspect(*inspect, registry); }};
}

} // namespace tensorc::driver
