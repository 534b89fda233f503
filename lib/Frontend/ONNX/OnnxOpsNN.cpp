// ONNX converters for neural-network ops: convolution, pooling, normalization, GEMM,
// indexing/scatter and resampling (quantized ops: OnnxOpsQuantize; recurrent: OnnxOpsRecurrent).
#include "NNHelpers.h"
#include "OnnxConverters.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tensorc::onnx {

namespace nn {

Expected<Value *> binary(ConvertContext &c, const char *op, Value *a, Value *b) {
  return c.emit(op, {a, b});
}

/// Reshapes a per-channel vector [C] (or a scalar) to broadcast against a rank-`rank` tensor
/// along `axis`: [1, C, 1, 1].
Expected<Value *> alongAxis(ConvertContext &c, Value *value, int64_t axis, size_t rank) {
  const TensorType &type = value->type();
  if (type.rank() != 1 || type.shape[0] == SymInt(1))
    return value;
  if (axis < 0 || axis >= int64_t(rank))
    return c.error(strCat("axis ", axis, " is out of range for rank ", rank));
  std::vector<SymInt> shape(rank, SymInt(1));
  shape[size_t(axis)] = type.shape[0];
  return reshape(c, value, std::move(shape));
}

Expected<Value *> transpose2d(ConvertContext &c, Value *value) {
  return permute(c, value, Ints{1, 0});
}

// ---- Padding ---------------------------------------------------------------------------------

int64_t samePaddingTotal(int64_t in, int64_t stride, int64_t kernel, int64_t dilation) {
  // (out - 1) * stride - in lies in (-stride, 0] and (kernel - 1) * dilation below 2^62, so no
  // step overflows, whereas in + stride - 1 and (out - 1) * stride + the window's span did for
  // a dim near 2^63.
  int64_t out = in / stride + (in % stride != 0);
  return std::max<int64_t>(0, (out - 1) * stride - in + (kernel - 1) * dilation + 1);
}

Expected<SpatialPads> resolvePads(ConvertContext &c, const TensorType &input, const Ints &kernel,
                                  const Ints &strides, const Ints &dilations) {
  size_t dims = kernel.size();
  SpatialPads pads{Ints(dims, 0), Ints(dims, 0)};
  std::string autoPad = c.stringAttr("auto_pad", "NOTSET");
  if (autoPad == "NOTSET") {
    TC_ASSIGN_OR_RETURN(Ints list, windowList(c, "pads", 2 * dims, 0, 0));
    for (size_t d = 0; d < dims; ++d) {
      pads.begin[d] = list[d];
      pads.end[d] = list[dims + d];
    }
    return pads;
  }
  if (autoPad == "VALID")
    return pads;
  if (autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER")
    return c.error(strCat("unknown auto_pad '", autoPad, "'"));
  if (input.rank() < dims)
    return c.error(strCat("expected an input with ", dims, " spatial dims, got ", input.str()));
  size_t first = input.rank() - dims;
  for (size_t d = 0; d < dims; ++d) {
    std::optional<int64_t> in = input.shape[first + d].constant();
    if (!in)
      return c.error(
          strCat("auto_pad ", autoPad, " needs a static spatial size, got ", input.str()));
    int64_t total = samePaddingTotal(*in, strides[d], kernel[d], dilations[d]);
    int64_t small = total / 2;
    pads.begin[d] = autoPad == "SAME_UPPER" ? small : total - small;
    pads.end[d] = total - pads.begin[d];
  }
  return pads;
}

/// Emits aten.pad of the trailing spatial dims with `value`.
Expected<Value *> padSpatial(ConvertContext &c, Value *input, const SpatialPads &pads,
                             double value) {
  std::vector<int64_t> list;
  for (size_t d = pads.begin.size(); d-- > 0;) {
    list.push_back(pads.begin[d]);
    list.push_back(pads.end[d]);
  }
  AttrMap attrs;
  attrs.emplace("pad", Attribute(list));
  attrs.emplace("mode", Attribute("constant"));
  attrs.emplace("value", Attribute(value));
  return c.emit("aten.pad", {input}, std::move(attrs));
}

Expected<Ints> windowList(ConvertContext &c, const char *name, size_t count, int64_t fill,
                          int64_t min) {
  Ints values = c.intsAttr(name);
  if (values.empty())
    values.assign(count, fill);
  if (values.size() != count)
    return c.error(strCat("'", name, "' must have ", count, " entries, got ", values.size()));
  for (int64_t value : values)
    if (value < min || value > kMaxWindowValue)
      return c.error(strCat("'", name, "' entry ", value, " is out of range [", min, ", ",
                            kMaxWindowValue, "]"));
  return values;
}

Expected<Value *> convolution(ConvertContext &c, Value *x, Value *w, Value *bias,
                              const Ints &kernel) {
  size_t dims = kernel.size();
  TC_ASSIGN_OR_RETURN(Ints strides, windowList(c, "strides", dims, 1, 1));
  TC_ASSIGN_OR_RETURN(Ints dilations, windowList(c, "dilations", dims, 1, 1));
  TC_ASSIGN_OR_RETURN(SpatialPads pads, resolvePads(c, x->type(), kernel, strides, dilations));
  Ints padding = pads.begin;
  if (!pads.symmetric()) {
    TC_ASSIGN_OR_RETURN(x, padSpatial(c, x, pads, 0.0));
    padding.assign(dims, 0);
  }
  AttrMap attrs;
  attrs.emplace("stride", Attribute(strides));
  attrs.emplace("padding", Attribute(padding));
  attrs.emplace("dilation", Attribute(dilations));
  attrs.emplace("groups", Attribute(c.intAttr("group", 1)));
  return c.emit("aten.convolution", {x, w, bias}, std::move(attrs));
}

Expected<Ints> kernelShape(ConvertContext &c, size_t count, const Ints &fallback) {
  if (!c.hasAttr("kernel_shape") && fallback.size() == count) {
    for (int64_t value : fallback)
      if (value < 1 || value > kMaxWindowValue)
        return c.error(
            strCat("kernel size ", value, " is out of range [1, ", kMaxWindowValue, "]"));
    return fallback;
  }
  return windowList(c, "kernel_shape", count, 1, 1);
}

} // namespace nn

using namespace nn;

// ---- Convolution -----------------------------------------------------------------------------

Status convertConv(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  TC_ASSIGN_OR_RETURN(Value * w, c.input(1));
  TC_ASSIGN_OR_RETURN(Value * bias, c.optionalInput(2));
  const TensorType &wType = w->type();
  if (wType.rank() < 3)
    return c.error(strCat("weight must have rank >= 3, got ", wType.str()));
  size_t dims = wType.rank() - 2;
  std::optional<std::vector<int64_t>> wShape = wType.staticShape();
  if (!c.hasAttr("kernel_shape") && !wShape)
    return c.error("the weight shape must be static");
  TC_ASSIGN_OR_RETURN(
      Ints kernel,
      kernelShape(c, dims, wShape ? Ints(wShape->begin() + 2, wShape->end()) : Ints()));
  TC_ASSIGN_OR_RETURN(Value * y, convolution(c, x, w, bias, kernel));
  return c.setOutput(0, y);
}

Status convertConvTranspose(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  TC_ASSIGN_OR_RETURN(Value * w, c.input(1));
  std::optional<std::vector<int64_t>> wShape = w->type().staticShape();
  if (!wShape || wShape->size() < 3)
    return c.error(strCat("weight must be static with rank >= 3, got ", w->type().str()));
  size_t dims = wShape->size() - 2;
  const TensorType &xType = x->type();
  if (xType.rank() != dims + 2)
    return c.error(strCat("expected a ", dims + 2, "-D input, got ", xType.str()));
  TC_ASSIGN_OR_RETURN(Ints kernel, kernelShape(c, dims, Ints(wShape->begin() + 2, wShape->end())));
  TC_ASSIGN_OR_RETURN(Ints strides, windowList(c, "strides", dims, 1, 1));
  TC_ASSIGN_OR_RETURN(Ints dilations, windowList(c, "dilations", dims, 1, 1));
  TC_ASSIGN_OR_RETURN(Ints outputPadding, windowList(c, "output_padding", dims, 0, 0));
  Ints outputShape = c.intsAttr("output_shape");
  std::string autoPad = c.stringAttr("auto_pad", "NOTSET");
  SpatialPads pads{Ints(dims, 0), Ints(dims, 0)};
  Ints inSizes(dims);
  for (size_t d = 0; d < dims; ++d) {
    std::optional<int64_t> in = xType.shape[2 + d].constant();
    if (!in)
      return c.error(strCat("needs static spatial sizes, got ", xType.str()));
    inSizes[d] = *in;
    // The full output stride * (in - 1) + dilation * (kernel - 1) + output_padding + 1 must fit.
    int64_t full = 0, reach = 0;
    if (*in < 1 || __builtin_mul_overflow(strides[d], *in - 1, &full) ||
        __builtin_mul_overflow(dilations[d], kernel[d] - 1, &reach) ||
        __builtin_add_overflow(full, reach + outputPadding[d] + 1, &full) ||
        full > (int64_t(1) << 62))
      return c.error(strCat("the output size of spatial dim ", d, " is out of range"));
  }
  if (outputShape.size() > dims) // may include N and C
    outputShape.erase(outputShape.begin(), outputShape.end() - int64_t(dims));
  if (!outputShape.empty() && outputShape.size() != dims)
    return c.error(
        strCat("'output_shape' must have ", dims, " spatial entries, got ", outputShape.size()));
  for (int64_t size : outputShape)
    if (size < 0 || size > (int64_t(1) << 62))
      return c.error(strCat("'output_shape' entry ", size, " is out of range"));
  if (!outputShape.empty() || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t d = 0; d < dims; ++d) {
      int64_t target = outputShape.empty() ? inSizes[d] * strides[d] : outputShape[d];
      int64_t total = strides[d] * (inSizes[d] - 1) + outputPadding[d] +
                      (kernel[d] - 1) * dilations[d] + 1 - target;
      int64_t half = total / 2;
      bool lower = autoPad == "SAME_LOWER";
      pads.begin[d] = lower ? total - half : half;
      pads.end[d] = total - pads.begin[d];
    }
  } else if (autoPad == "NOTSET") {
    TC_ASSIGN_OR_RETURN(Ints list, windowList(c, "pads", 2 * dims, 0, 0));
    for (size_t d = 0; d < dims; ++d) {
      pads.begin[d] = list[d];
      pads.end[d] = list[dims + d];
    }
  } else if (autoPad != "VALID") {
    return c.error(strCat("unknown auto_pad '", autoPad, "'"));
  }
  TC_ASSIGN_OR_RETURN(Value * bias, c.optionalInput(2));
  bool native = pads.symmetric();
  for (size_t d = 0; d < dims; ++d)
    native = native && pads.begin[d] >= 0 && outputPadding[d] < std::max(strides[d], dilations[d]);
  AttrMap attrs;
  attrs.emplace("stride", Attribute(strides));
  attrs.emplace("dilation", Attribute(dilations));
  attrs.emplace("transposed", Attribute(true));
  attrs.emplace("groups", Attribute(c.intAttr("group", 1)));
  if (native) {
    attrs.emplace("padding", Attribute(pads.begin));
    attrs.emplace("output_padding", Attribute(outputPadding));
    TC_ASSIGN_OR_RETURN(Value * y, c.emit("aten.convolution", {x, w, bias}, std::move(attrs)));
    return c.setOutput(0, y);
  }
  // General case: the full transposed convolution, then crop/extend each dim, then the bias.
  attrs.emplace("padding", Attribute(Ints(dims, 0)));
  attrs.emplace("output_padding", Attribute(Ints(dims, 0)));
  TC_ASSIGN_OR_RETURN(Value * y, c.emit("aten.convolution", {x, w, nullptr}, std::move(attrs)));
  SpatialPads extend{Ints(dims, 0), Ints(dims, 0)};
  bool needExtend = false;
  for (size_t d = 0; d < dims; ++d) {
    int64_t full = strides[d] * (inSizes[d] - 1) + (kernel[d] - 1) * dilations[d] + 1;
    int64_t size = full + outputPadding[d] - pads.begin[d] - pads.end[d];
    int64_t start = std::max<int64_t>(pads.begin[d], 0), end = std::min(pads.begin[d] + size, full);
    extend.begin[d] = start - pads.begin[d];
    extend.end[d] = pads.begin[d] + size - end;
    needExtend = needExtend || extend.begin[d] > 0 || extend.end[d] > 0;
    if (start != 0 || end != full) {
      TC_ASSIGN_OR_RETURN(y, slice(c, y, int64_t(2 + d), start, end));
    }
  }
  if (needExtend) {
    TC_ASSIGN_OR_RETURN(y, padSpatial(c, y, extend, 0.0));
  }
  if (bias) {
    TC_ASSIGN_OR_RETURN(Value * b, alongAxis(c, bias, 1, dims + 2));
    TC_ASSIGN_OR_RETURN(y, binary(c, "aten.add", y, b));
  }
  return c.setOutput(0, y);
}

