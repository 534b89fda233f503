// ONNX converters for elementwise math, comparisons, logic and activations.
#include "OnnxConverters.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <string_view>
#include <utility>

namespace tensorc::onnx {

namespace {

/// Emits a two-operand registry op on inputs 0 and 1.
Expected<Value *> binary(ConvertContext &c, std::string_view op, AttrMap attrs = {}) {
  TC_ASSIGN_OR_RETURN(Value * a, c.input(0));
  TC_ASSIGN_OR_RETURN(Value * b, c.input(1));
  return c.emit(op, {a, b}, std::move(attrs));
}

template <char SymbolicOp> Status arithmetic(ConvertContext &c, std::string_view op) {
  TC_ASSIGN_OR_RETURN(bool folded, foldSymbolicBinary(c, SymbolicOp));
  if (folded)
    return Status::ok();
  TC_ASSIGN_OR_RETURN(Value * a, c.input(0));
  TC_ASSIGN_OR_RETURN(Value * b, c.input(1));
  AttrMap attrs;
  if (op == "aten.div" && isIntegral(a->type().dtype))
    attrs.emplace("rounding_mode", Attribute("trunc")); // C-style integer division
  TC_ASSIGN_OR_RETURN(Value * value, c.emit(op, {a, b}, std::move(attrs)));
  return c.setOutput(0, value);
}

} // namespace

Status convertAdd(ConvertContext &c) { return arithmetic<'+'>(c, "aten.add"); }
Status convertSub(ConvertContext &c) { return arithmetic<'-'>(c, "aten.sub"); }
Status convertMul(ConvertContext &c) { return arithmetic<'*'>(c, "aten.mul"); }
Status convertDiv(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(TensorType type, c.inputType(0));
  if (isIntegral(type.dtype))
    return arithmetic<'/'>(c, "aten.div");
  return arithmetic<'\0'>(c, "aten.div");
}

Status convertPow(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * value, binary(c, "aten.pow"));
  TC_ASSIGN_OR_RETURN(TensorType base, c.inputType(0));
  TC_ASSIGN_OR_RETURN(value, c.cast(value, base.dtype)); // ONNX keeps the base's type
  return c.setOutput(0, value);
}

Status convertMod(ConvertContext &c) {
  bool fmod = c.intAttr("fmod", 0) != 0;
  TC_ASSIGN_OR_RETURN(TensorType type, c.inputType(0));
  if (!fmod && isFloating(type.dtype))
    return c.error("fmod=0 is only defined for integers");
  TC_ASSIGN_OR_RETURN(Value * value, binary(c, fmod ? "aten.fmod" : "aten.remainder"));
  return c.setOutput(0, value);
}

Status convertDirect(ConvertContext &c) {
  std::vector<Value *> inputs;
  for (size_t i = 0; i < c.numInputs(); ++i) {
    TC_ASSIGN_OR_RETURN(Value * value, c.input(i));
    inputs.push_back(value);
  }
  TC_ASSIGN_OR_RETURN(Value * value, c.emit(directOp(c.node().op_type()), std::move(inputs)));
  return c.setOutput(0, value);
}

namespace {

/// Max, Min, Sum, Mean over any number of broadcasting inputs.
Status variadic(ConvertContext &c, std::string_view op, bool average) {
  TC_ASSIGN_OR_RETURN(Value * value, c.input(0));
  for (size_t i = 1; i < c.numInputs(); ++i) {
    TC_ASSIGN_OR_RETURN(Value * next, c.input(i));
    TC_ASSIGN_OR_RETURN(value, c.emit(op, {value, next}));
  }
  if (average) {
    TC_ASSIGN_OR_RETURN(Value * count, c.scalar(double(c.numInputs()), value->type().dtype));
    TC_ASSIGN_OR_RETURN(value, c.emit("aten.div", {value, count}));
  } else if (c.numInputs() == 1) {
    TC_ASSIGN_OR_RETURN(value, c.emit("aten.clone", {value}));
  }
  return c.setOutput(0, value);
}

} // namespace

