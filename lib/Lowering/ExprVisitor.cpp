// LoopIR walks: post-order traversal, visitor and mutator bases, rebuild helpers, equality.
#include "tensorc/Lowering/ExprVisitor.h"

#include <bit>
#include <cmath>
#include <set>
#include <utility>

namespace tensorc::loop {

std::vector<ExprRef> postOrder(const ExprRef &root) {
  std::vector<ExprRef> order;
  if (!root)
    return order;
  std::unordered_set<const Expr *> done;
  // (node, operands pushed): a node is finished when it comes back with its operands done.
  std::vector<std::pair<const ExprRef *, bool>> stack{{&root, false}};
  while (!stack.empty()) {
    auto [expr, expanded] = stack.back();
    stack.pop_back();
    if (done.count(expr->get()))
      continue;
    if (expanded) {
      done.insert(expr->get());
      order.push_back(*expr);
      continue;
    }
    stack.push_back({expr, true});
    // Reversed, so the leftmost operand's subtree finishes first.
    const std::vector<ExprRef> &operands = (*expr)->operands;
    for (size_t i = operands.size(); i-- > 0;)
      if (!done.count(operands[i].get()))
        stack.push_back({&operands[i], false});
  }
  return order;
}

void forEachExpr(const ExprRef &root, const std::function<void(const Expr &)> &fn) {
  for (const ExprRef &expr : postOrder(root))
    fn(*expr);
}

void ExprVisitor::visit(const ExprRef &root) {
  roots_.push_back(root); // keeps visited nodes alive, so their addresses stay theirs
  for (const ExprRef &expr : postOrder(root)) {
    if (!visited_.insert(expr.get()).second)
      continue;
    switch (expr->kind) {
#define TENSORC_VISIT(K)                                                                           \
  case ExprKind::K:                                                                                \
    visit##K(*expr);                                                                               \
    break;
      TENSORC_FOR_EACH_EXPR_KIND(TENSORC_VISIT)
#undef TENSORC_VISIT
    }
  }
}

ExprRef ExprMutator::rewrite(const ExprRef &expr) {
  switch (expr->kind) {
#define TENSORC_MUTATE(K)                                                                          \
  case ExprKind::K:                                                                                \
    return mutate##K(expr);
    TENSORC_FOR_EACH_EXPR_KIND(TENSORC_MUTATE)
#undef TENSORC_MUTATE
  }
  return expr;
}

ExprRef ExprMutator::mutate(const ExprRef &root) {
  if (!root)
    return root;
  roots_.push_back(root); // keeps memoized nodes alive, so their addresses stay theirs
  for (const ExprRef &expr : postOrder(root)) {
    if (done_.count(expr.get()))
      continue;
    std::vector<ExprRef> operands;
    operands.reserve(expr->operands.size());
    for (const ExprRef &operand : expr->operands)
      operands.push_back(done_.at(operand.get()));
    ExprRef rebuilt = withOperands(expr, std::move(operands));
    ExprRef result = rewrite(rebuilt);
    done_.emplace(expr.get(), result ? result : rebuilt);
  }
  return done_.at(root.get());
}

namespace {

class LambdaMutator final : public ExprMutator {
public:
  explicit LambdaMutator(const std::function<ExprRef(const ExprRef &)> &fn) : fn_(fn) {}

private:
  ExprRef rewrite(const ExprRef &expr) override {
    ExprRef result = fn_(expr);
    return result ? result : expr;
  }

  const std::function<ExprRef(const ExprRef &)> &fn_;
};

} // namespace

ExprRef mutateWith(const ExprRef &root, const std::function<ExprRef(const ExprRef &)> &fn) {
  return LambdaMutator(fn).mutate(root);
}

ExprRef withOperands(const ExprRef &expr, std::vector<ExprRef> operands) {
  if (operands == expr->operands)
    return expr;
  switch (expr->kind) {
  case ExprKind::Constant:
  case ExprKind::Load:
  case ExprKind::Index:
    return expr; // no operands
  case ExprKind::IndirectLoad:
    return makeIndirectLoad(expr->buffer, expr->dtype, expr->index, std::move(operands[0]));
  case ExprKind::Unary:
    return makeUnary(expr->unary, std::move(operands[0]));
  case ExprKind::Binary:
    return makeBinary(expr->binary, std::move(operands[0]), std::move(operands[1]));
  case ExprKind::Select:
    return makeSelect(std::move(operands[0]), std::move(operands[1]), std::move(operands[2]));
  case ExprKind::Cast:
    return makeCast(std::move(operands[0]), expr->dtype);
  }
  return expr;
}

ExprRef withIndex(const ExprRef &expr, SymInt index) {
  if (index == expr->index)
    return expr;
  switch (expr->kind) {
  case ExprKind::Load:
    return makeLoad(expr->buffer, expr->dtype, std::move(index));
  case ExprKind::IndirectLoad:
    return makeIndirectLoad(expr->buffer, expr->dtype, std::move(index), expr->operands[0]);
  case ExprKind::Index:
    return makeIndex(std::move(index), expr->dtype);
  case ExprKind::Constant:
  case ExprKind::Unary:
  case ExprKind::Binary:
  case ExprKind::Select:
  case ExprKind::Cast:
    return expr; // no index
  }
  return expr;
}

namespace {

bool sameConstant(const Expr &a, const Expr &b) {
  if (isFloating(a.dtype))
    return std::bit_cast<uint64_t>(a.value) == std::bit_cast<uint64_t>(b.value) ||
           (std::isnan(a.value) && std::isnan(b.value));
  if (a.dtype == DType::Bool)
    return (a.intValue != 0 || a.value != 0) == (b.intValue != 0 || b.value != 0);
  return a.intValue == b.intValue;
}

/// The fields of one node, operands aside.
bool sameNode(const Expr &a, const Expr &b) {
  if (a.kind != b.kind || a.dtype != b.dtype || a.operands.size() != b.operands.size())
    return false;
  switch (a.kind) {
  case ExprKind::Constant:
    return sameConstant(a, b);
  case ExprKind::Load:
  case ExprKind::IndirectLoad:
    return a.buffer == b.buffer && a.index == b.index;
  case ExprKind::Index:
    return a.index == b.index;
  case ExprKind::Unary:
    return a.unary == b.unary;
  case ExprKind::Binary:
    return a.binary == b.binary;
  case ExprKind::Select:
  case ExprKind::Cast:
    return true;
  }
  return false;
}

} // namespace

bool equalExprs(const ExprRef &a, const ExprRef &b) {
  if (!a || !b)
    return !a && !b;
  std::set<std::pair<const Expr *, const Expr *>> compared;
  std::vector<std::pair<const Expr *, const Expr *>> stack{{a.get(), b.get()}};
  while (!stack.empty()) {
    auto pair = stack.back();
    stack.pop_back();
    if (pair.first == pair.second || !compared.insert(pair).second)
      continue;
    if (!sameNode(*pair.first, *pair.second))
      return false;
    for (size_t i = 0; i < pair.first->operands.size(); ++i)
      stack.push_back({pair.first->operands[i].get(), pair.second->operands[i].get()});
  }
  return true;
}

} // namespace tensorc::loop
