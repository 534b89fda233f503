// Test helpers: run one op's reference kernel on small literal tensors.
#pragma once

#include "tensorc/IR/OpDef.h"
#include "tensorc/Support/Tensor.h"

#include <string_view>
#include <vector>

namespace tensorc::test {

/// The core registry, built once per test binary.
const OpRegistry &registry();
/// Runs op `name` on `inputs` (a default Tensor() stands for None) with `attrs`.
Expected<std::vector<Tensor>> runOp(std::string_view name, const std::vector<Tensor> &inputs,
                                    AttrMap attrs = {});
/// A tensor of `dtype` and `shape` holding `values` (converted), row-major.
Tensor makeTensor(DType dtype, std::vector<int64_t> shape, const std::vector<double> &values);
/// All elements as doubles, row-major.
std::vector<double> toDoubles(const Tensor &tensor);

} // namespace tensorc::test
