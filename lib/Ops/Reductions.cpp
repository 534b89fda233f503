// Reductions: sum, mean, prod, amax/amin, argmax/argmin, var, softmax and log_softmax.
#include "DecomposeHelpers.h"
#include "DenseKernels.h"
#include "OpGroups.h"
#include "OpHelpers.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

namespace tensorc::ops {

namespace {

// ---- Element access ---------------------------------------------------------------------------
// Reductions accumulate floats in double and integers in int64, so inputs are read once into a
// vector of one of those and results written back in the output dtype.

/// Every element as a double (f16/bf16 decoded, bool as 0/1).
std::vector<double> loadDoubles(const Tensor &tensor) {
  std::vector<double> values(size_t(tensor.numel()));
  DType dtype = tensor.dtype();
  visitDType(dtype, [&](auto zero) {
    using T = decltype(zero);
    const T *raw = tensor.dataAs<T>();
    for (size_t i = 0; i < values.size(); ++i) {
      if constexpr (std::is_same_v<T, uint16_t>)
        values[i] = dtype == DType::F16    ? halfToFloat(raw[i])
                    : dtype == DType::BF16 ? bf16ToFloat(raw[i])
                                           : double(raw[i]); // u16
      else if constexpr (std::is_same_v<T, uint8_t>)
        values[i] = dtype == DType::Bool ? double(raw[i] != 0) : double(raw[i]);
      else
        values[i] = double(raw[i]);
    }
  });
  return values;
}

/// Every element of an integer or bool tensor as an int64 (floats truncate, as Tensor::getInt).
std::vector<int64_t> loadInts(const Tensor &tensor) {
  std::vector<int64_t> values(size_t(tensor.numel()));
  DType dtype = tensor.dtype();
  if (isFloating(dtype)) {
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = tensor.getInt(int64_t(i));
    return values;
  }
  visitDType(dtype, [&](auto zero) {
    using T = decltype(zero);
    const T *raw = tensor.dataAs<T>();
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = dtype == DType::Bool ? int64_t(raw[i] != 0) : int64_t(raw[i]);
  });
  return values;
}

/// Every element of a u64 tensor, for the reductions that compare (int64 would order values
/// above INT64_MAX below zero).
std::vector<uint64_t> loadUnsigned(const Tensor &tensor) {
  const uint64_t *raw = tensor.dataAs<uint64_t>();
  return std::vector<uint64_t>(raw, raw + tensor.numel());
}

/// Writes `values` into `out` with Tensor::setDouble's conversions, in a typed loop.
void storeDoubles(Tensor &out, const std::vector<double> &values) {
  DType dtype = out.dtype();
  if (!isFloating(dtype)) {
    for (size_t i = 0; i < values.size(); ++i)
      out.setDouble(int64_t(i), values[i]);
    return;
  }
  visitDType(dtype, [&](auto zero) {
    using T = decltype(zero);
    T *raw = out.mutableDataAs<T>();
    for (size_t i = 0; i < values.size(); ++i) {
      if constexpr (std::is_same_v<T, uint16_t>)
        raw[i] =
            dtype == DType::F16 ? floatToHalf(float(values[i])) : floatToBf16(float(values[i]));
      else
        raw[i] = T(values[i]);
    }
  });
}

void storeInts(Tensor &out, const std::vector<int64_t> &values) {
  for (size_t i = 0; i < values.size(); ++i)
    out.setInt(int64_t(i), values[i]);
}

// ---- Reduction geometry -----------------------------------------------------------------------

/// The reduced dims named by the int-list attribute "dim" (empty means all), sorted. A 0-d
/// tensor accepts dim 0 and -1 and has nothing to reduce.
Expected<std::vector<size_t>> reducedDims(const AttrReader &attrs, size_t rank) {
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> dims, attrs.getStaticInts("dim"));
  TC_ASSIGN_OR_RETURN(std::vector<size_t> normalized, normalizeDims(dims, rank, true));
  if (rank == 0)
    normalized.clear();
  return normalized;
}

/// The input shape with `dims` removed, or set to 1 under keepdim.
Shape reducedShape(const Shape &shape, const std::vector<size_t> &dims, bool keepdim) {
  Shape result;
  for (size_t i = 0; i < shape.size(); ++i) {
    bool reduced = std::find(dims.begin(), dims.end(), i) != dims.end();
    if (!reduced)
      result.push_back(shape[i]);
    else if (keepdim)
      result.push_back(SymInt(1));
  }
  return result;
}

/// Errors when a reduced dim is known to be empty (max, min and arg reductions have no identity).
Status checkNonEmpty(const Shape &shape, const std::vector<size_t> &dims) {
  for (size_t dim : dims)
    if (shape[dim].constant() == 0)
      return makeError("cannot reduce over dim ", dim, " of size 0 (shape [", join(shape, ", "),
                       "])");
  return Status::ok();
}

/// Where each output element's reduced elements live in the row-major input: element `r` of
/// output `o` is at `bases[o] + offsets[r]`, both in row-major order of their dims.
struct ReductionPlan {
  std::vector<int64_t> bases;
  std::vector<int64_t> offsets;
};

ReductionPlan planReduction(const std::vector<int64_t> &shape, const std::vector<size_t> &dims) {
  std::vector<int64_t> strides = rowMajorStrides(shape);
  ReductionPlan plan;
  plan.bases = {0};
  plan.offsets = {0};
  for (size_t i = 0; i < shape.size(); ++i) {
    bool reduced = std::find(dims.begin(), dims.end(), i) != dims.end();
    std::vector<int64_t> &list = reduced ? plan.offsets : plan.bases;
    std::vector<int64_t> expanded;
    expanded.reserve(list.size() * size_t(shape[i]));
    for (int64_t start : list)
      for (int64_t k = 0; k < shape[i]; ++k)
        expanded.push_back(start + k * strides[i]);
    list = std::move(expanded);
  }
  return plan;
}

/// out[o] = fold(init, values at the reduced positions of o), in order.
template <typename T, typename Fold>
std::vector<T> reduce(const std::vector<T> &values, const ReductionPlan &plan, T init, Fold fold) {
  std::vector<T> result(plan.bases.size());
  for (size_t o = 0; o < plan.bases.size(); ++o) {
    const T *base = values.data() + plan.bases[o];
    T acc = init;
    for (int64_t offset : plan.offsets)
      acc = fold(acc, base[offset]);
    result[o] = acc;
  }
  return result;
}

// ---- sum, prod, mean --------------------------------------------------------------------------

/// sum/prod: bool and integer inputs accumulate to i64 unless a dtype is given, except u64, which
/// stays u64 (i64 cannot hold it; the wrapping int64 accumulation gives the same bits).
Expected<std::vector<TensorType>> inferSumProd(const InferContext &ctx) {
  const TensorType &self = ctx.input(0);
  TC_ASSIGN_OR_RETURN(std::vector<size_t> dims, reducedDims(ctx, self.rank()));
  DType dtype = !ctx.isNone("dtype")                                 ? ctx.getDType("dtype")
                : isFloating(self.dtype) || self.dtype == DType::U64 ? self.dtype
                                                                     : DType::I64;
  return std::vector<TensorType>{
      TensorType(dtype, reducedShape(self.shape, dims, ctx.getBool("keepdim")))};
}

template <bool IsProd> Status sumProdKernel(KernelContext &ctx) {
  Tensor &out = ctx.output(0);
  TC_ASSIGN_OR_RETURN(Tensor input, convertTo(ctx.input(0), out.dtype()));
  TC_ASSIGN_OR_RETURN(std::vector<size_t> dims, reducedDims(ctx, input.rank()));
  ReductionPlan plan = planReduction(input.shape(), dims);
  if (isFloating(out.dtype())) {
    auto fold = [](double acc, double x) { return IsProd ? acc * x : acc + x; };
    storeDoubles(out, reduce(loadDoubles(input), plan, IsProd ? 1.0 : 0.0, fold));
  } else {
    // Integer overflow wraps, as in torch.
    auto fold = [](int64_t acc, int64_t x) {
      return int64_t(IsProd ? uint64_t(acc) * uint64_t(x) : uint64_t(acc) + uint64_t(x));
    };
    storeInts(out, reduce(loadInts(input), plan, int64_t(IsProd ? 1 : 0), fold));
  }
  return Status::ok();
}

Expected<std::vector<TensorType>> inferMean(const InferContext &ctx) {
  const TensorType &self = ctx.input(0);
  TC_ASSIGN_OR_RETURN(std::vector<size_t> dims, reducedDims(ctx, self.rank()));
  DType dtype = self.dtype;
  if (!ctx.isNone("dtype")) {
    dtype = ctx.getDType("dtype");
    if (!isFloating(dtype))
      return makeError("could not infer output dtype: dtype must be floating-point, got ",
                       dtypeName(dtype));
  } else if (!isFloating(dtype)) {
    return makeError("could not infer output dtype: input dtype must be floating-point, got ",
                     dtypeName(dtype), " (pass dtype=)");
  }
  return std::vector<TensorType>{
      TensorType(dtype, reducedShape(self.shape, dims, ctx.getBool("keepdim")))};
}

Status meanKernel(KernelContext &ctx) {
  Tensor &out = ctx.output(0);
  TC_ASSIGN_OR_RETURN(Tensor input, convertTo(ctx.input(0), out.dtype()));
  TC_ASSIGN_OR_RETURN(std::vector<size_t> dims, reducedDims(ctx, input.rank()));
  ReductionPlan plan = planReduction(input.shape(), dims);
  std::vector<double> sums =
      reduce(loadDoubles(input), plan, 0.0, [](double acc, double x) { return acc + x; });
  double count = double(plan.offsets.size());
  for (double &sum : sums)
    sum /= count; // an empty reduction gives 0/0 = NaN, as in torch
  storeDoubles(out, sums);
  return Status::ok();
}

// ---- amax, amin -------------------------------------------------------------------------------

Expected<std::vector<TensorType>> inferAmaxAmin(const InferContext &ctx) {
  const TensorType &self = ctx.input(0);
  TC_ASSIGN_OR_RETURN(std::vector<size_t> dims, reducedDims(ctx, self.rank()));
  TC_RETURN_IF_ERROR(checkNonEmpty(self.shape, dims));
  return std::vector<TensorType>{
      TensorType(self.dtype, reducedShape(self.shape, dims, ctx.getBool("keepdim")))};
}

/// amax/amin: NaN wins over every number.
template <bool IsMax> Status amaxAminKernel(KernelContext &ctx) {
  const Tensor &input = ctx.input(0);
  Tensor &out = ctx.output(0);
  TC_ASSIGN_OR_RETURN(std::vector<size_t> dims, reducedDims(ctx, input.rank()));
  ReductionPlan plan = planReduction(input.shape(), dims);
  if (plan.offsets.empty() && !plan.bases.empty())
    return makeError("cannot reduce over an empty dim");
  if (isFloating(input.dtype())) {
    double init =
        IsMax ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    auto fold = [](double acc, double x) {
      if (std::isnan(acc) || std::isnan(x))
        return std::isnan(acc) ? acc : x;
      return IsMax ? std::max(acc, x) : std::min(acc, x);
    };
    storeDoubles(out, reduce(loadDoubles(input), plan, init, fold));
  } else if (input.dtype() == DType::U64) {
    uint64_t init = IsMax ? 0 : std::numeric_limits<uint64_t>::max();
    auto fold = [](uint64_t acc, uint64_t x) {
      return IsMax ? std::max(acc, x) : std::min(acc, x);
    };
    std::vector<uint64_t> result = reduce(loadUnsigned(input), plan, init, fold);
    for (size_t i = 0; i < result.size(); ++i)
      out.setInt(int64_t(i), int64_t(result[i]));
  } else {
    int64_t init =
        IsMax ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
    auto fold = [](int64_t acc, int64_t x) { return IsMax ? std::max(acc, x) : std::min(acc, x); };
    storeInts(out, reduce(loadInts(input), plan, init, fold));
  }
  return Status::ok();
}

// ---- argmax, argmin ---------------------------------------------------------------------------

/// The dims an arg reduction walks: the given one, or all of them (the flattened input).
Expected<std::vector<size_t>> argDims(const AttrReader &attrs, size_t rank) {
  std::vector<size_t> dims;
  if (attrs.isNone("dim")) {
    for (size_t i = 0; i < rank; ++i)
      dims.push_back(i);
    return dims;
  }
  TC_ASSIGN_OR_RETURN(size_t dim, normalizeDim(attrs.getInt("dim"), rank));
  if (rank > 0)
    dims.push_back(dim);
  return dims;
}

Expected<std::vector<TensorType>> inferArg(const InferContext &ctx) {
  const TensorType &self = ctx.input(0);
  TC_ASSIGN_OR_RETURN(std::vector<size_t> dims, argDims(ctx, self.rank()));
  TC_RETURN_IF_ERROR(checkNonEmpty(self.shape, dims));
  return std::vector<TensorType>{
      TensorType(DType::I64, reducedShape(self.shape, dims, ctx.getBool("keepdim")))};
}

/// Index (within the reduced dims, row-major) of the first extreme value; a NaN counts as the
/// extreme, so the first NaN wins.
template <bool IsMax, typename T>
std::vector<int64_t> argExtreme(const std::vector<T> &values, const ReductionPlan &plan) {
  std::vector<int64_t> result(plan.bases.size());
  for (size_t o = 0; o < plan.bases.size(); ++o) {
    const T *base = values.data() + plan.bases[o];
    T best = base[plan.offsets[0]];
    int64_t bestIndex = 0;
    for (size_t r = 1; r < plan.offsets.size(); ++r) {
      if constexpr (std::is_floating_point_v<T>)
        if (std::isnan(best))
          break;
      T x = base[plan.offsets[r]];
      bool better = IsMax ? x > best : x < best;
      if constexpr (std::is_floating_point_v<T>)
        better = better || std::isnan(x);
      if (better) {
        best = x;
        bestIndex = int64_t(r);
      }
    }
    result[o] = bestIndex;
  }
  return result;
}

template <bool IsMax> Status argKernel(KernelContext &ctx) {
  const Tensor &input = ctx.input(0);
  TC_ASSIGN_OR_RETURN(std::vector<size_t> dims, argDims(ctx, input.rank()));
  ReductionPlan plan = planReduction(input.shape(), dims);
  if (plan.offsets.empty() && !plan.bases.empty())
    return makeError("cannot reduce over an empty dim");
  std::vector<int64_t> indices =
      isFloating(input.dtype())     ? argExtreme<IsMax>(loadDoubles(input), plan)
      : input.dtype() == DType::U64 ? argExtreme<IsMax>(loadUnsigned(input), plan)
                                    : argExtreme<IsMax>(loadInts(input), plan);
  storeInts(ctx.output(0), indices);
  return Status::ok();
}

// ---- var --------------------------------------------------------------------------------------

Expected<std::vector<TensorType>> inferVar(const InferContext &ctx) {
  const TensorType &self = ctx.input(0);
  if (!isFloating(self.dtype))
    return makeError("expects a floating-point tensor, got ", dtypeName(self.dtype));
  TC_ASSIGN_OR_RETURN(std::vector<size_t> dims, reducedDims(ctx, self.rank()));
  return std::vector<TensorType>{
      TensorType(self.dtype, reducedShape(self.shape, dims, ctx.getBool("keepdim")))};
}

/// Two passes in double: the mean, then the squared deviations, over max(0, N - correction).
Status varKernel(KernelContext &ctx) {
  const Tensor &input = ctx.input(0);
  TC_ASSIGN_OR_RETURN(std::vector<size_t> dims, reducedDims(ctx, input.rank()));
  ReductionPlan plan = planReduction(input.shape(), dims);
  std::vector<double> values = loadDoubles(input);
  double count = double(plan.offsets.size());
  double divisor = std::max(0.0, count - ctx.getScalar("correction"));
  std::vector<double> result(plan.bases.size());
  for (size_t o = 0; o < plan.bases.size(); ++o) {
    const double *base = values.data() + plan.bases[o];
    double sum = 0;
    for (int64_t offset : plan.offsets)
      sum += base[offset];
    double mean = sum / count;
    double squares = 0;
    for (int64_t offset : plan.offsets)
      squares += (base[offset] - mean) * (base[offset] - mean);
    result[o] = squares / divisor;
  }
  storeDoubles(ctx.output(0), result);
  return Status::ok();
}

// ---- softmax, log_softmax ---------------------------------------------------------------------

Expected<std::vector<TensorType>> inferSoftmax(const InferContext &ctx) {
  const TensorType &self = ctx.input(0);
  TC_RETURN_IF_ERROR(normalizeDim(ctx.getInt("dim"), self.rank()).status());
  DType dtype = ctx.isNone("dtype") ? self.dtype : ctx.getDType("dtype");
  if (!isFloating(dtype))
    return makeError("expects a floating-point tensor or dtype, got ", dtypeName(dtype));
  return std::vector<TensorType>{TensorType(dtype, self.shape)};
}

/// Subtracts the row max before exponentiating so that large inputs do not overflow.
template <bool IsLog> Status softmaxKernel(KernelContext &ctx) {
  Tensor &out = ctx.output(0);
  TC_ASSIGN_OR_RETURN(Tensor input, convertTo(ctx.input(0), out.dtype()));
  TC_ASSIGN_OR_RETURN(size_t axis, normalizeDim(ctx.getInt("dim"), input.rank()));
  AxisSplit split = splitAtAxis(input.shape(), axis);
  std::vector<double> values = loadDoubles(input);
  for (int64_t outer = 0; outer < split.outer; ++outer) {
    for (int64_t inner = 0; inner < split.inner; ++inner) {
      double *row = values.data() + outer * split.size * split.inner + inner;
      int64_t step = split.inner;
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < split.size; ++k)
        max = std::isnan(row[k * step]) || row[k * step] > max ? row[k * step] : max;
      double sum = 0;
      for (int64_t k = 0; k < split.size; ++k)
        sum += std::exp(row[k * step] - max);
      double logSum = std::log(sum);
      for (int64_t k = 0; k < split.size; ++k) {
        double shifted = row[k * step] - max;
        row[k * step] = IsLog ? shifted - logSum : std::exp(shifted) / sum;
      }
    }
  }
  storeDoubles(out, values);
  return Status::ok();
}

