// LoopIR expressions as CUDA C++: dtype-aware arithmetic with torch's NaN, rounding, remainder and
// shift rules (the same as lib/Codegen/CPU/ExprEmitter.cpp), loads and stores in memory form.
#include "ExprRenderer.h"

#include "tensorc/Support/StrCat.h"

#include <cmath>
#include <cstdio>
#include <cstring>

namespace tensorc::cuda {

using loop::BinaryOp;
using loop::Expr;
using loop::ExprKind;
using loop::ExprRef;
using loop::UnaryOp;

const char *registerType(DType dtype) {
  switch (dtype) {
  case DType::F64:
    return "double";
  case DType::F32:
  case DType::F16:
  case DType::BF16:
    return "float";
  case DType::Bool:
    return "bool";
  default:
    return memoryType(dtype);
  }
}

const char *memoryType(DType dtype) {
  switch (dtype) {
  case DType::F64:
    return "double";
  case DType::F32:
    return "float";
  case DType::F16:
  case DType::BF16:
  case DType::U16:
    return "unsigned short";
  case DType::I16:
    return "short";
  case DType::I64:
    return "long long";
  case DType::U64:
    return "unsigned long long";
  case DType::I32:
    return "int";
  case DType::U32:
    return "unsigned int";
  case DType::I8:
    return "signed char";
  case DType::U8:
  case DType::Bool:
    return "unsigned char";
  }
  return "float";
}

std::string fromMemory(DType dtype, const std::string &raw) {
  if (dtype == DType::F16)
    return "tc_h2f(" + raw + ")";
  if (dtype == DType::BF16)
    return "tc_bf2f(" + raw + ")";
  if (dtype == DType::Bool)
    return "(" + raw + " != 0)";
  return raw;
}

std::string toMemory(DType dtype, const std::string &value) {
  if (dtype == DType::F16)
    return "tc_f2h(" + value + ")";
  if (dtype == DType::BF16)
    return "tc_f2bf(" + value + ")";
  if (dtype == DType::Bool)
    return "(unsigned char)(" + value + ")";
  return value;
}

const std::string &prelude() {
  static const std::string text = R"(// tensorc generated CUDA kernels
#define TC_DEVICE __device__ __forceinline__
TC_DEVICE float tc_h2f(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
TC_DEVICE unsigned short tc_f2h(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
TC_DEVICE float tc_bf2f(unsigned short h) { return __uint_as_float(((unsigned)h) << 16); }
TC_DEVICE unsigned short tc_f2bf(float f) {
  unsigned u = __float_as_uint(f);
  if (f != f) return (unsigned short)((u >> 16) | 0x40u);
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
TC_DEVICE float tc_round_h(float f) { return tc_h2f(tc_f2h(f)); }
TC_DEVICE float tc_round_bf(float f) { return f != f ? f : tc_bf2f(tc_f2bf(f)); }
// maximum/minimum propagate NaN, as torch's do.
TC_DEVICE float tc_max(float a, float b) { return (a != a || b != b) ? a + b : fmaxf(a, b); }
TC_DEVICE float tc_min(float a, float b) { return (a != a || b != b) ? a + b : fminf(a, b); }
TC_DEVICE double tc_max(double a, double b) { return (a != a || b != b) ? a + b : fmax(a, b); }
TC_DEVICE double tc_min(double a, double b) { return (a != a || b != b) ? a + b : fmin(a, b); }
// Python floor division and modulo of indices by a positive constant.
TC_DEVICE long long tc_floordiv(long long n, long long d) { return n >= 0 ? n / d : -((d - 1 - n) / d); }
TC_DEVICE long long tc_floormod(long long n, long long d) { long long r = n % d; return r < 0 ? r + d : r; }
// Integer arithmetic that wraps (through unsigned) and divides without trapping.
template <class T> TC_DEVICE T tc_wadd(T a, T b) { return (T)((unsigned long long)a + (unsigned long long)b); }
template <class T> TC_DEVICE T tc_wsub(T a, T b) { return (T)((unsigned long long)a - (unsigned long long)b); }
template <class T> TC_DEVICE T tc_wmul(T a, T b) { return (T)((unsigned long long)a * (unsigned long long)b); }
template <class T> TC_DEVICE T tc_sdiv(T x, T y) { return y == (T)-1 ? tc_wsub((T)0, x) : (T)(x / (y == 0 ? (T)1 : y)); }
template <class T> TC_DEVICE T tc_udiv(T x, T y) { return (T)(x / (y == 0 ? (T)1 : y)); }
template <class T> TC_DEVICE T tc_srem(T x, T y) { return (y == 0 || y == (T)-1) ? (T)0 : (T)(x % y); }
template <class T> TC_DEVICE T tc_urem(T x, T y) { return (T)(x % (y == 0 ? (T)1 : y)); }
template <class T> TC_DEVICE T tc_pyrem(T x, T y) { T r = tc_srem(x, y); return (r != 0 && ((r < 0) != (y < 0))) ? (T)(r + y) : r; }
template <class T> TC_DEVICE T tc_ipow(T x, T y, bool isSigned) {
  T result = 1, base = x; unsigned long long e = (unsigned long long)y;
  for (int i = 0; i < (int)(8 * sizeof(T)); ++i) { if (e & 1ull) result = tc_wmul(result, base); base = tc_wmul(base, base); e >>= 1; }
  if (isSigned && y < 0) return x == (T)1 ? (T)1 : x == (T)-1 ? ((y & 1) ? (T)-1 : (T)1) : (T)0;
  return result;
}
template <class T> TC_DEVICE T tc_shl(T x, T y) { return (unsigned long long)y >= 8 * sizeof(T) ? (T)0 : (T)((unsigned long long)x << y); }
template <class T> TC_DEVICE T tc_shr(T x, T y, bool isSigned) {
  if ((unsigned long long)y >= 8 * sizeof(T)) return isSigned ? (T)(x < 0 ? -1 : 0) : (T)0;
  return (T)(x >> y);
}
template <class T> TC_DEVICE T tc_fpyrem(T x, T y) { T r = fmod(x, y); return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r; }
TC_DEVICE float tc_fpyrem(float x, float y) { float r = fmodf(x, y); return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r; }
// Warp shuffles for every register type (sub-word types travel as int).
TC_DEVICE float tc_shfl_down(float v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }
TC_DEVICE double tc_shfl_down(double v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }
TC_DEVICE long long tc_shfl_down(long long v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }
TC_DEVICE unsigned long long tc_shfl_down(unsigned long long v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }
TC_DEVICE int tc_shfl_down(int v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }
TC_DEVICE unsigned tc_shfl_down(unsigned v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }
TC_DEVICE short tc_shfl_down(short v, int d) { return (short)__shfl_down_sync(0xffffffffu, (int)v, d); }
TC_DEVICE unsigned short tc_shfl_down(unsigned short v, int d) { return (unsigned short)__shfl_down_sync(0xffffffffu, (int)v, d); }
TC_DEVICE signed char tc_shfl_down(signed char v, int d) { return (signed char)__shfl_down_sync(0xffffffffu, (int)v, d); }
TC_DEVICE unsigned char tc_shfl_down(unsigned char v, int d) { return (unsigned char)__shfl_down_sync(0xffffffffu, (int)v, d); }
TC_DEVICE bool tc_shfl_down(bool v, int d) { return __shfl_down_sync(0xffffffffu, (int)v, d) != 0; }
)";
  return text;
}

ExprRenderer::ExprRenderer(const loop::LoopProgram &program, std::vector<std::string> bufferNames)
    : program_(program), bufferNames_(std::move(bufferNames)) {}

std::string ExprRenderer::fail(const std::string &message) {
  if (status_)
    status_ = makeError("CUDA codegen: ", message);
  return "0";
}

std::string ExprRenderer::index(const SymInt &value, const Scope &scope) {
  std::string sum;
  for (const auto &[monomial, coefficient] : value.termList()) {
    std::string term;
    for (const SymInt::AtomPtr &atom : monomial) {
      std::string factor;
      switch (atom->kind) {
      case SymInt::Atom::Kind::Symbol: {
        auto it = scope.find(atom->name);
        if (it == scope.end())
          return fail(strCat("index ", value.str(), " uses '", atom->name,
                             "', which is not a loop variable or shape symbol here"));
        factor = it->second;
        break;
      }
      case SymInt::Atom::Kind::FloorDiv:
        factor = strCat("tc_floordiv(", index(atom->numerator, scope), ", ", atom->denominator,
                        "ll)");
        break;
      case SymInt::Atom::Kind::Mod:
        factor = strCat("tc_floormod(", index(atom->numerator, scope), ", ", atom->denominator,
                        "ll)");
        break;
      }
      term = term.empty() ? factor : term + " * " + factor;
    }
    if (term.empty())
      term = strCat("(", coefficient, "ll)");
    else if (coefficient != 1)
      term = strCat(term, " * (", coefficient, "ll)");
    sum = sum.empty() ? term : sum + " + " + term;
  }
  return sum.empty() ? "0ll" : "(" + sum + ")";
}

std::string ExprRenderer::convert(const std::string &value, DType from, DType to) {
  if (from == to)
    return value;
  if (to == DType::Bool)
    return "(" + value + " != 0)";
  std::string cast = strCat("(", registerType(to), ")(", value, ")");
  if (to == DType::F16)
    return "tc_round_h(" + cast + ")";
  if (to == DType::BF16)
    return "tc_round_bf(" + cast + ")";
  return cast;
}

std::string ExprRenderer::store(int buffer, DType from, const std::string &value,
                                const std::string &at) {
  const loop::Buffer &buf = program_.buffers[size_t(buffer)];
  const std::string &name = bufferNames_[size_t(buffer)];
  if (name.empty()) {
    fail(strCat("buffer ", buf.name, " is written but not a kernel argument"));
    return "";
  }
  return strCat(name, "[", at, "] = ", toMemory(buf.dtype, convert(value, from, buf.dtype)), ";");
}

std::string ExprRenderer::body(const ExprRef &expr, const Scope &scope, std::string &out,
                               const std::string &indent, int overrideBuffer,
                               const std::string &overrideValue) {
  scope_ = &scope;
  out_ = &out;
  indent_ = indent;
  memo_.clear();
  overrideBuffer_ = overrideBuffer;
  overrideValue_ = overrideValue;
  std::string result = emit(expr);
  scope_ = nullptr;
  out_ = nullptr;
  return result;
}

std::string ExprRenderer::constant(const Expr &expr) {
  if (expr.dtype == DType::Bool)
    return (expr.intValue != 0 || expr.value != 0) ? "true" : "false";
  if (!isFloating(expr.dtype)) {
    if (expr.intValue == INT64_MIN)
      return strCat("(", registerType(expr.dtype), ")(-9223372036854775807ll - 1)");
    return strCat("(", registerType(expr.dtype), ")(", expr.intValue, "ll)");
  }
  bool isDouble = expr.dtype == DType::F64;
  double value = isDouble ? expr.value : double(float(expr.value));
  if (std::isnan(value))
    return isDouble ? "__longlong_as_double(0x7ff8000000000000ll)" : "__int_as_float(0x7fc00000)";
  if (std::isinf(value)) {
    if (isDouble)
      return value > 0 ? "__longlong_as_double(0x7ff0000000000000ll)"
                       : "__longlong_as_double((long long)0xfff0000000000000ull)";
    return value > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float((int)0xff800000u)";
  }
  char text[64];
  std::snprintf(text, sizeof text, "%a", value); // exact
  return strCat("(", text, isDouble ? ")" : "f)");
}

std::string ExprRenderer::emit(const ExprRef &expr) {
  if (auto it = memo_.find(expr.get()); it != memo_.end())
    return it->second;
  std::string value;
  switch (expr->kind) {
  case ExprKind::Constant:
    value = constant(*expr);
    break;
  case ExprKind::Load: {
    DType stored = program_.buffers[size_t(expr->buffer)].dtype;
    if (expr->buffer == overrideBuffer_) {
      value = convert(overrideValue_, DType::F32, expr->dtype);
      break;
    }
    if (auto it = loadOverrides_.find(expr->buffer);
        it != loadOverrides_.end() && it->second.first == expr->index) {
      value = convert(it->second.second, stored, expr->dtype);
      break;
    }
    const std::string &name = bufferNames_[size_t(expr->buffer)];
    if (name.empty())
      return fail(strCat("buffer ", program_.buffers[size_t(expr->buffer)].name,
                         " is read but not a kernel argument"));
    std::string raw = strCat(name, "[", index(expr->index, *scope_), "]");
    value = convert(fromMemory(stored, raw), stored, expr->dtype);
    break;
  }
  case ExprKind::IndirectLoad: {
    // A plain element load at the affine index plus the runtime offset; vectorized elementwise
    // kernels render it per element too (no load override: those name affine positions only).
    DType stored = program_.buffers[size_t(expr->buffer)].dtype;
    if (expr->buffer == overrideBuffer_)
      return fail("a gather from a GEMM epilogue's accumulator is not supported");
    const std::string &name = bufferNames_[size_t(expr->buffer)];
    if (name.empty())
      return fail(strCat("buffer ", program_.buffers[size_t(expr->buffer)].name,
                         " is read but not a kernel argument"));
    std::string offset = emit(expr->operands[0]);
    std::string raw = strCat(name, "[", index(expr->index, *scope_), " + ", offset, "]");
    value = convert(fromMemory(stored, raw), stored, expr->dtype);
    break;
  }
  case ExprKind::Index:
    value = convert(index(expr->index, *scope_), DType::I64, expr->dtype);
    break;
  case ExprKind::Unary:
    value = unary(*expr, emit(expr->operands[0]));
    break;
  case ExprKind::Binary: {
    std::string x = emit(expr->operands[0]);
    value = binary(*expr, x, emit(expr->operands[1]));
    break;
  }
  case ExprKind::Select: {
    std::string c = emit(expr->operands[0]);
    std::string x = emit(expr->operands[1]);
    value = strCat(c, " ? ", x, " : ", emit(expr->operands[2]));
    break;
  }
  case ExprKind::Cast:
    value = convert(emit(expr->operands[0]), expr->operands[0]->dtype, expr->dtype);
    break;
  }
  // Constants stay inline; everything else gets a local so shared subexpressions run once.
  if (expr->kind != ExprKind::Constant) {
    std::string local = strCat("v", counter_++);
    *out_ += strCat(indent_, "const ", registerType(expr->dtype), " ", local, " = ", value, ";\n");
    value = local;
  }
  memo_[expr.get()] = value;
  return value;
}

std::string ExprRenderer::unary(const Expr &expr, const std::string &x) {
  DType dtype = expr.operands[0]->dtype;
  bool isFloat = isFloating(dtype), isDouble = dtype == DType::F64;
  bool isSigned = isSignedInteger(dtype);
  auto fn = [&](const char *name) {
    return strCat(name, isDouble ? "" : "f", "(", x, ")");
  };
  auto needsFloat = [&]() {
    return fail(strCat(loop::unaryName(expr.unary), " is not supported for dtype ",
                       dtypeName(dtype)));
  };
  switch (expr.unary) {
  case UnaryOp::Neg:
    if (isFloat)
      return "-" + x;
    return dtype == DType::Bool ? x : strCat("tc_wsub((", registerType(dtype), ")0, ", x, ")");
  case UnaryOp::Abs:
    if (isFloat)
      return fn("fabs");
    return isSigned ? strCat("(", x, " < 0 ? tc_wsub((", registerType(dtype), ")0, ", x, ") : ",
                             x, ")")
                    : x;
  case UnaryOp::Exp:
    return isFloat ? fn("exp") : needsFloat();
  case UnaryOp::Log:
    return isFloat ? fn("log") : needsFloat();
  case UnaryOp::Tanh:
    return isFloat ? fn("tanh") : needsFloat();
  case UnaryOp::Erf:
    return isFloat ? fn("erf") : needsFloat();
  case UnaryOp::Sqrt:
    return isFloat ? fn("sqrt") : needsFloat();
  case UnaryOp::Rsqrt:
    return isFloat ? fn("rsqrt") : needsFloat();
  case UnaryOp::Sigmoid:
    if (!isFloat)
      return needsFloat();
    return isDouble ? strCat("1.0 / (1.0 + exp(-", x, "))")
                    : strCat("1.0f / (1.0f + expf(-", x, "))");
  case UnaryOp::Reciprocal:
    if (!isFloat)
      return needsFloat();
    return strCat(isDouble ? "1.0 / " : "1.0f / ", x);
  case UnaryOp::Floor:
    return isFloat ? fn("floor") : x;
  case UnaryOp::Ceil:
    return isFloat ? fn("ceil") : x;
  case UnaryOp::Round:
    return isFloat ? fn("rint") : x; // half to even
  case UnaryOp::Sign:
    if (isFloat) // (0 < x) - (x < 0): NaN and -0 give 0
      return strCat("(", registerType(dtype), ")((", x, " > 0) - (", x, " < 0))");
    if (dtype == DType::Bool)
      return x;
    if (isSigned)
      return strCat("(", registerType(dtype), ")((", x, " > 0) - (", x, " < 0))");
    return strCat("(", registerType(dtype), ")(", x, " != 0)");
  case UnaryOp::Relu:
    if (isFloat) // keeps NaN, like torch's clamp_min
      return strCat("tc_max(", x, isDouble ? ", 0.0)" : ", 0.0f)");
    return isSigned ? strCat("(", x, " > 0 ? ", x, " : (", registerType(dtype), ")0)") : x;
  case UnaryOp::LogicalNot:
    return strCat("(", x, " == 0)");
  case UnaryOp::BitwiseNot:
    if (isFloat)
      return needsFloat();
    return dtype == DType::Bool ? "!" + x : strCat("(", registerType(dtype), ")(~", x, ")");
  case UnaryOp::IsNan:
    return isFloat ? strCat("(", x, " != ", x, ")") : "false";
  }
  return fail("unknown unary op");
}

std::string ExprRenderer::binary(const Expr &expr, const std::string &x, const std::string &y) {
  DType dtype = expr.operands[0]->dtype;
  bool isFloat = isFloating(dtype), isDouble = dtype == DType::F64;
  bool isSigned = isSignedInteger(dtype), isBool = dtype == DType::Bool;
  std::string type = registerType(dtype);
  auto op = [&](const char *symbol) { return strCat(x, " ", symbol, " ", y); };
  auto call = [&](const std::string &name) { return strCat(name, "(", x, ", ", y, ")"); };
  auto toBool = [&](const std::string &v) { return isBool ? v : "(" + v + " != 0)"; };
  auto unsupported = [&]() {
    return fail(strCat(loop::binaryName(expr.binary), " is not supported for dtype ",
                       dtypeName(dtype)));
  };
  switch (expr.binary) {
  case BinaryOp::Add:
    return isFloat ? op("+") : isBool ? op("||") : call("tc_wadd");
  case BinaryOp::Sub:
    return isFloat ? op("-") : isBool ? op("!=") : call("tc_wsub");
  case BinaryOp::Mul:
    return isFloat ? op("*") : isBool ? op("&&") : call("tc_wmul");
  case BinaryOp::Div:
    if (isFloat)
      return op("/");
    if (isBool)
      return x;
    return call(isSigned ? "tc_sdiv" : "tc_udiv");
  case BinaryOp::Remainder:
    if (isFloat)
      return call("tc_fpyrem");
    if (isBool)
      return strCat("(", x, " && !", y, ")");
    return call(isSigned ? "tc_pyrem" : "tc_urem");
  case BinaryOp::Fmod:
    if (isFloat)
      return call(isDouble ? "fmod" : "fmodf");
    if (isBool)
      return strCat("(", x, " && !", y, ")");
    return call(isSigned ? "tc_srem" : "tc_urem");
  case BinaryOp::Pow: {
    if (isBool)
      return strCat("(", x, " || !", y, ")");
    if (!isFloat)
      return strCat("tc_ipow(", x, ", ", y, isSigned ? ", true)" : ", false)");
    const ExprRef &exponent = expr.operands[1];
    if (exponent->kind == ExprKind::Constant) {
      double e = exponent->value;
      if (e == 1)
        return x;
      if (e == 2)
        return strCat(x, " * ", x);
      if (e == 3)
        return strCat(x, " * ", x, " * ", x);
      if (e == 0.5)
        return strCat(isDouble ? "sqrt(" : "sqrtf(", x, ")");
    }
    return call(isDouble ? "pow" : "powf");
  }
  case BinaryOp::Maximum:
    if (isFloat)
      return call("tc_max");
    return isBool ? op("||") : strCat("(", x, " > ", y, " ? ", x, " : ", y, ")");
  case BinaryOp::Minimum:
    if (isFloat)
      return call("tc_min");
    return isBool ? op("&&") : strCat("(", x, " < ", y, " ? ", x, " : ", y, ")");
  case BinaryOp::Eq:
    return op("==");
  case BinaryOp::Ne:
    return op("!="); // unordered for floats: NaN != NaN
  case BinaryOp::Lt:
    return op("<");
  case BinaryOp::Le:
    return op("<=");
  case BinaryOp::Gt:
    return op(">");
  case BinaryOp::Ge:
    return op(">=");
  case BinaryOp::LogicalAnd:
    return strCat(toBool(x), " && ", toBool(y));
  case BinaryOp::LogicalOr:
    return strCat(toBool(x), " || ", toBool(y));
  case BinaryOp::LogicalXor:
    return strCat(toBool(x), " != ", toBool(y));
  case BinaryOp::BitwiseAnd:
  case BinaryOp::BitwiseOr:
  case BinaryOp::BitwiseXor: {
    if (isFloat)
      return unsupported();
    const char *symbol = expr.binary == BinaryOp::BitwiseAnd  ? "&"
                         : expr.binary == BinaryOp::BitwiseOr ? "|"
                                                              : "^";
    if (isBool)
      return strCat("(bool)(", x, " ", symbol, " ", y, ")");
    return strCat("(", type, ")(", x, " ", symbol, " ", y, ")");
  }
  case BinaryOp::Shl:
  case BinaryOp::Shr:
    if (isFloat || isBool)
      return unsupported();
    if (expr.binary == BinaryOp::Shl)
      return call("tc_shl");
    return strCat("tc_shr(", x, ", ", y, isSigned ? ", true)" : ", false)");
  }
  return fail("unknown binary op");
}

} // namespace tensorc::cuda
