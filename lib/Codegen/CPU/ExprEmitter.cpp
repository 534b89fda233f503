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

Value *ExprEmitter::unsupported(const Expr &expr, const std::string &what) {
  fail(makeError("CPU codegen: ", what, " is not supported for dtype ", dtypeName(expr.dtype)));
  return llvm::PoisonValue::get(registerType(expr.dtype, 1));
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

Value *ExprEmitter::load(int buffer, Value *index, unsigned lanes) {
  const loop::Buffer &buf = program_.buffers[size_t(buffer)];
  Type *mem = memoryType(b.getContext(), buf.dtype);
  Value *base = buffers_[size_t(buffer)];
  if (!base) {
    fail(makeError("CPU codegen: buffer ", buf.name, " is read but not a kernel argument"));
    return llvm::PoisonValue::get(registerType(buf.dtype, lanes));
  }
  Value *ptr = b.CreateInBoundsGEP(mem, base, index);
  Value *raw = b.CreateAlignedLoad(withLanes(mem, lanes), ptr, llvm::Align(dtypeSize(buf.dtype)));
  return fromMemory(raw, buf.dtype);
}

Value *ExprEmitter::gather(int buffer, Value *indices) {
  const loop::Buffer &buf = program_.buffers[size_t(buffer)];
  unsigned lanes = lanesOf(indices);
  Type *mem = memoryType(b.getContext(), buf.dtype);
  Value *base = buffers_[size_t(buffer)];
  if (!base) {
    fail(makeError("CPU codegen: buffer ", buf.name, " is read but not a kernel argument"));
    return llvm::PoisonValue::get(registerType(buf.dtype, lanes));
  }
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
  Value *base = buffers_[size_t(buffer)];
  if (!base) {
    fail(makeError("CPU codegen: buffer ", buf.name, " is written but not a kernel argument"));
    return;
  }
  value = convert(value, from, buf.dtype);
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
  return emit(expr, scope);
}

Value *ExprEmitter::emit(const ExprRef &expr, const EmitScope &scope) {
  if (auto it = memo_.find(expr.get()); it != memo_.end())
    return it->second;
  Value *result = nullptr;
  switch (expr->kind) {
  case ExprKind::Constant: {
    Type *type = registerType(expr->dtype, 1);
    if (isFloating(expr->dtype))
      result = llvm::ConstantFP::get(type, expr->value);
    else if (expr->dtype == DType::Bool)
      result = b.getInt1(expr->intValue != 0 || expr->value != 0);
    else
      result = llvm::ConstantInt::get(type, uint64_t(expr->intValue), true);
    if (scope.lanes > 1)
      result = b.CreateVectorSplat(scope.lanes, result);
    break;
  }
  case ExprKind::Load:
    result = emitLoad(*expr, scope);
    break;
  case ExprKind::IndirectLoad:
    result = emitIndirectLoad(*expr, scope);
    break;
  case ExprKind::Index:
    result = emitIndexExpr(*expr, scope);
    break;
  case ExprKind::Unary:
    result = emitUnary(*expr, emit(expr->operands[0], scope));
    break;
  case ExprKind::Binary: {
    Value *x = emit(expr->operands[0], scope);
    result = emitBinary(*expr, x, emit(expr->operands[1], scope));
    break;
  }
  case ExprKind::Select: {
    Value *cond = emit(expr->operands[0], scope);
    Value *x = emit(expr->operands[1], scope);
    result = b.CreateSelect(cond, x, emit(expr->operands[2], scope));
    break;
  }
  case ExprKind::Cast:
    result = convert(emit(expr->operands[0], scope), expr->operands[0]->dtype, expr->dtype);
    break;
  }
  memo_[expr.get()] = result;
  return result;
}

Value *ExprEmitter::emitLoad(const Expr &expr, const EmitScope &scope) {
  DType stored = program_.buffers[size_t(expr.buffer)].dtype;
  if (expr.buffer == overrideBuffer_ && overrideValue_)
    return convert(overrideValue_, DType::F32, expr.dtype);
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

Value *ExprEmitter::emitIndexExpr(const Expr &expr, const EmitScope &scope) {
  return convert(emitLaneIndices(expr.index, scope), DType::I64, expr.dtype);
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
Value *ExprEmitter::emitIndirectLoad(const Expr &expr, const EmitScope &scope) {
  DType stored = program_.buffers[size_t(expr.buffer)].dtype;
  if (expr.buffer == overrideBuffer_)
    return unsupported(expr, "a gather from a GEMM epilogue's accumulator");
  Value *offset = emit(expr.operands[0], scope);
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

Value *ExprEmitter::emitUnary(const Expr &expr, Value *x) {
  DType dtype = expr.operands[0]->dtype;
  Type *type = x->getType();
  bool isFloat = isFloating(dtype);
  bool isSigned = isSignedInteger(dtype);
  auto fconst = [&](double v) { return llvm::ConstantFP::get(type, v); };
  auto iconst = [&](int64_t v) { return llvm::ConstantInt::get(type, uint64_t(v), true); };
  Value *zero = llvm::Constant::getNullValue(type);
  // Vector math is single precision: f64 goes through float (a documented accuracy limit).
  auto vecMath = [&](Value *(*fn)(llvm::IRBuilderBase &, Value *)) -> Value * {
    if (!isFloat)
      return unsupported(expr, std::string(loop::unaryName(expr.unary)) + " of an integer");
    if (dtype != DType::F64)
      return fn(b, x);
    Type *f32 = registerType(DType::F32, lanesOf(x));
    return b.CreateFPExt(fn(b, b.CreateFPTrunc(x, f32)), type);
  };
  switch (expr.unary) {
  case UnaryOp::Neg:
    return isFloat ? b.CreateFNeg(x) : b.CreateNeg(x);
  case UnaryOp::Abs:
    if (isFloat)
      return b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    if (isSigned)
      return b.CreateBinaryIntrinsic(llvm::Intrinsic::abs, x, b.getFalse());
    return x;
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
    if (!isFloat)
      return unsupported(expr, "sqrt of an integer");
    return b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
  case UnaryOp::Rsqrt:
    if (!isFloat)
      return unsupported(expr, "rsqrt of an integer");
    return b.CreateFDiv(fconst(1.0), b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x));
  case UnaryOp::Reciprocal:
    if (!isFloat)
      return unsupported(expr, "reciprocal of an integer");
    return b.CreateFDiv(fconst(1.0), x);
  case UnaryOp::Floor:
    return isFloat ? b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, x) : x;
  case UnaryOp::Ceil:
    return isFloat ? b.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, x) : x;
  case UnaryOp::Round:
    return isFloat ? b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, x) : x;
  case UnaryOp::Sign:
    // torch: (0 < x) - (x < 0), so NaN and -0 give 0.
    if (isFloat)
      return b.CreateFSub(b.CreateUIToFP(b.CreateFCmpOGT(x, zero), type),
                          b.CreateUIToFP(b.CreateFCmpOLT(x, zero), type));
    if (dtype == DType::Bool)
      return x;
    if (isSigned)
      return b.CreateSub(b.CreateZExt(b.CreateICmpSGT(x, zero), type),
                         b.CreateZExt(b.CreateICmpSLT(x, zero), type));
    return b.CreateZExt(b.CreateICmpNE(x, zero), type);
  case UnaryOp::Relu:
    if (isFloat) // maximum keeps NaN, like torch's clamp_min
      return b.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, x, zero);
    return isSigned ? b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, x, zero) : x;
  case UnaryOp::LogicalNot:
    return isFloat ? b.CreateFCmpOEQ(x, zero) : b.CreateICmpEQ(x, zero);
  case UnaryOp::BitwiseNot:
    if (isFloat)
      return unsupported(expr, "bitwise_not of a float");
    return b.CreateXor(x, iconst(-1));
  case UnaryOp::IsNan:
    if (!isFloat)
      return llvm::Constant::getNullValue(registerType(DType::Bool, lanesOf(x)));
    return b.CreateFCmpUNO(x, x);
  }
  return unsupported(expr, "unary op");
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