// ---- Pooling ---------------------------------------------------------------------------------

namespace {

struct PoolSetup {
  Ints kernel, strides, dilations;
  SpatialPads pads;
  bool ceilMode = false;
};

Expected<PoolSetup> readPool(ConvertContext &c, const TensorType &input) {
  PoolSetup p;
  size_t dims = c.intsAttr("kernel_shape").size();
  if (dims == 0)
    return c.error("'kernel_shape' is required");
  if (input.rank() != dims + 2)
    return c.error(strCat("expected a ", dims + 2, "-D input, got ", input.str()));
  TC_ASSIGN_OR_RETURN(p.kernel, windowList(c, "kernel_shape", dims, 1, 1));
  TC_ASSIGN_OR_RETURN(p.strides, windowList(c, "strides", dims, 1, 1));
  TC_ASSIGN_OR_RETURN(p.dilations, windowList(c, "dilations", dims, 1, 1));
  TC_ASSIGN_OR_RETURN(p.pads, resolvePads(c, input, p.kernel, p.strides, p.dilations));
  p.ceilMode = c.intAttr("ceil_mode", 0) != 0;
  return p;
}

/// Torch pooling takes symmetric padding of at most half the (dilated) kernel.
bool nativePadding(const PoolSetup &p) {
  if (!p.pads.symmetric())
    return false;
  for (size_t d = 0; d < p.kernel.size(); ++d)
    if (p.pads.begin[d] * 2 > (p.kernel[d] - 1) * p.dilations[d] + 1)
      return false;
  return true;
}

double lowestValue(DType dtype) {
  switch (dtype) {
  case DType::U8:
  case DType::U16:
  case DType::U32:
  case DType::U64:
  case DType::Bool:
    return 0;
  case DType::I8:
    return -128;
  case DType::I16:
    return -32768;
  case DType::I32:
    return -2147483648.0;
  case DType::I64:
    return double(std::numeric_limits<int64_t>::lowest());
  default:
    return -std::numeric_limits<double>::infinity();
  }
}

} // namespace

