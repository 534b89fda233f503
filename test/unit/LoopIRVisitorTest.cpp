// LoopIR walks: post-order over the DAG, visitor and mutator bases, mutateWith, equality, and
// bodies far deeper than the C++ stack would allow a recursive walk.
#include "tensorc/Lowering/ExprVisitor.h"
#include "tensorc/Lowering/IndexSplit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace tensorc::loop {
namespace {

SymInt x(size_t i) { return SymInt::symbol(loopVar(i)); }

/// exp(a) + exp(a) * b, with exp(a) one shared node: a small DAG.
struct Diamond {
  ExprRef a = makeLoad(0, DType::F32, x(0));
  ExprRef b = makeLoad(1, DType::F32, x(0) * SymInt(2));
  ExprRef e = makeUnary(UnaryOp::Exp, a);
  ExprRef m = makeBinary(BinaryOp::Mul, e, b);
  ExprRef root = makeBinary(BinaryOp::Add, e, m);
};

TEST(LoopIRVisitor, PostOrderVisitsEachNodeOnceOperandsFirstLeftToRight) {
  Diamond d;
  std::vector<ExprRef> order = postOrder(d.root);
  std::vector<const Expr *> got;
  for (const ExprRef &expr : order)
    got.push_back(expr.get());
  // A recursive left-to-right walk skipping finished nodes: a, exp, b, mul, add.
  std::vector<const Expr *> want = {d.a.get(), d.e.get(), d.b.get(), d.m.get(), d.root.get()};
  EXPECT_EQ(got, want);
}

TEST(LoopIRVisitor, VisitorDispatchesByKindOncePerNodeAcrossRoots) {
  Diamond d;
  struct Counter : ExprVisitor {
    std::vector<int> loads;
    int unary = 0, binary = 0;
    void visitLoad(const Expr &expr) override { loads.push_back(expr.buffer); }
    void visitUnary(const Expr &) override { ++unary; }
    void visitBinary(const Expr &) override { ++binary; }
  } counter;
  counter.visit(d.root);
  counter.visit(d.m); // already seen through d.root
  EXPECT_EQ(counter.loads, (std::vector<int>{0, 1}));
  EXPECT_EQ(counter.unary, 1);
  EXPECT_EQ(counter.binary, 2);
}

TEST(LoopIRVisitor, MutatorReturnsTheOriginalWhenNothingChanges) {
  Diamond d;
  struct Identity : ExprMutator {
  } identity;
  EXPECT_EQ(identity.mutate(d.root).get(), d.root.get());
  EXPECT_EQ(mutateWith(d.root, [](const ExprRef &) { return nullptr; }).get(), d.root.get());
}

TEST(LoopIRVisitor, MutatorRebuildsOnlyThePathToAChangeAndKeepsSharing) {
  Diamond d;
  struct MoveBuffer1 : ExprMutator {
    ExprRef mutateLoad(const ExprRef &expr) override {
      return expr->buffer == 1 ? makeLoad(7, expr->dtype, expr->index) : expr;
    }
  } mutator;
  ExprRef result = mutator.mutate(d.root);
  ASSERT_NE(result.get(), d.root.get());
  // add(exp(a), mul(exp(a), load 7)): exp(a) untouched and still one node.
  EXPECT_EQ(result->operands[0].get(), d.e.get());
  const ExprRef &mul = result->operands[1];
  EXPECT_NE(mul.get(), d.m.get());
  EXPECT_EQ(mul->operands[0].get(), d.e.get());
  EXPECT_EQ(mul->operands[1]->buffer, 7);
  EXPECT_EQ(mul->operands[1]->index, d.b->index);
  // Memoized across calls: the same subexpression maps to the same result.
  EXPECT_EQ(mutator.mutate(d.m).get(), mul.get());
}

TEST(LoopIRVisitor, MutateWithRewritesIndices) {
  Diamond d;
  ExprRef shifted = mutateWith(d.root, [](const ExprRef &expr) -> ExprRef {
    if (expr->kind != ExprKind::Load)
      return nullptr;
    return withIndex(expr, expr->index.substitute({{loopVar(0), x(1)}}));
  });
  std::vector<SymInt> indices;
  forEachExpr(shifted, [&](const Expr &expr) {
    if (expr.kind == ExprKind::Load)
      indices.push_back(expr.index);
  });
  EXPECT_EQ(indices, (std::vector<SymInt>{x(1), x(1) * SymInt(2)}));
}

TEST(LoopIRVisitor, WithOperandsRechecksDtypes) {
  ExprRef a = makeLoad(0, DType::F32, x(0));
  ExprRef lt = makeBinary(BinaryOp::Lt, a, a);
  ExprRef i = makeLoad(1, DType::I32, x(0));
  ExprRef rebuilt = withOperands(lt, {i, i});
  EXPECT_EQ(rebuilt->dtype, DType::Bool);
  EXPECT_EQ(rebuilt->operands[0]->dtype, DType::I32);
  EXPECT_EQ(withOperands(lt, lt->operands).get(), lt.get());
}

TEST(LoopIRVisitor, FoldComputesFromOperands) {
  Diamond d;
  // Nodes per subtree, shared nodes counted once per use: a tree size.
  int size = foldExpr<int>(d.root, [](const Expr &, const std::vector<const int *> &operands) {
    int total = 1;
    for (const int *operand : operands)
      total += *operand;
    return total;
  });
  EXPECT_EQ(size, 7); // add(exp(a), mul(exp(a), b))
}

TEST(LoopIRVisitor, EqualityIsStructural) {
  Diamond d1, d2;
  EXPECT_TRUE(equalExprs(d1.root, d2.root));
  ExprRef other = makeBinary(BinaryOp::Add, d1.e, makeBinary(BinaryOp::Mul, d1.e, d1.a));
  EXPECT_FALSE(equalExprs(d1.root, other));
  EXPECT_TRUE(equalExprs(makeConstant(NAN, DType::F32), makeConstant(NAN, DType::F32)));
  EXPECT_FALSE(equalExprs(makeConstant(0.0, DType::F32), makeConstant(-0.0, DType::F32)));
  EXPECT_FALSE(equalExprs(makeConstant(1.0, DType::F32), makeConstant(1.0, DType::F16)));
  EXPECT_TRUE(equalExprs(makeConstant(3.0, DType::I64), makeIntConstant(3, DType::I64)));
  EXPECT_FALSE(equalExprs(makeLoad(0, DType::F32, x(0)), makeLoad(0, DType::F32, x(1))));
}

/// cat([a (4 x 5), b (4 x 8), c (4 x 32)], dim 1) at (x0, x1), as lowering writes it: a select
/// chain on x1 < 5, x1 < 13 over loads at x1 wrapped into each input's range.
ExprRef catOfThree() {
  auto part = [](int buffer, int64_t start, int64_t size) {
    int64_t shift = (size - start % size) % size;
    return makeLoad(buffer, DType::F32,
                    x(0) * SymInt(size) + SymInt::mod(x(1) + SymInt(shift), size));
  };
  ExprRef at = makeIndex(x(1), DType::I64);
  auto below = [&](int64_t bound) {
    return makeBinary(BinaryOp::Lt, at, makeIntConstant(bound, DType::I64));
  };
  ExprRef rest = makeSelect(below(13), part(1, 5, 8), part(2, 13, 32));
  return makeUnary(UnaryOp::Relu, makeSelect(below(5), part(0, 0, 5), rest));
}

TEST(IndexSplit, CatSplitsIntoOnePlainLoadPerInput) {
  std::vector<IndexPiece> pieces = splitIndexRange(catOfThree(), loopVar(1), 45, {{loopVar(0), 4}});
  ASSERT_EQ(pieces.size(), 3u);
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (const IndexPiece &piece : pieces)
    ranges.emplace_back(piece.lo, piece.hi);
  EXPECT_EQ(ranges, (std::vector<std::pair<int64_t, int64_t>>{{0, 5}, {5, 13}, {13, 45}}));
  // Each piece: relu of one load of its input at the rebased x1, no select, no remainder.
  const int64_t sizes[] = {5, 8, 32};
  for (size_t i = 0; i < pieces.size(); ++i) {
    const ExprRef &body = pieces[i].body;
    ASSERT_EQ(body->kind, ExprKind::Unary);
    const ExprRef &load = body->operands[0];
    ASSERT_EQ(load->kind, ExprKind::Load) << i;
    EXPECT_EQ(load->buffer, int(i));
    EXPECT_EQ(load->index, x(0) * SymInt(sizes[i]) + x(1)) << load->index.str();
  }
}

TEST(IndexSplit, UndecidedComparisonsStayAndNothingToSplitIsEmpty) {
  // Specialized to [3, 9) the x1 < 5 test holds for some x1 only: it stays, on the rebased x1.
  ExprRef body = specializeIndexRange(catOfThree(), loopVar(1), 3, 9, {{loopVar(0), 4}});
  bool foundSelect = false;
  forEachExpr(body, [&](const Expr &expr) { foundSelect |= expr.kind == ExprKind::Select; });
  EXPECT_TRUE(foundSelect);
  // Comparisons with x0 (not the split variable) or none: no pieces.
  ExprRef other = makeSelect(
      makeBinary(BinaryOp::Lt, makeIndex(x(0), DType::I64), makeIntConstant(2, DType::I64)),
      makeLoad(0, DType::F32, x(1)), makeLoad(1, DType::F32, x(1)));
  EXPECT_TRUE(splitIndexRange(other, loopVar(1), 45, {}).empty());
  // More pieces than allowed: none.
  EXPECT_TRUE(splitIndexRange(catOfThree(), loopVar(1), 45, {}, 2).empty());
}

TEST(LoopIRVisitor, DeepBodiesNeedNoDeepStack) {
  // 100000 nested ops (a recursive walk would need tens of MB of stack): every walk, the printer and the destructor must not recurse per level.
  constexpr int kDepth = 100000;
  ExprRef body = makeLoad(0, DType::F32, x(0));
  for (int i = 0; i < kDepth; ++i)
    body = makeUnary(i % 2 ? UnaryOp::Neg : UnaryOp::Abs, body);
  EXPECT_EQ(postOrder(body).size(), size_t(kDepth + 1));
  ExprRef renamed = mutateWith(body, [](const ExprRef &expr) -> ExprRef {
    return expr->kind == ExprKind::Load ? makeLoad(1, expr->dtype, expr->index) : nullptr;
  });
  EXPECT_FALSE(equalExprs(body, renamed));
  EXPECT_TRUE(equalExprs(renamed, mutateWith(renamed, [](const ExprRef &) { return nullptr; })));
  LoopProgram program;
  program.buffers.resize(2);
  program.buffers[0].name = "a";
  program.buffers[1].name = "b";
  std::string text = printExpr(renamed, program);
  EXPECT_NE(text.find("load(b, x0)"), std::string::npos);
  body.reset();
  renamed.reset(); // destroys a 100000-deep chain
}

} // namespace
} // namespace tensorc::loop