Value *ExprEmitter::emitFloatPow(const Expr &expr, Value *x, Value *y) {
  Type *type = x->getType();
  auto fconst = [&](double v) { return llvm::ConstantFP::get(type, v); };
  auto sqrt = [&](Value *v) { return b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, v); };
  // Small constant exponents, as torch special-cases them: exact and cheap.
  const ExprRef &exponent = expr.operands[1];
  if (exponent->kind == ExprKind::Constant) {
    double e = exponent->value;
    if (e == 0)
      return fconst(1.0);
    if (e == 1)
      return x;
    if (e == 2)
      return b.CreateFMul(x, x);
    if (e == 3)
      return b.CreateFMul(b.CreateFMul(x, x), x);
    if (e == 0.5)
      return sqrt(x);
    if (e == -0.5)
      return b.CreateFDiv(fconst(1.0), sqrt(x));
    if (e == -1)
      return b.CreateFDiv(fconst(1.0), x);
    if (e == -2)
      return b.CreateFDiv(fconst(1.0), b.CreateFMul(x, x));
  }
  auto vec = [&](Value *(*fn)(llvm::IRBuilderBase &, Value *), Value *v) -> Value * {
    if (!type->getScalarType()->isDoubleTy())
      return fn(b, v);
    Type *f32 = registerType(DType::F32, lanesOf(v));
    return b.CreateFPExt(fn(b, b.CreateFPTrunc(v, f32)), type);
  };
  Value *absX = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  Value *magnitude = vec(emitExp, b.CreateFMul(y, vec(emitLog, absX)));
  Value *floorY = b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, y);
  Value *yInteger = b.CreateFCmpOEQ(floorY, y);
  Value *half = b.CreateFMul(y, fconst(0.5));
  Value *yOdd = b.CreateAnd(
      yInteger, b.CreateFCmpONE(b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, half), half));
  Value *negativeResult =
      b.CreateSelect(yInteger, b.CreateSelect(yOdd, b.CreateFNeg(magnitude), magnitude),
                     llvm::ConstantFP::getNaN(type));
  Value *result = b.CreateSelect(b.CreateFCmpOLT(x, fconst(0)), negativeResult, magnitude);
  // pow(x, 0) = 1 and pow(1, y) = 1, even for NaN.
  Value *one = b.CreateOr(b.CreateFCmpOEQ(y, fconst(0)), b.CreateFCmpOEQ(x, fconst(1)));
  return b.CreateSelect(one, fconst(1.0), result);
}

