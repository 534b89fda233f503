// Normalization: aten.batch_norm (inference and training statistics) and aten.layer_norm.
#include "DecomposeHelpers.h"
#include "DenseKernels.h"
#include "OpGroups.h"
#include "OpHelpers.h"

#include "tensorc/Support/StrCat.h"

#include <cmath>
#include <type_traits>
#include <vector>

namespace tensorc::ops {
namespace {

/// A parameter tensor's elements in the compute type T (empty when the parameter is None).
template <typename T> std::vector<T> paramValues(const Tensor *param) {
  std::vector<T> values;
  if (!param)
    return values;
  values.resize(size_t(param->numel()));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = T(param->getDouble(int64_t(i)));
  return values;
}

// ---- batch_norm ------------------------------------------------------------------------------

constexpr const char *kBatchNormParams[] = {"weight", "bias", "running_mean", "running_var"};

Expected<std::vector<TensorType>> inferBatchNorm(const InferContext &ctx) {
  const TensorType &input = ctx.input(0);
  if (input.rank() < 2)
    return makeError("batch_norm expects an input of rank >= 2 ([N, C, *]), got ", input.str());
  if (!isFloating(input.dtype))
    return makeError("batch_norm needs a floating dtype, got ", dtypeName(input.dtype));
  const SymInt &channels = input.shape[1];
  for (size_t i = 0; i < 4; ++i) {
    if (!ctx.hasInput(i + 1))
      continue;
    const TensorType &param = ctx.input(i + 1);
    if (param.rank() != 1 || !mayBeEqual(param.shape[0], channels) || !isFloating(param.dtype))
      return makeError(kBatchNormParams[i], " must be a floating [", channels,
                       "] tensor (one per channel of ", input.str(), "), got ", param.str());
  }
  if (!ctx.getBool("training") && (!ctx.hasInput(3) || !ctx.hasInput(4)))
    return makeError("running_mean and running_var are required when training=False");
  return std::vector<TensorType>{input};
}

template <typename T>
void batchNorm(const KernelContext &ctx, const Tensor &input, Tensor &out, bool training,
               double eps) {
  AxisSplit split = splitAtAxis(input.shape(), 1);
  int64_t channels = split.size, inner = split.inner;
  const T *x = input.dataAs<T>();
  T *y = out.mutableDataAs<T>();
  auto param = [&](size_t index) { return ctx.hasInput(index) ? &ctx.input(index) : nullptr; };
  std::vector<double> weight = paramValues<double>(param(1)), bias = paramValues<double>(param(2));
  std::vector<double> mean = paramValues<double>(param(3)), var = paramValues<double>(param(4));
  int64_t count = split.outer * inner;
  for (int64_t c = 0; c < channels; ++c) {
    double channelMean, channelVar;
    if (training) {
      // The batch's biased statistics, two passes in double.
      double sum = 0;
      for (int64_t n = 0; n < split.outer; ++n)
        for (const T *p = x + (n * channels + c) * inner, *e = p + inner; p != e; ++p)
          sum += double(*p);
      channelMean = count ? sum / double(count) : 0.0;
      double squares = 0;
      for (int64_t n = 0; n < split.outer; ++n)
        for (const T *p = x + (n * channels + c) * inner, *e = p + inner; p != e; ++p)
          squares += (double(*p) - channelMean) * (double(*p) - channelMean);
      channelVar = count ? squares / double(count) : 0.0;
    } else {
      channelMean = mean[size_t(c)];
      channelVar = var[size_t(c)];
    }
    double scale = 1.0 / std::sqrt(channelVar + eps);
    if (!weight.empty())
      scale *= weight[size_t(c)];
    double shift = (bias.empty() ? 0.0 : bias[size_t(c)]) - channelMean * scale;
    T scaleT = T(scale), shiftT = T(shift);
    for (int64_t n = 0; n < split.outer; ++n) {
      int64_t base = (n * channels + c) * inner;
      for (int64_t i = 0; i < inner; ++i)
        y[base + i] = x[base + i] * scaleT + shiftT;
    }
  }
}

Status runBatchNorm(KernelContext &ctx) {
  const Tensor &input = ctx.input(0);
  int64_t channels = input.dim(1);
  for (size_t i = 0; i < 4; ++i)
    if (ctx.hasInput(i + 1) && ctx.input(i + 1).numel() != channels)
      return makeError(kBatchNormParams[i], " has ", ctx.input(i + 1).numel(), " elements for ",
                       channels, " channels");
  bool training = ctx.getBool("training");
  double eps = ctx.getFloat("eps");
  return dispatchFloating("batch_norm", {&input}, ctx.output(0),
                          [&](auto zero, const std::vector<const Tensor *> &in, Tensor &out) {
                            batchNorm<decltype(zero)>(ctx, *in[0], out, training, eps);
                          });
}

// ---- layer_norm ------------------------------------------------------------------------------

Expected<std::vector<TensorType>> inferLayerNorm(const InferContext &ctx) {
  const TensorType &input = ctx.input(0);
  const std::vector<SymInt> &normalized = ctx.getInts("normalized_shape");
  if (!isFloating(input.dtype))
    return makeError("layer_norm needs a floating dtype, got ", dtypeName(input.dtype));
  auto mismatch = [&] {
    return makeError("normalized_shape [", join(normalized, ", "),
                     "] does not match the trailing dims of input ", input.str());
  };
  if (normalized.empty())
    return makeError("normalized_shape must not be empty");
  if (normalized.size() > input.rank())
    return mismatch();
  size_t first = input.rank() - normalized.size();
  for (size_t i = 0; i < normalized.size(); ++i)
    if (!mayBeEqual(normalized[i], input.shape[first + i]))
      return mismatch();
  for (size_t index : {size_t(1), size_t(2)}) {
    if (!ctx.hasInput(index))
      continue;
    const TensorType &param = ctx.input(index);
    bool matches = param.rank() == normalized.size() && isFloating(param.dtype);
    for (size_t i = 0; matches && i < normalized.size(); ++i)
      matches = mayBeEqual(param.shape[i], normalized[i]);
    if (!matches)
      return makeError(index == 1 ? "weight" : "bias", " must be a floating tensor of shape [",
                       join(normalized, ", "), "], got ", param.str());
  }
  return std::vector<TensorType>{input};
}

template <typename T>
void layerNorm(const Tensor &input, const std::vector<T> &weight, const std::vector<T> &bias,
               int64_t rowSize, double eps, Tensor &out) {
  const T *x = input.dataAs<T>();
  T *y = out.mutableDataAs<T>();
  int64_t rows = rowSize ? input.numel() / rowSize : 0;
  for (int64_t r = 0; r < rows; ++r) {
    const T *row = x + r * rowSize;
    T *dst = y + r * rowSize;
    // Two passes in double: the mean, then the biased variance around it.
    double sum = 0;
    for (int64_t i = 0; i < rowSize; ++i)
      sum += double(row[i]);
    double mean = sum / double(rowSize);
    double squares = 0;
    for (int64_t i = 0; i < rowSize; ++i)
      squares += (double(row[i]) - mean) * (double(row[i]) - mean);
    double rstd = 1.0 / std::sqrt(squares / double(rowSize) + eps);
    // Centered in double: with a large mean, rounding the mean to T would cost digits.
    for (int64_t i = 0; i < rowSize; ++i)
      dst[i] = T((double(row[i]) - mean) * rstd);
    if (!weight.empty())
      for (int64_t i = 0; i < rowSize; ++i)
        dst[i] *= weight[size_t(i)];
    if (!bias.empty())
      for (int64_t i = 0; i < rowSize; ++i)
        dst[i] += bias[size_t(i)];
  }
}

Status runLayerNorm(KernelContext &ctx) {
  const Tensor &input = ctx.input(0);
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> normalized, ctx.getStaticInts("normalized_shape"));
  int64_t rowSize = 1;
  for (size_t i = 0; i < normalized.size(); ++i) {
    if (input.dim(input.rank() - normalized.size() + i) != normalized[i])
      return makeError("normalized_shape [", join(normalized, ", "),
                       "] does not match the trailing dims of input ",
                       describeShape(input.dtype(), input.shape()));
    rowSize *= normalized[i];
  }
  for (size_t index : {size_t(1), size_t(2)})
    if (ctx.hasInput(index) && ctx.input(index).numel() != rowSize)
      return makeError(index == 1 ? "weight" : "bias", " has ", ctx.input(index).numel(),
                       " elements, normalized_shape has ", rowSize);
  double eps = ctx.getFloat("eps");
  return dispatchFloating("layer_norm", {&input}, ctx.output(0),
                          [&](auto zero, const std::vector<const Tensor *> &in, Tensor &out) {
                            using T = decltype(zero);
                            std::vector<T> weight =
                                paramValues<T>(ctx.hasInput(1) ? &ctx.input(1) : nullptr);
                            std::vector<T> bias =
                                paramValues<T>(ctx.hasInput(2) ? &ctx.input(2) : nullptr);
                            layerNorm<T>(*in[0], weight, bias, rowSize, eps, out);
                          });
}

// ---- Decompositions ---------------------------------------------------------------------------
// Parameters are cast to the input's dtype first: a dimensioned f32 weight would otherwise
// promote an f16 input's result to f32.

/// layer_norm(x) = (x - mean) * rsqrt(var + eps) * weight + bias over the normalized dims, when
/// they are static (mean and the biased var divide by their element count).
DecomposeResult decomposeLayerNorm(RewriteContext &rewrite, const OpRegistry &registry) {
  DecomposeBuilder b(rewrite, registry);
  AttrReader attrs(b.node().attrs());
  Value *x = b.operand(0);
  const TensorType &type = x->type();
  size_t normalizedRank = attrs.getInts("normalized_shape").size();
  std::vector<int64_t> dims;
  for (size_t i = type.rank() - normalizedRank; i < type.rank(); ++i)
    dims.push_back(int64_t(i));
  Shape trailing(type.shape.end() - int64_t(normalizedRank), type.shape.end());
  for (size_t index : {size_t(1), size_t(2)})
    if (b.operand(index) && b.operand(index)->type().shape != trailing)
      return keepNode(); // a symbolic dim meeting a constant one: broadcasting would retype
  std::optional<int64_t> count = staticCount(type.shape, dims);
  if (!count)
    return keepNode();
  // The biased variance reuses the centered values: var = mean((x - mean)^2).
  Attribute dim(dims);
  TC_ASSIGN_OR_RETURN(Value * mean, b.emit(OpId::Mean, {x}, {{"dim", dim}, {"keepdim", true}}));
  TC_ASSIGN_OR_RETURN(Value * centered, b.sub(x, mean));
  TC_ASSIGN_OR_RETURN(Value * squares, b.mul(centered, centered));
  TC_ASSIGN_OR_RETURN(Value * sum, b.reduce(OpId::Sum, squares, dim, true));
  TC_ASSIGN_OR_RETURN(Value * var, b.binaryScalar(OpId::Div, sum, double(*count)));
  TC_ASSIGN_OR_RETURN(Value * shifted, b.binaryScalar(OpId::Add, var, attrs.getFloat("eps")));
  TC_ASSIGN_OR_RETURN(Value * rstd, b.unary(OpId::Rsqrt, shifted));
  TC_ASSIGN_OR_RETURN(Value * result, b.mul(centered, rstd));
  if (Value *weight = b.operand(1)) {
    TC_ASSIGN_OR_RETURN(Value * cast, b.cast(weight, type.dtype));
    TC_ASSIGN_OR_RETURN(result, b.mul(result, cast));
  }
  if (Value *bias = b.operand(2)) {
    TC_ASSIGN_OR_RETURN(Value * cast, b.cast(bias, type.dtype));
    TC_ASSIGN_OR_RETURN(result, b.add(result, cast));
  }
  return replaceWith(result);
}

/// Inference batch_norm: (x - mean) * rsqrt(var + eps) * weight + bias, with the per-channel
/// vectors viewed as [C, 1, ...]. training=True (batch statistics) keeps the node.
DecomposeResult decomposeBatchNorm(RewriteContext &rewrite, const OpRegistry &registry) {
  DecomposeBuilder b(rewrite, registry);
  AttrReader attrs(b.node().attrs());
  Value *x = b.operand(0);
  const TensorType &type = x->type();
  if (attrs.getBool("training") || !b.operand(3) || !b.operand(4))
    return keepNode();
  const SymInt &channels = type.shape[1];
  for (size_t index = 1; index <= 4; ++index)
    if (b.operand(index) && b.operand(index)->type().shape[0] != channels)
      return keepNode(); // a symbolic dim meeting a constant one: broadcasting would retype
  Shape perChannel(type.rank() - 1, SymInt(1));
  perChannel[0] = channels;
  auto channelVector = [&](size_t index) -> Expected<Value *> {
    TC_ASSIGN_OR_RETURN(Value * cast, b.cast(b.operand(index), type.dtype));
    return b.view(cast, perChannel);
  };
  TC_ASSIGN_OR_RETURN(Value * mean, channelVector(3));
  TC_ASSIGN_OR_RETURN(Value * var, channelVector(4));
  TC_ASSIGN_OR_RETURN(Value * shifted, b.binaryScalar(OpId::Add, var, attrs.getFloat("eps")));
  TC_ASSIGN_OR_RETURN(Value * rstd, b.unary(OpId::Rsqrt, shifted));
  TC_ASSIGN_OR_RETURN(Value * centered, b.sub(x, mean));
  TC_ASSIGN_OR_RETURN(Value * result, b.mul(centered, rstd));
  if (b.operand(1)) {
    TC_ASSIGN_OR_RETURN(Value * weight, channelVector(1));
    TC_ASSIGN_OR_RETURN(result, b.mul(result, weight));
  }
  if (b.operand(2)) {
    TC_ASSIGN_OR_RETURN(Value * bias, channelVector(2));
    TC_ASSIGN_OR_RETURN(result, b.add(result, bias));
  }
  return replaceWith(result);
}

} // namespace

Status registerNormalizationOps(OpRegistry &registry) {
  TC_RETURN_IF_ERROR(registry.add(withDecompose(
      makeOp(OpId::BatchNorm,
             {tensorParam("input"), optionalTensorParam("weight"), optionalTensorParam("bias"),
              optionalTensorParam("running_mean"), optionalTensorParam("running_var"),
              attrParam("training", AttrKind::Bool, Attribute(false)),
              attrParam("momentum", AttrKind::Float, Attribute(0.1)),
              attrParam("eps", AttrKind::Float, Attribute(1e-05))},
             inferBatchNorm, runBatchNorm),
      decomposeBatchNorm)));
  TC_RETURN_IF_ERROR(registry.add(
      withDecompose(makeOp(OpId::LayerNorm,
                           {tensorParam("input"), attrParam("normalized_shape", AttrKind::Ints),
                            optionalTensorParam("weight"), optionalTensorParam("bias"),
                            attrParam("eps", AttrKind::Float, Attribute(1e-05))},
                           inferLayerNorm, runLayerNorm),
                    decomposeLayerNorm)));
  return Status::ok();
}

} // namespace tensorc::ops