Status convertMaxPool(ConvertContext &c) {
  if (c.hasOutput(1))
    return maxPoolWithIndices(c);
  if (c.intAttr("storage_order", 0) != 0)
    return c.error("storage_order=1 is only meaningful for the Indices output (unsupported)");
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  TC_ASSIGN_OR_RETURN(PoolSetup p, readPool(c, x->type()));
  Ints padding = p.pads.begin;
  if (!nativePadding(p)) {
    TC_ASSIGN_OR_RETURN(x, padSpatial(c, x, p.pads, lowestValue(x->type().dtype)));
    padding.assign(p.kernel.size(), 0);
  }
  AttrMap attrs;
  attrs.emplace("kernel_size", Attribute(p.kernel));
  attrs.emplace("stride", Attribute(p.strides));
  attrs.emplace("padding", Attribute(padding));
  attrs.emplace("dilation", Attribute(p.dilations));
  attrs.emplace("ceil_mode", Attribute(p.ceilMode));
  TC_ASSIGN_OR_RETURN(Value * y, c.emit("aten.max_pool", {x}, std::move(attrs)));
  return c.setOutput(0, y);
}

namespace {

Expected<Value *> avgPool(ConvertContext &c, Value *x, const PoolSetup &p, const Ints &padding,
                          bool countIncludePad) {
  AttrMap attrs;
  attrs.emplace("kernel_size", Attribute(p.kernel));
  attrs.emplace("stride", Attribute(p.strides));
  attrs.emplace("padding", Attribute(padding));
  attrs.emplace("ceil_mode", Attribute(p.ceilMode));
  attrs.emplace("count_include_pad", Attribute(countIncludePad));
  return c.emit("aten.avg_pool", {x}, std::move(attrs));
}

} // namespace

