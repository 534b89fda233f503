// LoopIR expressions as CUDA C++: dtype-aware arithmetic with torch's NaN, rounding, remainder and
// shift rules (the same as lib/Codegen/CPU/ExprEmitter.cpp), loads and stores in memory form.
#include "ExprRenderer.h"

#include "Kernels/KernelLibrary.h"
#include "tensorc/Bundle/Manifest.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>
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
// IEEE 754-2019 maximum/minimum: NaN propagates (torch's rule, mapped onto them by legalize()).
TC_DEVICE float tc_max(float a, float b) { return (a != a || b != b) ? a + b : fmaxf(a, b); }
TC_DEVICE float tc_min(float a, float b) { return (a != a || b != b) ? a + b : fminf(a, b); }
TC_DEVICE double tc_max(double a, double b) { return (a != a || b != b) ? a + b : fmax(a, b); }
TC_DEVICE double tc_min(double a, double b) { return (a != a || b != b) ? a + b : fmin(a, b); }
// Python floor division and modulo of indices by a positive constant. Indices below 2^31 (nearly
// all) divide in 32 bits: a 64-bit division by a constant is a ~25-instruction multiply-high
// sequence, the 32-bit one 2-3 instructions (memory-bound kernels were instruction-bound on it).
TC_DEVICE long long tc_floordiv(long long n, long long d) {
  if ((unsigned long long)n < 0x80000000ull && (unsigned long long)d < 0x80000000ull) return (long long)((unsigned)n / (unsigned)d);
  return n >= 0 ? n / d : -((d - 1 - n) / d);
}
TC_DEVICE long long tc_floormod(long long n, long long d) {
  if ((unsigned long long)n < 0x80000000ull && (unsigned long long)d < 0x80000000ull) return (long long)((unsigned)n % (unsigned)d);
  long long r = n % d; return r < 0 ? r + d : r;
}
// Integer arithmetic that wraps (through unsigned), as LLVM's does.
template <class T> TC_DEVICE T tc_wadd(T a, T b) { return (T)((unsigned long long)a + (unsigned long long)b); }
template <class T> TC_DEVICE T tc_wsub(T a, T b) { return (T)((unsigned long long)a - (unsigned long long)b); }
template <class T> TC_DEVICE T tc_wmul(T a, T b) { return (T)((unsigned long long)a * (unsigned long long)b); }
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
)" + std::string(kernels::gridDependencyWaitSource()) +
                                  strCat("#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900\n"
                                         "// Read back by the runtime: these kernels begin with "
                                         "TC_GRID_DEPENDENCY_WAIT().\n"
                                         "extern \"C\" __device__ const int ",
                                         bundle::kGridDependencySymbol, " = 1;\n#endif\n");
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
  int depth = 0;
  return index(value, scope, depth);
}

// Indices of views over views nest floor divisions and remainders without bound (a window
// partition after a roll after a reshape...); inside a body, an operand nested kMaxIndexDepth
// deep becomes a local, so no rendered expression is deeper than a few levels more than that.
std::string ExprRenderer::index(const SymInt &value, const Scope &scope, int &depth) {
  std::string sum;
  depth = 0;
  auto operand = [&](const SymInt &numerator) {
    int inner = 0;
    std::string text = index(numerator, scope, inner);
    if (out_ && inner >= kMaxIndexDepth) {
      std::string local = strCat("ti", indexCounter_++);
      *out_ += strCat(indent_, "const long long ", local, " = ", text, ";\n");
      depth = std::max(depth, 1);
      return local;
    }
    depth = std::max(depth, inner + 1);
    return text;
  };
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
        factor = strCat("tc_floordiv(", operand(atom->numerator), ", ", atom->denominator, "ll)");
        break;
      case SymInt::Atom::Kind::Mod:
        factor = strCat("tc_floormod(", operand(atom->numerator), ", ", atom->denominator, "ll)");
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
  depth += 1; // the sum's parentheses
  return sum.empty() ? "0ll" : "(" + sum + ")";
}

std::string ExprRenderer::convert(const std::string &value, DType from, DType to) {
  if (from == to)
    return value;
  if (to == DType::Bool)
    return "(" + value + " != 0)";
  // f16/bf16 values are held in float already.
  if (to == DType::F32 && (from == DType::F16 || from == DType::BF16))
    return value;
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
  return strCat(name, "[", at, "] = ", storedValue(value, from, buf.dtype), ";");
}

