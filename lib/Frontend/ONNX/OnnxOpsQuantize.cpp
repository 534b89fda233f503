// ONNX converters for quantized and integer ops: QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv.
#include "NNHelpers.h"
#include "OnnxConverters.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tensorc::onnx {

using namespace nn;

namespace {

/// Input `i` minus zero point `zp` (input index, optional), computed in `dtype`. A per-row zero
/// point of the left operand ([M]) is reshaped to [M, 1].
Expected<Value *> centered(ConvertContext &c, size_t i, size_t zp, DType dtype, int64_t axis = -1,
                           size_t rank = 0) {
  TC_ASSIGN_OR_RETURN(Value * value, c.input(i));
  TC_ASSIGN_OR_RETURN(value, c.cast(value, dtype));
  if (!c.hasInput(zp))
    return value;
  TC_ASSIGN_OR_RETURN(Value * point, c.input(zp));
  TC_ASSIGN_OR_RETURN(point, c.cast(point, dtype));
  if (axis >= 0) {
    TC_ASSIGN_OR_RETURN(point, alongAxis(c, point, axis, rank));
  }
  return binary(c, "aten.sub", value, point);
}

/// The i32 product of input 0 and input `b`, each minus its zero point (input 2, a per-row one
/// for input 0; input `bZero`).
Expected<Value *> integerMatMul(ConvertContext &c, size_t b, size_t bZero) {
  TC_ASSIGN_OR_RETURN(TensorType aType, c.inputType(0));
  int64_t rowAxis = aType.rank() >= 2 ? int64_t(aType.rank()) - 2 : -1;
  TC_ASSIGN_OR_RETURN(Value * left, centered(c, 0, 2, DType::I32, rowAxis, aType.rank()));
  TC_ASSIGN_OR_RETURN(Value * right, centered(c, b, bZero, DType::I32));
  return c.emit("aten.matmul", {left, right});
}

} // namespace

Status convertMatMulInteger(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * y, integerMatMul(c, 1, 3));
  return c.setOutput(0, y);
}

namespace {

Expected<Value *> integerConv(ConvertContext &c, Value *x, Value *w) {
  size_t dims = w->type().rank() - 2;
  std::optional<std::vector<int64_t>> wShape = w->type().staticShape();
  if (!wShape)
    return c.error("the weight shape must be static");
  if (w->type().rank() < 3 || x->type().rank() != w->type().rank())
    return c.error(strCat("expected an input and a weight of one rank >= 3, got ", x->type().str(),
                          " and ", w->type().str()));
  TC_ASSIGN_OR_RETURN(Ints kernel, kernelShape(c, dims, Ints(wShape->begin() + 2, wShape->end())));
  return convolution(c, x, w, nullptr, kernel);
}

} // namespace

Status convertConvInteger(ConvertContext &c) {
  // Integer products summed in f64 are exact; the zero-point shift makes padding read zero.
  TC_ASSIGN_OR_RETURN(TensorType wType, c.inputType(1));
  TC_ASSIGN_OR_RETURN(Value * x, centered(c, 0, 2, DType::F64));
  TC_ASSIGN_OR_RETURN(Value * w, centered(c, 1, 3, DType::F64, 0, wType.rank()));
  TC_ASSIGN_OR_RETURN(Value * y, integerConv(c, x, w));
  TC_ASSIGN_OR_RETURN(y, c.cast(y, DType::I32));
  return c.setOutput(0, y);
}

// ---- Quantization ----------------------------------------------------------------------------