Status convertMax(ConvertContext &c) { return variadic(c, "aten.maximum", false); }
Status convertMin(ConvertContext &c) { return variadic(c, "aten.minimum", false); }
Status convertSum(ConvertContext &c) { return variadic(c, "aten.add", false); }
Status convertMean(ConvertContext &c) { return variadic(c, "aten.add", true); }

Status convertClip(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * value, c.input(0));
  DType dtype = value->type().dtype;
  if (c.opset() < 11) {
    AttrMap attrs;
    attrs.emplace("min", Attribute(c.floatAttr("min", -std::numeric_limits<double>::infinity())));
    attrs.emplace("max", Attribute(c.floatAttr("max", std::numeric_limits<double>::infinity())));
    TC_ASSIGN_OR_RETURN(value, c.emit("aten.clamp", {value}, std::move(attrs)));
    return c.setOutput(0, value);
  }
  // min and max are optional tensors; they need not be constants.
  if (c.hasInput(1)) {
    TC_ASSIGN_OR_RETURN(Value * low, c.input(1));
    TC_ASSIGN_OR_RETURN(value, c.emit("aten.maximum", {value, low}));
  }
  if (c.hasInput(2)) {
    TC_ASSIGN_OR_RETURN(Value * high, c.input(2));
    TC_ASSIGN_OR_RETURN(value, c.emit("aten.minimum", {value, high}));
  }
  if (!c.hasInput(1) && !c.hasInput(2)) {
    TC_ASSIGN_OR_RETURN(value, c.emit("aten.clone", {value}));
  }
  TC_ASSIGN_OR_RETURN(value, c.cast(value, dtype));
  return c.setOutput(0, value);
}

// ---- Activations, composed from primitives -------------------------------------------------

namespace {

/// Small expression builder over one input so the activation formulas read like math.
class Expr {
public:
  Expr(ConvertContext &c, Value *x) : c_(c), x_(x), dtype_(x->type().dtype) {}
  Value *x() const { return x_; }
  Expected<Value *> k(double value) { return c_.scalar(value, dtype_); }
  Expected<Value *> op(std::string_view name, std::vector<Value *> operands, AttrMap attrs = {}) {
    return c_.emit(name, std::move(operands), std::move(attrs));
  }
  /// a * value (value a constant).
  Expected<Value *> scale(Value *a, double value) {
    TC_ASSIGN_OR_RETURN(Value * factor, k(value));
    return op("aten.mul", {a, factor});
  }
  Expected<Value *> addConstant(Value *a, double value) {
    TC_ASSIGN_OR_RETURN(Value * term, k(value));
    return op("aten.add", {a, term});
  }
  /// alpha * (exp(a) - 1)
  Expected<Value *> expm1Scaled(Value *a, double alpha) {
    TC_ASSIGN_OR_RETURN(Value * e, op("aten.exp", {a}));
    TC_ASSIGN_OR_RETURN(Value * m, addConstant(e, -1.0));
    return scale(m, alpha);
  }
  /// x > threshold (or >= when `orEqual`).
  Expected<Value *> above(Value *a, double threshold, bool orEqual = false) {
    TC_ASSIGN_OR_RETURN(Value * t, k(threshold));
    return op(orEqual ? "aten.ge" : "aten.gt", {a, t});
  }
  Expected<Value *> clamp01(Value *a) {
    AttrMap attrs;
    attrs.emplace("min", Attribute(0.0));
    attrs.emplace("max", Attribute(1.0));
    return op("aten.clamp", {a}, std::move(attrs));
  }

private:
  ConvertContext &c_;
  Value *x_;
  DType dtype_;
};

template <typename Build> Status activation(ConvertContext &c, Build build) {
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  Expr e(c, x);
  TC_ASSIGN_OR_RETURN(Value * value, build(e));
  return c.setOutput(0, value);
}

} // namespace

Status convertElu(ConvertContext &c) {
  double alpha = c.floatAttr("alpha", 1.0);
  return activation(c, [&](Expr &e) -> Expected<Value *> {
    TC_ASSIGN_OR_RETURN(Value * negative, e.expm1Scaled(e.x(), alpha));
    TC_ASSIGN_OR_RETURN(Value * positive, e.above(e.x(), 0));
    return e.op("aten.where", {positive, e.x(), negative});
  });
}