std::string ExprRenderer::storedValue(const std::string &value, DType from, DType to) {
  // Floats go into f16/bf16 memory with one rounding, the conversion's.
  bool half = to == DType::F16 || to == DType::BF16;
  return toMemory(to, convert(value, from, half && isFloating(from) ? DType::F32 : to));
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
  std::string result = codegen::emitBody<std::string>(expr, *this, memo_);
  scope_ = nullptr;
  out_ = nullptr;
  return result;
}

std::string ExprRenderer::notPlain(loop::UnaryOp op, DType dtype) {
  return fail(strCat(loop::unaryName(op), " is not supported for dtype ", dtypeName(dtype)));
}

std::string ExprRenderer::notPlain(loop::BinaryOp op, DType dtype) {
  return fail(strCat(loop::binaryName(op), " is not supported for dtype ", dtypeName(dtype)));
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

std::string ExprRenderer::load(const Expr &expr) {
  DType stored = program_.buffers[size_t(expr.buffer)].dtype;
  // The accumulator as the template would have stored it, then as this load reads it.
  if (expr.buffer == overrideBuffer_)
    return convert(convert(overrideValue_, DType::F32, stored), stored, expr.dtype);
  if (auto it = loadOverrides_.find(expr.buffer);
      it != loadOverrides_.end() && it->second.first == expr.index)
    return convert(it->second.second, stored, expr.dtype);
  const std::string &name = bufferNames_[size_t(expr.buffer)];
  if (name.empty())
    return fail(strCat("buffer ", program_.buffers[size_t(expr.buffer)].name,
                       " is read but not a kernel argument"));
  std::string raw = strCat(name, "[", index(expr.index, *scope_), "]");
  return convert(fromMemory(stored, raw), stored, expr.dtype);
}

// A plain element load at the affine index plus the runtime offset; vectorized elementwise
// kernels render it per element too (no load override: those name affine positions only).
std::string ExprRenderer::indirectLoad(const Expr &expr, std::string offset) {
  DType stored = program_.buffers[size_t(expr.buffer)].dtype;
  if (expr.buffer == overrideBuffer_)
    return fail("a gather from a GEMM epilogue's accumulator is not supported");
  const std::string &name = bufferNames_[size_t(expr.buffer)];
  if (name.empty())
    return fail(strCat("buffer ", program_.buffers[size_t(expr.buffer)].name,
                       " is read but not a kernel argument"));
  std::string raw = strCat(name, "[", index(expr.index, *scope_), " + ", offset, "]");
  return convert(fromMemory(stored, raw), stored, expr.dtype);
}

std::string ExprRenderer::index(const Expr &expr) {
  return convert(index(expr.index, *scope_), DType::I64, expr.dtype);
}

std::string ExprRenderer::select(DType, std::string cond, std::string x, std::string y) {
  return strCat(cond, " ? ", x, " : ", y);
}

std::string ExprRenderer::cast(DType from, DType to, std::string x) { return convert(x, from, to); }

// Every computed value gets a local, so shared subexpressions run once.
std::string ExprRenderer::bind(const Expr &expr, std::string value) {
  if (!out_)
    return value;
  std::string local = strCat("v", counter_++);
  *out_ += strCat(indent_, "const ", registerType(expr.dtype), " ", local, " = ", value, ";\n");
  return local;
}

std::string ExprRenderer::unary(UnaryOp op, DType dtype, std::string x) {
  bool isFloat = isFloating(dtype), isDouble = dtype == DType::F64;
  bool isSigned = isSignedInteger(dtype);
  std::string type = registerType(dtype);
  auto fn = [&](const char *name) { return strCat(name, isDouble ? "" : "f", "(", x, ")"); };
  auto floatOnly = [&](const char *name) { return isFloat ? fn(name) : notPlain(op, dtype); };
  switch (op) {
  case UnaryOp::Neg:
    if (dtype == DType::Bool)
      break;
    return isFloat ? "-" + x : strCat("tc_wsub((", type, ")0, ", x, ")");
  case UnaryOp::Abs:
    if (isFloat)
      return fn("fabs");
    if (isSigned)
      return strCat("(", x, " < 0 ? tc_wsub((", type, ")0, ", x, ") : ", x, ")");
    break;
  case UnaryOp::Exp:
    return floatOnly("exp");
  case UnaryOp::Log:
    return floatOnly("log");
  case UnaryOp::Tanh:
    return floatOnly("tanh");
  case UnaryOp::Erf:
    return floatOnly("erf");
  case UnaryOp::Sqrt:
    return floatOnly("sqrt");
  case UnaryOp::Rsqrt:
    return floatOnly("rsqrt");
  case UnaryOp::Sigmoid:
    if (!isFloat)
      break;
    return isDouble ? strCat("1.0 / (1.0 + exp(-", x, "))")
                    : strCat("1.0f / (1.0f + expf(-", x, "))");
  case UnaryOp::Floor:
    return floatOnly("floor");
  case UnaryOp::Ceil:
    return floatOnly("ceil");
  case UnaryOp::Round:
    return floatOnly("rint"); // half to even
  case UnaryOp::BitwiseNot:
    if (isFloat)
      break;
    return dtype == DType::Bool ? "!" + x : strCat("(", type, ")(~", x, ")");
  case UnaryOp::IsNan:
    if (isFloat)
      return strCat("(", x, " != ", x, ")");
    break;
  case UnaryOp::Reciprocal:
  case UnaryOp::Sign:
  case UnaryOp::Relu:
  case UnaryOp::LogicalNot:
    break; // legalize() rewrites these
  }
  return notPlain(op, dtype);
}

std::string ExprRenderer::binary(BinaryOp op, DType dtype, std::string x, std::string y) {
  bool isFloat = isFloating(dtype), isDouble = dtype == DType::F64;
  bool isBool = dtype == DType::Bool;
  std::string type = registerType(dtype);
  auto infix = [&](const char *symbol) { return strCat(x, " ", symbol, " ", y); };
  auto call = [&](const std::string &name) { return strCat(name, "(", x, ", ", y, ")"); };
  // Integer results narrower than int come back from C's promotions as their own type.
  auto integer = [&](const char *symbol) {
    return strCat("(", type, ")(", x, " ", symbol, " ", y, ")");
  };
  switch (op) {
  case BinaryOp::Add:
    if (!isBool)
      return isFloat ? infix("+") : call("tc_wadd");
    break;
  case BinaryOp::Sub:
    if (!isBool)
      return isFloat ? infix("-") : call("tc_wsub");
    break;
  case BinaryOp::Mul:
    if (!isBool)
      return isFloat ? infix("*") : call("tc_wmul");
    break;
  // Integer divisors are never 0 (nor -1 when signed) after legalize().
  case BinaryOp::Div:
    if (!isBool)
      return isFloat ? infix("/") : integer("/");
    break;
  case BinaryOp::Fmod:
    if (!isBool)
      return isFloat ? call(isDouble ? "fmod" : "fmodf") : integer("%");
    break;
  case BinaryOp::Pow:
    if (isFloat)
      return call(isDouble ? "pow" : "powf");
    break;
  case BinaryOp::Maximum: // IEEE maximum: NaN propagates (prelude)
    if (!isBool)
      return isFloat ? call("tc_max") : strCat("(", x, " > ", y, " ? ", x, " : ", y, ")");
    break;
  case BinaryOp::Minimum:
    if (!isBool)
      return isFloat ? call("tc_min") : strCat("(", x, " < ", y, " ? ", x, " : ", y, ")");
    break;
  case BinaryOp::Eq:
    return infix("==");
  case BinaryOp::Ne:
    return infix("!="); // unordered for floats: NaN != NaN
  case BinaryOp::Lt:
    return infix("<");
  case BinaryOp::Le:
    return infix("<=");
  case BinaryOp::Gt:
    return infix(">");
  case BinaryOp::Ge:
    return infix(">=");
  case BinaryOp::LogicalAnd:
    if (isBool)
      return infix("&&");
    break;
  case BinaryOp::LogicalOr:
    if (isBool)
      return infix("||");
    break;
  case BinaryOp::LogicalXor:
    if (isBool)
      return infix("!=");
    break;
  case BinaryOp::BitwiseAnd:
  case BinaryOp::BitwiseOr:
  case BinaryOp::BitwiseXor: {
    if (isFloat)
      break;
    const char *symbol = op == BinaryOp::BitwiseAnd ? "&" : op == BinaryOp::BitwiseOr ? "|" : "^";
    return integer(symbol);
  }
  // Shift amounts are inside the width after legalize(); left shifts go through unsigned, where
  // C defines them for every value.
  case BinaryOp::Shl:
    if (!isFloat && !isBool)
      return strCat("(", type, ")((unsigned long long)", x, " << ", y, ")");
    break;
  case BinaryOp::Shr:
    if (!isFloat && !isBool)
      return integer(">>");
    break;
  case BinaryOp::Remainder:
    break; // legalize() rewrites it
  }
  return notPlain(op, dtype);
}

} // namespace tensorc::cuda