Status convertAveragePool(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  TC_ASSIGN_OR_RETURN(PoolSetup p, readPool(c, x->type()));
  for (int64_t dilation : p.dilations)
    if (dilation != 1)
      return c.error("dilated AveragePool is not supported");
  bool countIncludePad = c.intAttr("count_include_pad", 0) != 0;
  if (nativePadding(p)) {
    TC_ASSIGN_OR_RETURN(Value * y, avgPool(c, x, p, p.pads.begin, countIncludePad));
    return c.setOutput(0, y);
  }
  Ints zero(p.kernel.size(), 0);
  TC_ASSIGN_OR_RETURN(Value * padded, padSpatial(c, x, p.pads, 0.0));
  TC_ASSIGN_OR_RETURN(Value * y, avgPool(c, padded, p, zero, true));
  if (!countIncludePad) {
    // Mean over the real elements: the padded sum over the count of real elements.
    AttrMap fill;
    fill.emplace("fill_value", Attribute(1.0));
    TC_ASSIGN_OR_RETURN(Value * ones, c.emit("aten.full_like", {x}, std::move(fill)));
    TC_ASSIGN_OR_RETURN(Value * mask, padSpatial(c, ones, p.pads, 0.0));
    TC_ASSIGN_OR_RETURN(Value * fraction, avgPool(c, mask, p, zero, true));
    TC_ASSIGN_OR_RETURN(y, binary(c, "aten.div", y, fraction));
  }
  return c.setOutput(0, y);
}

