// ONNX converters for reductions, arg/top-k selection, the softmax family, cumulative sums,
// normalizations and the two classification losses (Einsum: OnnxOpsEinsum.cpp).
#include "OnnxConverters.h"
#include "OnnxTensor.h"
#include "ViewEmitters.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <optional>

namespace tensorc::onnx {

using Ints = std::vector<int64_t>;

// ---- Emitting helpers -------------------------------------------------------------------------

namespace {

/// Biased variance over `dims`, kept as size-1 dims.
Expected<Value *> varianceOf(ConvertContext &c, Value *x, const Ints &dims) {
  AttrMap attrs;
  attrs.emplace("dim", Attribute(dims));
  attrs.emplace("correction", Attribute(int64_t(0)));
  attrs.emplace("keepdim", Attribute(true));
  return c.emit("aten.var", {x}, std::move(attrs));
}

/// `x` with its dim `dim` (of import-time size) reversed.
Expected<Value *> reverseDim(ConvertContext &c, Value *x, int64_t dim) {
  std::optional<int64_t> size = x->type().shape[size_t(dim)].constant();
  if (!size)
    return c.error(
        strCat("reversing symbolic dim ", x->type().shape[size_t(dim)], " is not supported"));
  TC_ASSIGN_OR_RETURN(
      Tensor indices,
      c.newTensor(DType::I64, {*size}, "the reversed index of dim " + std::to_string(dim)));
  for (int64_t k = 0; k < *size; ++k)
    indices.setInt(k, *size - 1 - k);
  TC_ASSIGN_OR_RETURN(Value * indexValue, c.constant(std::move(indices)));
  AttrMap attrs;
  attrs.emplace("dim", Attribute(dim));
  return c.emit("aten.index_select", {x, indexValue}, std::move(attrs));
}

/// torch's pad list (last dim first) padding only dim `dim` of a rank-`rank` tensor.
Ints padList(size_t rank, int64_t dim, int64_t before, int64_t after) {
  Ints pad(2 * (rank - size_t(dim)), 0);
  pad[2 * (rank - 1 - size_t(dim))] = before;
  pad[2 * (rank - 1 - size_t(dim)) + 1] = after;
  return pad;
}

Expected<Value *> padZeros(ConvertContext &c, Value *x, int64_t dim, int64_t before,
                           int64_t after) {
  AttrMap attrs;
  attrs.emplace("pad", Attribute(padList(x->type().rank(), dim, before, after)));
  attrs.emplace("mode", Attribute("constant"));
  attrs.emplace("value", Attribute(0.0));
  return c.emit("aten.pad", {x}, std::move(attrs));
}

/// A constant integer input (or attribute before `inputSince`) holding exactly one value.
Expected<int64_t> oneInt(ConvertContext &c, size_t input, const char *what) {
  TC_ASSIGN_OR_RETURN(Ints values, c.constantInts(input, what));
  if (values.size() != 1)
    return c.error(strCat(what, " must hold one value, got ", values.size()));
  return values[0];
}

// ---- Reduce* ----------------------------------------------------------------------------------

enum class Reduce { Sum, Mean, Max, Min, Prod, SumSquare, L1, L2, LogSum, LogSumExp };

/// The reduced dims, sorted; std::nullopt for noop_with_empty_axes with no axes.
Expected<std::optional<Ints>> reducedDims(ConvertContext &c, size_t rank, int64_t inputSince) {
  Ints axes;
  if (c.opset() < inputSince) {
    axes = c.intsAttr("axes");
  } else if (c.hasInput(1)) {
    TC_ASSIGN_OR_RETURN(axes, c.constantInts(1, "axes"));
  }
  if (axes.empty()) {
    if (c.opset() >= inputSince && c.intAttr("noop_with_empty_axes", 0) != 0)
      return std::optional<Ints>();
    return std::optional<Ints>(dimsFrom(0, rank));
  }
  Ints dims;
  for (int64_t axis : axes) {
    TC_ASSIGN_OR_RETURN(int64_t dim, normalizeAxis(c, axis, rank, "axes entry"));
    if (std::find(dims.begin(), dims.end(), dim) != dims.end())
      return c.error(strCat("axis ", axis, " appears twice"));
    dims.push_back(dim);
  }
  std::sort(dims.begin(), dims.end());
  return std::optional<Ints>(dims);
}

/// max, min and log-sum-exp of nothing: ONNX (opset 18) defines them as -inf / +inf / -inf.
Expected<Value *> emptyReduction(ConvertContext &c, Reduce kind, Value *x, const Ints &dims,
                                 bool keepdim) {
  std::vector<SymInt> shape;
  const Shape &in = x->type().shape;
  for (size_t i = 0; i < in.size(); ++i) {
    bool reduced = std::find(dims.begin(), dims.end(), int64_t(i)) != dims.end();
    if (!reduced)
      shape.push_back(in[i]);
    else if (keepdim)
      shape.emplace_back(1);
  }
  DType dtype = x->type().dtype;
  bool low = kind != Reduce::Min;
  AttrMap attrs;
  attrs.emplace("size", Attribute(std::move(shape)));
  if (isFloating(dtype))
    attrs.emplace("fill_value", Attribute(low ? -std::numeric_limits<double>::infinity()
                                              : std::numeric_limits<double>::infinity()));
  else
    attrs.emplace("fill_value", Attribute(low ? std::numeric_limits<int64_t>::min()
                                              : std::numeric_limits<int64_t>::max()));
  attrs.emplace("dtype", Attribute(dtype));
  return c.emit("aten.full", {}, std::move(attrs));
}

Status reduce(ConvertContext &c, Reduce kind) {
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  size_t rank = x->type().rank();
  TC_ASSIGN_OR_RETURN(std::optional<Ints> dims,
                      reducedDims(c, rank, kind == Reduce::Sum ? 13 : 18));
  bool keepdim = c.intAttr("keepdims", 1) != 0;
  DType dtype = x->type().dtype;

  bool emptySet = false;
  if (dims)
    for (int64_t dim : *dims)
      emptySet = emptySet || x->type().shape[size_t(dim)].constant() == 0;
  if (emptySet && (kind == Reduce::Max || kind == Reduce::Min || kind == Reduce::LogSumExp)) {
    TC_ASSIGN_OR_RETURN(Value * value, emptyReduction(c, kind, x, *dims, keepdim));
    return c.setOutput(0, value);
  }

  // The float-valued formulas run in f64 on integer inputs and are cast back.
  bool viaDouble = !isFloating(dtype) && (kind == Reduce::Mean || kind == Reduce::L2 ||
                                          kind == Reduce::LogSum || kind == Reduce::LogSumExp);
  if (viaDouble) {
    TC_ASSIGN_OR_RETURN(x, c.cast(x, DType::F64));
  }
  // noop_with_empty_axes: the reduction over no axes is the identity.
  auto sum = [&](Value *v, bool keep) -> Expected<Value *> {
    if (!dims)
      return v;
    return reduceOp(c, "aten.sum", v, *dims, keep, v->type().dtype);
  };

  Value *result = nullptr;
  switch (kind) {
  case Reduce::Sum: {
    TC_ASSIGN_OR_RETURN(result, sum(x, keepdim));
    break;
  }
  case Reduce::Mean:
  case Reduce::Max:
  case Reduce::Min:
  case Reduce::Prod: {
    const char *op = kind == Reduce::Mean  ? "aten.mean"
                     : kind == Reduce::Max ? "aten.amax"
                     : kind == Reduce::Min ? "aten.amin"
                                           : "aten.prod";
    if (!dims) {
      result = x;
    } else if (kind == Reduce::Prod) {
      TC_ASSIGN_OR_RETURN(result, reduceOp(c, op, x, *dims, keepdim, x->type().dtype));
    } else {
      TC_ASSIGN_OR_RETURN(result, reduceOp(c, op, x, *dims, keepdim));
    }
    break;
  }
  case Reduce::SumSquare:
  case Reduce::L2: {
    TC_ASSIGN_OR_RETURN(Value * square, c.emit("aten.mul", {x, x}));
    TC_ASSIGN_OR_RETURN(result, sum(square, keepdim));
    if (kind == Reduce::L2) {
      TC_ASSIGN_OR_RETURN(result, c.emit("aten.sqrt", {result}));
    }
    break;
  }
  case Reduce::L1: {
    TC_ASSIGN_OR_RETURN(Value * magnitude, c.emit("aten.abs", {x}));
    TC_ASSIGN_OR_RETURN(result, sum(magnitude, keepdim));
    break;
  }
  case Reduce::LogSum: {
    TC_ASSIGN_OR_RETURN(Value * total, sum(x, keepdim));
    TC_ASSIGN_OR_RETURN(result, c.emit("aten.log", {total}));
    break;
  }
  case Reduce::LogSumExp: {
    if (!dims) {
      result = x; // log(exp(x))
      break;
    }
    // log(sum(exp(x - max))) + max, so that large inputs do not overflow.
    TC_ASSIGN_OR_RETURN(Value * max, reduceOp(c, "aten.amax", x, *dims, true));
    TC_ASSIGN_OR_RETURN(Value * shifted, c.emit("aten.sub", {x, max}));
    TC_ASSIGN_OR_RETURN(Value * exps, c.emit("aten.exp", {shifted}));
    TC_ASSIGN_OR_RETURN(Value * total, sum(exps, true));
    TC_ASSIGN_OR_RETURN(Value * logs, c.emit("aten.log", {total}));
    TC_ASSIGN_OR_RETURN(result, c.emit("aten.add", {logs, max}));
    if (!keepdim) {
      AttrMap attrs;
      attrs.emplace("dim", Attribute(*dims));
      TC_ASSIGN_OR_RETURN(result, c.emit("aten.squeeze", {result}, std::move(attrs)));
    }
    break;
  }
  }
  TC_ASSIGN_OR_RETURN(result, c.cast(result, dtype));
  if (result == x) { // noop reductions still need their own output value
    TC_ASSIGN_OR_RETURN(result, c.emit("aten.clone", {x}));
  }
  return c.setOutput(0, result);
}

// ---- ArgMax, ArgMin, TopK ---------------------------------------------------------------------

Status argExtreme(ConvertContext &c, bool isMax) {
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  TC_ASSIGN_OR_RETURN(int64_t dim, normalizeAxis(c, c.intAttr("axis", 0), x->type().rank()));
  bool lastIndex = c.intAttr("select_last_index", 0) != 0;
  if (lastIndex) {
    // The first extreme of the reversed dim is the last one of the original.
    TC_ASSIGN_OR_RETURN(x, reverseDim(c, x, dim));
  }
  AttrMap attrs;
  attrs.emplace("dim", Attribute(dim));
  attrs.emplace("keepdim", Attribute(c.intAttr("keepdims", 1) != 0));
  TC_ASSIGN_OR_RETURN(Value * index,
                      c.emit(isMax ? "aten.argmax" : "aten.argmin", {x}, std::move(attrs)));
  if (lastIndex) {
    int64_t size = *x->type().shape[size_t(dim)].constant();
    TC_ASSIGN_OR_RETURN(Value * last, c.scalar(double(size - 1), DType::I64));
    TC_ASSIGN_OR_RETURN(index, c.emit("aten.sub", {last, index}));
  }
  return c.setOutput(0, index);
}

} // namespace

Status convertReduceSum(ConvertContext &c) { return reduce(c, Reduce::Sum); }
Status convertReduceMean(ConvertContext &c) { return reduce(c, Reduce::Mean); }
Status convertReduceMax(ConvertContext &c) { return reduce(c, Reduce::Max); }
Status convertReduceMin(ConvertContext &c) { return reduce(c, Reduce::Min); }
Status convertReduceProd(ConvertContext &c) { return reduce(c, Reduce::Prod); }
Status convertReduceSumSquare(ConvertContext &c) { return reduce(c, Reduce::SumSquare); }
Status convertReduceL1(ConvertContext &c) { return reduce(c, Reduce::L1); }
Status convertReduceL2(ConvertContext &c) { return reduce(c, Reduce::L2); }
Status convertReduceLogSum(ConvertContext &c) { return reduce(c, Reduce::LogSum); }
Status convertReduceLogSumExp(ConvertContext &c) { return reduce(c, Reduce::LogSumExp); }
Status convertArgMax(ConvertContext &c) { return argExtreme(c, true); }
Status convertArgMin(ConvertContext &c) { return argExtreme(c, false); }

Status convertTopK(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  int64_t k = 0;
  if (c.opset() < 10) {
    k = c.intAttr("k", -1);
  } else {
    TC_ASSIGN_OR_RETURN(k, oneInt(c, 1, "k"));
  }
  TC_ASSIGN_OR_RETURN(int64_t dim, normalizeAxis(c, c.intAttr("axis", -1), x->type().rank()));
  AttrMap attrs;
  attrs.emplace("k", Attribute(k));
  attrs.emplace("dim", Attribute(dim));
  attrs.emplace("largest", Attribute(c.intAttr("largest", 1) != 0));
  attrs.emplace("sorted", Attribute(c.intAttr("sorted", 1) != 0));
  TC_ASSIGN_OR_RETURN(std::vector<Value *> results,
                      c.emitMulti("aten.topk", {x}, std::move(attrs)));
  TC_RETURN_IF_ERROR(c.setOutput(0, results[0]));
  return c.setOutput(1, results[1]);
}

// ---- Softmax, LogSoftmax, Hardmax -------------------------------------------------------------

namespace {

enum class Normalize { Softmax, LogSoftmax, Hardmax };

/// One-hot of the first maximum along `dim`, in x's dtype.
Expected<Value *> hardmax(ConvertContext &c, Value *x, int64_t dim) {
  const Shape &shape = x->type().shape;
  std::optional<int64_t> size = shape[size_t(dim)].constant();
  if (!size)
    return c.error(strCat("Hardmax over symbolic dim ", shape[size_t(dim)], " is not supported"));
  AttrMap argAttrs;
  argAttrs.emplace("dim", Attribute(dim));
  argAttrs.emplace("keepdim", Attribute(true));
  TC_ASSIGN_OR_RETURN(Value * index, c.emit("aten.argmax", {x}, std::move(argAttrs)));
  // Positions 0..n-1 laid along `dim`, compared against the arg max.
  TC_ASSIGN_OR_RETURN(Tensor positions, c.newTensor(DType::I64, {*size}, "the position table"));
  for (int64_t k = 0; k < *size; ++k)
    positions.setInt(k, k);
  TC_ASSIGN_OR_RETURN(Value * range, c.constant(std::move(positions)));
  std::vector<SymInt> column{SymInt(*size)};
  column.resize(shape.size() - size_t(dim), SymInt(1));
  TC_ASSIGN_OR_RETURN(range, reshapeTo(c, range, column));
  TC_ASSIGN_OR_RETURN(Value * hot, c.emit("aten.eq", {range, index}));
  return c.cast(hot, x->type().dtype);
}

Expected<Value *> normalizeAlong(ConvertContext &c, Normalize kind, Value *x, int64_t dim) {
  if (kind == Normalize::Hardmax)
    return hardmax(c, x, dim);
  AttrMap attrs;
  attrs.emplace("dim", Attribute(dim));
  attrs.emplace("dtype", Attribute());
  return c.emit(kind == Normalize::Softmax ? "aten.softmax" : "aten.log_softmax", {x},
                std::move(attrs));
}

Status normalize(ConvertContext &c, Normalize kind) {
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  const Shape &shape = x->type().shape;
  if (c.opset() >= 13) {
    TC_ASSIGN_OR_RETURN(int64_t dim, normalizeAxis(c, c.intAttr("axis", -1), shape.size()));
    TC_ASSIGN_OR_RETURN(Value * value, normalizeAlong(c, kind, x, dim));
    return c.setOutput(0, value);
  }
  // Before opset 13 the input is seen as 2-D [outer, inner] split at `axis`.
  int64_t axis = c.intAttr("axis", 1);
  int64_t rank = int64_t(shape.size());
  if (axis < -rank || axis > rank)
    return c.error(strCat("axis ", axis, " is out of range for rank ", rank));
  if (axis < 0)
    axis += rank;
  SymInt outer(1), inner(1);
  for (int64_t i = 0; i < rank; ++i)
    (i < axis ? outer : inner) = (i < axis ? outer : inner) * shape[size_t(i)];
  TC_ASSIGN_OR_RETURN(Value * flat, reshapeTo(c, x, {outer, inner}));
  TC_ASSIGN_OR_RETURN(Value * value, normalizeAlong(c, kind, flat, 1));
  TC_ASSIGN_OR_RETURN(value, reshapeTo(c, value, std::vector<SymInt>(shape.begin(), shape.end())));
  return c.setOutput(0, value);
}

} // namespace

Status convertSoftmax(ConvertContext &c) { return normalize(c, Normalize::Softmax); }
Status convertLogSoftmax(ConvertContext &c) { return normalize(c, Normalize::LogSoftmax); }
Status convertHardmax(ConvertContext &c) { return normalize(c, Normalize::Hardmax); }

// ---- CumSum -----------------------------------------------------------------------------------

Status convertCumSum(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  TC_ASSIGN_OR_RETURN(int64_t axis, oneInt(c, 1, "axis"));
  size_t rank = x->type().rank();
  TC_ASSIGN_OR_RETURN(int64_t dim, normalizeAxis(c, axis, std::max<size_t>(rank, 1)));
  bool exclusive = c.intAttr("exclusive", 0) != 0;
  bool reverse = c.intAttr("reverse", 0) != 0;
  DType dtype = x->type().dtype;
  reverse = reverse && rank > 0;
  if (reverse) {
    TC_ASSIGN_OR_RETURN(x, reverseDim(c, x, dim));
  }
  std::optional<int64_t> size =
      rank == 0 ? std::optional<int64_t>(1) : x->type().shape[size_t(dim)].constant();
  Value *shifted = x;
  if (exclusive && size && rank > 0) {
    // Exclusive: the running sum of the input shifted one step along the dim.
    TC_ASSIGN_OR_RETURN(Value * padded, padZeros(c, x, dim, 1, 0));
    TC_ASSIGN_OR_RETURN(shifted, slice(c, padded, dim, 0, *size));
  }
  AttrMap attrs;
  attrs.emplace("dim", Attribute(dim));
  attrs.emplace("dtype", Attribute(dtype));
  TC_ASSIGN_OR_RETURN(Value * value, c.emit("aten.cumsum", {shifted}, std::move(attrs)));
  if (exclusive && shifted == x) { // symbolic extent: subtract the element itself
    TC_ASSIGN_OR_RETURN(value, c.emit("aten.sub", {value, x}));
  }
  if (reverse) {
    TC_ASSIGN_OR_RETURN(value, reverseDim(c, value, dim));
  }
  return c.setOutput(0, value);
}

// ---- Normalizations ---------------------------------------------------------------------------

Status convertLayerNormalization(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  TC_ASSIGN_OR_RETURN(Value * scale, c.input(1));
  TC_ASSIGN_OR_RETURN(Value * bias, c.optionalInput(2));
  const Shape &shape = x->type().shape;
  TC_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(c, c.intAttr("axis", -1), shape.size()));
  double eps = c.floatAttr("epsilon", 1e-5);
  int64_t stashCode = c.intAttr("stash_type", 1);
  std::optional<DType> stash = dtypeFromOnnx(int32_t(stashCode));
  if (!stash || !isFloating(*stash))
    return c.error(strCat("stash_type ", stashCode, " is not a supported float type"));
  DType dtype = x->type().dtype;
  DType compute = dtype == DType::F64 ? DType::F64 : DType::F32;
  std::vector<SymInt> normalized(shape.begin() + axis, shape.end());
  Ints dims = dimsFrom(size_t(axis), shape.size());

