// LoopIR expressions as LLVM IR: dtype-aware arithmetic with torch's NaN/rounding/remainder rules,
// loads and stores in each dtype's memory form, and Python-semantics index arithmetic.
#include "ExprEmitter.h"

#include "tensorc/Codegen/CPU/VecMath.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

#include <functional>
#include <limits>
#include <set>

namespace tensorc::cpu {

using llvm::Type;
using llvm::Value;
using llvm::Intrinsic::ID;
using loop::BinaryOp;
using loop::Expr;
using loop::ExprKind;
using loop::ExprRef;
using loop::UnaryOp;

VarUse analyzeVarUse(const SymInt &index, const std::string &var) {
  VarUse use;
  for (const auto &[monomial, coefficient] : index.termList()) {
    for (const SymInt::AtomPtr &atom : monomial) {
      bool mentions = false;
      if (atom->kind == SymInt::Atom::Kind::Symbol) {
        mentions = atom->name == var;
      } else {
        std::set<std::string> symbols;
        atom->numerator.collectSymbols(symbols);
        mentions = symbols.count(var) != 0;
        if (mentions)
          return {VarUse::Kind::Other, 0};
      }
      if (mentions && monomial.size() != 1)
        return {VarUse::Kind::Other, 0};
      if (mentions)
        use = {VarUse::Kind::Linear, use.coefficient + coefficient};
    }
  }
  return use;
}

bool isVectorizable(const ExprRef &body, const std::string &var) {
  std::set<const Expr *> seen;
  std::function<bool(const ExprRef &)> visit = [&](const ExprRef &expr) {
    if (!seen.insert(expr.get()).second)
      return true;
    if (expr->kind == ExprKind::Load) {
      VarUse use = analyzeVarUse(expr->index, var);
      if (use.kind == VarUse::Kind::Other ||
          (use.kind == VarUse::Kind::Linear && use.coefficient != 1))
        return false;
    }
    if ((expr->kind == ExprKind::Index || expr->kind == ExprKind::IndirectLoad) &&
        analyzeVarUse(expr->index, var).kind == VarUse::Kind::Other)
      return false;
    for (const ExprRef &operand : expr->operands)
      if (!visit(operand))
        return false;
    return true;
  };
  return visit(body);
}

namespace {

unsigned lanesOf(Value *value) {
  if (auto *vector = llvm::dyn_cast<llvm::FixedVectorType>(value->getType()))
    return vector->getNumElements();
  return 1;
}

llvm::Type *memoryType(llvm::LLVMContext &ctx, DType dtype) {
  switch (dtype) {
  case DType::F64:
    return Type::getDoubleTy(ctx);
  case DType::F32:
    return Type::getFloatTy(ctx);
  case DType::F16:
    return Type::getHalfTy(ctx);
  case DType::BF16: // converted with integer ops: bfloat fptrunc would be a libcall on x86
  case DType::I16:
  case DType::U16:
    return Type::getInt16Ty(ctx);
  case DType::I64:
  case DType::U64:
    return Type::getInt64Ty(ctx);
  case DType::I32:
  case DType::U32:
    return Type::getInt32Ty(ctx);
  case DType::I8:
  case DType::U8:
  case DType::Bool:
    return Type::getInt8Ty(ctx);
  }
  return Type::getFloatTy(ctx);
}

Type *withLanes(Type *scalar, unsigned lanes) {
  return lanes > 1 ? llvm::FixedVectorType::get(scalar, lanes) : scalar;
}

} // namespace

ExprEmitter::ExprEmitter(llvm::IRBuilderBase &b, const loop::LoopProgram &program,
                         std::vector<Value *> buffers)
    : b(b), program_(program), buffers_(std::move(buffers)) {}

Type *ExprEmitter::registerType(DType dtype, unsigned lanes) {
  llvm::LLVMContext &ctx = b.getContext();
  Type *scalar = nullptr;
  switch (dtype) {
  case DType::F64:
    scalar = Type::getDoubleTy(ctx);
    break;
  case DType::F32:
  case DType::F16:
  case DType::BF16:
    scalar = Type::getFloatTy(ctx);
    break;
  case DType::Bool:
    scalar = Type::getInt1Ty(ctx);
    break;
  default:
    scalar = memoryType(ctx, dtype);
    break;
  }
  return withLanes(scalar, lanes);
}

Value *ExprEmitter::unsupported(DType dtype, const std::string &what) {
  fail(makeError("CPU codegen: ", what, " is not supported for dtype ", dtypeName(dtype)));
  return llvm::PoisonValue::get(registerType(dtype, lanes()));
}

// ---- Index arithmetic -------------------------------------------------------------------------

// Python floor division/modulo by a positive constant; numerators may be negative (padding).
Value *ExprEmitter::emitFloorDiv(Value *n, int64_t d, bool remainder) {
  if (d == 1)
    return remainder ? b.getInt64(0) : n;
  if ((d & (d - 1)) == 0) {
    int shift = 0;
    while ((int64_t(1) << shift) != d)
      ++shift;
    return remainder ? b.CreateAnd(n, b.getInt64(d - 1)) : b.CreateAShr(n, b.getInt64(shift));
  }
  Value *q = b.CreateSDiv(n, b.getInt64(d));
  Value *r = b.CreateSRem(n, b.getInt64(d));
  Value *negative = b.CreateICmpSLT(r, b.getInt64(0));
  if (remainder)
    return b.CreateSelect(negative, b.CreateAdd(r, b.getInt64(d)), r);
  return b.CreateSelect(negative, b.CreateSub(q, b.getInt64(1)), q);
}

Value *ExprEmitter::emitIndex(const SymInt &index, const EmitScope &scope) {
  Value *sum = nullptr;
  for (const auto &[monomial, coefficient] : index.termList()) {
    Value *term = nullptr;
    for (const SymInt::AtomPtr &atom : monomial) {
      Value *factor = nullptr;
      switch (atom->kind) {
      case SymInt::Atom::Kind::Symbol: {
        auto it = scope.vars.find(atom->name);
        if (it == scope.vars.end()) {
          fail(makeError("CPU codegen: index ", index.str(), " uses '", atom->name,
                         "', which is not a loop variable or shape symbol here"));
          return b.getInt64(0);
        }
        factor = it->second;
        break;
      }
      case SymInt::Atom::Kind::FloorDiv:
        factor = emitFloorDiv(emitIndex(atom->numerator, scope), atom->denominator, false);
        break;
      case SymInt::Atom::Kind::Mod:
        factor = emitFloorDiv(emitIndex(atom->numerator, scope), atom->denominator, true);
        break;
      }
      term = term ? b.CreateMul(term, factor) : factor;
    }
    if (!term)
      term = b.getInt64(coefficient);
    else if (coefficient != 1)
      term = b.CreateMul(term, b.getInt64(coefficient));
    sum = sum ? b.CreateAdd(sum, term) : term;
  }
  return sum ? sum : b.getInt64(0);
}

Value *ExprEmitter::gatherLanes(const EmitScope &scope,
                                const std::function<Value *(const EmitScope &)> &lane) {
  EmitScope laneScope = scope;
  laneScope.vectorVar.clear();
  laneScope.lanes = 1;
  Value *base = scope.vars.at(scope.vectorVar);
  Value *result = nullptr;
  for (unsigned i = 0; i < scope.lanes; ++i) {
    laneScope.vars[scope.vectorVar] = b.CreateAdd(base, b.getInt64(i));
    Value *element = lane(laneScope);
    if (!result)
      result = llvm::PoisonValue::get(llvm::FixedVectorType::get(element->getType(), scope.lanes));
    result = b.CreateInsertElement(result, element, b.getInt64(i));
  }
  return result;
}

// ---- Memory -----------------------------------------------------------------------------------

Value *ExprEmitter::bufferArgument(int buffer, const char *access) {
  Value *base = buffers_[size_t(buffer)];
  if (!base)
    fail(makeError("CPU codegen: buffer ", program_.buffers[size_t(buffer)].name, " is ", access,
                   " but not a kernel argument"));
  return base;
}

Value *ExprEmitter::load(int buffer, Value *index, unsigned lanes) {
  const loop::Buffer &buf = program_.buffers[size_t(buffer)];
  Type *mem = memoryType(b.getContext(), buf.dtype);
  Value *base = bufferArgument(buffer, "read");
  if (!base)
    return llvm::PoisonValue::get(registerType(buf.dtype, lanes));
  Value *ptr = b.CreateInBoundsGEP(mem, base, index);
  Value *raw = b.CreateAlignedLoad(withLanes(mem, lanes), ptr, llvm::Align(dtypeSize(buf.dtype)));
  return fromMemory(raw, buf.dtype);
}

Value *ExprEmitter::gather(int buffer, Value *indices) {
  const loop::Buffer &buf = program_.buffers[size_t(buffer)];
  unsigned lanes = lanesOf(indices);
  Type *mem = memoryType(b.getContext(), buf.dtype);
  Value *base = bufferArgument(buffer, "read");
  if (!base)
    return llvm::PoisonValue::get(registerType(buf.dtype, lanes));
  Value *pointers = b.CreateInBoundsGEP(mem, base, indices); // a vector of pointers
  Value *raw =
      b.CreateMaskedGather(withLanes(mem, lanes), pointers, llvm::Align(dtypeSize(buf.dtype)));
  return fromMemory(raw, buf.dtype);
}

Value *ExprEmitter::fromMemory(Value *raw, DType dtype) {
  unsigned lanes = lanesOf(raw);
  switch (dtype) {
  case DType::F16:
    return b.CreateFPExt(raw, registerType(DType::F32, lanes));
  case DType::BF16: {
    Value *bits = b.CreateShl(b.CreateZExt(raw, withLanes(b.getInt32Ty(), lanes)), 16);
    return b.CreateBitCast(bits, registerType(DType::F32, lanes));
  }
  case DType::Bool:
    return b.CreateICmpNE(raw, llvm::Constant::getNullValue(raw->getType()));
  default:
    return raw;
  }
}

void ExprEmitter::store(int buffer, DType from, Value *value, Value *index) {
  const loop::Buffer &buf = program_.buffers[size_t(buffer)];
  unsigned lanes = lanesOf(value);
  Type *mem = memoryType(b.getContext(), buf.dtype);
  Value *base = bufferArgument(buffer, "written");
  if (!base)
    return;
  // Floats go into f16/bf16 memory with one rounding, the store's.
  bool half = buf.dtype == DType::F16 || buf.dtype == DType::BF16;
  value = convert(value, from, half && isFloating(from) ? DType::F32 : buf.dtype);
  switch (buf.dtype) {
  case DType::F16:
    value = b.CreateFPTrunc(value, withLanes(mem, lanes));
    break;
  case DType::BF16: {
    // Round to nearest even on the high half; NaN stays a (quiet) NaN.
    Type *i32 = withLanes(b.getInt32Ty(), lanes);
    Value *bits = b.CreateBitCast(value, i32);
    Value *high = b.CreateLShr(bits, 16);
    Value *bias = b.CreateAdd(llvm::ConstantInt::get(i32, 0x7fff),
                              b.CreateAnd(high, llvm::ConstantInt::get(i32, 1)));
    Value *rounded = b.CreateLShr(b.CreateAdd(bits, bias), 16);
    Value *quiet = b.CreateOr(high, llvm::ConstantInt::get(i32, 0x40));
    value = b.CreateTrunc(b.CreateSelect(b.CreateFCmpUNO(value, value), quiet, rounded),
                          withLanes(mem, lanes));
    break;
  }
  case DType::Bool:
    value = b.CreateZExt(value, withLanes(mem, lanes));
    break;
  default:
    break;
  }
  Value *ptr = b.CreateInBoundsGEP(mem, base, index);
  b.CreateAlignedStore(value, ptr, llvm::Align(dtypeSize(buf.dtype)));
}

// ---- Conversions ------------------------------------------------------------------------------

// A value cast to f16/bf16 carries only that precision, though registers hold it as float.
Value *ExprEmitter::roundToHalf(Value *value, DType dtype) {
  unsigned lanes = lanesOf(value);
  if (dtype == DType::F16)
    return b.CreateFPExt(b.CreateFPTrunc(value, withLanes(b.getHalfTy(), lanes)), value->getType());
  Type *i32 = withLanes(b.getInt32Ty(), lanes);
  Value *bits = b.CreateBitCast(value, i32);
  Value *bias = b.CreateAdd(llvm::ConstantInt::get(i32, 0x7fff),
                            b.CreateAnd(b.CreateLShr(bits, 16), llvm::ConstantInt::get(i32, 1)));
  Value *rounded = b.CreateAnd(b.CreateAdd(bits, bias), llvm::ConstantInt::get(i32, 0xffff0000u));
  Value *result = b.CreateBitCast(rounded, value->getType());
  return b.CreateSelect(b.CreateFCmpUNO(value, value), value, result);
}

Value *ExprEmitter::convert(Value *value, DType from, DType to) {
  if (from == to)
    return value;
  unsigned lanes = lanesOf(value);
  Type *target = registerType(to, lanes);
  if (isFloating(from)) {
    if (isFloating(to)) {
      Value *result = b.CreateFPCast(value, target);
      return (to == DType::F16 || to == DType::BF16) ? roundToHalf(result, to) : result;
    }
    if (to == DType::Bool) // NaN is true, as in torch
      return b.CreateFCmpUNE(value, llvm::Constant::getNullValue(value->getType()));
    return isSignedInteger(to) ? b.CreateFPToSI(value, target) : b.CreateFPToUI(value, target);
  }
  bool fromSigned = isSignedInteger(from);
  if (isFloating(to)) {
    Value *result = fromSigned ? b.CreateSIToFP(value, target) : b.CreateUIToFP(value, target);
    return (to == DType::F16 || to == DType::BF16) ? roundToHalf(result, to) : result;
  }
  if (to == DType::Bool)
    return b.CreateICmpNE(value, llvm::Constant::getNullValue(value->getType()));
  return b.CreateIntCast(value, target, fromSigned);
}

// ---- Expressions ------------------------------------------------------------------------------

Value *ExprEmitter::emitBody(const ExprRef &expr, const EmitScope &scope) {
  memo_.clear();
  scope_ = &scope;
  Value *value = codegen::emitBody<Value *>(expr, *this, memo_);
  scope_ = nullptr;
  return value;
}

Value *ExprEmitter::constant(const Expr &expr) {
  Type *type = registerType(expr.dtype, 1);
  Value *result = nullptr;
  if (isFloating(expr.dtype))
    result = llvm::ConstantFP::get(type, expr.value);
  else if (expr.dtype == DType::Bool)
    result = b.getInt1(expr.intValue != 0 || expr.value != 0);
  else
    result = llvm::ConstantInt::get(type, uint64_t(expr.intValue), true);
  return lanes() > 1 ? b.CreateVectorSplat(lanes(), result) : result;
}

Value *ExprEmitter::select(DType, Value *cond, Value *x, Value *y) {
  return b.CreateSelect(cond, x, y);
}

Value *ExprEmitter::cast(DType from, DType to, Value *x) { return convert(x, from, to); }

Value *ExprEmitter::load(const Expr &expr) {
  const EmitScope &scope = *scope_;
  DType stored = program_.buffers[size_t(expr.buffer)].dtype;
  // The accumulator as the template would have stored it, then as this load reads it.
  if (expr.buffer == overrideBuffer_ && overrideValue_)
    return convert(convert(overrideValue_, DType::F32, stored), stored, expr.dtype);
  VarUse use;
  if (scope.lanes > 1)
    use = analyzeVarUse(expr.index, scope.vectorVar);
  Value *value = nullptr;
  if (use.kind == VarUse::Kind::None) {
    value = load(expr.buffer, emitIndex(expr.index, scope), 1);
    if (scope.lanes > 1)
      value = b.CreateVectorSplat(scope.lanes, value);
  } else if (use.kind == VarUse::Kind::Linear && use.coefficient == 1) {
    value = load(expr.buffer, emitIndex(expr.index, scope), scope.lanes);
  } else {
    value = gatherLanes(scope, [&](const EmitScope &lane) {
      return load(expr.buffer, emitIndex(expr.index, lane), 1);
    });
  }
  return convert(value, stored, expr.dtype);
}

Value *ExprEmitter::emitLaneIndices(const SymInt &index, const EmitScope &scope) {
  VarUse use;
  if (scope.lanes > 1)
    use = analyzeVarUse(index, scope.vectorVar);
  if (use.kind == VarUse::Kind::Other)
    return gatherLanes(scope, [&](const EmitScope &lane) { return emitIndex(index, lane); });
  Value *value = emitIndex(index, scope);
  if (scope.lanes > 1) {
    value = b.CreateVectorSplat(scope.lanes, value);
    if (use.kind == VarUse::Kind::Linear) {
      std::vector<llvm::Constant *> steps;
      for (unsigned i = 0; i < scope.lanes; ++i)
        steps.push_back(b.getInt64(int64_t(i) * use.coefficient));
      value = b.CreateAdd(value, llvm::ConstantVector::get(steps));
    }
  }
  return value;
}

Value *ExprEmitter::index(const Expr &expr) {
  return convert(emitLaneIndices(expr.index, *scope_), DType::I64, expr.dtype);
}

namespace {

/// True when `expr`'s value may differ between lanes of `var`.
bool variesAlong(const ExprRef &expr, const std::string &var, std::map<const Expr *, bool> &memo) {
  if (auto it = memo.find(expr.get()); it != memo.end())
    return it->second;
  bool varies = (expr->kind == ExprKind::Load || expr->kind == ExprKind::IndirectLoad ||
                 expr->kind == ExprKind::Index) &&
                analyzeVarUse(expr->index, var).kind != VarUse::Kind::None;
  for (const ExprRef &operand : expr->operands)
    varies = varies || variesAlong(operand, var, memo);
  memo[expr.get()] = varies;
  return varies;
}

} // namespace

// The offset is computed like any value (one per lane in vector mode). When it is the same in
// every lane and the affine part is contiguous or invariant, the lanes read consecutive elements
// (embedding rows) or one element; otherwise each lane's address goes into a gather.
Value *ExprEmitter::indirectLoad(const Expr &expr, Value *offset) {
  const EmitScope &scope = *scope_;
  DType stored = program_.buffers[size_t(expr.buffer)].dtype;
  if (expr.buffer == overrideBuffer_)
    return unsupported(expr.dtype, "a gather from a GEMM epilogue's accumulator");
  Value *value = nullptr;
  if (scope.lanes == 1) {
    value = load(expr.buffer, b.CreateAdd(emitIndex(expr.index, scope), offset), 1);
    return convert(value, stored, expr.dtype);
  }
  VarUse use = analyzeVarUse(expr.index, scope.vectorVar);
  std::map<const Expr *, bool> memo;
  bool uniform = !variesAlong(expr.operands[0], scope.vectorVar, memo);
  if (uniform && (use.kind == VarUse::Kind::None ||
                  (use.kind == VarUse::Kind::Linear && use.coefficient == 1))) {
    Value *start =
        b.CreateAdd(emitIndex(expr.index, scope), b.CreateExtractElement(offset, b.getInt64(0)));
    if (use.kind == VarUse::Kind::None)
      value = b.CreateVectorSplat(scope.lanes, load(expr.buffer, start, 1));
    else
      value = load(expr.buffer, start, scope.lanes);
  } else {
    value = gather(expr.buffer, b.CreateAdd(emitLaneIndices(expr.index, scope), offset));
  }
  return convert(value, stored, expr.dtype);
}

Value *ExprEmitter::unary(UnaryOp op, DType dtype, Value *x) {
  Type *type = x->getType();
  bool isFloat = isFloating(dtype);
  bool isSigned = isSignedInteger(dtype);
  std::string name = loop::unaryName(op);
  // Vector math is single precision: f64 goes through float (a documented accuracy limit).
  auto vecMath = [&](Value *(*fn)(llvm::IRBuilderBase &, Value *)) -> Value * {
    if (!isFloat)
      return unsupported(dtype, name + " of an integer");
    if (dtype != DType::F64)
      return fn(b, x);
    Type *f32 = registerType(DType::F32, lanesOf(x));
    return b.CreateFPExt(fn(b, b.CreateFPTrunc(x, f32)), type);
  };
  auto floatOnly = [&](llvm::Intrinsic::ID id) {
    return isFloat ? b.CreateUnaryIntrinsic(id, x) : unsupported(dtype, name + " of an integer");
  };
  switch (op) {
  case UnaryOp::Neg:
    return isFloat ? b.CreateFNeg(x) : b.CreateNeg(x);
  case UnaryOp::Abs:
    if (isFloat)
      return b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    if (isSigned)
      return b.CreateBinaryIntrinsic(llvm::Intrinsic::abs, x, b.getFalse());
    break;
  case UnaryOp::Exp:
    return vecMath(emitExp);
  case UnaryOp::Log:
    return vecMath(emitLog);
  case UnaryOp::Tanh:
    return vecMath(emitTanh);
  case UnaryOp::Sigmoid:
    return vecMath(emitSigmoid);
  case UnaryOp::Erf:
    return vecMath(emitErf);
  case UnaryOp::Sqrt:
    return floatOnly(llvm::Intrinsic::sqrt);
  case UnaryOp::Rsqrt:
    if (!isFloat)
      return unsupported(dtype, "rsqrt of an integer");
    return b.CreateFDiv(llvm::ConstantFP::get(type, 1.0),
                        b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x));
  case UnaryOp::Floor:
    return floatOnly(llvm::Intrinsic::floor);
  case UnaryOp::Ceil:
    return floatOnly(llvm::Intrinsic::ceil);
  case UnaryOp::Round:
    return floatOnly(llvm::Intrinsic::roundeven);
  case UnaryOp::BitwiseNot:
    if (isFloat)
      return unsupported(dtype, "bitwise_not of a float");
    return b.CreateNot(x);
  case UnaryOp::IsNan:
    if (isFloat)
      return b.CreateFCmpUNO(x, x);
    break;
  case UnaryOp::Reciprocal:
  case UnaryOp::Sign:
  case UnaryOp::Relu:
  case UnaryOp::LogicalNot:
    break; // legalize() rewrites these
  }
  return unsupported(dtype, name + " (not a plain operation for this dtype)");
}