Status convertLpPool(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  TC_ASSIGN_OR_RETURN(PoolSetup p, readPool(c, x->type()));
  DType dtype = x->type().dtype;
  double power = double(c.intAttr("p", 2));
  TC_ASSIGN_OR_RETURN(Value * magnitude, c.emit("aten.abs", {x}));
  TC_ASSIGN_OR_RETURN(Value * exponent, c.scalar(power, dtype));
  TC_ASSIGN_OR_RETURN(Value * powered, binary(c, "aten.pow", magnitude, exponent));
  if (p.pads.begin != Ints(p.kernel.size(), 0) || p.pads.end != Ints(p.kernel.size(), 0)) {
    TC_ASSIGN_OR_RETURN(powered, padSpatial(c, powered, p.pads, 0.0));
  }
  if (p.dilations != Ints(p.kernel.size(), 1))
    return c.error("dilated LpPool is not supported");
  TC_ASSIGN_OR_RETURN(Value * mean, avgPool(c, powered, p, Ints(p.kernel.size(), 0), true));
  int64_t window = 1;
  for (int64_t k : p.kernel)
    window *= k;
  TC_ASSIGN_OR_RETURN(Value * count, c.scalar(double(window), dtype));
  TC_ASSIGN_OR_RETURN(Value * sum, binary(c, "aten.mul", mean, count));
  TC_ASSIGN_OR_RETURN(Value * root, c.scalar(1.0 / power, dtype));
  TC_ASSIGN_OR_RETURN(Value * y, binary(c, "aten.pow", sum, root));
  return c.setOutput(0, y);
}