// Square-and-multiply over every exponent bit with selects (no branches, so it vectorizes);
// negative exponents give 1 / x^|y| truncated: 1 for x == 1, +-1 for x == -1, else 0.
Value *ExprEmitter::emitIntPow(DType dtype, Value *x, Value *y) {
  Type *type = x->getType();
  unsigned bits = type->getScalarSizeInBits();
  auto iconst = [&](int64_t v) { return llvm::ConstantInt::get(type, uint64_t(v), true); };
  Value *result = iconst(1), *base = x, *e = y;
  for (unsigned i = 0; i < bits; ++i) {
    Value *bit = b.CreateICmpNE(b.CreateAnd(e, iconst(1)), iconst(0));
    result = b.CreateSelect(bit, b.CreateMul(result, base), result);
    base = b.CreateMul(base, base);
    e = b.CreateLShr(e, iconst(1));
  }
  if (!isSignedInteger(dtype))
    return result;
  Value *odd = b.CreateICmpNE(b.CreateAnd(y, iconst(1)), iconst(0));
  Value *inverse =
      b.CreateSelect(b.CreateICmpEQ(x, iconst(1)), iconst(1),
                     b.CreateSelect(b.CreateICmpEQ(x, iconst(-1)),
                                    b.CreateSelect(odd, iconst(-1), iconst(1)), iconst(0)));
  return b.CreateSelect(b.CreateICmpSLT(y, iconst(0)), inverse, result);
}