// C fmod without libm: the truncated quotient, then an fma remainder corrected by one step for a
// misrounded quotient. Exact while |x/y| < 2^24 (f32) / 2^53 (f64), the range models use.
Value *ExprEmitter::emitFmod(Value *x, Value *y) {
  Type *type = x->getType();
  Value *q = b.CreateUnaryIntrinsic(llvm::Intrinsic::trunc, b.CreateFDiv(x, y));
  Value *r = b.CreateIntrinsic(llvm::Intrinsic::fma, {type}, {b.CreateFNeg(q), y, x});
  Value *absY = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, y);
  // Work with the magnitude in x's sign frame: it must land in [0, |y|).
  Value *mag = b.CreateFMul(
      r, b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, llvm::ConstantFP::get(type, 1.0), x));
  Value *zero = llvm::ConstantFP::get(type, 0.0);
  mag = b.CreateSelect(b.CreateFCmpOLT(mag, zero), b.CreateFAdd(mag, absY), mag);
  mag = b.CreateSelect(b.CreateFCmpOGE(mag, absY), b.CreateFSub(mag, absY), mag);
  Value *result = b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, mag, x);
  // fmod(finite, +-inf) = x; the fma above would give NaN from 0 * inf.
  Value *inf = llvm::ConstantFP::getInfinity(type);
  Value *yInf = b.CreateFCmpOEQ(absY, inf);
  Value *xFinite = b.CreateFCmpUNE(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x), inf);
  return b.CreateSelect(b.CreateAnd(yInf, xFinite), x, result);
}

