// Which aten.scaled_dot_product_attention shapes run on tensor cores: shared by the graph pass
// that forms the op for them (fuse-tensor-core-attention) and the CUDA backend's flash kernel,
// so both sit above this one definition.
#pragma once

#include "tensorc/IR/SymInt.h"
#include "tensorc/Support/DType.h"

#include <optional>

namespace tensorc {

/// Whether attention of this dtype and head dims (query and key: e, value: ev) runs on the CUDA
/// backend's tensor-core (flash) kernel: f16 or bf16, constant head dims that are multiples of 16
/// from 16 to 128.
inline bool tensorCoreAttentionShape(DType dtype, const SymInt &e, const SymInt &ev) {
  auto fits = [](const SymInt &dim) {
    std::optional<int64_t> value = dim.constant();
    return value && *value >= 16 && *value <= 128 && *value % 16 == 0;
  };
  return (dtype == DType::F16 || dtype == DType::BF16) && fits(e) && fits(ev);
}

} // namespace tensorc
