// Training with a compiled step: the state carried between steps, saved and loaded as
// safetensors.
#include "tensorc/Runtime/Trainer.h"

#include "tensorc/Support/Safetensors.h"
#include "tensorc/Support/StrCat.h"

#include <cstring>

namespace tensorc::rt {

namespace {

std::string describe(DType dtype, const std::vector<int64_t> &shape) {
  return strCat(dtypeName(dtype), "[", join(shape, ", "), "]");
}

/// A state's static shape from its manifest description.
Expected<std::vector<int64_t>> staticShape(const bundle::TensorDesc &desc) {
  std::vector<int64_t> shape;
  for (const bundle::SizeExpr &dim : desc.shape) {
    std::optional<int64_t> value = dim.constantValue();
    if (!value)
      return makeError("training state '", desc.name, "' has the symbolic dim '", dim.text(),
                       "'; state must have a static shape");
    shape.push_back(*value);
  }
  return shape;
}

const bundle::TensorDesc *findDesc(const std::vector<bundle::TensorDesc> &list,
                                   const std::string &name) {
  for (const bundle::TensorDesc &desc : list)
    if (desc.name == name)
      return &desc;
  return nullptr;
}

/// An owned copy (state tensors outlive the mapped file or the step's outputs they came from).
Expected<Tensor> copyOf(const Tensor &tensor) {
  TC_ASSIGN_OR_RETURN(Tensor copy, Tensor::zeros(tensor.dtype(), tensor.shape()));
  if (tensor.nbytes())
    std::memcpy(copy.mutableData(), tensor.data(), tensor.nbytes());
  return copy;
}

} // namespace

Expected<std::unique_ptr<Trainer>> Trainer::create(Step step,
                                                   std::map<std::string, Tensor> initial) {
  std::unique_ptr<Trainer> trainer(new Trainer(std::move(step)));
  for (const bundle::TrainingInfo::State &state : trainer->step_.training.state) {
    const bundle::TensorDesc *desc = findDesc(trainer->step_.inputs, state.input);
    if (!desc)
      return makeError("training state '", state.input, "' is not an input of the step");
    TC_ASSIGN_OR_RETURN(std::vector<int64_t> shape, staticShape(*desc));
    auto it = initial.find(state.input);
    if (it == initial.end()) {
      TC_ASSIGN_OR_RETURN(trainer->state_[state.input], Tensor::zeros(desc->dtype, shape));
      continue;
    }
    if (it->second.dtype() != desc->dtype || it->second.shape() != shape)
      return makeError("training state '", state.input, "' starts as ",
                       describe(it->second.dtype(), it->second.shape()), ", but the step takes ",
                       describe(desc->dtype, shape));
    TC_ASSIGN_OR_RETURN(trainer->state_[state.input], copyOf(it->second));
  }
  return trainer;
}

Expected<std::unique_ptr<Trainer>> Trainer::forModel(Model &model) {
  const bundle::Manifest &manifest = model.manifest();
  if (!manifest.training)
    return makeError(manifest.model.empty() ? std::string("the bundle") : manifest.model,
                     " is not a training bundle (compile it with --train)");
  Step step{manifest.inputs, manifest.outputs, *manifest.training,
            [&model](const std::vector<Tensor> &inputs) { return model.run(inputs); }};
  std::map<std::string, Tensor> initial;
  for (const bundle::TrainingInfo::State &state : manifest.training->state)
    if (!state.init.empty()) {
      TC_ASSIGN_OR_RETURN(initial[state.input], model.weight(state.init));
    }
  return create(std::move(step), std::move(initial));
}

Expected<double> Trainer::step(const std::map<std::string, Tensor> &dataByName,
                               std::vector<Tensor> *outputs) {
  std::vector<Tensor> data;
  for (const std::string &name : step_.training.data) {
    auto it = dataByName.find(name);
    if (it == dataByName.end())
      return makeError("training step: no tensor for input '", name, "'");
    data.push_back(it->second);
  }
  return step(data, outputs);
}

Expected<double> Trainer::step(const std::vector<Tensor> &data, std::vector<Tensor> *outputs) {
  const bundle::TrainingInfo &training = step_.training;
  if (data.size() != training.data.size())
    return makeError("training step: expected ", training.data.size(), " data inputs (",
                     join(training.data, ", "), "), got ", data.size());
  std::map<std::string, const Tensor *> byName;
  for (size_t i = 0; i < data.size(); ++i)
    byName[training.data[i]] = &data[i];
  for (const auto &[name, tensor] : state_)
    byName[name] = &tensor;
  std::vector<Tensor> inputs;
  for (const bundle::TensorDesc &desc : step_.inputs)
    inputs.push_back(*byName.at(desc.name));
  TC_ASSIGN_OR_RETURN(std::vector<Tensor> results, step_.run(inputs));
  if (results.size() != step_.outputs.size())
    return makeError("training step: the step returned ", results.size(), " outputs, expected ",
                     step_.outputs.size());
  std::map<std::string, size_t> outputIndex;
  for (size_t i = 0; i < step_.outputs.size(); ++i)
    outputIndex[step_.outputs[i].name] = i;
  const Tensor &lossTensor = results[outputIndex.at(training.loss)];
  if (lossTensor.numel() != 1)
    return makeError("training step: the loss has ", lossTensor.numel(), " elements");
  double loss = lossTensor.getDouble(0);
  for (const bundle::TrainingInfo::State &state : training.state)
    if (!state.output.empty()) {
      TC_ASSIGN_OR_RETURN(state_[state.input], copyOf(results[outputIndex.at(state.output)]));
    }
  if (outputs)
    *outputs = std::move(results);
  return loss;
}

Status Trainer::saveState(const std::string &path) const {
  std::vector<std::pair<std::string, Tensor>> tensors(state_.begin(), state_.end());
  return writeSafetensors(path, tensors);
}

Status Trainer::loadState(const std::string &path) {
  TC_ASSIGN_OR_RETURN(auto tensors, readSafetensors(path));
  std::map<std::string, Tensor> loaded;
  for (const auto &[name, current] : state_) {
    auto it = tensors.find(name);
    if (it == tensors.end())
      return makeError(path, ": no tensor '", name, "' (training state)");
    if (it->second.dtype() != current.dtype() || it->second.shape() != current.shape())
      return makeError(path, ": tensor '", name, "' is ",
                       describe(it->second.dtype(), it->second.shape()), ", the state is ",
                       describe(current.dtype(), current.shape()));
    TC_ASSIGN_OR_RETURN(loaded[name], copyOf(it->second));
  }
  for (const auto &[name, tensor] : tensors)
    if (!state_.count(name))
      return makeError(path, ": tensor '", name, "' is not part of this model's training state");
  state_ = std::move(loaded);
  return Status::ok();
}

} // namespace tensorc::rt
