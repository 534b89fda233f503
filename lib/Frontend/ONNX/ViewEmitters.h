// Small emitters of view ops (reshape, permute, slice, squeeze, unsqueeze), of a reduction, and
// axis checks, shared by every converter file.
#pragma once

#include "ConvertContext.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tensorc::onnx {

/// Maps a possibly negative axis into [0, rank); `what` names it in the error.
Expected<int64_t> normalizeAxis(ConvertContext &c, int64_t axis, size_t rank,
                                const std::string &what = "axis");

Expected<Value *> reshape(ConvertContext &c, Value *value, std::vector<SymInt> shape);
Expected<Value *> reshape(ConvertContext &c, Value *value, const std::vector<int64_t> &shape);
Expected<Value *> permute(ConvertContext &c, Value *value, const std::vector<int64_t> &dims);
/// reshape() and permute() that return `value` itself when it already has that shape / order.
Expected<Value *> reshapeTo(ConvertContext &c, Value *value, std::vector<SymInt> shape);
Expected<Value *> permuteTo(ConvertContext &c, Value *value, const std::vector<int64_t> &dims);
/// The dims [first, rank): what a reduction over all dims from `first` on spans.
std::vector<int64_t> dimsFrom(size_t first, size_t rank);
/// `op` (aten.sum, aten.amax, ...) over `dims`, in `dtype` when given.
Expected<Value *> reduceOp(ConvertContext &c, std::string_view op, Value *value,
                           const std::vector<int64_t> &dims, bool keepdim,
                           std::optional<DType> dtype = std::nullopt);
/// Elements [start, end) of dim `dim`, step 1.
Expected<Value *> slice(ConvertContext &c, Value *value, int64_t dim, int64_t start, int64_t end);
Expected<Value *> squeezeDim(ConvertContext &c, Value *value, int64_t dim);
Expected<Value *> unsqueezeDim(ConvertContext &c, Value *value, int64_t dim);

} // namespace tensorc::onnx
