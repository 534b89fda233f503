// Index-set splitting of pointwise bodies along one loop variable (IndexSplit.h).
#include "tensorc/Lowering/IndexSplit.h"

#include "tensorc/Lowering/ExprVisitor.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <set>

namespace tensorc::loop {

namespace {

/// `index` as coefficient * var + constant, when it is that (no other symbol or atom).
struct Affine {
  int64_t coefficient = 0, constant = 0;
};
std::optional<Affine> affineIn(const SymInt &index, const std::string &var) {
  Affine affine;
  for (const auto &[atoms, coefficient] : index.termList()) {
    if (atoms.empty())
      affine.constant = coefficient;
    else if (atoms.size() == 1 && atoms[0]->kind == SymInt::Atom::Kind::Symbol &&
             atoms[0]->name == var)
      affine.coefficient = coefficient;
    else
      return std::nullopt;
  }
  return affine;
}

bool isComparison(BinaryOp op) {
  switch (op) {
  case BinaryOp::Lt:
  case BinaryOp::Le:
  case BinaryOp::Gt:
  case BinaryOp::Ge:
  case BinaryOp::Eq:
  case BinaryOp::Ne:
    return true;
  default:
    return false;
  }
}

/// `a op b` on integers.
bool compare(BinaryOp op, int64_t a, int64_t b) {
  switch (op) {
  case BinaryOp::Lt:
    return a < b;
  case BinaryOp::Le:
    return a <= b;
  case BinaryOp::Gt:
    return a > b;
  case BinaryOp::Ge:
    return a >= b;
  case BinaryOp::Eq:
    return a == b;
  default:
    return a != b;
  }
}

/// The integer constant `expr` is, if it is one of an integer dtype.
std::optional<int64_t> intConstant(const Expr &expr) {
  if (expr.kind != ExprKind::Constant || isFloating(expr.dtype))
    return std::nullopt;
  return expr.intValue;
}

/// Bounds on the numbers split points are computed from, so that no product or sum overflows:
/// coefficients up to 2^20, constants and extents up to 2^40 (a hostile `.loop` file may hold
/// any; those are not split).
constexpr int64_t kMaxCoefficient = int64_t(1) << 20, kMaxMagnitude = int64_t(1) << 40;

/// A comparison of an index affine in `var` (coefficient non-zero) with an integer constant:
/// op(coefficient * var + constant, bound), the operands put in that order.
struct IndexComparison {
  BinaryOp op;
  Affine index;
  int64_t bound = 0;
};
std::optional<IndexComparison> indexComparison(const Expr &expr, const std::string &var) {
  if (expr.kind != ExprKind::Binary || !isComparison(expr.binary))
    return std::nullopt;
  const Expr &a = *expr.operands[0], &b = *expr.operands[1];
  auto side = [&](const Expr &index, const Expr &other) -> std::optional<IndexComparison> {
    std::optional<int64_t> bound = intConstant(other);
    if (index.kind != ExprKind::Index || isFloating(index.dtype) || !bound)
      return std::nullopt;
    std::optional<Affine> affine = affineIn(index.index, var);
    if (!affine || affine->coefficient == 0 || std::abs(affine->coefficient) > kMaxCoefficient ||
        std::abs(affine->constant) > kMaxMagnitude || std::abs(*bound) > kMaxMagnitude)
      return std::nullopt;
    return IndexComparison{expr.binary, *affine, *bound};
  };
  if (auto direct = side(a, b))
    return direct;
  if (auto swapped = side(b, a)) {
    // bound op index == index op' bound.
    switch (swapped->op) {
    case BinaryOp::Lt:
      swapped->op = BinaryOp::Gt;
      break;
    case BinaryOp::Le:
      swapped->op = BinaryOp::Ge;
      break;
    case BinaryOp::Gt:
      swapped->op = BinaryOp::Lt;
      break;
    case BinaryOp::Ge:
      swapped->op = BinaryOp::Le;
      break;
    default:
      break;
    }
    return swapped;
  }
  return std::nullopt;
}

/// The comparison's value for every var in [0, extent), if it is the same for all (the index is
/// monotonic in var, so its ends decide the order comparisons; Eq and Ne hold or fail throughout
/// when the bound lies outside the index's range).
std::optional<bool> decide(const IndexComparison &c, int64_t extent) {
  if (extent < 1 || extent > kMaxMagnitude)
    return std::nullopt;
  int64_t first = c.index.constant, last = c.index.coefficient * (extent - 1) + c.index.constant;
  int64_t lo = std::min(first, last), hi = std::max(first, last);
  if (c.op == BinaryOp::Eq || c.op == BinaryOp::Ne) {
    if (c.bound < lo || c.bound > hi || (lo == hi))
      return compare(c.op, lo, c.bound);
    return std::nullopt;
  }
  bool atLo = compare(c.op, lo, c.bound), atHi = compare(c.op, hi, c.bound);
  if (atLo == atHi)
    return atLo;
  return std::nullopt;
}

} // namespace

ExprRef specializeIndexRange(const ExprRef &body, const std::string &var, int64_t lo, int64_t hi,
                             std::map<std::string, int64_t> bounds) {
  const int64_t extent = hi - lo;
  bounds[var] = extent;
  const std::map<std::string, SymInt> rebase{{var, SymInt::symbol(var) + SymInt(lo)}};
  auto boolean = [](bool value) { return makeIntConstant(value ? 1 : 0, DType::Bool); };
  return mutateWith(body, [&](const ExprRef &expr) -> ExprRef {
    switch (expr->kind) {
    case ExprKind::Load:
    case ExprKind::IndirectLoad:
    case ExprKind::Index:
      return withIndex(expr, expr->index.substitute(rebase).simplify(bounds));
    case ExprKind::Binary: {
      if (auto comparison = indexComparison(*expr, var))
        if (std::optional<bool> value = decide(*comparison, extent))
          return boolean(*value);
      std::optional<int64_t> a = intConstant(*expr->operands[0]),
                             b = intConstant(*expr->operands[1]);
      if (expr->binary == BinaryOp::LogicalAnd || expr->binary == BinaryOp::LogicalOr) {
        const bool isAnd = expr->binary == BinaryOp::LogicalAnd;
        // x and true = x, x and false = false; x or false = x, x or true = true.
        for (int i = 0; i < 2; ++i) {
          std::optional<int64_t> known = i == 0 ? a : b;
          if (!known || expr->operands[size_t(1 - i)]->dtype != DType::Bool)
            continue;
          if ((*known != 0) == isAnd)
            return expr->operands[size_t(1 - i)];
          return boolean(!isAnd);
        }
      }
      return expr;
    }
    case ExprKind::Select:
      if (std::optional<int64_t> cond = intConstant(*expr->operands[0]))
        return expr->operands[*cond ? 1 : 2];
      return expr;
    default:
      return expr;
    }
  });
}

std::vector<IndexPiece> splitIndexRange(const ExprRef &body, const std::string &var, int64_t extent,
                                        const std::map<std::string, int64_t> &bounds,
                                        size_t maxPieces) {
  // Where each comparison changes value: the first var at which it differs from its value at
  // var - 1 (the index is monotonic, so order comparisons change once, Eq and Ne twice).
  if (extent < 2 || extent > kMaxMagnitude)
    return {};
  std::set<int64_t> points;
  forEachExpr(body, [&](const Expr &expr) {
    std::optional<IndexComparison> c = indexComparison(expr, var);
    if (!c)
      return;
    // Solve coefficient * v + constant = bound (+1) for the integer v nearest to each change.
    auto at = [&](int64_t v) {
      return compare(c->op, c->index.coefficient * v + c->index.constant, c->bound);
    };
    const int64_t k = c->index.coefficient, target = c->bound - c->index.constant;
    int64_t guess = target / k; // truncated: the change is within one or two of it
    for (int64_t v = guess - 2; v <= guess + 3; ++v)
      if (v > 0 && v < extent && at(v) != at(v - 1))
        points.insert(v);
  });
  if (points.empty() || points.size() + 1 > maxPieces)
    return {};
  std::vector<IndexPiece> pieces;
  int64_t lo = 0;
  points.insert(extent);
  for (int64_t hi : points) {
    pieces.push_back({lo, hi, specializeIndexRange(body, var, lo, hi, bounds)});
    lo = hi;
  }
  return pieces;
}

} // namespace tensorc::loop
