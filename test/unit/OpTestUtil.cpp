// Test helpers: run one op's reference kernel on small literal tensors.
#include "OpTestUtil.h"

#include "OpGroups.h" // lib/Ops: each group registered on its own, so one failing group is clear
#include "tensorc/Interp/Interpreter.h"

#include <cstdlib>
#include <iostream>

namespace tensorc::test {

const OpRegistry &registry() {
  static const OpRegistry instance = [] {
    OpRegistry built;
    for (ops::RegisterFn group : ops::allOpGroups()) {
      Status status = group(built);
      if (!status) {
        std::cerr << status.message() << "\n";
        std::abort();
      }
    }
    return built;
  }();
  return instance;
}

Expected<std::vector<Tensor>> runOp(std::string_view name, const std::vector<Tensor> &inputs,
                                    AttrMap attrs) {
  const OpDef *op = registry().lookup(name);
  if (!op)
    return makeError("unknown op ", name);
  std::vector<const Tensor *> pointers;
  for (const Tensor &input : inputs)
    pointers.push_back(input.defined() ? &input : nullptr);
  return interp::evaluateOp(*op, pointers, std::move(attrs));
}

Tensor makeTensor(DType dtype, std::vector<int64_t> shape, const std::vector<double> &values) {
  Tensor tensor = Tensor::zerosUnchecked(dtype, std::move(shape));
  if (int64_t(values.size()) != tensor.numel()) {
    std::cerr << "makeTensor: " << values.size() << " values for " << tensor.numel()
              << " elements\n";
    std::abort();
  }
  for (size_t i = 0; i < values.size(); ++i)
    tensor.setDouble(int64_t(i), values[i]);
  return tensor;
}

std::vector<double> toDoubles(const Tensor &tensor) {
  std::vector<double> values(size_t(tensor.numel()));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = tensor.getDouble(int64_t(i));
  return values;
}

} // namespace tensorc::test