namespace {

Status globalPool(ConvertContext &c, bool isMax) {
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  Ints dims = dimsFrom(2, x->type().rank());
  AttrMap attrs;
  attrs.emplace("dim", Attribute(dims));
  attrs.emplace("keepdim", Attribute(true));
  TC_ASSIGN_OR_RETURN(Value * y, c.emit(isMax ? "aten.amax" : "aten.mean", {x}, std::move(attrs)));
  return c.setOutput(0, y);
}

} // namespace

Status convertGlobalAveragePool(ConvertContext &c) { return globalPool(c, false); }
Status convertGlobalMaxPool(ConvertContext &c) { return globalPool(c, true); }

// ---- Normalization, PRelu ----------------------------------------------------------------------

Status convertBatchNormalization(ConvertContext &c) {
  if (c.intAttr("training_mode", 0) != 0)
    return trainingBatchNormalization(c);
  for (size_t i = 1; i < c.numOutputs(); ++i)
    if (c.hasOutput(i))
      return c.error("training-mode BatchNormalization (running statistics outputs) is not "
                     "supported");
  if (c.intAttr("spatial", 1) != 1)
    return c.error("BatchNormalization with spatial=0 is not supported");
  std::vector<Value *> inputs;
  for (size_t i = 0; i < 5; ++i) {
    TC_ASSIGN_OR_RETURN(Value * value, c.input(i));
    inputs.push_back(value);
  }
  AttrMap attrs;
  attrs.emplace("eps", Attribute(c.floatAttr("epsilon", 1e-5)));
  TC_ASSIGN_OR_RETURN(Value * y, c.emit("aten.batch_norm", std::move(inputs), std::move(attrs)));
  return c.setOutput(0, y);
}

Status convertPRelu(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  TC_ASSIGN_OR_RETURN(Value * slope, c.input(1));
  // Opset < 7 slopes of shape [C] apply per channel.
  if (slope->type().rank() == 1 && x->type().rank() > 2 && slope->type().shape[0] != SymInt(1) &&
      x->type().shape.back() != slope->type().shape[0]) {
    TC_ASSIGN_OR_RETURN(slope, alongAxis(c, slope, 1, x->type().rank()));
  }
  TC_ASSIGN_OR_RETURN(Value * zero, c.scalar(0, x->type().dtype));
  TC_ASSIGN_OR_RETURN(Value * negative, binary(c, "aten.lt", x, zero));
  TC_ASSIGN_OR_RETURN(Value * scaled, binary(c, "aten.mul", x, slope));
  TC_ASSIGN_OR_RETURN(scaled, c.cast(scaled, x->type().dtype));
  TC_ASSIGN_OR_RETURN(Value * y, c.emit("aten.where", {negative, scaled, x}));
  return c.setOutput(0, y);
}

// ---- GEMM ------------------------------------------------------------------------------------

Status convertGemm(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * a, c.input(0));
  TC_ASSIGN_OR_RETURN(Value * b, c.input(1));
  if (c.intAttr("transA", 0)) {
    TC_ASSIGN_OR_RETURN(a, transpose2d(c, a));
  }
  if (c.intAttr("transB", 0)) {
    TC_ASSIGN_OR_RETURN(b, transpose2d(c, b));
  }
  double alpha = c.floatAttr("alpha", 1.0), beta = c.floatAttr("beta", 1.0);
  DType dtype = a->type().dtype;
  TC_ASSIGN_OR_RETURN(Value * y, c.emit("aten.mm", {a, b}));
  if (alpha != 1.0) {
    TC_ASSIGN_OR_RETURN(Value * scale, c.scalar(alpha, dtype));
    TC_ASSIGN_OR_RETURN(y, binary(c, "aten.mul", y, scale));
  }
  if (c.hasInput(2) && beta != 0.0) {
    TC_ASSIGN_OR_RETURN(Value * bias, c.input(2));
    if (beta != 1.0) {
      TC_ASSIGN_OR_RETURN(Value * scale, c.scalar(beta, dtype));
      TC_ASSIGN_OR_RETURN(bias, binary(c, "aten.mul", bias, scale));
    }
    TC_ASSIGN_OR_RETURN(y, binary(c, "aten.add", y, bias));
  }
  TC_ASSIGN_OR_RETURN(y, c.cast(y, dtype));
  return c.setOutput(0, y);
}