namespace {

std::pair<double, double> integerRange(DType dtype) {
  switch (dtype) {
  case DType::U8:
    return {0, 255};
  case DType::U16:
    return {0, 65535};
  case DType::I8:
    return {-128, 127};
  case DType::I16:
    return {-32768, 32767};
  case DType::I32:
    return {-2147483648.0, 2147483647.0};
  default:
    return {0, 0};
  }
}

/// saturate(round_half_even(value) + zeroPoint) converted to `dtype`; `value` and `zeroPoint`
/// are f32 (zeroPoint may be null).
Expected<Value *> quantize(ConvertContext &c, Value *value, Value *zeroPoint, DType dtype) {
  TC_ASSIGN_OR_RETURN(Value * y, c.emit("aten.round", {value}));
  if (zeroPoint) {
    TC_ASSIGN_OR_RETURN(y, binary(c, "aten.add", y, zeroPoint));
  }
  auto [lo, hi] = integerRange(dtype);
  if (lo == hi)
    return c.error(strCat("quantizing to ", dtypeName(dtype), " is not supported"));
  AttrMap attrs;
  attrs.emplace("min", Attribute(lo));
  attrs.emplace("max", Attribute(hi));
  TC_ASSIGN_OR_RETURN(y, c.emit("aten.clamp", {y}, std::move(attrs)));
  return c.cast(y, dtype);
}

/// The axis a per-axis scale applies along (opset >= 13 attribute), normalized. Only a per-axis
/// (1-D, more than one element) scale or zero point uses it, and alongAxis checks it then: with a
/// per-tensor scale the default axis 1 may well be out of range (a 1-D input), and is ignored.
Expected<int64_t> quantAxis(ConvertContext &c, size_t rank) {
  int64_t axis = c.intAttr("axis", 1);
  return axis < 0 ? axis + int64_t(rank) : axis;
}

} // namespace

Status convertQuantizeLinear(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  TC_ASSIGN_OR_RETURN(Value * scale, c.input(1));
  size_t rank = x->type().rank();
  TC_ASSIGN_OR_RETURN(int64_t axis, quantAxis(c, rank));
  DType computeType = x->type().dtype == DType::F64 ? DType::F64 : DType::F32;
  TC_ASSIGN_OR_RETURN(x, c.cast(x, computeType));
  TC_ASSIGN_OR_RETURN(scale, c.cast(scale, computeType));
  TC_ASSIGN_OR_RETURN(scale, alongAxis(c, scale, axis, rank));
  DType dtype = DType::U8;
  Value *zeroPoint = nullptr;
  if (c.hasInput(2)) {
    TC_ASSIGN_OR_RETURN(zeroPoint, c.input(2));
    dtype = zeroPoint->type().dtype;
    TC_ASSIGN_OR_RETURN(zeroPoint, c.cast(zeroPoint, computeType));
    TC_ASSIGN_OR_RETURN(zeroPoint, alongAxis(c, zeroPoint, axis, rank));
  }
  TC_ASSIGN_OR_RETURN(Value * scaled, binary(c, "aten.div", x, scale));
  TC_ASSIGN_OR_RETURN(Value * y, quantize(c, scaled, zeroPoint, dtype));
  return c.setOutput(0, y);
}

Status convertDequantizeLinear(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  TC_ASSIGN_OR_RETURN(Value * scale, c.input(1));
  size_t rank = x->type().rank();
  TC_ASSIGN_OR_RETURN(int64_t axis, quantAxis(c, rank));
  DType outType = scale->type().dtype;
  DType computeType = outType == DType::F64 ? DType::F64 : DType::F32;
  TC_ASSIGN_OR_RETURN(Value * value, c.cast(x, computeType));
  if (c.hasInput(2)) {
    TC_ASSIGN_OR_RETURN(Value * zeroPoint, c.input(2));
    TC_ASSIGN_OR_RETURN(zeroPoint, c.cast(zeroPoint, computeType));
    TC_ASSIGN_OR_RETURN(zeroPoint, alongAxis(c, zeroPoint, axis, rank));
    TC_ASSIGN_OR_RETURN(value, binary(c, "aten.sub", value, zeroPoint));
  }
  TC_ASSIGN_OR_RETURN(scale, c.cast(scale, computeType));
  TC_ASSIGN_OR_RETURN(scale, alongAxis(c, scale, axis, rank));
  TC_ASSIGN_OR_RETURN(Value * y, binary(c, "aten.mul", value, scale));
  TC_ASSIGN_OR_RETURN(y, c.cast(y, outType));
  return c.setOutput(0, y);
}