  TC_ASSIGN_OR_RETURN(Value * input, c.cast(x, compute));
  TC_ASSIGN_OR_RETURN(Value * weight, c.cast(scale, compute));
  Value *shift = nullptr;
  if (bias) {
    TC_ASSIGN_OR_RETURN(shift, c.cast(bias, compute));
  }
  // Scale and bias need only broadcast to the normalized shape; layer_norm takes exact ones.
  Shape exact(normalized.begin(), normalized.end());
  bool exactParams = weight->type().shape == exact && (!shift || shift->type().shape == exact);
  AttrMap attrs;
  attrs.emplace("normalized_shape", Attribute(normalized));
  attrs.emplace("eps", Attribute(eps));
  TC_ASSIGN_OR_RETURN(Value * y,
                      c.emit("aten.layer_norm",
                             {input, exactParams ? weight : nullptr, exactParams ? shift : nullptr},
                             std::move(attrs)));
  if (!exactParams) {
    TC_ASSIGN_OR_RETURN(y, c.emit("aten.mul", {y, weight}));
    if (shift) {
      TC_ASSIGN_OR_RETURN(y, c.emit("aten.add", {y, shift}));
    }
  }
  TC_ASSIGN_OR_RETURN(y, c.cast(y, dtype));
  TC_RETURN_IF_ERROR(c.setOutput(0, y));
  if (!c.hasOutput(1) && !c.hasOutput(2))
    return Status::ok();
  // Mean and InvStdDev, in stash_type, with the normalized dims kept as 1.
  TC_ASSIGN_OR_RETURN(Value * stashed, c.cast(x, *stash));
  TC_ASSIGN_OR_RETURN(Value * mean, reduceOp(c, "aten.mean", stashed, dims, true));
  TC_RETURN_IF_ERROR(c.setOutput(1, mean));
  TC_ASSIGN_OR_RETURN(Value * var, varianceOf(c, stashed, dims));
  TC_ASSIGN_OR_RETURN(Value * epsValue, c.scalar(eps, *stash));
  TC_ASSIGN_OR_RETURN(Value * shiftedVar, c.emit("aten.add", {var, epsValue}));
  TC_ASSIGN_OR_RETURN(Value * invStd, c.emit("aten.rsqrt", {shiftedVar}));
  return c.setOutput(2, invStd);
}