Value *ExprEmitter::binary(BinaryOp op, DType dtype, Value *x, Value *y) {
  bool isFloat = isFloating(dtype);
  bool isSigned = isSignedInteger(dtype);
  bool isBool = dtype == DType::Bool;
  auto intrinsic = [&](llvm::Intrinsic::ID f, llvm::Intrinsic::ID s, llvm::Intrinsic::ID u) {
    return b.CreateBinaryIntrinsic(isFloat ? f : isSigned ? s : u, x, y);
  };
  auto compare = [&](llvm::CmpInst::Predicate f, llvm::CmpInst::Predicate s,
                     llvm::CmpInst::Predicate u) {
    return isFloat ? b.CreateFCmp(f, x, y) : b.CreateICmp(isSigned ? s : u, x, y);
  };
  using P = llvm::CmpInst::Predicate;
  std::string name = loop::binaryName(op);
  switch (op) {
  case BinaryOp::Add:
    if (!isBool)
      return isFloat ? b.CreateFAdd(x, y) : b.CreateAdd(x, y);
    break;
  case BinaryOp::Sub:
    if (!isBool)
      return isFloat ? b.CreateFSub(x, y) : b.CreateSub(x, y);
    break;
  case BinaryOp::Mul:
    if (!isBool)
      return isFloat ? b.CreateFMul(x, y) : b.CreateMul(x, y);
    break;
  // Integer divisors are never 0 (nor -1 when signed) after legalize().
  case BinaryOp::Div:
    if (!isBool)
      return isFloat ? b.CreateFDiv(x, y) : isSigned ? b.CreateSDiv(x, y) : b.CreateUDiv(x, y);
    break;
  case BinaryOp::Fmod:
    if (!isBool)
      return isFloat ? emitFmod(x, y) : isSigned ? b.CreateSRem(x, y) : b.CreateURem(x, y);
    break;
  case BinaryOp::Maximum: // IEEE maximum: NaN propagates
    if (!isBool)
      return intrinsic(llvm::Intrinsic::maximum, llvm::Intrinsic::smax, llvm::Intrinsic::umax);
    break;
  case BinaryOp::Minimum:
    if (!isBool)
      return intrinsic(llvm::Intrinsic::minimum, llvm::Intrinsic::smin, llvm::Intrinsic::umin);
    break;
  case BinaryOp::Eq:
    return compare(P::FCMP_OEQ, P::ICMP_EQ, P::ICMP_EQ);
  case BinaryOp::Ne: // unordered: NaN != NaN
    return compare(P::FCMP_UNE, P::ICMP_NE, P::ICMP_NE);
  case BinaryOp::Lt:
    return compare(P::FCMP_OLT, P::ICMP_SLT, P::ICMP_ULT);
  case BinaryOp::Le:
    return compare(P::FCMP_OLE, P::ICMP_SLE, P::ICMP_ULE);
  case BinaryOp::Gt:
    return compare(P::FCMP_OGT, P::ICMP_SGT, P::ICMP_UGT);
  case BinaryOp::Ge:
    return compare(P::FCMP_OGE, P::ICMP_SGE, P::ICMP_UGE);
  case BinaryOp::LogicalAnd:
  case BinaryOp::BitwiseAnd:
    if (!isFloat)
      return b.CreateAnd(x, y);
    break;
  case BinaryOp::LogicalOr:
  case BinaryOp::BitwiseOr:
    if (!isFloat)
      return b.CreateOr(x, y);
    break;
  case BinaryOp::LogicalXor:
  case BinaryOp::BitwiseXor:
    if (!isFloat)
      return b.CreateXor(x, y);
    break;
  // Shift amounts are inside the width after legalize().
  case BinaryOp::Shl:
    if (!isFloat && !isBool)
      return b.CreateShl(x, y);
    break;
  case BinaryOp::Shr:
    if (!isFloat && !isBool)
      return isSigned ? b.CreateAShr(x, y) : b.CreateLShr(x, y);
    break;
  case BinaryOp::Pow: // expanded by legalize(): the CPU has no libm pow
  case BinaryOp::Remainder:
    break;
  }
  return unsupported(dtype, name + " (not a plain operation for this dtype)");
}

} // namespace tensorc::cpu
