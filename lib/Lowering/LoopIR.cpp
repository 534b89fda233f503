// LoopIR constructors (dtype-checked) and names.
#include "tensorc/Lowering/LoopIR.h"

#include "tensorc/Lowering/ExprVisitor.h"

#include <cassert>
#include <set>

namespace tensorc::loop {

const char *unaryName(UnaryOp op) {
  switch (op) {
#define TENSORC_CASE(e, n)                                                                         \
  case UnaryOp::e:                                                                                 \
    return n;
    TENSORC_FOR_EACH_UNARY(TENSORC_CASE)
#undef TENSORC_CASE
  }
  return "?";
}

const char *binaryName(BinaryOp op) {
  switch (op) {
#define TENSORC_CASE(e, n)                                                                         \
  case BinaryOp::e:                                                                                \
    return n;
    TENSORC_FOR_EACH_BINARY(TENSORC_CASE)
#undef TENSORC_CASE
  }
  return "?";
}

const char *reduceName(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
    return "sum";
  case ReduceOp::Prod:
    return "prod";
  case ReduceOp::Max:
    return "max";
  case ReduceOp::Min:
    return "min";
  case ReduceOp::ArgMax:
    return "argmax";
  case ReduceOp::ArgMin:
    return "argmin";
  }
  return "?";
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
  switch (op) {
  case BinaryOp::Eq:
  case BinaryOp::Ne:
  case BinaryOp::Lt:
  case BinaryOp::Le:
  case BinaryOp::Gt:
  case BinaryOp::Ge:
  case BinaryOp::LogicalAnd:
  case BinaryOp::LogicalOr:
  case BinaryOp::LogicalXor:
    return DType::Bool;
  case BinaryOp::Add:
  case BinaryOp::Sub:
  case BinaryOp::Mul:
  case BinaryOp::Div:
  case BinaryOp::Pow:
  case BinaryOp::Remainder:
  case BinaryOp::Fmod:
  case BinaryOp::Maximum:
  case BinaryOp::Minimum:
  case BinaryOp::BitwiseAnd:
  case BinaryOp::BitwiseOr:
  case BinaryOp::BitwiseXor:
  case BinaryOp::Shl:
  case BinaryOp::Shr:
    return operandType;
  }
  return operandType;
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

SymInt Buffer::numel() const {
  SymInt total(1);
  for (const SymInt &dim : shape)
    total = total * dim;
  return total;
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
    buffers.insert({attention.q, attention.k, attention.v});
    if (attention.mask.buffer >= 0)
      buffers.insert(attention.mask.buffer);
  }
  for (int input : externInputs)
    buffers.insert(input);
  return {buffers.begin(), buffers.end()};
}

} // namespace tensorc::loop
