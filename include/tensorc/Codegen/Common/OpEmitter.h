// The interface backends print plain operations by (after legalize(): tinygrad's code_for_op per
// language; STYLE 16), the one walk over a loop-IR body that drives it, and the reductions'
// identities and combines written once on top of it.
#pragma once

#include "tensorc/Lowering/ExprVisitor.h"
#include "tensorc/Lowering/LoopIR.h"

#include <cstdint>
#include <unordered_map>

namespace tensorc::codegen {

/// A backend's printer of plain operations, V being its value: an llvm::Value *, or a C++
/// expression as text. Operand types are never f16/bf16 (legalize() computes those in f32).
template <typename V> class OpEmitter {
public:
  virtual ~OpEmitter() = default;
  /// Leaves: a constant; a load, in its register form; a load at a runtime offset; an index.
  virtual V constant(const loop::Expr &expr) = 0;
  virtual V load(const loop::Expr &expr) = 0;
  virtual V indirectLoad(const loop::Expr &expr, V offset) = 0;
  virtual V index(const loop::Expr &expr) = 0;
  /// Plain operations on operands of `type`.
  virtual V unary(loop::UnaryOp op, DType type, V x) = 0;
  virtual V binary(loop::BinaryOp op, DType type, V x, V y) = 0;
  virtual V select(DType type, V cond, V x, V y) = 0;
  virtual V cast(DType from, DType to, V x) = 0;
  /// A computed node's value, named where the language wants names (CUDA: a local).
  virtual V bind(const loop::Expr &, V value) { return value; }
  /// A value used as an operand of another operation outside a body walk (parenthesized text).
  virtual V group(V value) { return value; }
};

/// Emits the DAG under `root` through `e`, operands first, each node once: nodes already in
/// `memo` keep their values (a caller emitting several bodies in one scope shares them).
template <typename V>
V emitBody(const loop::ExprRef &root, OpEmitter<V> &e,
           std::unordered_map<const loop::Expr *, V> &memo) {
  for (const loop::ExprRef &expr : loop::postOrder(root)) {
    if (memo.count(expr.get()))
      continue;
    auto operand = [&](size_t i) { return memo.at(expr->operands[i].get()); };
    auto type = [&](size_t i) { return expr->operands[i]->dtype; };
    V value{};
    switch (expr->kind) {
    case loop::ExprKind::Constant:
      memo.emplace(expr.get(), e.constant(*expr));
      continue;
    case loop::ExprKind::Load:
      value = e.load(*expr);
      break;
    case loop::ExprKind::IndirectLoad:
      value = e.indirectLoad(*expr, operand(0));
      break;
    case loop::ExprKind::Index:
      value = e.index(*expr);
      break;
    case loop::ExprKind::Unary:
      value = e.unary(expr->unary, type(0), operand(0));
      break;
    case loop::ExprKind::Binary:
      value = e.binary(expr->binary, type(0), operand(0), operand(1));
      break;
    case loop::ExprKind::Select:
      value = e.select(expr->dtype, operand(0), operand(1), operand(2));
      break;
    case loop::ExprKind::Cast:
      value = e.cast(type(0), expr->dtype, operand(0));
      if (value == operand(0)) { // a conversion that changes nothing (f16 -> f32 registers)
        memo.emplace(expr.get(), value);
        continue;
      }
      break;
    }
    memo.emplace(expr.get(), e.bind(*expr, value));
  }
  return memo.at(root.get());
}

template <typename V> V emitBody(const loop::ExprRef &root, OpEmitter<V> &e) {
  std::unordered_map<const loop::Expr *, V> memo;
  return emitBody(root, e, memo);
}

/// The value a reduction starts from: 0 (sum), 1 (prod), the dtype's lowest value (max, argmax:
/// -inf, false) or highest (min, argmin: +inf, true).
loop::ExprRef reductionIdentity(loop::ReduceOp op, DType dtype);

/// `acc` combined with `value` for Sum, Prod, Max, Min (bool: or, and): maximum and minimum
/// propagate NaN, as torch's do.
template <typename V>
V combineReduction(OpEmitter<V> &e, loop::ReduceOp op, DType dtype, V acc, V value) {
  using loop::BinaryOp;
  bool isBool = dtype == DType::Bool;
  switch (op) {
  case loop::ReduceOp::Sum:
    return e.binary(isBool ? BinaryOp::LogicalOr : BinaryOp::Add, dtype, acc, value);
  case loop::ReduceOp::Prod:
    return e.binary(isBool ? BinaryOp::LogicalAnd : BinaryOp::Mul, dtype, acc, value);
  case loop::ReduceOp::Max:
    return e.binary(isBool ? BinaryOp::LogicalOr : BinaryOp::Maximum, dtype, acc, value);
  case loop::ReduceOp::Min:
    return e.binary(isBool ? BinaryOp::LogicalAnd : BinaryOp::Minimum, dtype, acc, value);
  case loop::ReduceOp::ArgMax:
  case loop::ReduceOp::ArgMin:
    break;
  }
  return acc;
}

/// Whether (value, index) replaces (best, bestIndex) in an ArgMax/ArgMin: NaN counts as the
/// extreme (the first NaN wins); with `tieBreak`, equal values (or two NaNs) go to the lower
/// index, for merging partial results. Indices are i64.
template <typename V>
V argReductionBetter(OpEmitter<V> &e, loop::ReduceOp op, DType dtype, V value, V index, V best,
                     V bestIndex, bool tieBreak) {
  using loop::BinaryOp;
  using loop::UnaryOp;
  // Each result grouped once, as it becomes an operand of the next.
  auto apply = [&](BinaryOp bop, DType type, V x, V y) {
    return e.group(e.binary(bop, type, x, y));
  };
  BinaryOp compare = op == loop::ReduceOp::ArgMax ? BinaryOp::Gt : BinaryOp::Lt;
  bool isFloat = isFloating(dtype);
  V valueNan{}, bestNan{};
  if (isFloat) {
    valueNan = e.unary(UnaryOp::IsNan, dtype, value);
    bestNan = e.unary(UnaryOp::IsNan, dtype, best);
  }
  V better = apply(compare, dtype, value, best);
  if (isFloat)
    better = apply(BinaryOp::LogicalOr, DType::Bool, better,
                   apply(BinaryOp::LogicalAnd, DType::Bool, valueNan,
                         e.unary(UnaryOp::BitwiseNot, DType::Bool, bestNan)));
  if (!tieBreak)
    return better;
  V same = apply(BinaryOp::Eq, dtype, value, best);
  if (isFloat)
    same = apply(BinaryOp::LogicalOr, DType::Bool, same,
                 apply(BinaryOp::LogicalAnd, DType::Bool, valueNan, bestNan));
  return apply(BinaryOp::LogicalOr, DType::Bool, better,
               apply(BinaryOp::LogicalAnd, DType::Bool, same,
                     apply(BinaryOp::Lt, DType::I64, index, bestIndex)));
}

} // namespace tensorc::codegen
