// Tests of the elementwise ops: values against std:: math, broadcasting, promotion, NaN, errors.
#include "OpTestUtil.h"

#include "tensorc/IR/Graph.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

namespace tensorc {
namespace {

using test::makeTensor;
using test::registry;
using test::runOp;
using test::toDoubles;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

/// Runs op `name` expecting one result; an empty f32 tensor (and a test failure) otherwise.
Tensor runOne(std::string_view name, const std::vector<Tensor> &inputs, AttrMap attrs = {}) {
  Expected<std::vector<Tensor>> results = runOp(name, inputs, std::move(attrs));
  if (!results) {
    ADD_FAILURE() << name << " failed: " << results.error().message();
    return makeTensor(DType::F32, {0}, {});
  }
  if (results->size() != 1) {
    ADD_FAILURE() << name << " gave " << results->size() << " results";
    return makeTensor(DType::F32, {0}, {});
  }
  return (*results)[0];
}

/// The error message of a run expected to fail ("" with a test failure if it succeeded).
std::string runError(std::string_view name, const std::vector<Tensor> &inputs, AttrMap attrs = {}) {
  Expected<std::vector<Tensor>> results = runOp(name, inputs, std::move(attrs));
  EXPECT_FALSE(results.hasValue()) << name << " unexpectedly succeeded";
  return results ? "" : results.error().message();
}

/// Element-wise comparison with a relative+absolute tolerance; NaN matches NaN.
void expectValues(const Tensor &actual, const std::vector<double> &expected, double tol = 0) {
  std::vector<double> values = toDoubles(actual);
  ASSERT_EQ(values.size(), expected.size());
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(values[i])) << "element " << i << " is " << values[i];
    } else if (tol == 0) {
      EXPECT_EQ(values[i], expected[i]) << "element " << i;
    } else {
      EXPECT_NEAR(values[i], expected[i], tol * (1 + std::fabs(expected[i]))) << "element " << i;
    }
  }
}

void expectType(const Tensor &tensor, DType dtype, const std::vector<int64_t> &shape) {
  EXPECT_EQ(dtypeName(tensor.dtype()), dtypeName(dtype));
  EXPECT_EQ(tensor.shape(), shape);
}

std::vector<double> mapValues(const std::vector<double> &values,
                              const std::function<double(double)> &fn) {
  std::vector<double> result;
  for (double value : values)
    result.push_back(fn(value));
  return result;
}

Tensor scalar(DType dtype, double value) { return makeTensor(dtype, {}, {value}); }

// ---- Constant and unary -----------------------------------------------------------------------

TEST(OpsElementwiseTest, ConstantCopiesItsLiteral) {
  Tensor literal = makeTensor(DType::I32, {2, 2}, {1, -2, 3, 4});
  Tensor out = runOne("prims.constant", {}, {{"value", literal}});
  expectType(out, DType::I32, {2, 2});
  expectValues(out, {1, -2, 3, 4});
}

TEST(OpsElementwiseTest, FloatMathMatchesStdMath) {
  struct Case {
    const char *op;
    std::function<double(double)> fn;
    std::vector<double> inputs;
  };
  const std::vector<double> any = {-2.5, -0.5, 0.0, 0.75, 3.0};
  const std::vector<double> positive = {0.25, 1.0, 2.0, 9.0};
  const std::vector<Case> cases = {
      {"aten.exp", [](double x) { return std::exp(x); }, any},
      {"aten.log", [](double x) { return std::log(x); }, positive},
      {"aten.sqrt", [](double x) { return std::sqrt(x); }, positive},
      {"aten.rsqrt", [](double x) { return 1 / std::sqrt(x); }, positive},
      {"aten.reciprocal", [](double x) { return 1 / x; }, positive},
      {"aten.tanh", [](double x) { return std::tanh(x); }, any},
      {"aten.sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }, any},
      {"aten.erf", [](double x) { return std::erf(x); }, any},
      {"aten.sin", [](double x) { return std::sin(x); }, any},
      {"aten.cos", [](double x) { return std::cos(x); }, any},
      {"aten.silu", [](double x) { return x / (1 + std::exp(-x)); }, any},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.op);
    for (DType dtype : {DType::F32, DType::F64}) {
      Tensor in = makeTensor(dtype, {int64_t(c.inputs.size())}, c.inputs);
      Tensor out = runOne(c.op, {in});
      expectType(out, dtype, {int64_t(c.inputs.size())});
      expectValues(out, mapValues(c.inputs, c.fn), dtype == DType::F32 ? 1e-6 : 1e-14);
    }
  }
}

