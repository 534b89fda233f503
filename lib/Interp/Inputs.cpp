// Loading and generating model inputs; summarizing results.
#include "tensorc/Interp/Inputs.h"

#include "tensorc/Support/Limits.h"
#include "tensorc/Support/Safetensors.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tensorc::interp {

uint64_t RandomInputs::nextBits() {
  // splitmix64: small, fast, and the same sequence on every platform.
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

Expected<Tensor> RandomInputs::next(DType dtype, const std::vector<int64_t> &shape) {
  TC_ASSIGN_OR_RETURN(Tensor tensor, Tensor::zeros(dtype, shape));
  for (int64_t i = 0; i < tensor.numel(); ++i) {
    if (isFloating(dtype))
      tensor.setDouble(i, double(nextBits() >> 11) * 0x1.0p-53 * 2.0 - 1.0);
    else if (dtype == DType::Bool)
      tensor.setInt(i, int64_t(nextBits() & 1));
    else
      tensor.setInt(i, int64_t(nextBits() % 10));
  }
  return tensor;
}

Expected<std::vector<Tensor>> loadInputs(const Graph &graph, const std::string &path) {
  TC_ASSIGN_OR_RETURN(auto tensors, readSafetensors(path));
  for (const auto &[name, tensor] : tensors) // a misspelt name would otherwise be ignored
    if (!graph.findValue(name) || !graph.findValue(name)->isGraphInput() ||
        graph.isParameter(graph.findValue(name)))
      return makeError(path, ": tensor '", name, "' is not an input of the model");
  std::vector<Tensor> inputs;
  for (const Value *input : graph.userInputs()) {
    auto it = tensors.find(input->name());
    if (it == tensors.end())
      return makeError(path, ": no tensor named '", input->name(), "' for input %",
                       input->name(), ": ", input->type().str());
    inputs.push_back(it->second);
  }
  return inputs;
}

Expected<std::vector<Tensor>> randomInputs(const Graph &graph, uint64_t seed,
                                           const SymbolBindings &dims) {
  TC_ASSIGN_OR_RETURN(int64_t limit, maxTensorBytesFromEnv());
  RandomInputs random(seed);
  std::vector<Tensor> inputs;
  for (const Value *input : graph.userInputs()) {
    std::vector<int64_t> shape;
    for (const SymInt &dim : input->type().shape) {
      Expected<int64_t> value = dim.evaluate(dims);
      if (!value)
        return makeError("input %", input->name(), ": ", input->type().str(), ": ",
                         value.error().message(), " (give it with --dim NAME=VALUE)");
      shape.push_back(*value);
    }
    std::string what = "input %" + input->name();
    TC_RETURN_IF_ERROR(checkTensorBytes(input->type().dtype, shape, limit, what));
    Expected<Tensor> made = random.next(input->type().dtype, shape);
    if (!made)
      return made.takeError().withContext(what);
    Tensor tensor = std::move(*made);
    inputs.push_back(std::move(tensor));
  }
  return inputs;
}

std::string summarizeTensor(const Tensor &tensor) {
  std::string out = describeShape(tensor.dtype(), tensor.shape());
  int64_t count = tensor.numel();
  if (count == 0)
    return out + " (empty)";
  double sum = 0, low = INFINITY, high = -INFINITY;
  for (int64_t i = 0; i < count; ++i) {
    double v = tensor.getDouble(i);
    sum += v;
    low = std::min(low, v);
    high = std::max(high, v);
  }
  char buffer[128];
  std::snprintf(buffer, sizeof buffer, " mean=%.6g min=%.6g max=%.6g first=[", sum / double(count),
                low, high);
  out += buffer;
  for (int64_t i = 0; i < std::min<int64_t>(count, 4); ++i) {
    std::snprintf(buffer, sizeof buffer, "%s%.6g", i ? ", " : "", tensor.getDouble(i));
    out += buffer;
  }
  return out + (count > 4 ? ", ...]" : "]");
}

} // namespace tensorc::interp
