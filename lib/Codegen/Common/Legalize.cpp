// Legalization: each torch rule (Python division and remainder, safe integer division, shifts past
// the width, pow's special cases, bool arithmetic, casts, f16/bf16 computed in f32) written once,
// as plain loop-IR operations.
#include "tensorc/Codegen/Common/Legalize.h"

#include "tensorc/Lowering/ExprVisitor.h"

#include <cmath>
#include <limits>
#include <unordered_map>

namespace tensorc::codegen {

namespace {

using loop::BinaryOp;
using loop::Expr;
using loop::ExprKind;
using loop::ExprRef;
using loop::UnaryOp;

bool isHalf(DType dtype) { return dtype == DType::F16 || dtype == DType::BF16; }

/// Builds plain operations, folding the few constant cases the expansions create (so that
/// integer pow by a constant is a few multiplies).
class Builder {
public:
  static ExprRef constant(double value, DType dtype) {
    if (isFloating(dtype))
      return loop::makeConstant(value, dtype);
    return loop::makeIntConstant(int64_t(value), dtype);
  }
  static ExprRef zero(DType dtype) { return constant(0, dtype); }
  static ExprRef boolean(bool value) { return loop::makeIntConstant(value, DType::Bool); }

  static bool isConstant(const ExprRef &e) { return e->kind == ExprKind::Constant; }
  static bool truth(const ExprRef &e) { return e->intValue != 0 || e->value != 0; }
  static bool isIntConstant(const ExprRef &e, int64_t value) {
    return isConstant(e) && !isFloating(e->dtype) && e->intValue == value;
  }

  static ExprRef unary(UnaryOp op, ExprRef x) { return loop::makeUnary(op, std::move(x)); }

  static ExprRef binary(BinaryOp op, ExprRef a, ExprRef b) {
    if (isConstant(a) && isConstant(b) && !isFloating(a->dtype)) {
      int64_t x = a->intValue, y = b->intValue;
      switch (op) {
      case BinaryOp::BitwiseAnd:
        return loop::makeIntConstant(x & y, a->dtype);
      case BinaryOp::Shr:
        return loop::makeIntConstant(x >> y, a->dtype);
      case BinaryOp::Eq:
        return boolean(x == y);
      case BinaryOp::Ne:
        return boolean(x != y);
      case BinaryOp::Lt:
        return boolean(isSignedInteger(a->dtype) ? x < y : uint64_t(x) < uint64_t(y));
      case BinaryOp::LogicalAnd:
        return boolean(truth(a) && truth(b));
      case BinaryOp::LogicalOr:
        return boolean(truth(a) || truth(b));
      default:
        break;
      }
    }
    if (op == BinaryOp::Mul && isIntConstant(a, 1))
      return b;
    return loop::makeBinary(op, std::move(a), std::move(b));
  }

  static ExprRef select(ExprRef cond, ExprRef a, ExprRef b) {
    if (isConstant(cond))
      return truth(cond) ? a : b;
    return loop::makeSelect(std::move(cond), std::move(a), std::move(b));
  }

  static ExprRef notBool(ExprRef x) { return unary(UnaryOp::BitwiseNot, std::move(x)); }
  static ExprRef toBool(ExprRef x) {
    if (x->dtype == DType::Bool)
      return x;
    DType dtype = x->dtype;
    return binary(BinaryOp::Ne, std::move(x), zero(dtype));
  }

  /// x converted to `to` by the cast rules (see Legalize.h); `to` may be f16/bf16, which gives
  /// the rounded value as f32.
  static ExprRef castTo(ExprRef x, DType to) {
    DType from = x->dtype;
    if (to == DType::Bool)
      return toBool(std::move(x));
    if (isHalf(to))
      return loop::makeCast(loop::makeCast(castTo(std::move(x), DType::F32), to), DType::F32);
    if (from == to)
      return x;
    if (isFloating(from) && !isFloating(to)) {
      // torch on x86 converts through a 32-bit (64-bit for u32) integer and wraps.
      if (to == DType::I8 || to == DType::I16 || to == DType::U8 || to == DType::U16)
        return loop::makeCast(loop::makeCast(std::move(x), DType::I32), to);
      if (to == DType::U32)
        return loop::makeCast(loop::makeCast(std::move(x), DType::I64), to);
    }
    return loop::makeCast(std::move(x), to);
  }
};

using B = Builder;

class Legalizer {
public:
  explicit Legalizer(const loop::LoopProgram &program, const LegalizeOptions &options)
      : program_(program), options_(options) {}