TEST(OpsElementwiseTest, FloatMathOnIntegersGivesF32) {
  Tensor out = runOne("aten.exp", {makeTensor(DType::I64, {3}, {0, 1, 2})});
  expectType(out, DType::F32, {3});
  expectValues(out, {1.0, std::exp(1.0), std::exp(2.0)}, 1e-6);

  Tensor root = runOne("aten.sqrt", {makeTensor(DType::Bool, {2}, {0, 1})});
  expectType(root, DType::F32, {2});
  expectValues(root, {0, 1});
}

TEST(OpsElementwiseTest, HalfTypesRoundTheirResult) {
  std::vector<double> x = {0.5, 1.0, 2.0, -3.0};
  Tensor half = runOne("aten.exp", {makeTensor(DType::F16, {4}, x)});
  expectType(half, DType::F16, {4});
  // f16 keeps 11 significant bits: relative error below 2^-11.
  expectValues(half, mapValues(x, [](double v) { return std::exp(v); }), 5e-4);

  Tensor bf16 = runOne("aten.sigmoid", {makeTensor(DType::BF16, {4}, x)});
  expectType(bf16, DType::BF16, {4});
  expectValues(bf16, mapValues(x, [](double v) { return 1 / (1 + std::exp(-v)); }), 4e-3);
}

TEST(OpsElementwiseTest, NegAbsKeepIntegerDtypeAndWrap) {
  Tensor neg = runOne("aten.neg", {makeTensor(DType::I32, {3}, {-3, 0, 5})});
  expectType(neg, DType::I32, {3});
  expectValues(neg, {3, 0, -5});
  // abs(-128) does not fit in i8 and wraps back to -128, as in torch.
  Tensor abs = runOne("aten.abs", {makeTensor(DType::I8, {3}, {-128, -7, 7})});
  expectType(abs, DType::I8, {3});
  expectValues(abs, {-128, 7, 7});
  Tensor absFloat = runOne("aten.abs", {makeTensor(DType::F32, {3}, {-1.5, kNaN, -kInf})});
  expectValues(absFloat, {1.5, kNaN, kInf});
}

TEST(OpsElementwiseTest, NegAndAbsRejectBool) {
  Tensor flags = makeTensor(DType::Bool, {2}, {0, 1});
  EXPECT_NE(runError("aten.neg", {flags}).find("bool"), std::string::npos);
  EXPECT_NE(runError("aten.abs", {flags}).find("bool"), std::string::npos);
}

TEST(OpsElementwiseTest, RoundIsHalfToEven) {
  Tensor out = runOne("aten.round",
                      {makeTensor(DType::F32, {8}, {0.5, 1.5, 2.5, -0.5, -1.5, 2.4, -2.6, kNaN})});
  expectValues(out, {0, 2, 2, 0, -2, 2, -3, kNaN});
  EXPECT_TRUE(std::signbit(toDoubles(out)[3])); // round(-0.5) is -0.0
}

TEST(OpsElementwiseTest, FloorCeilOnFloatsAndIntegers) {
  Tensor x = makeTensor(DType::F64, {4}, {-1.5, -0.25, 1.0, 2.75});
  expectValues(runOne("aten.floor", {x}), {-2, -1, 1, 2});
  expectValues(runOne("aten.ceil", {x}), {-1, -0.0, 1, 3});
  Tensor big = makeTensor(DType::I64, {1}, {0});
  big.setInt(0, (int64_t(1) << 53) + 1); // not representable as a double: must stay exact
  Tensor floored = runOne("aten.floor", {big});
  expectType(floored, DType::I64, {1});
  EXPECT_EQ(floored.getInt(0), (int64_t(1) << 53) + 1);
}