Status convertSelu(ConvertContext &c) {
  double alpha = c.floatAttr("alpha", 1.67326319217681884765625);
  double gamma = c.floatAttr("gamma", 1.05070102214813232421875);
  return activation(c, [&](Expr &e) -> Expected<Value *> {
    TC_ASSIGN_OR_RETURN(Value * negative, e.expm1Scaled(e.x(), alpha));
    TC_ASSIGN_OR_RETURN(Value * positive, e.above(e.x(), 0));
    TC_ASSIGN_OR_RETURN(Value * selected, e.op("aten.where", {positive, e.x(), negative}));
    return e.scale(selected, gamma);
  });
}

Status convertCelu(ConvertContext &c) {
  double alpha = c.floatAttr("alpha", 1.0);
  return activation(c, [&](Expr &e) -> Expected<Value *> {
    TC_ASSIGN_OR_RETURN(Value * scaled, e.scale(e.x(), 1.0 / alpha));
    TC_ASSIGN_OR_RETURN(Value * negative, e.expm1Scaled(scaled, alpha));
    TC_ASSIGN_OR_RETURN(Value * zero, e.k(0));
    TC_ASSIGN_OR_RETURN(Value * low, e.op("aten.minimum", {negative, zero}));
    TC_ASSIGN_OR_RETURN(Value * high, e.op("aten.maximum", {e.x(), zero}));
    return e.op("aten.add", {high, low});
  });
}

Status convertLeakyRelu(ConvertContext &c) {
  double alpha = c.floatAttr("alpha", 0.01);
  return activation(c, [&](Expr &e) -> Expected<Value *> {
    TC_ASSIGN_OR_RETURN(Value * scaled, e.scale(e.x(), alpha));
    TC_ASSIGN_OR_RETURN(Value * positive, e.above(e.x(), 0, true));
    return e.op("aten.where", {positive, e.x(), scaled});
  });
}

Status convertThresholdedRelu(ConvertContext &c) {
  double alpha = c.floatAttr("alpha", 1.0);
  return activation(c, [&](Expr &e) -> Expected<Value *> {
    TC_ASSIGN_OR_RETURN(Value * keep, e.above(e.x(), alpha));
    TC_ASSIGN_OR_RETURN(Value * zero, e.k(0));
    return e.op("aten.where", {keep, e.x(), zero});
  });
}

Status convertHardSigmoid(ConvertContext &c) {
  double alpha = c.floatAttr("alpha", 0.2), beta = c.floatAttr("beta", 0.5);
  return activation(c, [&](Expr &e) -> Expected<Value *> {
    TC_ASSIGN_OR_RETURN(Value * scaled, e.scale(e.x(), alpha));
    TC_ASSIGN_OR_RETURN(Value * shifted, e.addConstant(scaled, beta));
    return e.clamp01(shifted);
  });
}

Status convertHardSwish(ConvertContext &c) {
  return activation(c, [&](Expr &e) -> Expected<Value *> {
    TC_ASSIGN_OR_RETURN(Value * scaled, e.scale(e.x(), 1.0 / 6.0));
    TC_ASSIGN_OR_RETURN(Value * shifted, e.addConstant(scaled, 0.5));
    TC_ASSIGN_OR_RETURN(Value * gate, e.clamp01(shifted));
    return e.op("aten.mul", {e.x(), gate});
  });
}

namespace {

/// softplus(x) = max(x, 0) + log(1 + exp(-|x|)), stable for large |x|.
Expected<Value *> softplus(Expr &e, Value *x) {
  TC_ASSIGN_OR_RETURN(Value * zero, e.k(0));
  TC_ASSIGN_OR_RETURN(Value * relu, e.op("aten.maximum", {x, zero}));
  TC_ASSIGN_OR_RETURN(Value * magnitude, e.op("aten.abs", {x}));
  TC_ASSIGN_OR_RETURN(Value * negated, e.op("aten.neg", {magnitude}));
  TC_ASSIGN_OR_RETURN(Value * exponent, e.op("aten.exp", {negated}));
  TC_ASSIGN_OR_RETURN(Value * plusOne, e.addConstant(exponent, 1.0));
  TC_ASSIGN_OR_RETURN(Value * logged, e.op("aten.log", {plusOne}));
  return e.op("aten.add", {relu, logged});
}

} // namespace