// ---- Decompositions ---------------------------------------------------------------------------
// mean and var divide by the element count, so they decompose only when the reduced dims are
// static; softmax subtracts the row max first, as the kernel does.

/// mean(x) = sum(x) / N.
DecomposeResult decomposeMean(RewriteContext &rewrite, const OpRegistry &registry) {
  DecomposeBuilder b(rewrite, registry);
  AttrReader attrs(b.node().attrs());
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> dims, attrs.getStaticInts("dim"));
  std::optional<int64_t> count = staticCount(b.operand(0)->type().shape, dims);
  if (!count)
    return keepNode();
  TC_ASSIGN_OR_RETURN(Value * x, b.cast(b.operand(0), b.resultType().dtype));
  TC_ASSIGN_OR_RETURN(Value * sum,
                      b.reduce(OpId::Sum, x, attrs.attr("dim"), attrs.getBool("keepdim")));
  TC_ASSIGN_OR_RETURN(Value * mean, b.binaryScalar(OpId::Div, sum, double(*count)));
  return replaceWith(mean);
}

/// var(x) = sum((x - mean(x))^2) / max(0, N - correction).
DecomposeResult decomposeVar(RewriteContext &rewrite, const OpRegistry &registry) {
  DecomposeBuilder b(rewrite, registry);
  AttrReader attrs(b.node().attrs());
  Value *x = b.operand(0);
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> dims, attrs.getStaticInts("dim"));
  std::optional<int64_t> count = staticCount(x->type().shape, dims);
  if (!count)
    return keepNode();
  const Attribute &dim = attrs.attr("dim");
  TC_ASSIGN_OR_RETURN(Value * mean, b.emit(OpId::Mean, {x}, {{"dim", dim}, {"keepdim", true}}));
  TC_ASSIGN_OR_RETURN(Value * centered, b.sub(x, mean));
  TC_ASSIGN_OR_RETURN(Value * squares, b.mul(centered, centered));
  TC_ASSIGN_OR_RETURN(Value * sum, b.reduce(OpId::Sum, squares, dim, attrs.getBool("keepdim")));
  double divisor = std::max(0.0, double(*count) - attrs.getScalar("correction"));
  TC_ASSIGN_OR_RETURN(Value * var, b.binaryScalar(OpId::Div, sum, divisor));
  return replaceWith(var);
}