  ExprRef run(const ExprRef &root) {
    if (!root)
      return root;
    for (const ExprRef &expr : loop::postOrder(root)) {
      if (memo_.count(expr.get()))
        continue;
      std::vector<ExprRef> operands;
      for (const ExprRef &operand : expr->operands)
        operands.push_back(memo_.at(operand.get()));
      memo_.emplace(expr.get(), legalize(expr, operands));
    }
    return memo_.at(root.get());
  }

private:
  ExprRef legalize(const ExprRef &expr, const std::vector<ExprRef> &ops);
  ExprRef load(const ExprRef &expr, const std::vector<ExprRef> &ops);
  ExprRef unary(const ExprRef &expr, const ExprRef &x);
  ExprRef binary(const ExprRef &expr, const ExprRef &a, const ExprRef &b);
  ExprRef divide(BinaryOp op, const ExprRef &a, const ExprRef &b);
  ExprRef shift(BinaryOp op, const ExprRef &a, const ExprRef &b);
  ExprRef floatPow(const ExprRef &x, const ExprRef &y);
  ExprRef intPow(const ExprRef &x, const ExprRef &y);

  const loop::LoopProgram &program_;
  const LegalizeOptions &options_;
  std::unordered_map<const Expr *, ExprRef> memo_;
};

ExprRef Legalizer::legalize(const ExprRef &expr, const std::vector<ExprRef> &ops) {
  switch (expr->kind) {
  case ExprKind::Constant:
    return isHalf(expr->dtype) ? loop::makeConstant(expr->value, DType::F32) : expr;
  case ExprKind::Load:
  case ExprKind::IndirectLoad:
    return load(expr, ops);
  case ExprKind::Index:
    if (expr->dtype == DType::I64)
      return expr;
    return B::castTo(loop::makeIndex(expr->index, DType::I64), expr->dtype);
  case ExprKind::Unary:
    return unary(expr, ops[0]);
  case ExprKind::Binary:
    return binary(expr, ops[0], ops[1]);
  case ExprKind::Select:
    if (ops == expr->operands)
      return expr;
    return loop::makeSelect(ops[0], ops[1], ops[2]);
  case ExprKind::Cast:
    return B::castTo(ops[0], expr->dtype);
  }
  return expr;
}

// A load gives its buffer's dtype (f32 for f16/bf16 buffers, whose values f32 holds exactly),
// then casts to the dtype the expression asked for.
ExprRef Legalizer::load(const ExprRef &expr, const std::vector<ExprRef> &ops) {
  DType stored = program_.buffers[size_t(expr->buffer)].dtype;
  DType reg = isHalf(stored) ? DType::F32 : stored;
  ExprRef loaded = expr;
  if (expr->dtype != reg || (!ops.empty() && ops[0] != expr->operands[0]))
    loaded = expr->kind == ExprKind::Load
                 ? loop::makeLoad(expr->buffer, reg, expr->index)
                 : loop::makeIndirectLoad(expr->buffer, reg, expr->index, ops[0]);
  if (expr->dtype == stored || expr->dtype == reg)
    return loaded;
  return B::castTo(loaded, expr->dtype);
}

ExprRef Legalizer::unary(const ExprRef &expr, const ExprRef &x) {
  DType t = x->dtype;
  bool isFloat = isFloating(t), isSigned = isSignedInteger(t), isBool = t == DType::Bool;
  switch (expr->unary) {
  case UnaryOp::Neg:
    if (isBool)
      return x;
    break;
  case UnaryOp::Abs:
    if (!isFloat && !isSigned)
      return x;
    break;
  case UnaryOp::Reciprocal:
    if (isFloat)
      return B::binary(BinaryOp::Div, B::constant(1, t), x);
    break;
  case UnaryOp::Floor:
  case UnaryOp::Ceil:
  case UnaryOp::Round:
    if (!isFloat)
      return x;
    break;
  case UnaryOp::Sign: // torch: (0 < x) - (x < 0), so NaN and -0 give 0
    if (isBool)
      return x;
    if (!isFloat && !isSigned)
      return B::castTo(B::binary(BinaryOp::Ne, x, B::zero(t)), t);
    return B::binary(BinaryOp::Sub, B::castTo(B::binary(BinaryOp::Gt, x, B::zero(t)), t),
                     B::castTo(B::binary(BinaryOp::Lt, x, B::zero(t)), t));
  case UnaryOp::Relu: // maximum keeps NaN, as torch's clamp_min does
    if (!isFloat && !isSigned)
      return x;
    return B::binary(BinaryOp::Maximum, x, B::zero(t));
  case UnaryOp::LogicalNot: // NaN is true, so not NaN is false
    return B::binary(BinaryOp::Eq, x, B::zero(t));
  case UnaryOp::IsNan:
    if (!isFloat)
      return B::boolean(false);
    break;
  case UnaryOp::Exp:
  case UnaryOp::Log:
  case UnaryOp::Sqrt:
  case UnaryOp::Rsqrt:
  case UnaryOp::Tanh:
  case UnaryOp::Sigmoid:
  case UnaryOp::Erf:
  case UnaryOp::BitwiseNot:
    break;
  }
  return x == expr->operands[0] ? expr : B::unary(expr->unary, x);
}

ExprRef Legalizer::binary(const ExprRef &expr, const ExprRef &a, const ExprRef &b) {
  DType t = a->dtype;
  bool isFloat = isFloating(t), isBool = t == DType::Bool;
  BinaryOp op = expr->binary;
  switch (op) {
  case BinaryOp::Add:
  case BinaryOp::Sub:
  case BinaryOp::Mul:
  case BinaryOp::Maximum:
  case BinaryOp::Minimum:
    if (!isBool)
      break;
    // bool arithmetic is logic: + and max are or, * and min are and, - is xor.
    if (op == BinaryOp::Add || op == BinaryOp::Maximum)
      return B::binary(BinaryOp::LogicalOr, a, b);
    if (op == BinaryOp::Sub)
      return B::binary(BinaryOp::LogicalXor, a, b);
    return B::binary(BinaryOp::LogicalAnd, a, b);
  case BinaryOp::Div:
  case BinaryOp::Remainder:
  case BinaryOp::Fmod:
    return divide(op, a, b);
  case BinaryOp::Pow:
    if (isFloat)
      return floatPow(a, b);
    if (isBool) // x ** y: true unless x is false and y true
      return B::binary(BinaryOp::LogicalOr, a, B::notBool(b));
    return intPow(a, b);
  case BinaryOp::LogicalAnd:
  case BinaryOp::LogicalOr:
  case BinaryOp::LogicalXor:
    return B::binary(op, B::toBool(a), B::toBool(b));
  case BinaryOp::Shl:
  case BinaryOp::Shr:
    if (!isFloat && !isBool)
      return shift(op, a, b);
    break;
  case BinaryOp::Eq:
  case BinaryOp::Ne:
  case BinaryOp::Lt:
  case BinaryOp::Le:
  case BinaryOp::Gt:
  case BinaryOp::Ge:
  case BinaryOp::BitwiseAnd:
  case BinaryOp::BitwiseOr:
  case BinaryOp::BitwiseXor:
    break;
  }
  if (a == expr->operands[0] && b == expr->operands[1])
    return expr;
  return B::binary(op, a, b);
}

// Integer division never by 0 (nor -1 when signed, which would overflow for INT_MIN); torch's
// results for those are selected around it. Remainder takes the divisor's sign (Python), fmod
// the dividend's (C).
ExprRef Legalizer::divide(BinaryOp op, const ExprRef &a, const ExprRef &b) {
  DType t = a->dtype;
  if (t == DType::Bool) // x / true == x; x % y is x where y is false
    return op == BinaryOp::Div ? a : B::binary(BinaryOp::LogicalAnd, a, B::notBool(b));
  ExprRef zero = B::zero(t);
  auto adjustToDivisorSign = [&](const ExprRef &r) {
    ExprRef differ = B::binary(BinaryOp::LogicalXor, B::binary(BinaryOp::Lt, r, zero),
                               B::binary(BinaryOp::Lt, b, zero));
    ExprRef adjust = B::binary(BinaryOp::LogicalAnd, B::binary(BinaryOp::Ne, r, zero), differ);
    return B::select(adjust, B::binary(BinaryOp::Add, r, b), r);
  };
  if (isFloating(t)) {
    if (op == BinaryOp::Div)
      return B::binary(op, a, b);
    ExprRef r = B::binary(BinaryOp::Fmod, a, b);
    return op == BinaryOp::Fmod ? r : adjustToDivisorSign(r);
  }
  ExprRef one = B::constant(1, t);
  ExprRef isZero = B::binary(BinaryOp::Eq, b, zero);
  BinaryOp plain = op == BinaryOp::Div ? BinaryOp::Div : BinaryOp::Fmod;
  if (!isSignedInteger(t))
    return B::binary(plain, a, B::select(isZero, one, b));
  ExprRef isMinusOne = B::binary(BinaryOp::Eq, b, B::constant(-1, t));
  ExprRef safe = B::select(B::binary(BinaryOp::LogicalOr, isZero, isMinusOne), one, b);
  ExprRef result = B::binary(plain, a, safe);
  if (op == BinaryOp::Div) // x / -1 == -x, wrapping for INT_MIN
    return B::select(isMinusOne, B::binary(BinaryOp::Sub, zero, a), result);
  return op == BinaryOp::Fmod ? result : adjustToDivisorSign(result);
}

// Shift amounts past the width (or negative) give 0, or the sign for >> of negatives; the plain
// shift only ever sees amounts inside the width.
ExprRef Legalizer::shift(BinaryOp op, const ExprRef &a, const ExprRef &b) {
  DType t = a->dtype;
  int64_t width = int64_t(dtypeSize(t) * 8);
  ExprRef zero = B::zero(t);
  ExprRef outside = B::binary(BinaryOp::Ge, b, B::constant(double(width), t));
  if (isSignedInteger(t))
    outside = B::binary(BinaryOp::LogicalOr, B::binary(BinaryOp::Lt, b, zero), outside);
  if (op == BinaryOp::Shr && isSignedInteger(t))
    return B::binary(op, a, B::select(outside, B::constant(double(width - 1), t), b));
  return B::select(outside, zero, B::binary(op, a, B::select(outside, zero, b)));
}

ExprRef Legalizer::floatPow(const ExprRef &x, const ExprRef &y) {
  DType t = x->dtype;
  auto c = [t](double v) { return B::constant(v, t); };
  auto mul = [](const ExprRef &p, const ExprRef &q) { return B::binary(BinaryOp::Mul, p, q); };
  auto div = [](const ExprRef &p, const ExprRef &q) { return B::binary(BinaryOp::Div, p, q); };
  // Small constant exponents, as torch special-cases them: exact and cheap. An integer exponent
  // may reach here cast (an f16/bf16 one is a constant cast to the narrow type and back to f32):
  // each value below is exact in every float dtype, and its multiplies keep pow's results at
  // zeros, infinities and NaN. +-0.5 only as a constant of x's own dtype.
  const Expr *constant = y.get();
  while (constant->kind == ExprKind::Cast && isFloating(constant->dtype))
    constant = constant->operands[0].get();
  if (constant->kind == ExprKind::Constant) {
    double e = constant->value;
    if (e == 0)
      return c(1);
    if (e == 1)
      return x;
    if (e == 2)
      return mul(x, x);
    if (e == 3)
      return mul(mul(x, x), x);
    if (e == -1)
      return div(c(1), x);
    if (e == -2)
      return div(c(1), mul(x, x));
  }
  if (y->kind == ExprKind::Constant && y->value == 0.5)
    return B::unary(UnaryOp::Sqrt, x);
  if (y->kind == ExprKind::Constant && y->value == -0.5)
    return B::unary(UnaryOp::Rsqrt, x);
  if (options_.nativeFloatPow)
    return B::binary(BinaryOp::Pow, x, y);
  // |x|^y = exp(y log |x|), then C's rules: a negative (or -0) base with an odd integer exponent
  // flips the sign, a finite negative base with a non-integer exponent is NaN, and pow(x, 0) and
  // pow(1, y) are 1 even for NaN.
  auto bin = [](BinaryOp op, const ExprRef &p, const ExprRef &q) { return B::binary(op, p, q); };
  ExprRef magnitude =
      B::unary(UnaryOp::Exp, mul(y, B::unary(UnaryOp::Log, B::unary(UnaryOp::Abs, x))));
  ExprRef yInteger = bin(BinaryOp::Eq, B::unary(UnaryOp::Floor, y), y);
  ExprRef half = mul(y, c(0.5));
  ExprRef yOdd =
      bin(BinaryOp::LogicalAnd, yInteger, bin(BinaryOp::Ne, B::unary(UnaryOp::Floor, half), half));
  ExprRef xNegative = bin(BinaryOp::Lt, x, c(0));
  // 1 / -0 is -inf: the sign of a zero base.
  ExprRef signBit = bin(BinaryOp::LogicalOr, xNegative, bin(BinaryOp::Lt, div(c(1), x), c(0)));
  ExprRef result = B::select(bin(BinaryOp::LogicalAnd, yOdd, signBit),
                             B::unary(UnaryOp::Neg, magnitude), magnitude);
  ExprRef finiteNegative = bin(BinaryOp::LogicalAnd, xNegative,
                               bin(BinaryOp::Gt, x, c(-std::numeric_limits<double>::infinity())));
  ExprRef nan = bin(BinaryOp::LogicalAnd, finiteNegative, B::notBool(yInteger));
  result = B::select(nan, c(std::numeric_limits<double>::quiet_NaN()), result);
  ExprRef one = bin(BinaryOp::LogicalOr, bin(BinaryOp::Eq, y, c(0)), bin(BinaryOp::Eq, x, c(1)));
  // pow(-1, +-inf) is 1 too (log |x| * y would be 0 * inf).
  ExprRef minusOneToInf =
      bin(BinaryOp::LogicalAnd, bin(BinaryOp::Eq, x, c(-1)),
          bin(BinaryOp::Eq, B::unary(UnaryOp::Abs, y), c(std::numeric_limits<double>::infinity())));
  one = bin(BinaryOp::LogicalOr, one, minusOneToInf);
  return B::select(one, c(1), result);
}

// Square-and-multiply over every exponent bit with selects (no branches, so it vectorizes);
// negative exponents give 1 / x^|y| truncated: 1 for x == 1, +-1 for x == -1, else 0.
ExprRef Legalizer::intPow(const ExprRef &x, const ExprRef &y) {
  DType t = x->dtype;
  auto c = [t](double v) { return B::constant(v, t); };
  ExprRef result = c(1), base = x, e = y;
  for (size_t i = 0; i < dtypeSize(t) * 8; ++i) {
    ExprRef bit = B::binary(BinaryOp::Ne, B::binary(BinaryOp::BitwiseAnd, e, c(1)), c(0));
    result = B::select(bit, B::binary(BinaryOp::Mul, result, base), result);
    if (i + 1 == dtypeSize(t) * 8)
      break;
    base = B::binary(BinaryOp::Mul, base, base);
    e = B::binary(BinaryOp::Shr, e, c(1));
  }
  if (!isSignedInteger(t))
    return result;
  ExprRef odd = B::binary(BinaryOp::Ne, B::binary(BinaryOp::BitwiseAnd, y, c(1)), c(0));
  ExprRef inverse =
      B::select(B::binary(BinaryOp::Eq, x, c(1)), c(1),
                B::select(B::binary(BinaryOp::Eq, x, c(-1)), B::select(odd, c(-1), c(1)), c(0)));
  return B::select(B::binary(BinaryOp::Lt, y, c(0)), inverse, result);
}

} // namespace

loop::LoopProgram legalize(const loop::LoopProgram &program, const LegalizeOptions &options) {
  loop::LoopProgram legal = program;
  Legalizer legalizer(program, options);
  for (loop::LoopNode &node : legal.nodes)
    node.body = legalizer.run(node.body);
  return legal;
}

} // namespace tensorc::codegen