Status convertSoftplus(ConvertContext &c) {
  return activation(c, [&](Expr &e) { return softplus(e, e.x()); });
}

Status convertMish(ConvertContext &c) {
  return activation(c, [&](Expr &e) -> Expected<Value *> {
    TC_ASSIGN_OR_RETURN(Value * sp, softplus(e, e.x()));
    TC_ASSIGN_OR_RETURN(Value * t, e.op("aten.tanh", {sp}));
    return e.op("aten.mul", {e.x(), t});
  });
}

Status convertSoftsign(ConvertContext &c) {
  return activation(c, [&](Expr &e) -> Expected<Value *> {
    TC_ASSIGN_OR_RETURN(Value * magnitude, e.op("aten.abs", {e.x()}));
    TC_ASSIGN_OR_RETURN(Value * denominator, e.addConstant(magnitude, 1.0));
    return e.op("aten.div", {e.x(), denominator});
  });
}

Status convertShrink(ConvertContext &c) {
  double bias = c.floatAttr("bias", 0.0), lambd = c.floatAttr("lambd", 0.5);
  return activation(c, [&](Expr &e) -> Expected<Value *> {
    TC_ASSIGN_OR_RETURN(Value * low, e.k(-lambd));
    TC_ASSIGN_OR_RETURN(Value * isLow, e.op("aten.lt", {e.x(), low}));
    TC_ASSIGN_OR_RETURN(Value * isHigh, e.above(e.x(), lambd));
    TC_ASSIGN_OR_RETURN(Value * plus, e.addConstant(e.x(), bias));
    TC_ASSIGN_OR_RETURN(Value * minus, e.addConstant(e.x(), -bias));
    TC_ASSIGN_OR_RETURN(Value * zero, e.k(0));
    TC_ASSIGN_OR_RETURN(Value * upper, e.op("aten.where", {isHigh, minus, zero}));
    return e.op("aten.where", {isLow, plus, upper});
  });
}

Status convertGelu(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  AttrMap attrs;
  attrs.emplace("approximate", Attribute(c.stringAttr("approximate", "none")));
  TC_ASSIGN_OR_RETURN(Value * value, c.emit("aten.gelu", {x}, std::move(attrs)));
  return c.setOutput(0, value);
}

Status convertIsInf(ConvertContext &c) {
  bool positive = c.intAttr("detect_positive", 1) != 0;
  bool negative = c.intAttr("detect_negative", 1) != 0;
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  Value *result = nullptr;
  for (double infinity :
       {std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()}) {
    if ((infinity > 0 && !positive) || (infinity < 0 && !negative))
      continue;
    TC_ASSIGN_OR_RETURN(Value * bound, c.scalar(infinity, x->type().dtype));
    TC_ASSIGN_OR_RETURN(Value * hit, c.emit("aten.eq", {x, bound}));
    if (result) {
      TC_ASSIGN_OR_RETURN(result, c.emit("aten.logical_or", {result, hit}));
    } else {
      result = hit;
    }
  }
  if (!result) {
    AttrMap attrs;
    attrs.emplace("size", Attribute(x->type().shape));
    attrs.emplace("fill_value", Attribute(false));
    attrs.emplace("dtype", Attribute(DType::Bool));
    TC_ASSIGN_OR_RETURN(result, c.emit("aten.full", {}, std::move(attrs)));
  }
  return c.setOutput(0, result);
}

Status convertBitShift(ConvertContext &c) {
  std::string direction = c.stringAttr("direction", "");
  if (direction != "LEFT" && direction != "RIGHT")
    return c.error("direction must be LEFT or RIGHT");
  TC_ASSIGN_OR_RETURN(Value * value, binary(c, direction == "LEFT" ? "aten.bitwise_left_shift"
                                                                   : "aten.bitwise_right_shift"));
  return c.setOutput(0, value);
}

} // namespace tensorc::onnx