TEST(OpsElementwiseTest, SignAndRelu) {
  Tensor x = makeTensor(DType::F32, {5}, {-2, 0, 3, kNaN, -kInf});
  expectValues(runOne("aten.sign", {x}), {-1, 0, 1, 0, -1}); // torch: sign(NaN) == 0
  expectValues(runOne("aten.relu", {x}), {0, 0, 3, kNaN, 0});
  Tensor ints = makeTensor(DType::I32, {3}, {-5, 0, 7});
  Tensor sign = runOne("aten.sign", {ints});
  expectType(sign, DType::I32, {3});
  expectValues(sign, {-1, 0, 1});
  expectValues(runOne("aten.relu", {ints}), {0, 0, 7});
}

TEST(OpsElementwiseTest, LogicalNotAndIsNanGiveBool) {
  Tensor x = makeTensor(DType::F32, {4}, {0, 1.5, kNaN, kInf});
  Tensor notX = runOne("aten.logical_not", {x});
  expectType(notX, DType::Bool, {4});
  expectValues(notX, {1, 0, 0, 0});
  Tensor nan = runOne("aten.isnan", {x});
  expectType(nan, DType::Bool, {4});
  expectValues(nan, {0, 0, 1, 0});
  expectValues(runOne("aten.isnan", {makeTensor(DType::I32, {2}, {0, 1})}), {0, 0});
}

// ---- gelu, clamp, convert_element_type --------------------------------------------------------

TEST(OpsElementwiseTest, GeluExactAndTanh) {
  std::vector<double> x = {-3, -1, 0, 0.5, 2};
  Tensor in = makeTensor(DType::F32, {5}, x);
  expectValues(runOne("aten.gelu", {in}),
               mapValues(x, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }),
               1e-6);
  const double pi = std::acos(-1.0);
  expectValues(runOne("aten.gelu", {in}, {{"approximate", "tanh"}}),
               mapValues(x,
                         [&](double v) {
                           return 0.5 * v *
                                  (1 + std::tanh(std::sqrt(2 / pi) * (v + 0.044715 * v * v * v)));
                         }),
               1e-6);
}

TEST(OpsElementwiseTest, GeluErrors) {
  Tensor in = makeTensor(DType::F32, {1}, {1});
  std::string message = runError("aten.gelu", {in}, {{"approximate", "fast"}});
  EXPECT_NE(message.find("'fast'"), std::string::npos) << message;
  EXPECT_NE(message.find("approximate"), std::string::npos) << message;
  message = runError("aten.gelu", {makeTensor(DType::I32, {1}, {1})});
  EXPECT_NE(message.find("floating"), std::string::npos) << message;
}

TEST(OpsElementwiseTest, ClampBoundsAndNaN) {
  Tensor x = makeTensor(DType::F32, {4}, {-2, 0.5, 3, kNaN});
  expectValues(runOne("aten.clamp", {x}, {{"min", -1.0}, {"max", 1.0}}), {-1, 0.5, 1, kNaN});
  expectValues(runOne("aten.clamp", {x}, {{"min", 0}}), {0, 0.5, 3, kNaN});
  expectValues(runOne("aten.clamp", {x}, {{"max", 0.0}}), {-2, 0, 0, kNaN});
  // min > max: every element becomes max.
  expectValues(runOne("aten.clamp", {x}, {{"min", 2.0}, {"max", 1.0}}), {1, 1, 1, kNaN});
  // A NaN bound propagates.
  expectValues(runOne("aten.clamp", {x}, {{"min", kNaN}}), {kNaN, kNaN, kNaN, kNaN});
}