Status convertDynamicQuantizeLinear(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  TC_ASSIGN_OR_RETURN(Value * zero, c.scalar(0, DType::F32));
  TC_ASSIGN_OR_RETURN(Value * low, c.emit("aten.amin", {x}));
  TC_ASSIGN_OR_RETURN(low, binary(c, "aten.minimum", low, zero));
  TC_ASSIGN_OR_RETURN(Value * high, c.emit("aten.amax", {x}));
  TC_ASSIGN_OR_RETURN(high, binary(c, "aten.maximum", high, zero));
  TC_ASSIGN_OR_RETURN(Value * range, binary(c, "aten.sub", high, low));
  TC_ASSIGN_OR_RETURN(Value * levels, c.scalar(255, DType::F32));
  TC_ASSIGN_OR_RETURN(Value * scale, binary(c, "aten.div", range, levels));
  TC_ASSIGN_OR_RETURN(Value * negLow, c.emit("aten.neg", {low}));
  TC_ASSIGN_OR_RETURN(Value * zpReal, binary(c, "aten.div", negLow, scale));
  TC_ASSIGN_OR_RETURN(Value * zeroPoint, quantize(c, zpReal, nullptr, DType::U8));
  TC_ASSIGN_OR_RETURN(Value * scaled, binary(c, "aten.div", x, scale));
  TC_ASSIGN_OR_RETURN(Value * zpFloat, c.cast(zeroPoint, DType::F32));
  TC_ASSIGN_OR_RETURN(Value * y, quantize(c, scaled, zpFloat, DType::U8));
  TC_RETURN_IF_ERROR(c.setOutput(0, y));
  if (c.hasOutput(1))
    TC_RETURN_IF_ERROR(c.setOutput(1, scale));
  if (c.hasOutput(2))
    TC_RETURN_IF_ERROR(c.setOutput(2, zeroPoint));
  return Status::ok();
}

namespace {

/// round((int product) * aScale * bScale / yScale) + yZero, saturated: QLinearMatMul/QLinearConv.
Expected<Value *> requantize(ConvertContext &c, Value *product, size_t aScale, size_t bScale,
                             size_t yScale, size_t yZero, int64_t bAxis, size_t rank) {
  TC_ASSIGN_OR_RETURN(Value * as, c.input(aScale));
  TC_ASSIGN_OR_RETURN(Value * bs, c.input(bScale));
  TC_ASSIGN_OR_RETURN(Value * ys, c.input(yScale));
  TC_ASSIGN_OR_RETURN(as, c.cast(as, DType::F32));
  TC_ASSIGN_OR_RETURN(bs, c.cast(bs, DType::F32));
  TC_ASSIGN_OR_RETURN(ys, c.cast(ys, DType::F32));
  if (bAxis >= 0) {
    TC_ASSIGN_OR_RETURN(bs, alongAxis(c, bs, bAxis, rank));
  }
  TC_ASSIGN_OR_RETURN(Value * y, c.cast(product, DType::F32));
  TC_ASSIGN_OR_RETURN(Value * factor, binary(c, "aten.mul", as, bs));
  TC_ASSIGN_OR_RETURN(factor, binary(c, "aten.div", factor, ys));
  TC_ASSIGN_OR_RETURN(y, binary(c, "aten.mul", y, factor));
  DType dtype = DType::U8;
  Value *zeroPoint = nullptr;
  if (c.hasInput(yZero)) {
    TC_ASSIGN_OR_RETURN(zeroPoint, c.input(yZero));
    dtype = zeroPoint->type().dtype;
    TC_ASSIGN_OR_RETURN(zeroPoint, c.cast(zeroPoint, DType::F32));
  }
  return quantize(c, y, zeroPoint, dtype);
}

} // namespace

Status convertQLinearMatMul(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * product, integerMatMul(c, 3, 5));
  TC_ASSIGN_OR_RETURN(Value * y, requantize(c, product, 1, 4, 6, 7, -1, 0));
  return c.setOutput(0, y);
}

Status convertQLinearConv(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(TensorType wType, c.inputType(3));
  TC_ASSIGN_OR_RETURN(Value * x, centered(c, 0, 2, DType::F64));
  TC_ASSIGN_OR_RETURN(Value * w, centered(c, 3, 5, DType::F64, 0, wType.rank()));
  TC_ASSIGN_OR_RETURN(Value * product, integerConv(c, x, w));
  if (c.hasInput(8)) {
    TC_ASSIGN_OR_RETURN(Value * bias, c.input(8));
    TC_ASSIGN_OR_RETURN(bias, c.cast(bias, DType::F64));
    TC_ASSIGN_OR_RETURN(bias, alongAxis(c, bias, 1, wType.rank()));
    TC_ASSIGN_OR_RETURN(product, binary(c, "aten.add", product, bias));
  }
  TC_ASSIGN_OR_RETURN(Value * y, requantize(c, product, 1, 4, 6, 7, 1, wType.rank()));
  return c.setOutput(0, y);
}

} // namespace tensorc::onnx