Status convertMatMul(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * a, c.input(0));
  TC_ASSIGN_OR_RETURN(Value * b, c.input(1));
  TC_ASSIGN_OR_RETURN(Value * y, c.emit("aten.matmul", {a, b}));
  return c.setOutput(0, y);
}

// ---- Indexing and scatter --------------------------------------------------------------------

Status convertGatherND(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * data, c.input(0));
  TC_ASSIGN_OR_RETURN(Value * indices, c.input(1));
  AttrMap attrs;
  attrs.emplace("batch_dims", Attribute(c.intAttr("batch_dims", 0)));
  TC_ASSIGN_OR_RETURN(Value * y, c.emit("prims.gather_nd", {data, indices}, std::move(attrs)));
  return c.setOutput(0, y);
}

namespace {

/// Writes input 2 (updates) into input 0 (data) at input 1 (indices) with registry op `op`,
/// combined as the node's `reduction` says; `alongAxis`: the op takes the node's `axis`.
Status scatter(ConvertContext &c, const char *op, bool alongAxis) {
  TC_ASSIGN_OR_RETURN(Value * data, c.input(0));
  TC_ASSIGN_OR_RETURN(Value * indices, c.input(1));
  TC_ASSIGN_OR_RETURN(Value * updates, c.input(2));
  AttrMap attrs;
  if (alongAxis)
    attrs.emplace("dim", Attribute(c.intAttr("axis", 0)));
  attrs.emplace("reduce", Attribute(c.stringAttr("reduction", "none")));
  TC_ASSIGN_OR_RETURN(Value * y, c.emit(op, {data, indices, updates}, std::move(attrs)));
  return c.setOutput(0, y);
}

} // namespace

Status convertScatterElements(ConvertContext &c) { return scatter(c, "aten.scatter", true); }
Status convertScatterND(ConvertContext &c) { return scatter(c, "prims.scatter_nd", false); }

// ---- Resize ----------------------------------------------------------------------------------

namespace {

/// Float input `i` when present and non-empty.
Expected<std::vector<double>> optionalFloats(ConvertContext &c, size_t i, const char *what) {
  if (!c.hasInput(i))
    return std::vector<double>{};
  if (std::optional<Tensor> known = c.constantInput(i); known && known->numel() == 0)
    return std::vector<double>{};
  return c.constantFloats(i, what);
}

} // namespace