/// softmax(x) = exp(x - max) / sum(exp(x - max)); log_softmax(x) = (x - max) - log(sum(...)).
/// A `dtype` casts the input first.
template <bool IsLog>
DecomposeResult decomposeSoftmax(RewriteContext &rewrite, const OpRegistry &registry) {
  DecomposeBuilder b(rewrite, registry);
  AttrReader attrs(b.node().attrs());
  const TensorType &type = b.operand(0)->type();
  if (type.rank() == 0)
    return keepNode();
  TC_ASSIGN_OR_RETURN(size_t axis, normalizeDim(attrs.getInt("dim"), type.rank()));
  if (type.shape[axis].constant() == 0)
    return keepNode(); // amax has no identity for an empty row
  Attribute dim(std::vector<int64_t>{int64_t(axis)});
  TC_ASSIGN_OR_RETURN(Value * x, b.cast(b.operand(0), b.resultType().dtype));
  TC_ASSIGN_OR_RETURN(Value * max, b.reduce(OpId::Amax, x, dim, true));
  TC_ASSIGN_OR_RETURN(Value * shifted, b.sub(x, max));
  TC_ASSIGN_OR_RETURN(Value * exp, b.unary(OpId::Exp, shifted));
  TC_ASSIGN_OR_RETURN(Value * sum, b.reduce(OpId::Sum, exp, dim, true));
  if constexpr (IsLog) {
    TC_ASSIGN_OR_RETURN(Value * logSum, b.unary(OpId::Log, sum));
    TC_ASSIGN_OR_RETURN(Value * result, b.sub(shifted, logSum));
    return replaceWith(result);
  } else {
    TC_ASSIGN_OR_RETURN(Value * result, b.div(exp, sum));
    return replaceWith(result);
  }
}

} // namespace