Status convertInstanceNormalization(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  TC_ASSIGN_OR_RETURN(Value * scale, c.input(1));
  TC_ASSIGN_OR_RETURN(Value * bias, c.input(2));
  const Shape &shape = x->type().shape;
  if (shape.size() < 3)
    return c.error(strCat("expects an input of rank 3 or more, got ", x->type().str()));
  Ints dims = dimsFrom(2, shape.size());
  DType dtype = x->type().dtype;
  TC_ASSIGN_OR_RETURN(Value * mean, reduceOp(c, "aten.mean", x, dims, true));
  TC_ASSIGN_OR_RETURN(Value * var, varianceOf(c, x, dims));
  TC_ASSIGN_OR_RETURN(Value * eps, c.scalar(c.floatAttr("epsilon", 1e-5), dtype));
  TC_ASSIGN_OR_RETURN(Value * shiftedVar, c.emit("aten.add", {var, eps}));
  TC_ASSIGN_OR_RETURN(Value * invStd, c.emit("aten.rsqrt", {shiftedVar}));
  TC_ASSIGN_OR_RETURN(Value * centered, c.emit("aten.sub", {x, mean}));
  TC_ASSIGN_OR_RETURN(Value * y, c.emit("aten.mul", {centered, invStd}));
  // Per-channel scale and bias, as [C, 1, ...].
  std::vector<SymInt> channel{shape[1]};
  channel.resize(shape.size() - 1, SymInt(1));
  TC_ASSIGN_OR_RETURN(scale, reshapeTo(c, scale, channel));
  TC_ASSIGN_OR_RETURN(bias, reshapeTo(c, bias, channel));
  TC_ASSIGN_OR_RETURN(y, c.emit("aten.mul", {y, scale}));
  TC_ASSIGN_OR_RETURN(y, c.emit("aten.add", {y, bias}));
  return c.setOutput(0, y);
}

