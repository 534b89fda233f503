// Training steps: the loss attached to a model, then its gradients and the optimizer update in
// one graph, (data..., params..., optimizer state...) -> (loss, new params..., new state...).
#pragma once

#include "tensorc/Autodiff/Autodiff.h"

#include <string>
#include <vector>

namespace tensorc::autodiff {

struct TrainOptions {
  /// "mse" (mean squared error against the label), "cross_entropy" (the output as logits
  /// [N, C] against integer class labels [N]) or "output" (the model's one scalar output is the
  /// loss; no label).
  std::string loss = "mse";
  /// The label input's name.
  std::string label = "label";
  /// "sgd", "adamw", or "none" (the step returns the gradients and updates nothing).
  std::string optimizer = "sgd";
  double lr = 0.01;
  double momentum = 0.0; // sgd
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double weightDecay = 0.0; // decoupled (AdamW); L2 for sgd
  /// Parameters to train; empty = every floating-point parameter of the model.
  std::vector<std::string> params;
  PartitionKind partition = PartitionKind::MinCut;
};

/// How a training step's inputs and outputs relate across steps (the manifest's "training").
struct TrainingSignature {
  std::string optimizer;
  std::vector<std::string> params;
  /// The parameters' values in the model (the state's initial values).
  WeightMap initialParams;
  /// Inputs the caller supplies every step (the model's inputs and the label), in order.
  std::vector<std::string> data;
  std::string label; // "" for --loss output
  std::string loss;  // the loss output's name (output 0)
  /// Carried between steps: after a step, output `output` becomes input `input` (no output:
  /// the step does not change it). `init` is the parameter the state starts from, or "" for
  /// zeros (optimizer moments, the step count).
  struct State {
    std::string input, output, init;
  };
  std::vector<State> state;
  /// --optimizer none: the gradient outputs, one per parameter.
  std::vector<std::string> gradients;
};

/// The partitions of a training step, for `inspect --stage autodiff` and the compile report.
struct AutodiffReport {
  JointGraph joint;
  Partition chosen;
  int64_t defaultSavedBytes = 0;
  int64_t minCutSavedBytes = 0;
};

/// The loss stage: the trained parameters become inputs (no pass may fold them into constants)
/// and the model's output becomes the loss. Errors name the output, label or parameter at fault.
Expected<TrainingSignature> attachLoss(Graph &graph, const TrainOptions &options,
                                       const OpRegistry &registry);

/// The autodiff stage, on the decomposed loss graph: differentiates it, partitions the joint
/// graph and appends the optimizer update; `graph` becomes the training step.
Expected<AutodiffReport> buildTrainingStep(Graph &graph, const TrainOptions &options,
                                           const OpRegistry &registry,
                                           TrainingSignature &signature);

/// A one-paragraph report: saved bytes of each partitioner, what min-cut recomputes.
std::string describeReport(const AutodiffReport &report);

} // namespace tensorc::autodiff