Status convertResize(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  const TensorType &type = x->type();
  size_t rank = type.rank();
  std::optional<std::vector<int64_t>> inShape = type.staticShape();
  if (!inShape)
    return c.error(strCat("needs a static input shape, got ", type.str()));
  bool legacy = c.node().op_type() == "Upsample" || c.opset() < 11;
  std::string mode = c.stringAttr("mode", "nearest");
  if (mode == "bilinear" || mode == "trilinear")
    mode = "linear";
  std::string coordinates =
      legacy ? "asymmetric" : c.stringAttr("coordinate_transformation_mode", "half_pixel");
  std::string nearest = legacy ? "floor" : c.stringAttr("nearest_mode", "round_prefer_floor");
  std::vector<double> scales, roi, sizeValues;
  Ints sizes;
  if (legacy) {
    if (c.node().op_type() == "Upsample" && c.opset() < 9) {
      scales = c.floatsAttr("scales");
    } else {
      TC_ASSIGN_OR_RETURN(scales, c.constantFloats(1, "scales"));
    }
  } else {
    TC_ASSIGN_OR_RETURN(roi, optionalFloats(c, 1, "roi"));
    TC_ASSIGN_OR_RETURN(scales, optionalFloats(c, 2, "scales"));
    if (c.hasInput(3)) {
      TC_ASSIGN_OR_RETURN(sizes, c.constantInts(3, "sizes"));
    }
  }
  Ints axes = c.intsAttr("axes");
  if (axes.empty())
    for (size_t d = 0; d < rank; ++d)
      axes.push_back(int64_t(d));
  std::vector<bool> seen(rank, false);
  for (int64_t &axis : axes) {
    if (axis < -int64_t(rank) || axis >= int64_t(rank))
      return c.error(strCat("axis ", axis, " is out of range for rank ", rank));
    if (axis < 0)
      axis += int64_t(rank);
    if (seen[size_t(axis)])
      return c.error(strCat("axis ", axis, " is listed twice"));
    seen[size_t(axis)] = true;
  }
  size_t count = axes.size();
  if (!scales.empty() && scales.size() != count)
    return c.error(strCat("scales has ", scales.size(), " entries for ", count, " axes"));
  if (!sizes.empty() && sizes.size() != count)
    return c.error(strCat("sizes has ", sizes.size(), " entries for ", count, " axes"));
  if (scales.empty() == sizes.empty())
    return c.error("exactly one of scales and sizes must be given");
  std::vector<double> fullScales(rank, 1.0), fullRoi(2 * rank, 0.0);
  Ints outShape = *inShape;
  for (size_t d = 0; d < rank; ++d)
    fullRoi[rank + d] = 1.0;
  if (!roi.empty()) {
    if (roi.size() != 2 * count)
      return c.error(strCat("roi has ", roi.size(), " entries for ", count, " axes"));
    for (size_t i = 0; i < count; ++i) {
      fullRoi[size_t(axes[i])] = roi[i];
      fullRoi[rank + size_t(axes[i])] = roi[count + i];
    }
  }
  if (!sizes.empty()) {
    std::string policy = c.stringAttr("keep_aspect_ratio_policy", "stretch");
    if (policy != "stretch") {
      double scale = policy == "not_larger" ? std::numeric_limits<double>::infinity() : 0.0;
      for (size_t i = 0; i < count; ++i) {
        double ratio = double(sizes[i]) / double((*inShape)[size_t(axes[i])]);
        scale = policy == "not_larger" ? std::min(scale, ratio) : std::max(scale, ratio);
      }
      for (size_t i = 0; i < count; ++i) {
        TC_ASSIGN_OR_RETURN(
            sizes[i], c.dimFromDouble(std::floor(scale * double((*inShape)[size_t(axes[i])]) + 0.5),
                                      "output size"));
      }
      for (size_t i = 0; i < count; ++i)
        fullScales[size_t(axes[i])] = scale;
    } else {
      for (size_t i = 0; i < count; ++i)
        fullScales[size_t(axes[i])] = double(sizes[i]) / double((*inShape)[size_t(axes[i])]);
    }
    for (size_t i = 0; i < count; ++i)
      outShape[size_t(axes[i])] = sizes[i];
  } else {
    for (size_t i = 0; i < count; ++i) {
      size_t d = size_t(axes[i]);
      fullScales[d] = scales[i];
      double extent = coordinates == "tf_crop_and_resize" ? fullRoi[rank + d] - fullRoi[d] : 1.0;
      TC_ASSIGN_OR_RETURN(
          outShape[d],
          c.dimFromDouble(std::floor(double((*inShape)[d]) * extent * scales[i]), "output size"));
    }
  }
  AttrMap attrs;
  attrs.emplace("size", Attribute(outShape));
  attrs.emplace("scales", Attribute(fullScales));
  attrs.emplace("roi", Attribute(fullRoi));
  attrs.emplace("mode", Attribute(mode));
  attrs.emplace("coordinate_transformation_mode", Attribute(coordinates));
  attrs.emplace("nearest_mode", Attribute(nearest));
  attrs.emplace("cubic_coeff_a", Attribute(c.floatAttr("cubic_coeff_a", -0.75)));
  attrs.emplace("exclude_outside", Attribute(c.intAttr("exclude_outside", 0) != 0));
  attrs.emplace("extrapolation_value", Attribute(c.floatAttr("extrapolation_value", 0.0)));
  attrs.emplace("antialias", Attribute(c.intAttr("antialias", 0) != 0));
  TC_ASSIGN_OR_RETURN(Value * y, c.emit("prims.resize", {x}, std::move(attrs)));
  return c.setOutput(0, y);
}

} // namespace tensorc::onnx