TEST(OpsElementwiseTest, ClampPromotesWithItsBounds) {
  Tensor ints = makeTensor(DType::I32, {3}, {-5, 2, 9});
  Tensor same = runOne("aten.clamp", {ints}, {{"min", 0}, {"max", 4}});
  expectType(same, DType::I32, {3});
  expectValues(same, {0, 2, 4});
  Tensor promoted = runOne("aten.clamp", {ints}, {{"min", 0.5}});
  expectType(promoted, DType::F32, {3});
  expectValues(promoted, {0.5, 2, 9});
}

TEST(OpsElementwiseTest, ClampNeedsABound) {
  std::string message = runError("aten.clamp", {makeTensor(DType::F32, {1}, {1})});
  EXPECT_NE(message.find("at least one"), std::string::npos) << message;
}

TEST(OpsElementwiseTest, ConvertElementType) {
  Tensor x = makeTensor(DType::F32, {5}, {-1.7, 2.9, 0, kNaN, -0.0});
  Tensor ints = runOne("prims.convert_element_type", {x}, {{"dtype", DType::I32}});
  expectType(ints, DType::I32, {5});
  expectValues(ints, {-1, 2, 0, 0, 0}); // truncation toward zero; NaN becomes 0
  Tensor flags = runOne("prims.convert_element_type", {x}, {{"dtype", DType::Bool}});
  expectValues(flags, {1, 1, 0, 1, 0}); // != 0, and NaN != 0

  Tensor wide = makeTensor(DType::I32, {2}, {300, -1});
  expectValues(runOne("prims.convert_element_type", {wide}, {{"dtype", DType::U8}}), {44, 255});

  Tensor big = makeTensor(DType::I64, {1}, {0});
  big.setInt(0, (int64_t(1) << 40) + 1);
  expectValues(runOne("prims.convert_element_type", {big}, {{"dtype", DType::F64}}),
               {double((int64_t(1) << 40) + 1)});

  Tensor third = runOne("prims.convert_element_type", {makeTensor(DType::F32, {1}, {1.0 / 3})},
                        {{"dtype", DType::F16}});
  expectType(third, DType::F16, {1});
  expectValues(third, {0.333251953125}); // nearest f16 to 1/3
}

// ---- Binary arithmetic ------------------------------------------------------------------------