Status convertMeanVarianceNormalization(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  Ints dims;
  for (int64_t axis : c.intsAttr("axes", {0, 2, 3})) {
    TC_ASSIGN_OR_RETURN(int64_t dim, normalizeAxis(c, axis, x->type().rank(), "axes entry"));
    dims.push_back(dim);
  }
  std::sort(dims.begin(), dims.end());
  // (x - E[x]) / (sqrt(E[(x - E[x])^2]) + 1e-9), the ONNX function body's epsilon.
  TC_ASSIGN_OR_RETURN(Value * mean, reduceOp(c, "aten.mean", x, dims, true));
  TC_ASSIGN_OR_RETURN(Value * centered, c.emit("aten.sub", {x, mean}));
  TC_ASSIGN_OR_RETURN(Value * squares, c.emit("aten.mul", {centered, centered}));
  TC_ASSIGN_OR_RETURN(Value * var, reduceOp(c, "aten.mean", squares, dims, true));
  TC_ASSIGN_OR_RETURN(Value * std, c.emit("aten.sqrt", {var}));
  TC_ASSIGN_OR_RETURN(Value * eps, c.scalar(1e-9, x->type().dtype));
  TC_ASSIGN_OR_RETURN(Value * denominator, c.emit("aten.add", {std, eps}));
  TC_ASSIGN_OR_RETURN(Value * y, c.emit("aten.div", {centered, denominator}));
  return c.setOutput(0, y);
}

