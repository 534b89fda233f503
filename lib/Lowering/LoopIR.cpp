// LoopIR constructors (dtype-checked) and names.
#include "tensorc/Lowering/LoopIR.h"

#include "tensorc/IR/Type.h"
#include "tensorc/Lowering/ExprVisitor.h"

#include <algorithm>
#include <cassert>
#include <iterator>
#include <set>

namespace tensorc::loop {

#define TENSORC_NAME(e, n) n,
const char *unaryName(UnaryOp op) {
  static constexpr const char *kNames[] = {TENSORC_FOR_EACH_UNARY(TENSORC_NAME)};
  return kNames[size_t(op)];
}

const char *binaryName(BinaryOp op) {
  static constexpr const char *kNames[] = {TENSORC_FOR_EACH_BINARY(TENSORC_NAME)};
  return kNames[size_t(op)];
}

const char *reduceName(ReduceOp op) {
  static constexpr const char *kNames[] = {TENSORC_FOR_EACH_REDUCE(TENSORC_NAME)};
  return kNames[size_t(op)];
}
#undef TENSORC_NAME

std::string printDims(const std::vector<SymInt> &dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    out += (i ? ", " : "") + dims[i].str();
  return out + "]";
}

std::string loopVar(size_t dim) { return "x" + std::to_string(dim); }
std::string reductionVar(size_t dim) { return "r" + std::to_string(dim); }

Expr::~Expr() {
  std::vector<ExprRef> pending = std::move(operands);
  while (!pending.empty()) {
    ExprRef next = std::move(pending.back());
    pending.pop_back();
    // The last owner takes the operands out before the node dies, so its destructor has none.
    if (next.use_count() == 1) {
      std::vector<ExprRef> &inner = const_cast<Expr &>(*next).operands;
      for (ExprRef &operand : inner)
        pending.push_back(std::move(operand));
      inner.clear();
    }
  }
}

ExprRef makeConstant(double value, DType dtype) {
  auto expr = std::make_shared<Expr>();
  expr->kind = ExprKind::Constant;
  expr->dtype = dtype;
  expr->value = value;
  expr->intValue = isFloating(dtype) ? 0 : int64_t(value);
  return expr;
}

ExprRef makeIntConstant(int64_t value, DType dtype) {
  auto expr = std::make_shared<Expr>();
  expr->kind = ExprKind::Constant;
  expr->dtype = dtype;
  expr->value = double(value);
  expr->intValue = value;
  return expr;
}

ExprRef makeLoad(int buffer, DType dtype, SymInt index) {
  auto expr = std::make_shared<Expr>();
  expr->kind = ExprKind::Load;
  expr->dtype = dtype;
  expr->buffer = buffer;
  expr->index = std::move(index);
  return expr;
}

ExprRef makeIndirectLoad(int buffer, DType dtype, SymInt index, ExprRef offset) {
  // Lowering casts the runtime index to i64 first; another dtype here is a lowering bug.
  assert(offset->dtype == DType::I64 && "indirect load offsets are i64");
  auto expr = std::make_shared<Expr>();
  expr->kind = ExprKind::IndirectLoad;
  expr->dtype = dtype;
  expr->buffer = buffer;
  expr->index = std::move(index);
  expr->operands = {std::move(offset)};
  return expr;
}

ExprRef makeIndex(SymInt index, DType dtype) {
  auto expr = std::make_shared<Expr>();
  expr->kind = ExprKind::Index;
  expr->dtype = dtype;
  expr->index = std::move(index);
  return expr;
}

ExprRef makeUnary(UnaryOp op, ExprRef x) {
  auto expr = std::make_shared<Expr>();
  expr->kind = ExprKind::Unary;
  expr->unary = op;
  expr->dtype = (op == UnaryOp::IsNan || op == UnaryOp::LogicalNot) ? DType::Bool : x->dtype;
  expr->operands = {std::move(x)};
  return expr;
}

DType binaryResultType(BinaryOp op, DType operandType) {
  // Comparisons and logical ops give bool; the others their operands' dtype.
  static constexpr BinaryOp kPredicates[] = {
      BinaryOp::Eq, BinaryOp::Ne,         BinaryOp::Lt,        BinaryOp::Le,        BinaryOp::Gt,
      BinaryOp::Ge, BinaryOp::LogicalAnd, BinaryOp::LogicalOr, BinaryOp::LogicalXor};
  return std::find(std::begin(kPredicates), std::end(kPredicates), op) != std::end(kPredicates)
             ? DType::Bool
             : operandType;
}

ExprRef makeBinary(BinaryOp op, ExprRef a, ExprRef b) {
  // Lowering promotes operands first; a mismatch here is a lowering bug, not bad input.
  assert(a->dtype == b->dtype && "binary operands must share a dtype");
  auto expr = std::make_shared<Expr>();
  expr->kind = ExprKind::Binary;
  expr->binary = op;
  expr->dtype = binaryResultType(op, a->dtype);
  expr->operands = {std::move(a), std::move(b)};
  return expr;
}

ExprRef makeSelect(ExprRef cond, ExprRef a, ExprRef b) {
  assert(cond->dtype == DType::Bool && a->dtype == b->dtype && "select operand types");
  auto expr = std::make_shared<Expr>();
  expr->kind = ExprKind::Select;
  expr->dtype = a->dtype;
  expr->operands = {std::move(cond), std::move(a), std::move(b)};
  return expr;
}

ExprRef makeCast(ExprRef x, DType dtype) {
  if (x->dtype == dtype)
    return x;
  auto expr = std::make_shared<Expr>();
  expr->kind = ExprKind::Cast;
  expr->dtype = dtype;
  expr->operands = {std::move(x)};
  return expr;
}

SymInt Buffer::numel() const { return tensorc::numel(shape); }

std::vector<SymInt> contiguousStrides(const std::vector<SymInt> &shape) {
  std::vector<SymInt> strides(shape.size(), SymInt(1));
  for (size_t i = shape.size(); i-- > 1;)
    strides[i - 1] = strides[i] * shape[i];
  return strides;
}

std::vector<int> LoopNode::reads() const {
  std::set<int> buffers;
  forEachExpr(body, [&](const Expr &expr) {
    if (expr.kind == ExprKind::Load || expr.kind == ExprKind::IndirectLoad)
      buffers.insert(expr.buffer);
  });
  if (kind == Kind::Template && templateKind == TemplateKind::Gemm) {
    buffers.insert(gemm.a.buffer);
    buffers.insert(gemm.b.buffer);
  }
  if (kind == Kind::Template && templateKind == TemplateKind::Conv2d) {
    buffers.insert(conv.input);
    buffers.insert(conv.weight.buffer);
  }
  if (kind == Kind::Template && templateKind == TemplateKind::Attention) {
    buffers.insert({attention.q.buffer, attention.k.buffer, attention.v.buffer});
    if (attention.mask.buffer >= 0)
      buffers.insert(attention.mask.buffer);
  }
  for (int input : externInputs)
    buffers.insert(input);
  return {buffers.begin(), buffers.end()};
}

} // namespace tensorc::loop
