// SymInt: canonical forms, arithmetic, division, printing and evaluation.
#include "tensorc/IR/SymInt.h"

#include <gtest/gtest.h>

namespace tensorc {
namespace {

SymInt s(const char *name) { return SymInt::symbol(name); }

TEST(SymInt, ConstantsFold) {
  EXPECT_EQ(SymInt(3) + SymInt(4), SymInt(7));
  EXPECT_EQ((SymInt(3) * SymInt(-4)).constant(), -12);
  EXPECT_TRUE(SymInt(0).isConstant());
  EXPECT_EQ(SymInt(0).str(), "0");
}

TEST(SymInt, CanonicalFormMakesEqualExpressionsEqual) {
  EXPECT_EQ(s("s0") * SymInt(4), SymInt(4) * s("s0"));
  EXPECT_EQ(s("s0") + s("s1"), s("s1") + s("s0"));
  EXPECT_EQ((s("s0") + SymInt(1)) * SymInt(2), s("s0") * SymInt(2) + SymInt(2));
  EXPECT_EQ(s("s0") - s("s0"), SymInt(0));
  EXPECT_NE(s("s0"), s("s1"));
}

TEST(SymInt, Printing) {
  EXPECT_EQ(s("s0").str(), "s0");
  EXPECT_EQ((SymInt(4) * s("s0") + SymInt(1)).str(), "4*s0 + 1");
  EXPECT_EQ((SymInt(3) - s("s0")).str(), "-s0 + 3");
  EXPECT_EQ((s("s0") * s("s1")).str(), "s0*s1");
  EXPECT_EQ(SymInt::floorDiv(s("s0") + SymInt(1), 2).str(), "(s0 + 1)//2");
  EXPECT_EQ(SymInt::mod(s("s0"), 3).str(), "s0%3");
}

TEST(SymInt, ExactDivision) {
  SymInt fourS0 = SymInt(4) * s("s0");
  EXPECT_EQ(SymInt::exactDiv(fourS0, SymInt(4)), s("s0"));
  EXPECT_EQ(SymInt::exactDiv(fourS0, s("s0")), SymInt(4));
  EXPECT_EQ(SymInt::exactDiv(fourS0 * s("s1"), SymInt(2) * s("s1")), SymInt(2) * s("s0"));
  EXPECT_FALSE(SymInt::exactDiv(fourS0, SymInt(3)).has_value());
  EXPECT_FALSE(SymInt::exactDiv(fourS0, s("s1")).has_value());
  EXPECT_EQ(SymInt::floorDiv(fourS0, 2), SymInt(2) * s("s0"));
  EXPECT_EQ(SymInt::mod(fourS0, 2), SymInt(0));
}

TEST(SymInt, EvaluateUsesPythonFloorSemantics) {
  SymbolBindings bindings{{"s0", -7}, {"s1", 3}};
  EXPECT_EQ(*SymInt::floorDiv(s("s0"), 2).evaluate(bindings), -4);
  EXPECT_EQ(*SymInt::mod(s("s0"), 2).evaluate(bindings), 1);
  EXPECT_EQ(*(s("s0") * s("s1") + SymInt(1)).evaluate(bindings), -20);
  Expected<int64_t> unbound = s("s9").evaluate(bindings);
  ASSERT_FALSE(unbound);
  EXPECT_NE(unbound.error().message().find("s9"), std::string::npos);
}

TEST(SymInt, CollectsSymbolsInsideDivisions) {
  std::set<std::string> symbols;
  SymInt::floorDiv(s("a") + s("b"), 2).collectSymbols(symbols);
  EXPECT_EQ(symbols, (std::set<std::string>{"a", "b"}));
}

TEST(SymInt, SubstituteRefoldsDivisions) {
  SymInt e = SymInt::floorDiv(s("x0") * SymInt(4) + s("x1"), 4);
  EXPECT_EQ(e.substitute({{"x1", SymInt(0)}}), s("x0"));
  EXPECT_EQ(e.substitute({{"x0", SymInt(2)}, {"x1", SymInt(3)}}), SymInt(2));
  EXPECT_EQ((s("a") * s("b")).substitute({{"a", s("b") + SymInt(1)}}), s("b") * s("b") + s("b"));
}

TEST(SymInt, SimplifyUsesLoopBounds) {
  // A reshape's flatten-then-split folds back when x1 < 128 ...
  SymInt flat = s("x0") * SymInt(128) + s("x1");
  std::map<std::string, int64_t> bounds{{"x1", 128}};
  EXPECT_EQ(SymInt::floorDiv(flat, 128).simplify(bounds), s("x0"));
  EXPECT_EQ(SymInt::mod(flat, 128).simplify(bounds), s("x1"));
  // ... and stays when the bound does not prove it.
  std::map<std::string, int64_t> loose{{"x1", 129}};
  EXPECT_EQ(SymInt::mod(flat, 128).simplify(loose), SymInt::mod(s("x1"), 128));
  EXPECT_EQ(SymInt::floorDiv(flat, 128).simplify({}), s("x0") + SymInt::floorDiv(s("x1"), 128));
}

TEST(SymInt, SimplifyDividesOutACommonFactor) {
  // A merged dim's view of a split one: (3072*x0 + x1)//(3072*128) is x0//128 when x1 < 3072.
  SymInt flat = s("x0") * SymInt(3072) + s("x1");
  std::map<std::string, int64_t> bounds{{"x1", 3072}};
  EXPECT_EQ(SymInt::floorDiv(flat, 393216).simplify(bounds), SymInt::floorDiv(s("x0"), 128));
  EXPECT_EQ(SymInt::mod(flat, 393216).simplify(bounds),
            SymInt(3072) * SymInt::mod(s("x0"), 128) + s("x1"));
  // Not when the bound does not prove r < g.
  std::map<std::string, int64_t> loose{{"x1", 3073}};
  EXPECT_EQ(SymInt::floorDiv(flat, 393216).simplify(loose), SymInt::floorDiv(flat, 393216));
}

TEST(SymInt, SimplifyRecombinesADivisionAndItsRemainder) {
  // The index BERT's [s0*128, 3072] view of a [s0, 128, 3072] GEMM result loads at.
  SymInt flat = s("x0") * SymInt(3072) + s("x1");
  SymInt index = SymInt(393216) * SymInt::floorDiv(flat, 393216) +
                 SymInt(3072) * SymInt::mod(s("x0"), 128) + s("x1");
  EXPECT_EQ(index.simplify({{"x1", 3072}}), flat);
  EXPECT_EQ(
      (SymInt(5) * SymInt::floorDiv(s("n"), 7) * SymInt(7) + SymInt(5) * SymInt::mod(s("n"), 7))
          .simplify({}),
      SymInt(5) * s("n"));
}

TEST(SymInt, SimplifyRecombinesNestedDivisions) {
  // ConvNeXt's Linear on channels-last [8, 56, 56, 384] features: the GEMM's [25088, 384] result
  // read back through the 4-D view, x0 the row. (x0//56)//56 is kept as x0//3136.
  SymInt x0 = s("x0"), x1 = s("x1");
  SymInt index = SymInt(384) * SymInt::mod(x0, 56) + SymInt(1204224) * SymInt::floorDiv(x0, 3136) +
                 SymInt(21504) * SymInt::mod(SymInt::floorDiv(x0, 56), 56) + x1;
  EXPECT_EQ(index.simplify({{"x0", 25088}, {"x1", 384}}), SymInt(384) * x0 + x1);
  // Every sign of the numerator: floor divisions nest exactly.
  SymInt nested = SymInt(3) * SymInt(5) * SymInt::floorDiv(x0, 10) +
                  SymInt(3) * SymInt::mod(SymInt::floorDiv(x0, 2), 5);
  SymInt simple = nested.simplify({});
  EXPECT_EQ(simple, SymInt(3) * SymInt::floorDiv(x0, 2));
  for (int64_t v = -50; v < 50; ++v) {
    SymbolBindings at{{"x0", v}};
    ASSERT_EQ(*nested.evaluate(at), *simple.evaluate(at)) << v;
  }
  // Not when the outer division is by another factor.
  SymInt other = SymInt(15) * SymInt::floorDiv(x0, 12) +
                 SymInt(3) * SymInt::mod(SymInt::floorDiv(x0, 2), 5);
  EXPECT_EQ(other.simplify({}), other);
}

TEST(SymInt, SimplifyKeepsTheValueEverywhere) {
  // Every rewrite is checked by evaluation against the unsimplified expression over the loop
  // variables' whole ranges (x0 unbounded: sampled up to 300, negative too).
  const int64_t xs = 6, ys = 4;
  std::map<std::string, int64_t> bounds{{"x1", ys}};
  for (int64_t a : {1, 2, 3, 4, 6, 12})
    for (int64_t b : {1, 2, 3})
      for (int64_t d : {2, 4, 6, 12, 24, 36}) {
        SymInt n = SymInt(a) * s("x0") + SymInt(b) * s("x1");
        for (const SymInt &e : {SymInt::floorDiv(n, d), SymInt::mod(n, d),
                                SymInt(d) * SymInt::floorDiv(n, d) + SymInt::mod(n, d) +
                                    SymInt::floorDiv(SymInt::mod(n, d) + s("x0"), xs)}) {
          SymInt simple = e.simplify(bounds);
          for (int64_t x0 = -20; x0 < 300; ++x0)
            for (int64_t x1 = 0; x1 < ys; ++x1) {
              SymbolBindings at{{"x0", x0}, {"x1", x1}};
              ASSERT_EQ(*e.evaluate(at), *simple.evaluate(at))
                  << e.str() << " -> " << simple.str() << " at x0 = " << x0 << ", x1 = " << x1;
            }
        }
      }
}

TEST(SymInt, ProductsOfDivisionsPrintParenthesized) {
  // Python reads `128*(s0 + 63)//64` as (128*(s0 + 63))//64, so the division is wrapped.
  SymInt e = SymInt::floorDiv(s("s0") + SymInt(63), 64) * SymInt(128);
  EXPECT_EQ(e.str(), "128*((s0 + 63)//64)");
  EXPECT_EQ(SymInt::floorDiv(s("s0") + SymInt(1), 2).str(), "(s0 + 1)//2");
}

} // namespace
} // namespace tensorc