Status convertLpNormalization(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  TC_ASSIGN_OR_RETURN(int64_t dim, normalizeAxis(c, c.intAttr("axis", -1), x->type().rank()));
  int64_t p = c.intAttr("p", 2);
  if (p != 1 && p != 2)
    return c.error(strCat("p must be 1 or 2, got ", p));
  Value *norm = nullptr;
  if (p == 1) {
    TC_ASSIGN_OR_RETURN(Value * magnitude, c.emit("aten.abs", {x}));
    TC_ASSIGN_OR_RETURN(norm, reduceOp(c, "aten.sum", magnitude, {dim}, true));
  } else {
    TC_ASSIGN_OR_RETURN(Value * squares, c.emit("aten.mul", {x, x}));
    TC_ASSIGN_OR_RETURN(Value * total, reduceOp(c, "aten.sum", squares, {dim}, true));
    TC_ASSIGN_OR_RETURN(norm, c.emit("aten.sqrt", {total}));
  }
  TC_ASSIGN_OR_RETURN(Value * y, c.emit("aten.div", {x, norm}));
  return c.setOutput(0, y);
}

/// y = x / (bias + alpha / size * (sum of x^2 over a window of `size` channels))^beta.
Status convertLRN(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  const Shape &shape = x->type().shape;
  if (shape.size() < 3)
    return c.error(strCat("expects an input of rank 3 or more, got ", x->type().str()));
  std::optional<int64_t> channels = shape[1].constant();
  if (!channels)
    return c.error(strCat("LRN over symbolic channel count ", shape[1], " is not supported"));
  if (!c.hasAttr("size") || c.intAttr("size", 0) <= 0)
    return c.error("needs a positive 'size'");
  int64_t size = c.intAttr("size", 1);
  DType dtype = x->type().dtype;
  // Channel c sums the squares of channels [c - before, c + after] that exist: reaching further
  // than C - 1 either way adds only zeros, so the window is clamped there (a size of 2^16 once
  // unrolled 2^16 slices). What remains is unrolled, one slice per term, up to a limit.
  int64_t reach = std::max<int64_t>(*channels - 1, 0);
  int64_t before = std::min((size - 1) / 2, reach);
  int64_t after = std::min(size - 1 - (size - 1) / 2, reach);
  constexpr int64_t kMaxWindowTerms = 1024;
  if (before + after + 1 > kMaxWindowTerms)
    return c.error(strCat("a window of ", before + after + 1, " channels is more than the ",
                          kMaxWindowTerms, " tensorc unrolls"));
  // The zero-padded channel dim holds every slice end below.
  int64_t paddedChannels = 0;
  if (__builtin_add_overflow(*channels, before + after, &paddedChannels))
    return c.error(strCat(*channels, " channels padded by ", before, " before and ", after,
                          " after overflow 64 bits"));
  TC_ASSIGN_OR_RETURN(Value * squares, c.emit("aten.mul", {x, x}));
  TC_ASSIGN_OR_RETURN(Value * padded, padZeros(c, squares, 1, before, after));
  Value *window = nullptr;
  for (int64_t k = 0; k <= before + after; ++k) {
    TC_ASSIGN_OR_RETURN(Value * part, slice(c, padded, 1, k, k + *channels));
    if (window) {
      TC_ASSIGN_OR_RETURN(window, c.emit("aten.add", {window, part}));
    } else {
      window = part;
    }
  }
  TC_ASSIGN_OR_RETURN(Value * alpha, c.scalar(c.floatAttr("alpha", 1e-4) / double(size), dtype));
  TC_ASSIGN_OR_RETURN(Value * bias, c.scalar(c.floatAttr("bias", 1.0), dtype));
  TC_ASSIGN_OR_RETURN(Value * beta, c.scalar(c.floatAttr("beta", 0.75), dtype));
  TC_ASSIGN_OR_RETURN(Value * scaled, c.emit("aten.mul", {window, alpha}));
  TC_ASSIGN_OR_RETURN(Value * base, c.emit("aten.add", {scaled, bias}));
  TC_ASSIGN_OR_RETURN(Value * denominator, c.emit("aten.pow", {base, beta}));
  TC_ASSIGN_OR_RETURN(Value * y, c.emit("aten.div", {x, denominator}));
  return c.setOutput(0, y);
}

