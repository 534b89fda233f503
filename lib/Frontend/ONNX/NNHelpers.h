// Helpers shared by the neural-network converters (OnnxOpsNN, OnnxOpsQuantize, OnnxOpsRecurrent,
// OnnxOpsMisc, OnnxOpsControlFlow):
// small emitters for arithmetic, and ONNX's padding attributes (view emitters: ViewEmitters.h).
#pragma once

#include "ConvertContext.h"
#include "ViewEmitters.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tensorc::onnx::nn {

using Ints = std::vector<int64_t>;

/// Input `i`, a scalar integer known at import time (`what` names it in errors).
Expected<int64_t> constantScalar(ConvertContext &c, size_t i, const std::string &what);
Expected<Value *> binary(ConvertContext &c, const char *op, Value *a, Value *b);
/// [M, N] -> [N, M].
Expected<Value *> transpose2d(ConvertContext &c, Value *value);
/// Reshapes a per-channel vector [C] (or a scalar) to broadcast against a rank-`rank` tensor
/// along `axis` (which must lie in [0, rank)): [1, C, 1, 1].
Expected<Value *> alongAxis(ConvertContext &c, Value *value, int64_t axis, size_t rank);

/// Per spatial dim begin/end padding, resolved from `pads` or `auto_pad`.
struct SpatialPads {
  Ints begin, end;
  bool symmetric() const { return begin == end; }
};

/// The total SAME_UPPER / SAME_LOWER padding of a spatial dim of size `in` (the output keeps
/// ceil(in / stride) positions), computed without overflow for any dim up to 2^63 - 1.
int64_t samePaddingTotal(int64_t in, int64_t stride, int64_t kernel, int64_t dilation);
/// The node's `pads` or `auto_pad` for a convolution or pooling window over `input`.
Expected<SpatialPads> resolvePads(ConvertContext &c, const TensorType &input, const Ints &kernel,
                                  const Ints &strides, const Ints &dilations);
/// Emits aten.pad of the trailing spatial dims with `value`.
Expected<Value *> padSpatial(ConvertContext &c, Value *input, const SpatialPads &pads,
                             double value);
/// Window attributes (kernel sizes, strides, dilations, pads) are at most this: no model needs
/// more, and products of two of them stay below 2^62. Dims may be as large as 2^63 - 1 (an
/// empty input has no byte size to limit them), so sums with a dim must be ordered or checked.
constexpr int64_t kMaxWindowValue = int64_t(1) << 31;

/// The ints attribute `name` of a window: `count` entries (`count` copies of `fill` when absent),
/// each in [`min`, kMaxWindowValue]; errors name the attribute.
Expected<Ints> windowList(ConvertContext &c, const char *name, size_t count, int64_t fill,
                          int64_t min);
/// kernel_shape: `count` entries in [1, kMaxWindowValue], or `fallback` (the weight's spatial
/// dims) when absent.
Expected<Ints> kernelShape(ConvertContext &c, size_t count, const Ints &fallback);

/// aten.convolution of `x` by `w` (+ `bias` unless nullptr) over windows of `kernel`, with the
/// node's strides, dilations, pads or auto_pad (asymmetric pads become an aten.pad of `x`) and
/// group.
Expected<Value *> convolution(ConvertContext &c, Value *x, Value *w, Value *bias,
                              const Ints &kernel);

// Cases that convertMaxPool and convertBatchNormalization (OnnxOpsNN.cpp) hand on to
// OnnxOpsMisc.cpp:
/// MaxPool with its Indices output.
Status maxPoolWithIndices(ConvertContext &c);
/// Training-mode BatchNormalization: normalizes with the batch statistics and returns the
/// updated running statistics (running * momentum + batch * (1 - momentum)).
Status trainingBatchNormalization(ConvertContext &c);

} // namespace tensorc::onnx::nn
