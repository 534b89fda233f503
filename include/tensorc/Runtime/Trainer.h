// Training with a compiled step: runs a training bundle (or any step function) repeatedly,
// carrying parameters and optimizer state from each step's outputs into the next one's inputs.
#pragma once

#include "tensorc/Bundle/Manifest.h"
#include "tensorc/Runtime/Model.h"
#include "tensorc/Support/Status.h"
#include "tensorc/Support/Tensor.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tensorc::rt {

class Trainer {
public:
  /// Runs one step on all its inputs (in `inputs` order), returning all outputs.
  using RunFn = std::function<Expected<std::vector<Tensor>>(const std::vector<Tensor> &)>;
  struct Step {
    std::vector<bundle::TensorDesc> inputs, outputs;
    bundle::TrainingInfo training;
    RunFn run;
  };

  /// `initial` holds each state's starting tensor by input name; states missing from it start
  /// as zeros (their shape must then be static).
  static Expected<std::unique_ptr<Trainer>> create(Step step,
                                                   std::map<std::string, Tensor> initial);
  /// A trainer on a training bundle's model: the state starts from the bundle's weights.
  static Expected<std::unique_ptr<Trainer>> forModel(Model &model);

  /// One step on the data inputs (training.data order, or by name via `dataByName`). Returns the
  /// loss; `outputs` (optional) receives every output of the step.
  Expected<double> step(const std::vector<Tensor> &data, std::vector<Tensor> *outputs = nullptr);
  Expected<double> step(const std::map<std::string, Tensor> &dataByName,
                        std::vector<Tensor> *outputs = nullptr);

  const bundle::TrainingInfo &training() const { return step_.training; }
  const std::vector<bundle::TensorDesc> &outputDescs() const { return step_.outputs; }
  /// The current state (parameters, optimizer moments) by input name.
  const std::map<std::string, Tensor> &state() const { return state_; }
  /// Writes the state as .safetensors (atomically).
  Status saveState(const std::string &path) const;
  /// Replaces the state from a .safetensors file: every state tensor must be there with its
  /// dtype and shape; other tensors are an error (a file for another model).
  Status loadState(const std::string &path);

private:
  explicit Trainer(Step step) : step_(std::move(step)) {}
  Step step_;
  std::map<std::string, Tensor> state_;
};

} // namespace tensorc::rt
