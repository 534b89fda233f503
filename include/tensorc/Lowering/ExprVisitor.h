// Walks over LoopIR bodies: a visitor and a mutator with default recursion, a fold and lambda
// helpers, all memoized over the shared-pointer DAG and iterative, so a deep body never deepens
// the C++ stack.
#pragma once

#include "tensorc/Lowering/LoopIR.h"

#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace tensorc::loop {

/// Every distinct node of the DAG under `root`, operands before their users, operands left to
/// right: the order a recursive walk that skips visited nodes would finish them in.
std::vector<ExprRef> postOrder(const ExprRef &root);

/// Calls `fn` once per distinct node under `root`, in postOrder.
void forEachExpr(const ExprRef &root, const std::function<void(const Expr &)> &fn);

/// Read-only walk: each distinct node once, operands first; override the kinds of interest (the
/// base recurses through every operand). One visitor may walk several roots: nodes shared
/// between them are visited once.
class ExprVisitor {
public:
  virtual ~ExprVisitor() = default;
  void visit(const ExprRef &root);

protected:
  virtual void visitConstant(const Expr &) {}
  virtual void visitLoad(const Expr &) {}
  virtual void visitIndirectLoad(const Expr &) {}
  virtual void visitIndex(const Expr &) {}
  virtual void visitUnary(const Expr &) {}
  virtual void visitBinary(const Expr &) {}
  virtual void visitSelect(const Expr &) {}
  virtual void visitCast(const Expr &) {}

private:
  std::unordered_set<const Expr *> visited_;
  std::vector<ExprRef> roots_;
};

/// Rewriting walk: each distinct node once, operands first. A hook receives the node with its
/// operands already rewritten (the original node when none changed) and returns it or a
/// replacement; a node whose operands did not change and that no hook replaces comes back
/// pointer-equal, so an unchanged body is the same body. Memoized across calls on one mutator:
/// subexpressions shared by several bodies are rewritten once and stay shared.
class ExprMutator {
public:
  virtual ~ExprMutator() = default;
  ExprRef mutate(const ExprRef &root);

protected:
  /// Called once per node with its operands rewritten; by default the hook of its kind below.
  virtual ExprRef rewrite(const ExprRef &expr);
  virtual ExprRef mutateConstant(const ExprRef &expr) { return expr; }
  virtual ExprRef mutateLoad(const ExprRef &expr) { return expr; }
  virtual ExprRef mutateIndirectLoad(const ExprRef &expr) { return expr; }
  virtual ExprRef mutateIndex(const ExprRef &expr) { return expr; }
  virtual ExprRef mutateUnary(const ExprRef &expr) { return expr; }
  virtual ExprRef mutateBinary(const ExprRef &expr) { return expr; }
  virtual ExprRef mutateSelect(const ExprRef &expr) { return expr; }
  virtual ExprRef mutateCast(const ExprRef &expr) { return expr; }

private:
  std::unordered_map<const Expr *, ExprRef> done_;
  std::vector<ExprRef> roots_;
};

/// A small rewrite without a class: `fn` sees each node after its operands were rewritten and
/// returns its replacement (or the node itself, or nullptr, to keep it). Memoized, iterative.
ExprRef mutateWith(const ExprRef &root, const std::function<ExprRef(const ExprRef &)> &fn);

/// `expr` with other operands, rebuilt through the checked constructors (same kind, op, buffer,
/// index and, for loads, index expressions and casts, dtype); `expr` itself when they are the
/// same pointers.
ExprRef withOperands(const ExprRef &expr, std::vector<ExprRef> operands);
/// A Load, IndirectLoad or Index with another index; `expr` itself when the index is equal.
ExprRef withIndex(const ExprRef &expr, SymInt index);

/// Computes one value per distinct node from its operands' values, operands first, and returns
/// the root's; `memo` carries values across calls (one body after another sharing nodes; the
/// caller keeps those bodies alive meanwhile, as the memo is keyed by address).
/// `combine(expr, operandValues)` gets the values in operand order.
template <typename T>
T foldExpr(const ExprRef &root,
           const std::function<T(const Expr &, const std::vector<const T *> &)> &combine,
           std::unordered_map<const Expr *, T> &memo) {
  std::vector<const T *> operands;
  for (const ExprRef &expr : postOrder(root)) {
    if (memo.count(expr.get()))
      continue;
    operands.clear();
    for (const ExprRef &operand : expr->operands)
      operands.push_back(&memo.at(operand.get()));
    memo.emplace(expr.get(), combine(*expr, operands));
  }
  return memo.at(root.get());
}

template <typename T>
T foldExpr(const ExprRef &root,
           const std::function<T(const Expr &, const std::vector<const T *> &)> &combine) {
  std::unordered_map<const Expr *, T> memo;
  return foldExpr<T>(root, combine, memo);
}

/// Structural equality of two bodies: same kinds, dtypes, ops, buffers, indices and constants
/// (integers by value, floats by bits, NaNs equal), sharing aside. Iterative.
bool equalExprs(const ExprRef &a, const ExprRef &b);

} // namespace tensorc::loop