TEST(OpsElementwiseTest, AddBroadcasts) {
  Tensor a = makeTensor(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor row = makeTensor(DType::F32, {3}, {10, 20, 30});
  Tensor out = runOne("aten.add", {a, row});
  expectType(out, DType::F32, {2, 3});
  expectValues(out, {11, 22, 33, 14, 25, 36});

  Tensor column = makeTensor(DType::F32, {2, 1}, {1, 2});
  Tensor outer = runOne("aten.add", {column, makeTensor(DType::F32, {1, 3}, {10, 20, 30})});
  expectType(outer, DType::F32, {2, 3});
  expectValues(outer, {11, 21, 31, 12, 22, 32});

  // Broadcasting on a middle dim: [2, 1, 2] + [3, 1].
  Tensor mid = runOne("aten.add", {makeTensor(DType::F64, {2, 1, 2}, {0, 1, 100, 101}),
                                   makeTensor(DType::F64, {3, 1}, {10, 20, 30})});
  expectType(mid, DType::F64, {2, 3, 2});
  expectValues(mid, {10, 11, 20, 21, 30, 31, 110, 111, 120, 121, 130, 131});
}

TEST(OpsElementwiseTest, AddSubAlpha) {
  Tensor a = makeTensor(DType::F32, {2}, {1, 2});
  Tensor b = makeTensor(DType::F32, {2}, {10, 20});
  expectValues(runOne("aten.add", {a, b}, {{"alpha", 2}}), {21, 42});
  expectValues(runOne("aten.sub", {a, b}, {{"alpha", 0.5}}), {-4, -8});
  Tensor ia = makeTensor(DType::I64, {2}, {1, 2});
  expectValues(runOne("aten.sub", {ia, ia}, {{"alpha", 3}}), {-2, -4});
  std::string message = runError("aten.add", {ia, ia}, {{"alpha", 0.5}});
  EXPECT_NE(message.find("alpha"), std::string::npos) << message;
}

TEST(OpsElementwiseTest, PromotionFollowsTorch) {
  Tensor i32 = makeTensor(DType::I32, {2}, {1, 2});
  Tensor f32 = makeTensor(DType::F32, {2}, {0.5, 0.25});
  Tensor i64 = makeTensor(DType::I64, {2}, {10, 20});
  Tensor mixed = runOne("aten.add", {i32, f32});
  expectType(mixed, DType::F32, {2});
  expectValues(mixed, {1.5, 2.25});
  expectType(runOne("aten.mul", {i32, i64}), DType::I64, {2});

  // u8 with i8 widens to i16: 200 + (-1) = 199 with no wrap.
  Tensor sum =
      runOne("aten.add", {makeTensor(DType::U8, {1}, {200}), makeTensor(DType::I8, {1}, {-1})});
  expectType(sum, DType::I16, {1});
  expectValues(sum, {199});

  // bool + bool stays bool (True + True is True).
  Tensor flags = makeTensor(DType::Bool, {2}, {1, 0});
  Tensor both = runOne("aten.add", {flags, flags});
  expectType(both, DType::Bool, {2});
  expectValues(both, {1, 0});

  // A 0-d operand only wins when it is of a higher category.
  Tensor half = makeTensor(DType::F16, {2}, {1, 2});
  expectType(runOne("aten.mul", {half, scalar(DType::F32, 3)}), DType::F16, {2});
  // ... and then its own dtype decides (a 0-d tensor, unlike a Python scalar, keeps f64).
  Tensor byScalar = runOne("aten.mul", {i32, scalar(DType::F64, 2.5)});
  expectType(byScalar, DType::F64, {2});
  expectValues(byScalar, {2.5, 5});
  expectType(runOne("aten.add", {f32, scalar(DType::F64, 1)}), DType::F32, {2});
  expectType(runOne("aten.add", {scalar(DType::F64, 1), scalar(DType::F32, 1)}), DType::F64, {});
}

TEST(OpsElementwiseTest, IntegerArithmeticWraps) {
  Tensor max = makeTensor(DType::I32, {1}, {2147483647});
  Tensor one = makeTensor(DType::I32, {1}, {1});
  expectValues(runOne("aten.add", {max, one}), {-2147483648.0});
  expectValues(
      runOne("aten.mul", {makeTensor(DType::U8, {1}, {16}), makeTensor(DType::U8, {1}, {17})}),
      {16}); // 272 mod 256
}

TEST(OpsElementwiseTest, BinaryShapeAndBoolErrors) {
  Tensor a = makeTensor(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = makeTensor(DType::F32, {4}, {1, 2, 3, 4});
  std::string message = runError("aten.add", {a, b});
  EXPECT_NE(message.find("broadcast"), std::string::npos) << message;
  EXPECT_NE(message.find("aten.add"), std::string::npos) << message;
  message = runError("aten.eq", {a, b});
  EXPECT_NE(message.find("broadcast"), std::string::npos) << message;

  Tensor flags = makeTensor(DType::Bool, {2}, {1, 0});
  message = runError("aten.sub", {flags, flags});
  EXPECT_NE(message.find("bool"), std::string::npos) << message;
}

TEST(OpsElementwiseTest, DivisionModes) {
  Tensor a = makeTensor(DType::I64, {4}, {7, -7, 7, -7});
  Tensor b = makeTensor(DType::I64, {4}, {2, 2, -2, -2});
  Tensor trueDiv = runOne("aten.div", {a, b});
  expectType(trueDiv, DType::F32, {4});
  expectValues(trueDiv, {3.5, -3.5, -3.5, 3.5});
  Tensor trunc = runOne("aten.div", {a, b}, {{"rounding_mode", "trunc"}});
  expectType(trunc, DType::I64, {4});
  expectValues(trunc, {3, -3, -3, 3});
  Tensor floor = runOne("aten.div", {a, b}, {{"rounding_mode", "floor"}});
  expectType(floor, DType::I64, {4});
  expectValues(floor, {3, -4, -4, 3});

  Tensor x = makeTensor(DType::F32, {4}, {-7.5, 7.5, 1, -1});
  Tensor y = makeTensor(DType::F32, {4}, {2, -2, 0, 0});
  expectValues(runOne("aten.div", {x, y}, {{"rounding_mode", "floor"}}), {-4, -4, kInf, -kInf});
  expectValues(runOne("aten.div", {x, y}, {{"rounding_mode", "trunc"}}), {-3, -3, kInf, -kInf});
  expectValues(runOne("aten.div", {x, y}), {-3.75, -3.75, kInf, -kInf});
}

TEST(OpsElementwiseTest, IntegerDivisionByZeroIsAnError) {
  Tensor a = makeTensor(DType::I32, {2}, {1, 2});
  Tensor zero = makeTensor(DType::I32, {2}, {1, 0});
  for (const char *mode : {"trunc", "floor"}) {
    std::string message = runError("aten.div", {a, zero}, {{"rounding_mode", mode}});
    EXPECT_NE(message.find("integer division by zero"), std::string::npos) << message;
  }
  EXPECT_NE(runError("aten.remainder", {a, zero}).find("division by zero"), std::string::npos);
  EXPECT_NE(runError("aten.fmod", {a, zero}).find("division by zero"), std::string::npos);
  // True division of integers by zero is a float division: inf.
  expectValues(runOne("aten.div", {a, zero}), {1, kInf});
  // INT64_MIN / -1 must not trap.
  Tensor min = makeTensor(DType::I64, {1}, {0});
  min.setInt(0, std::numeric_limits<int64_t>::min());
  Tensor minusOne = makeTensor(DType::I64, {1}, {-1});
  Tensor wrapped = runOne("aten.div", {min, minusOne}, {{"rounding_mode", "trunc"}});
  EXPECT_EQ(wrapped.getInt(0), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(runOne("aten.remainder", {min, minusOne}).getInt(0), 0);
}

TEST(OpsElementwiseTest, DivRejectsUnknownRoundingMode) {
  Tensor a = makeTensor(DType::F32, {1}, {1});
  std::string message = runError("aten.div", {a, a}, {{"rounding_mode", "ceil"}});
  EXPECT_NE(message.find("'ceil'"), std::string::npos) << message;
}

TEST(OpsElementwiseTest, RemainderAndFmodSigns) {
  Tensor a = makeTensor(DType::I32, {4}, {-7, 7, -7, 7});
  Tensor b = makeTensor(DType::I32, {4}, {3, -3, -3, 3});
  expectValues(runOne("aten.remainder", {a, b}), {2, -2, -1, 1}); // sign of the divisor
  expectValues(runOne("aten.fmod", {a, b}), {-1, 1, -1, 1});      // sign of the dividend
  Tensor x = makeTensor(DType::F64, {3}, {-7.5, 7.5, 6});
  Tensor y = makeTensor(DType::F64, {3}, {2, -2, 3});
  expectValues(runOne("aten.remainder", {x, y}), {0.5, -0.5, 0});
  expectValues(runOne("aten.fmod", {x, y}), {-1.5, 1.5, 0});
}

TEST(OpsElementwiseTest, Pow) {
  Tensor base = makeTensor(DType::F32, {3}, {2, 4, 9});
  Tensor exponent = makeTensor(DType::F32, {3}, {3, 0.5, -1});
  expectValues(runOne("aten.pow", {base, exponent}), {8, 2, 1.0 / 9}, 1e-7);
  expectValues(runOne("aten.pow", {base, scalar(DType::F32, 2)}), {4, 16, 81});
  Tensor ib = makeTensor(DType::I64, {5}, {2, 2, 1, -1, 3});
  Tensor ie = makeTensor(DType::I64, {5}, {10, -1, -5, -3, 0});
  Tensor ints = runOne("aten.pow", {ib, ie});
  expectType(ints, DType::I64, {5});
  expectValues(ints, {1024, 0, 1, -1, 1});
}

TEST(OpsElementwiseTest, MaximumMinimumPropagateNaN) {
  Tensor a = makeTensor(DType::F32, {3}, {1, kNaN, 3});
  Tensor b = makeTensor(DType::F32, {3}, {2, 2, kNaN});
  expectValues(runOne("aten.maximum", {a, b}), {2, kNaN, kNaN});
  expectValues(runOne("aten.minimum", {a, b}), {1, kNaN, kNaN});
  Tensor ints = makeTensor(DType::I32, {2, 2}, {1, 5, -3, 0});
  Tensor row = makeTensor(DType::I32, {2}, {2, -1});
  expectValues(runOne("aten.maximum", {ints, row}), {2, 5, 2, 0});
  expectValues(runOne("aten.minimum", {ints, row}), {1, -1, -3, -1});
}

TEST(OpsElementwiseTest, ComparisonsPromoteAndGiveBool) {
  Tensor ints = makeTensor(DType::I32, {3}, {1, 2, 3});
  Tensor threshold = scalar(DType::F32, 2.5);
  Tensor lt = runOne("aten.lt", {ints, threshold});
  expectType(lt, DType::Bool, {3});
  expectValues(lt, {1, 1, 0});
  expectValues(runOne("aten.le", {ints, scalar(DType::I64, 2)}), {1, 1, 0});
  expectValues(runOne("aten.gt", {ints, threshold}), {0, 0, 1});
  expectValues(runOne("aten.ge", {ints, scalar(DType::I64, 2)}), {0, 1, 1});

  Tensor x = makeTensor(DType::F32, {3}, {kNaN, 1, 2});
  Tensor y = makeTensor(DType::F32, {3}, {kNaN, 1, 3});
  expectValues(runOne("aten.eq", {x, y}), {0, 1, 0});
  expectValues(runOne("aten.ne", {x, y}), {1, 0, 1});

  // i64 values a double cannot tell apart still compare exactly.
  Tensor big = makeTensor(DType::I64, {1}, {0});
  big.setInt(0, (int64_t(1) << 53) + 1);
  Tensor close = makeTensor(DType::I64, {1}, {double(int64_t(1) << 53)});
  expectValues(runOne("aten.gt", {big, close}), {1});
}

TEST(OpsElementwiseTest, LogicalOps) {
  Tensor a = makeTensor(DType::F32, {4}, {0, 1, kNaN, 0});
  Tensor b = makeTensor(DType::I32, {4}, {0, 0, 5, 3});
  Tensor both = runOne("aten.logical_and", {a, b});
  expectType(both, DType::Bool, {4});
  expectValues(both, {0, 0, 1, 0});
  expectValues(runOne("aten.logical_or", {a, b}), {0, 1, 1, 1});
  expectValues(runOne("aten.logical_xor", {a, b}), {0, 1, 0, 1});
}

TEST(OpsElementwiseTest, WhereBroadcastsThreeWays) {
  Tensor condition = makeTensor(DType::Bool, {2, 1}, {1, 0});
  Tensor self = makeTensor(DType::F32, {3}, {1, 2, 3});
  Tensor other = scalar(DType::I64, -1);
  Tensor out = runOne("aten.where", {condition, self, other});
  expectType(out, DType::F32, {2, 3});
  expectValues(out, {1, 2, 3, -1, -1, -1});

  Tensor mask = makeTensor(DType::Bool, {3}, {1, 0, 1});
  Tensor ints = runOne("aten.where", {mask, makeTensor(DType::I32, {3}, {1, 2, 3}),
                                      makeTensor(DType::I64, {2, 1}, {10, 20})});
  expectType(ints, DType::I64, {2, 3});
  expectValues(ints, {1, 10, 3, 1, 20, 3});
}

TEST(OpsElementwiseTest, WhereErrors) {
  Tensor self = makeTensor(DType::F32, {3}, {1, 2, 3});
  std::string message =
      runError("aten.where", {makeTensor(DType::I32, {3}, {1, 0, 1}), self, self});
  EXPECT_NE(message.find("bool"), std::string::npos) << message;
  message = runError("aten.where", {makeTensor(DType::Bool, {2}, {1, 0}), self, self});
  EXPECT_NE(message.find("broadcast"), std::string::npos) << message;
}

TEST(OpsElementwiseTest, EveryNumericDtype) {
  for (DType dtype : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32,
                      DType::I16, DType::I8, DType::U8}) {
    SCOPED_TRACE(dtypeName(dtype));
    Tensor a = makeTensor(dtype, {3}, {1, 2, 3});
    Tensor b = makeTensor(dtype, {3}, {3, 2, 1});
    Tensor sum = runOne("aten.add", {a, b});
    expectType(sum, dtype, {3});
    expectValues(sum, {4, 4, 4});
    expectValues(runOne("aten.mul", {a, b}), {3, 4, 3});
    expectValues(runOne("aten.maximum", {a, b}), {3, 2, 3});
    expectValues(runOne("aten.lt", {a, b}), {1, 0, 0});
    expectValues(runOne("aten.relu", {a}), {1, 2, 3});
    expectValues(runOne("aten.where", {makeTensor(DType::Bool, {3}, {1, 0, 1}), a, b}), {1, 2, 3});
    expectValues(runOne("prims.convert_element_type", {a}, {{"dtype", DType::BF16}}), {1, 2, 3});
    expectValues(runOne("prims.convert_element_type", {b}, {{"dtype", DType::U8}}), {3, 2, 1});
  }
}

// ---- Symbolic inference and speed -------------------------------------------------------------

TEST(OpsElementwiseTest, InferenceKeepsSymbolicDims) {
  SymInt s0 = SymInt::symbol("s0");
  TensorType x(DType::F16, {s0, SymInt(4)});
  TensorType bias(DType::F32, {SymInt(4)});
  // inferTypes fills defaults into the map it is given, so each call gets its own.
  AttrMap addAttrs, ltAttrs, expAttrs;
  Expected<std::vector<TensorType>> types =
      inferTypes(*registry().lookup("aten.add"), {&x, &bias}, addAttrs);
  ASSERT_TRUE(types.hasValue()) << types.error().message();
  EXPECT_EQ((*types)[0], TensorType(DType::F32, {s0, SymInt(4)}));

  TensorType column(DType::F32, {s0, SymInt(1)});
  TensorType row(DType::F32, {SymInt(1), SymInt(8)});
  types = inferTypes(*registry().lookup("aten.lt"), {&column, &row}, ltAttrs);
  ASSERT_TRUE(types.hasValue()) << types.error().message();
  EXPECT_EQ((*types)[0], TensorType(DType::Bool, {s0, SymInt(8)}));

  types = inferTypes(*registry().lookup("aten.exp"), {&x}, expAttrs);
  ASSERT_TRUE(types.hasValue()) << types.error().message();
  EXPECT_EQ((*types)[0], x);
}

TEST(OpsElementwiseTest, LargeBroadcastAddThenGelu) {
  const int64_t rows = 64, cols = 4096;
  std::vector<double> values(static_cast<size_t>(rows * cols));
  std::vector<double> bias(static_cast<size_t>(cols));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = double(i % 97) / 16 - 3;
  for (size_t i = 0; i < bias.size(); ++i)
    bias[i] = double(i % 5);
  Tensor x = makeTensor(DType::F32, {rows, cols}, values);
  Tensor b = makeTensor(DType::F32, {cols}, bias);
  Tensor sum = runOne("aten.add", {x, b});
  Tensor gelu = runOne("aten.gelu", {sum});
  for (int64_t i : {int64_t(0), int64_t(12345), rows * cols - 1}) {
    double v = values[size_t(i)] + bias[size_t(i % cols)];
    EXPECT_NEAR(gelu.getDouble(i), 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))), 1e-5);
  }
}

} // namespace
} // namespace tensorc
