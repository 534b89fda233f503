// `tensorc train`: training steps of a training bundle, or of a model on the interpreter.
#include "Driver.h"

#include "tensorc/Interp/Interpreter.h"
#include "tensorc/Pipeline/Compile.h"
#include "tensorc/Pipeline/Pipeline.h"
#include "tensorc/Runtime/Model.h"
#include "tensorc/Runtime/Trainer.h"
#include "tensorc/Support/Safetensors.h"
#include "tensorc/Support/StrCat.h"

#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <memory>

namespace tensorc::driver {

namespace {

struct TrainCommand {
  std::string model;
  std::string data;
  int64_t steps = 1;
  bool interp = false;
  TrainFlags train;
  std::string saveState, loadState, outputs;
  int threads = 0;
  std::string device = "cpu";
  int cudaDevice = 0;
};

/// The training step of a model file on the interpreter (the oracle for compiled steps).
Expected<std::unique_ptr<rt::Trainer>> interpretedTrainer(const TrainCommand &command,
                                                          const OpRegistry &registry,
                                                          std::shared_ptr<Graph> &graph) {
  TC_ASSIGN_OR_RETURN(std::optional<autodiff::TrainOptions> train, command.train.resolve());
  PipelineOptions pipeline;
  pipeline.stopAfter = "autodiff";
  pipeline.train = train;
  autodiff::TrainingSignature signature;
  TC_ASSIGN_OR_RETURN(Graph stepGraph, runPipeline(command.model, registry, pipeline, &signature));
  graph = std::make_shared<Graph>(std::move(stepGraph));
  rt::Trainer::Step step;
  auto describe = [](const Value *value) -> Expected<bundle::TensorDesc> {
    bundle::TensorDesc desc;
    desc.name = value->name();
    desc.dtype = value->type().dtype;
    for (const SymInt &dim : value->type().shape) {
      TC_ASSIGN_OR_RETURN(bundle::SizeExpr expr, bundle::SizeExpr::parse(dim.str()));
      desc.shape.push_back(std::move(expr));
    }
    return desc;
  };
  for (const Value *input : graph->userInputs()) {
    TC_ASSIGN_OR_RETURN(step.inputs.emplace_back(), describe(input));
  }
  for (const Value *output : graph->outputs()) {
    TC_ASSIGN_OR_RETURN(step.outputs.emplace_back(), describe(output));
  }
  step.training = trainingInfo(signature);
  std::shared_ptr<Graph> held = graph;
  step.run = [held](const std::vector<Tensor> &inputs) { return interp::interpret(*held, inputs); };
  std::map<std::string, Tensor> initial(signature.initialParams.begin(),
                                        signature.initialParams.end());
  return rt::Trainer::create(std::move(step), std::move(initial));
}

int runTrain(const TrainCommand &command, const OpRegistry &registry) {
  std::error_code ec;
  bool isBundle = std::filesystem::is_directory(command.model, ec);
  if (isBundle && command.interp)
    return fail(command.model + " is a bundle; --interp trains models (.fx, .onnx)");
  if (!isBundle && !command.interp)
    return fail(command.model + " is a model, not a bundle: compile it with --train first, or "
                                "pass --interp to train it on the reference interpreter");
  if (command.steps < 1)
    return fail("--steps must be at least 1");
  std::unique_ptr<rt::Model> model;
  std::shared_ptr<Graph> graph;
  std::unique_ptr<rt::Trainer> trainer;
  if (isBundle) {
    rt::LoadOptions load;
    load.threads = command.threads;
    load.device = command.device;
    load.cudaDevice = command.cudaDevice;
    Expected<std::unique_ptr<rt::Model>> loaded = rt::Model::load(command.model, load);
    if (!loaded)
      return fail(loaded.error().message());
    model = std::move(*loaded);
    Expected<std::unique_ptr<rt::Trainer>> created = rt::Trainer::forModel(*model);
    if (!created)
      return fail(created.error().message());
    trainer = std::move(*created);
  } else {
    Expected<std::unique_ptr<rt::Trainer>> created = interpretedTrainer(command, registry, graph);
    if (!created)
      return fail(created.error().message());
    trainer = std::move(*created);
  }
  if (!command.loadState.empty())
    if (Status loaded = trainer->loadState(command.loadState); !loaded)
      return fail(loaded.message());
  Expected<std::map<std::string, Tensor>> data = readSafetensors(command.data);
  if (!data)
    return fail(data.error().message());
  std::vector<Tensor> outputs;
  for (int64_t i = 0; i < command.steps; ++i) {
    Expected<double> loss = trainer->step(*data, &outputs);
    if (!loss)
      return fail(strCat(command.model, ": step ", i + 1, ": ", loss.error().message()));
    std::printf("step %" PRId64 ": loss %.9g\n", i + 1, *loss);
  }
  std::fflush(stdout);
  if (!command.outputs.empty()) {
    std::vector<std::pair<std::string, Tensor>> named;
    for (size_t i = 0; i < outputs.size(); ++i)
      named.emplace_back(trainer->outputDescs()[i].name, outputs[i]);
    if (Status written = writeSafetensors(command.outputs, named); !written)
      return fail(written.message());
  }
  if (!command.saveState.empty())
    if (Status saved = trainer->saveState(command.saveState); !saved)
      return fail(saved.message());
  return 0;
}

} // namespace

Subcommand addTrainCommand(CLI::App &app) {
  auto train = std::make_shared<TrainCommand>();
  CLI::App *command = app.add_subcommand(
      "train", "Run training steps of a training bundle (or, with --interp, of a model)");
  command->add_option("model", train->model, "Training bundle directory, or model (--interp)")
      ->required();
  command
      ->add_option("--data", train->data,
                   ".safetensors with one tensor per data input (model inputs, label)")
      ->required();
  command->add_option("--steps", train->steps, "Steps to run on that batch")->capture_default_str();
  command->add_flag("--interp", train->interp,
                    "Train the model on the reference interpreter (takes --loss etc.)");
  addTrainOptions(command, train->train, /*always=*/true);
  command->add_option("--load-state", train->loadState,
                      "Start from parameters and optimizer state saved by --save-state");
  command->add_option("--save-state", train->saveState,
                      "Write the parameters and optimizer state after the last step");
  command->add_option("--outputs", train->outputs,
                      "Write the last step's outputs (loss, updated state or gradients)");
  command->add_option("--threads", train->threads, "Bundle: worker threads (0 = all cores)");
  command->add_option("--device", train->device, "Bundle: cpu, or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  command->add_option("--cuda-device", train->cudaDevice, "Bundle: GPU index");
  return {command, [train](const OpRegistry &registry) {
            train->train.train = true;
            return runTrain(*train, registry);
          }};
}

} // namespace tensorc::driver
