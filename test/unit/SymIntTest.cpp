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
  EXPECT_EQ(SymInt::floorDiv(flat, 128).simplify({}),
            s("x0") + SymInt::floorDiv(s("x1"), 128));
}

TEST(SymInt, ProductsOfDivisionsPrintParenthesized) {
  // Python reads `128*(s0 + 63)//64` as (128*(s0 + 63))//64, so the division is wrapped.
  SymInt e = SymInt::floorDiv(s("s0") + SymInt(63), 64) * SymInt(128);
  EXPECT_EQ(e.str(), "128*((s0 + 63)//64)");
  EXPECT_EQ(SymInt::floorDiv(s("s0") + SymInt(1), 2).str(), "(s0 + 1)//2");
}

} // namespace
} // namespace tensorc