// ---- Losses -----------------------------------------------------------------------------------

namespace {

/// Negative log-likelihood of `logProb` [N, C, d...] at `target` [N, d...], weighted per class,
/// with ignored targets contributing nothing (also to the mean's denominator).
Expected<Value *> nllLoss(ConvertContext &c, Value *logProb, Value *target, Value *weight) {
  std::string reduction = c.stringAttr("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return c.error(strCat("unknown reduction '", reduction, "'"));
  if (logProb->type().rank() < 2 || target->type().rank() + 1 != logProb->type().rank())
    return c.error(strCat("expects input [N, C, d...] and target [N, d...], got ",
                          logProb->type().str(), " and ", target->type().str()));
  DType dtype = logProb->type().dtype;
  TC_ASSIGN_OR_RETURN(target, c.cast(target, DType::I64));
  const Shape &targetShape = target->type().shape;
  Value *mask = nullptr, *safe = target;
  if (c.hasAttr("ignore_index")) {
    TC_ASSIGN_OR_RETURN(Value * ignored,
                        c.scalar(double(c.intAttr("ignore_index", 0)), DType::I64));
    TC_ASSIGN_OR_RETURN(mask, c.emit("aten.ne", {target, ignored}));
    TC_ASSIGN_OR_RETURN(Value * zero, c.scalar(0, DType::I64));
    TC_ASSIGN_OR_RETURN(safe, c.emit("aten.where", {mask, target, zero}));
  }
  AttrMap unsqueeze;
  unsqueeze.emplace("dim", Attribute(int64_t(1)));
  TC_ASSIGN_OR_RETURN(Value * index, c.emit("aten.unsqueeze", {safe}, std::move(unsqueeze)));
  AttrMap gather;
  gather.emplace("dim", Attribute(int64_t(1)));
  TC_ASSIGN_OR_RETURN(Value * picked, c.emit("aten.gather", {logProb, index}, std::move(gather)));
  TC_ASSIGN_OR_RETURN(
      picked, reshapeTo(c, picked, std::vector<SymInt>(targetShape.begin(), targetShape.end())));
  TC_ASSIGN_OR_RETURN(Value * loss, c.emit("aten.neg", {picked}));
  Value *weights = nullptr;
  if (weight) {
    TC_ASSIGN_OR_RETURN(Value * flat, reshapeTo(c, safe, {SymInt(-1)}));
    AttrMap select;
    select.emplace("dim", Attribute(int64_t(0)));
    TC_ASSIGN_OR_RETURN(Value * perTarget,
                        c.emit("aten.index_select", {weight, flat}, std::move(select)));
    TC_ASSIGN_OR_RETURN(
        weights,
        reshapeTo(c, perTarget, std::vector<SymInt>(targetShape.begin(), targetShape.end())));
    TC_ASSIGN_OR_RETURN(weights, c.cast(weights, dtype));
  }
  if (mask) {
    TC_ASSIGN_OR_RETURN(Value * kept, c.cast(mask, dtype));
    if (weights) {
      TC_ASSIGN_OR_RETURN(weights, c.emit("aten.mul", {weights, kept}));
    } else {
      weights = kept;
    }
  }
  if (weights) {
    TC_ASSIGN_OR_RETURN(loss, c.emit("aten.mul", {loss, weights}));
  }
  if (reduction == "none")
    return loss;
  if (reduction == "mean" && !weights)
    return reduceOp(c, "aten.mean", loss, {}, false);
  TC_ASSIGN_OR_RETURN(Value * total, reduceOp(c, "aten.sum", loss, {}, false, dtype));
  if (reduction == "sum")
    return total;
  TC_ASSIGN_OR_RETURN(Value * weightSum, reduceOp(c, "aten.sum", weights, {}, false, dtype));
  return c.emit("aten.div", {total, weightSum});
}

} // namespace

Status convertNegativeLogLikelihoodLoss(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * input, c.input(0));
  TC_ASSIGN_OR_RETURN(Value * target, c.input(1));
  TC_ASSIGN_OR_RETURN(Value * weight, c.optionalInput(2));
  TC_ASSIGN_OR_RETURN(Value * loss, nllLoss(c, input, target, weight));
  return c.setOutput(0, loss);
}

Status convertSoftmaxCrossEntropyLoss(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * scores, c.input(0));
  TC_ASSIGN_OR_RETURN(Value * labels, c.input(1));
  TC_ASSIGN_OR_RETURN(Value * weight, c.optionalInput(2));
  if (scores->type().rank() < 2)
    return c.error(strCat("expects scores [N, C, d...], got ", scores->type().str()));
  TC_ASSIGN_OR_RETURN(Value * logProb, normalizeAlong(c, Normalize::LogSoftmax, scores, 1));
  TC_ASSIGN_OR_RETURN(Value * loss, nllLoss(c, logProb, labels, weight));
  TC_RETURN_IF_ERROR(c.setOutput(0, loss));
  return c.setOutput(1, logProb);
}

} // namespace tensorc::onnx