Status registerReductionOps(OpRegistry &registry) {
  auto self = [] { return tensorParam("self"); };
  auto dimList = [] { return attrParam("dim", AttrKind::Ints, std::vector<int64_t>{}); };
  auto keepdim = [](bool kwargOnly) {
    return attrParam("keepdim", AttrKind::Bool, false, kwargOnly);
  };
  auto dtype = [](bool kwargOnly) {
    return optionalAttrParam("dtype", AttrKind::DType, kwargOnly);
  };

  TC_RETURN_IF_ERROR(
      registry.add(makeOp(OpId::Sum, {self(), dimList(), keepdim(false), dtype(true)}, inferSumProd,
                          sumProdKernel<false>)));
  TC_RETURN_IF_ERROR(
      registry.add(makeOp(OpId::Prod, {self(), dimList(), keepdim(false), dtype(true)},
                          inferSumProd, sumProdKernel<true>)));
  TC_RETURN_IF_ERROR(registry.add(withDecompose(
      makeOp(OpId::Mean, {self(), dimList(), keepdim(false), dtype(true)}, inferMean, meanKernel),
      decomposeMean)));
  TC_RETURN_IF_ERROR(registry.add(makeOp(OpId::Amax, {self(), dimList(), keepdim(false)},
                                         inferAmaxAmin, amaxAminKernel<true>)));
  TC_RETURN_IF_ERROR(registry.add(makeOp(OpId::Amin, {self(), dimList(), keepdim(false)},
                                         inferAmaxAmin, amaxAminKernel<false>)));
  auto optionalDim = [] { return optionalAttrParam("dim", AttrKind::Int); };
  TC_RETURN_IF_ERROR(registry.add(
      makeOp(OpId::Argmax, {self(), optionalDim(), keepdim(false)}, inferArg, argKernel<true>)));
  TC_RETURN_IF_ERROR(registry.add(
      makeOp(OpId::Argmin, {self(), optionalDim(), keepdim(false)}, inferArg, argKernel<false>)));
  TC_RETURN_IF_ERROR(registry.add(withDecompose(
      makeOp(OpId::Var,
             {self(), dimList(), attrParam("correction", AttrKind::Scalar, int64_t(1), true),
              keepdim(true)},
             inferVar, varKernel),
      decomposeVar)));
  auto dim = [] { return attrParam("dim", AttrKind::Int); };
  TC_RETURN_IF_ERROR(registry.add(withDecompose(
      makeOp(OpId::Softmax, {self(), dim(), dtype(false)}, inferSoftmax, softmaxKernel<false>),
      decomposeSoftmax<false>)));
  return registry.add(withDecompose(
      makeOp(OpId::LogSoftmax, {self(), dim(), dtype(false)}, inferSoftmax, softmaxKernel<true>),
      decomposeSoftmax<true>));
}

} // namespace tensorc::ops
