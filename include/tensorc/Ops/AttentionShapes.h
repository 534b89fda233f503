// Which aten.scaled_dot_product_attention shapes the CUDA backend runs on a tiled kernel (tensor
// cores, or the strict-f32 one): shared by the graph pass that forms the op for them
// (fuse-tiled-attention) and the CUDA backend's kernels, so both sit above this one definition.
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

/// Whether strict-f32 attention of these head dims runs on the CUDA backend's tiled f32 kernel
/// (CUDA cores): constant head dims, e a multiple of 4 and ev of 16, both at most 64.
inline bool simtAttentionShape(DType dtype, const SymInt &e, const SymInt &ev) {
  std::optional<int64_t> ec = e.constant(), evc = ev.constant();
  return dtype == DType::F32 && ec && evc && *ec >= 4 && *ec <= 64 && *ec % 4 == 0 &&
         *evc >= 16 && *evc <= 64 && *evc % 16 == 0;
}

/// Whether the CUDA backend has a tiled kernel for attention of this dtype and these head dims
/// (the flash kernel on tensor cores, or the f32 one): the heads fuse-tiled-attention
/// forms by default.
inline bool tiledAttentionShape(DType dtype, const SymInt &e, const SymInt &ev) {
  return tensorCoreAttentionShape(dtype, e, ev) || simtAttentionShape(dtype, e, ev);
}

} // namespace tensorc
