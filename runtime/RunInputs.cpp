// Inputs of a bundle run: read from safetensors or generated like the interpreter's random inputs.
#include "tensorc/Runtime/RunInputs.h"

#include "tensorc/Interp/Inputs.h"

#include "tensorc/Runtime/Trainer.h"
#include "tensorc/Support/Limits.h"
#include "tensorc/Support/Safetensors.h"
#include "tensorc/Support/StrCat.h"

#include <set>

namespace tensorc::rt {

namespace {

Expected<std::vector<Tensor>> readInputs(Model &model, const RunInputOptions &options) {
  const bundle::Manifest &manifest = model.manifest();
  TC_ASSIGN_OR_RETURN(auto tensors, readSafetensors(options.path));
  std::set<std::string> names;
  for (const bundle::TensorDesc &desc : manifest.inputs)
    names.insert(desc.name);
  for (const auto &[name, tensor] : tensors)
    if (!names.count(name))
      return makeError(options.path, ": tensor '", name, "' is not an input of the bundle (",
                       join(names, ", "), ")");
  std::unique_ptr<Trainer> initial; // a training bundle's starting state
  if (manifest.training) {
    TC_ASSIGN_OR_RETURN(initial, Trainer::forModel(model));
  }
  std::vector<Tensor> inputs;
  for (const bundle::TensorDesc &desc : manifest.inputs) {
    if (auto it = tensors.find(desc.name); it != tensors.end()) {
      inputs.push_back(it->second);
      continue;
    }
    auto state = initial ? initial->state().find(desc.name)
                         : std::map<std::string, Tensor>::const_iterator();
    if (!initial || state == initial->state().end())
      return makeError(options.path, ": no tensor named '", desc.name, "' for input '", desc.name,
                       "'");
    inputs.push_back(state->second);
  }
  return inputs;
}

Expected<std::vector<Tensor>> randomInputs(Model &model, const RunInputOptions &options) {
  const bundle::Manifest &manifest = model.manifest();
  std::set<std::string> symbols(manifest.symbols.begin(), manifest.symbols.end());
  for (const auto &[name, value] : options.dims) {
    if (!symbols.count(name))
      return makeError("--dim ", name, ": the bundle has no symbolic dim '", name, "'",
                       symbols.empty() ? std::string(" (its shapes are static)")
                                       : " (it has " + join(symbols, ", ") + ")");
    if (value < 0)
      return makeError("--dim ", name, ": must not be negative, got ", value);
  }
  for (const std::string &symbol : manifest.symbols) {
    if (options.dims.count(symbol))
      continue;
    for (const bundle::TensorDesc &desc : manifest.inputs) {
      std::set<std::string> used;
      for (const bundle::SizeExpr &dim : desc.shape)
        dim.collectSymbols(used);
      if (used.count(symbol))
        return makeError("input '", desc.name, "' has the symbolic dim '", symbol,
                         "': give its size with --dim ", symbol, "=N");
    }
  }
  TC_ASSIGN_OR_RETURN(int64_t limit, resolveMaxTensorBytes(options.maxTensorBytes));
  // The interpreter's generator: both runners and `tensorc run --interp` feed the same inputs.
  interp::RandomInputs random(options.seed);
  std::vector<Tensor> inputs;
  for (const bundle::TensorDesc &desc : manifest.inputs) {
    std::string what = "input '" + desc.name + "'";
    std::vector<int64_t> shape;
    for (const bundle::SizeExpr &dim : desc.shape) {
      Expected<int64_t> size = dim.evaluate(options.dims);
      if (!size)
        return size.takeError().withContext(what);
      shape.push_back(*size);
    }
    TC_RETURN_IF_ERROR(checkTensorBytes(desc.dtype, shape, limit, what));
    Expected<Tensor> made = random.next(desc.dtype, shape);
    if (!made)
      return made.takeError().withContext(what);
    inputs.push_back(std::move(*made));
  }
  return inputs;
}

} // namespace

Expected<std::vector<Tensor>> makeRunInputs(Model &model, const RunInputOptions &options) {
  if (!options.path.empty()) {
    if (!options.dims.empty())
      return makeError("--dim sizes generated inputs; the inputs of ", options.path,
                       " have their own shapes");
    return readInputs(model, options);
  }
  return randomInputs(model, options);
}

} // namespace tensorc::rt