Value *ExprEmitter::emitBinary(const Expr &expr, Value *x, Value *y) {
  DType dtype = expr.operands[0]->dtype;
  Type *type = x->getType();
  bool isFloat = isFloating(dtype);
  bool isSigned = isSignedInteger(dtype);
  bool isBool = dtype == DType::Bool;
  auto iconst = [&](int64_t v) { return llvm::ConstantInt::get(type, uint64_t(v), true); };
  Value *zero = llvm::Constant::getNullValue(type);
  auto toBool = [&](Value *v) -> Value * {
    if (isBool)
      return v;
    return isFloat ? b.CreateFCmpUNE(v, zero) : b.CreateICmpNE(v, zero);
  };
  // A zero divisor must not trap (the result is unspecified); INT_MIN / -1 neither.
  auto safeDivisor = [&](bool allowMinusOne) {
    Value *bad = b.CreateICmpEQ(y, zero);
    if (isSigned && !allowMinusOne)
      bad = b.CreateOr(bad, b.CreateICmpEQ(y, iconst(-1)));
    return b.CreateSelect(bad, iconst(1), y);
  };
  switch (expr.binary) {
  case BinaryOp::Add:
    return isFloat ? b.CreateFAdd(x, y) : isBool ? b.CreateOr(x, y) : b.CreateAdd(x, y);
  case BinaryOp::Sub:
    return isFloat ? b.CreateFSub(x, y) : isBool ? b.CreateXor(x, y) : b.CreateSub(x, y);
  case BinaryOp::Mul:
    return isFloat ? b.CreateFMul(x, y) : isBool ? b.CreateAnd(x, y) : b.CreateMul(x, y);
  case BinaryOp::Div: {
    if (isFloat)
      return b.CreateFDiv(x, y);
    if (isBool)
      return x;
    if (!isSigned)
      return b.CreateUDiv(x, safeDivisor(true));
    Value *q = b.CreateSDiv(x, safeDivisor(false));
    return b.CreateSelect(b.CreateICmpEQ(y, iconst(-1)), b.CreateNeg(x), q);
  }
  case BinaryOp::Remainder:
  case BinaryOp::Fmod: {
    bool python = expr.binary == BinaryOp::Remainder;
    if (isFloat) {
      Value *r = emitFmod(x, y);
      if (!python)
        return r;
      Value *fzero = llvm::ConstantFP::get(type, 0.0);
      Value *adjust =
          b.CreateAnd(b.CreateFCmpONE(r, fzero),
                      b.CreateXor(b.CreateFCmpOLT(r, fzero), b.CreateFCmpOLT(y, fzero)));
      return b.CreateSelect(adjust, b.CreateFAdd(r, y), r);
    }
    if (isBool)
      return b.CreateAnd(x, b.CreateNot(y));
    if (!isSigned)
      return b.CreateURem(x, safeDivisor(true));
    Value *r = b.CreateSRem(x, safeDivisor(false));
    if (!python)
      return r;
    Value *adjust = b.CreateAnd(b.CreateICmpNE(r, zero),
                                b.CreateXor(b.CreateICmpSLT(r, zero), b.CreateICmpSLT(y, zero)));
    return b.CreateSelect(adjust, b.CreateAdd(r, y), r);
  }
  case BinaryOp::Pow:
    if (isFloat)
      return emitFloatPow(expr, x, y);
    if (isBool)
      return b.CreateOr(x, b.CreateNot(y));
    return emitIntPow(dtype, x, y);
  case BinaryOp::Maximum:
    if (isFloat)
      return b.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, x, y);
    return b.CreateBinaryIntrinsic(isSigned ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, x, y);
  case BinaryOp::Minimum:
    if (isFloat)
      return b.CreateBinaryIntrinsic(llvm::Intrinsic::minimum, x, y);
    return b.CreateBinaryIntrinsic(isSigned ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, x, y);
  case BinaryOp::Eq:
    return isFloat ? b.CreateFCmpOEQ(x, y) : b.CreateICmpEQ(x, y);
  case BinaryOp::Ne:
    return isFloat ? b.CreateFCmpUNE(x, y) : b.CreateICmpNE(x, y);
  case BinaryOp::Lt:
    return isFloat    ? b.CreateFCmpOLT(x, y)
           : isSigned ? b.CreateICmpSLT(x, y)
                      : b.CreateICmpULT(x, y);
  case BinaryOp::Le:
    return isFloat    ? b.CreateFCmpOLE(x, y)
           : isSigned ? b.CreateICmpSLE(x, y)
                      : b.CreateICmpULE(x, y);
  case BinaryOp::Gt:
    return isFloat    ? b.CreateFCmpOGT(x, y)
           : isSigned ? b.CreateICmpSGT(x, y)
                      : b.CreateICmpUGT(x, y);
  case BinaryOp::Ge:
    return isFloat    ? b.CreateFCmpOGE(x, y)
           : isSigned ? b.CreateICmpSGE(x, y)
                      : b.CreateICmpUGE(x, y);
  case BinaryOp::LogicalAnd:
    return b.CreateAnd(toBool(x), toBool(y));
  case BinaryOp::LogicalOr:
    return b.CreateOr(toBool(x), toBool(y));
  case BinaryOp::LogicalXor:
    return b.CreateXor(toBool(x), toBool(y));
  case BinaryOp::BitwiseAnd:
  case BinaryOp::BitwiseOr:
  case BinaryOp::BitwiseXor:
    if (isFloat)
      return unsupported(expr, std::string(loop::binaryName(expr.binary)) + " of floats");
    if (expr.binary == BinaryOp::BitwiseAnd)
      return b.CreateAnd(x, y);
    return expr.binary == BinaryOp::BitwiseOr ? b.CreateOr(x, y) : b.CreateXor(x, y);
  case BinaryOp::Shl:
  case BinaryOp::Shr: {
    if (isFloat || isBool)
      return unsupported(expr, std::string(loop::binaryName(expr.binary)) + " of non-integers");
    // Shifts by >= the width are poison in LLVM; torch gives 0 (or the sign for >> of negatives).
    int64_t width = int64_t(type->getScalarSizeInBits());
    Value *outOfRange = b.CreateICmpUGE(y, iconst(width));
    if (expr.binary == BinaryOp::Shl)
      return b.CreateSelect(outOfRange, zero, b.CreateShl(x, y));
    if (!isSigned)
      return b.CreateSelect(outOfRange, zero, b.CreateLShr(x, y));
    return b.CreateAShr(x, b.CreateSelect(outOfRange, iconst(width - 1), y));
  }
  }
  return unsupported(expr, "binary op");
}

} // namespace tensorc::cpu
