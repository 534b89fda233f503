// Small emitters of view ops (reshape, permute, slice, squeeze, unsqueeze) and axis checks,
// shared by every converter file.
#pragma once

#include "ConvertContext.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tensorc::onnx {

/// Maps a possibly negative axis into [0, rank); `what` names it in the error.
Expected<int64_t> normalizeAxis(ConvertContext &c, int64_t axis, size_t rank,
                                const std::string &what = "axis");

Expected<Value *> reshape(ConvertContext &c, Value *value, std::vector<SymInt> shape);
Expected<Value *> reshape(ConvertContext &c, Value *value, const std::vector<int64_t> &shape);
Expected<Value *> permute(ConvertContext &c, Value *value, const std::vector<int64_t> &dims);
/// Elements [start, end) of dim `dim`, step 1.
Expected<Value *> slice(ConvertContext &c, Value *value, int64_t dim, int64_t start, int64_t end);
Expected<Value *> squeezeDim(ConvertContext &c, Value *value, int64_t dim);
Expected<Value *> unsqueezeDim(ConvertContext &c, Value *value, int64_t dim);

} // namespace tensorc::onnx
