// Tests of the reductions: dims (negative, lists, keepdim), dtypes, NaN, stability, and errors.
#include "OpTestUtil.h"

#include "tensorc/IR/Graph.h"

#include <gtest/gtest.h>

#include <cmath>
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

Attribute dims(std::vector<int64_t> values) { return Attribute(values); }

/// [[1, 2, 3], [4, 5, 6]]
Tensor matrix(DType dtype) { return makeTensor(dtype, {2, 3}, {1, 2, 3, 4, 5, 6}); }

// ---- sum, prod, mean --------------------------------------------------------------------------

TEST(OpsReductionTest, SumOverDimsAndKeepdim) {
  Tensor all = runOne("aten.sum", {matrix(DType::F32)});
  expectType(all, DType::F32, {});
  expectValues(all, {21});
  Tensor columns = runOne("aten.sum", {matrix(DType::F32)}, {{"dim", dims({0})}});
  expectType(columns, DType::F32, {3});
  expectValues(columns, {5, 7, 9});
  Tensor rows = runOne("aten.sum", {matrix(DType::F32)}, {{"dim", dims({-1})}, {"keepdim", true}});
  expectType(rows, DType::F32, {2, 1});
  expectValues(rows, {6, 15});
  Tensor both = runOne("aten.sum", {matrix(DType::F64)}, {{"dim", dims({-1, 0})}});
  expectType(both, DType::F64, {});
  expectValues(both, {21});
}

TEST(OpsReductionTest, SumOfMiddleDim) {
  // x[i][j][k] = 100 i + 10 j + k with shape [2, 3, 2]; summing j gives 300 i + 30 + 3 k.
  std::vector<double> values;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 2; ++k)
        values.push_back(100 * i + 10 * j + k);
  Tensor out = runOne("aten.sum", {makeTensor(DType::F32, {2, 3, 2}, values)},
                      {{"dim", dims({1})}, {"keepdim", true}});
  expectType(out, DType::F32, {2, 1, 2});
  expectValues(out, {30, 33, 330, 333});
}

TEST(OpsReductionTest, SumIntegersAndBoolsGiveI64) {
  Tensor flags = makeTensor(DType::Bool, {4}, {1, 0, 1, 1});
  Tensor count = runOne("aten.sum", {flags});
  expectType(count, DType::I64, {});
  expectValues(count, {3});
  // 3 * 2^30 overflows i32 but not the i64 result.
  Tensor ints = makeTensor(DType::I32, {3}, {1073741824, 1073741824, 1073741824});
  Tensor total = runOne("aten.sum", {ints});
  expectType(total, DType::I64, {});
  EXPECT_EQ(total.getInt(0), 3 * int64_t(1073741824));
}

TEST(OpsReductionTest, SumWithDtypeCastsFirst) {
  Tensor wide = runOne("aten.sum", {matrix(DType::I32)}, {{"dtype", DType::F64}});
  expectType(wide, DType::F64, {});
  expectValues(wide, {21});
  // Each element is truncated to i32 before summing: 1 + 2, not trunc(4.6).
  Tensor truncated =
      runOne("aten.sum", {makeTensor(DType::F32, {2}, {1.7, 2.9})}, {{"dtype", DType::I32}});
  expectType(truncated, DType::I32, {});
  expectValues(truncated, {3});
}

TEST(OpsReductionTest, SumHalfAccumulatesWide) {
  // 4096 ones: an f16 accumulator would stall at 2048 (2048 + 1 rounds back to 2048).
  std::vector<double> ones(4096, 1.0);
  Tensor out = runOne("aten.sum", {makeTensor(DType::F16, {4096}, ones)});
  expectType(out, DType::F16, {});
  expectValues(out, {4096});
  Tensor bf16 = runOne("aten.sum", {makeTensor(DType::BF16, {2, 3}, {1, 2, 3, 4, 5, 6})},
                       {{"dim", dims({1})}});
  expectType(bf16, DType::BF16, {2});
  expectValues(bf16, {6, 15});
}

TEST(OpsReductionTest, SumOverAnEmptyDimIsZero) {
  Tensor empty = makeTensor(DType::F32, {0, 3}, {});
  Tensor out = runOne("aten.sum", {empty}, {{"dim", dims({0})}});
  expectType(out, DType::F32, {3});
  expectValues(out, {0, 0, 0});
  expectValues(runOne("aten.prod", {empty}, {{"dim", dims({0})}}), {1, 1, 1});
  expectValues(runOne("aten.mean", {empty}, {{"dim", dims({0})}}), {kNaN, kNaN, kNaN});
}

TEST(OpsReductionTest, Prod) {
  Tensor ints = runOne("aten.prod", {makeTensor(DType::I32, {4}, {1, 2, 3, 4})});
  expectType(ints, DType::I64, {});
  expectValues(ints, {24});
  Tensor rows = runOne("aten.prod", {matrix(DType::F32)}, {{"dim", dims({1})}});
  expectType(rows, DType::F32, {2});
  expectValues(rows, {6, 120});
  Tensor asDouble = runOne("aten.prod", {matrix(DType::U8)}, {{"dtype", DType::F64}});
  expectType(asDouble, DType::F64, {});
  expectValues(asDouble, {720});
}

TEST(OpsReductionTest, Mean) {
  Tensor all = runOne("aten.mean", {matrix(DType::F32)});
  expectType(all, DType::F32, {});
  expectValues(all, {3.5});
  Tensor columns =
      runOne("aten.mean", {matrix(DType::F64)}, {{"dim", dims({-2})}, {"keepdim", true}});
  expectType(columns, DType::F64, {1, 3});
  expectValues(columns, {2.5, 3.5, 4.5});
  Tensor fromInts = runOne("aten.mean", {matrix(DType::I64)}, {{"dtype", DType::F32}});
  expectType(fromInts, DType::F32, {});
  expectValues(fromInts, {3.5});
  Tensor half = runOne("aten.mean", {matrix(DType::BF16)}, {{"dim", dims({1})}});
  expectType(half, DType::BF16, {2});
  expectValues(half, {2, 5});
  expectValues(runOne("aten.mean", {makeTensor(DType::F32, {3}, {1, kNaN, 2})}), {kNaN});
}

TEST(OpsReductionTest, MeanOfIntegersNeedsADtype) {
  std::string message = runError("aten.mean", {matrix(DType::I64)});
  EXPECT_NE(message.find("floating"), std::string::npos) << message;
  EXPECT_NE(message.find("i64"), std::string::npos) << message;
  message = runError("aten.mean", {matrix(DType::F32)}, {{"dtype", DType::I32}});
  EXPECT_NE(message.find("floating"), std::string::npos) << message;
}

// ---- amax, amin -------------------------------------------------------------------------------

TEST(OpsReductionTest, AmaxAmin) {
  Tensor x = makeTensor(DType::F32, {2, 3}, {3, -1, 2, -5, 8, 0});
  Tensor max = runOne("aten.amax", {x}, {{"dim", dims({1})}});
  expectType(max, DType::F32, {2});
  expectValues(max, {3, 8});
  Tensor min = runOne("aten.amin", {x}, {{"dim", dims({-2})}, {"keepdim", true}});
  expectType(min, DType::F32, {1, 3});
  expectValues(min, {-5, -1, 0});
  expectValues(runOne("aten.amax", {x}), {8});
  expectValues(runOne("aten.amin", {x}), {-5});

  Tensor ints = makeTensor(DType::I64, {3}, {0, 0, 0});
  ints.setInt(0, std::numeric_limits<int64_t>::min());
  ints.setInt(1, (int64_t(1) << 53) + 1);
  ints.setInt(2, int64_t(1) << 53);
  Tensor imax = runOne("aten.amax", {ints});
  expectType(imax, DType::I64, {});
  EXPECT_EQ(imax.getInt(0), (int64_t(1) << 53) + 1);
  EXPECT_EQ(runOne("aten.amin", {ints}).getInt(0), std::numeric_limits<int64_t>::min());
}

TEST(OpsReductionTest, AmaxAminPropagateNaN) {
  Tensor x = makeTensor(DType::F32, {2, 3}, {1, kNaN, 3, 4, 5, 6});
  expectValues(runOne("aten.amax", {x}, {{"dim", dims({1})}}), {kNaN, 6});
  expectValues(runOne("aten.amin", {x}, {{"dim", dims({1})}}), {kNaN, 4});
  expectValues(runOne("aten.amax", {x}), {kNaN});
}

TEST(OpsReductionTest, AmaxOfEmptyDimIsAnError) {
  Tensor empty = makeTensor(DType::F32, {0, 3}, {});
  std::string message = runError("aten.amax", {empty}, {{"dim", dims({0})}});
  EXPECT_NE(message.find("size 0"), std::string::npos) << message;
  EXPECT_NE(runError("aten.amin", {empty}).find("size 0"), std::string::npos);
  // Reducing the non-empty dim of an empty tensor is fine and gives an empty result.
  expectType(runOne("aten.amax", {empty}, {{"dim", dims({1})}}), DType::F32, {0});
}

// ---- argmax, argmin ---------------------------------------------------------------------------

TEST(OpsReductionTest, ArgmaxArgmin) {
  Tensor x = makeTensor(DType::F32, {2, 3}, {1, 5, 5, 7, 0, 7});
  Tensor flat = runOne("aten.argmax", {x});
  expectType(flat, DType::I64, {});
  expectValues(flat, {3}); // first 7 in row-major order
  Tensor rows = runOne("aten.argmax", {x}, {{"dim", 1}});
  expectType(rows, DType::I64, {2});
  expectValues(rows, {1, 0}); // ties: the first occurrence
  Tensor mins = runOne("aten.argmin", {x}, {{"dim", -1}, {"keepdim", true}});
  expectType(mins, DType::I64, {2, 1});
  expectValues(mins, {0, 1});
  expectValues(runOne("aten.argmin", {x}, {{"dim", 0}}), {0, 1, 0});
  expectType(runOne("aten.argmax", {x}, {{"keepdim", true}}), DType::I64, {1, 1});
  expectValues(runOne("aten.argmin", {makeTensor(DType::I32, {4}, {4, -2, 9, -2})}), {1});
}

TEST(OpsReductionTest, ArgmaxTreatsNaNAsExtreme) {
  Tensor x = makeTensor(DType::F64, {5}, {1, kNaN, 30, kNaN, -4});
  expectValues(runOne("aten.argmax", {x}), {1});
  expectValues(runOne("aten.argmin", {x}), {1});
}

TEST(OpsReductionTest, ArgmaxErrors) {
  std::string message = runError("aten.argmax", {makeTensor(DType::F32, {0}, {})});
  EXPECT_NE(message.find("size 0"), std::string::npos) << message;
  message = runError("aten.argmin", {matrix(DType::F32)}, {{"dim", 2}});
  EXPECT_NE(message.find("out of range"), std::string::npos) << message;
}

// ---- var --------------------------------------------------------------------------------------

TEST(OpsReductionTest, VarCorrections) {
  Tensor x = makeTensor(DType::F32, {4}, {1, 2, 3, 4});
  // Mean 2.5, squared deviations 2.25 + 0.25 + 0.25 + 2.25 = 5.
  expectValues(runOne("aten.var", {x}), {5.0 / 3}, 1e-7);
  expectValues(runOne("aten.var", {x}, {{"correction", 0}}), {1.25});
  expectValues(runOne("aten.var", {x}, {{"correction", 4}}), {kInf}); // 5 / max(0, 0)
  Tensor rows = runOne("aten.var", {matrix(DType::F64)}, {{"dim", dims({1})}, {"keepdim", true}});
  expectType(rows, DType::F64, {2, 1});
  expectValues(rows, {1, 1});
  // Over both dims: mean 3.5, squared deviations sum to 17.5, over 5.
  expectValues(runOne("aten.var", {matrix(DType::F64)}, {{"dim", dims({0, 1})}}), {3.5});
}

TEST(OpsReductionTest, VarIsStableForLargeOffsets) {
  Tensor x = makeTensor(DType::F64, {3}, {1e9 + 1, 1e9 + 2, 1e9 + 3});
  expectValues(runOne("aten.var", {x}), {1});
  Tensor single = makeTensor(DType::F32, {1}, {5});
  expectValues(runOne("aten.var", {single}), {kNaN}); // 0 / 0
}

TEST(OpsReductionTest, VarRejectsIntegers) {
  std::string message = runError("aten.var", {matrix(DType::I32)});
  EXPECT_NE(message.find("floating"), std::string::npos) << message;
}

// ---- softmax, log_softmax ---------------------------------------------------------------------

std::vector<double> softmaxOf(const std::vector<double> &x) {
  double sum = 0;
  for (double v : x)
    sum += std::exp(v);
  std::vector<double> result;
  for (double v : x)
    result.push_back(std::exp(v) / sum);
  return result;
}

TEST(OpsReductionTest, SoftmaxLastDim) {
  Tensor x = makeTensor(DType::F32, {2, 3}, {1, 2, 3, -1, 0, 0.5});
  Tensor out = runOne("aten.softmax", {x}, {{"dim", -1}});
  expectType(out, DType::F32, {2, 3});
  std::vector<double> expected = softmaxOf({1, 2, 3});
  for (double v : softmaxOf({-1, 0, 0.5}))
    expected.push_back(v);
  expectValues(out, expected, 1e-7);

  std::vector<double> logExpected;
  for (double v : expected)
    logExpected.push_back(std::log(v));
  expectValues(runOne("aten.log_softmax", {x}, {{"dim", 1}}), logExpected, 1e-6);
}

TEST(OpsReductionTest, SoftmaxFirstDim) {
  Tensor x = makeTensor(DType::F64, {2, 2}, {0, 1, 2, 1});
  // Columns [0, 2] and [1, 1].
  std::vector<double> c0 = softmaxOf({0, 2});
  expectValues(runOne("aten.softmax", {x}, {{"dim", 0}}), {c0[0], 0.5, c0[1], 0.5}, 1e-14);
}

TEST(OpsReductionTest, SoftmaxIsStableForLargeInputs) {
  Tensor x = makeTensor(DType::F32, {3}, {1000, 1001, 1002});
  expectValues(runOne("aten.softmax", {x}, {{"dim", 0}}), softmaxOf({0, 1, 2}), 1e-6);
  std::vector<double> logs;
  for (double v : softmaxOf({0, 1, 2}))
    logs.push_back(std::log(v));
  expectValues(runOne("aten.log_softmax", {x}, {{"dim", 0}}), logs, 1e-6);
  // A -inf entry gets probability 0; a NaN poisons its row.
  Tensor masked = makeTensor(DType::F32, {2, 2}, {-kInf, 0, kNaN, 1});
  expectValues(runOne("aten.softmax", {masked}, {{"dim", 1}}), {0, 1, kNaN, kNaN});
}

TEST(OpsReductionTest, SoftmaxDtype) {
  Tensor x = makeTensor(DType::F16, {2}, {0, 1});
  Tensor out = runOne("aten.softmax", {x}, {{"dim", 0}, {"dtype", DType::F64}});
  expectType(out, DType::F64, {2});
  expectValues(out, softmaxOf({0, 1}), 1e-14);
  Tensor half = runOne("aten.softmax", {x}, {{"dim", 0}});
  expectType(half, DType::F16, {2});
  expectValues(half, softmaxOf({0, 1}), 1e-3);
  Tensor fromInts = runOne("aten.log_softmax", {makeTensor(DType::I64, {2}, {0, 1})},
                           {{"dim", 0}, {"dtype", DType::F32}});
  expectType(fromInts, DType::F32, {2});
  expectValues(fromInts, {std::log(softmaxOf({0, 1})[0]), std::log(softmaxOf({0, 1})[1])}, 1e-6);
}

TEST(OpsReductionTest, SoftmaxErrors) {
  std::string message = runError("aten.softmax", {matrix(DType::I32)}, {{"dim", 0}});
  EXPECT_NE(message.find("floating"), std::string::npos) << message;
  message = runError("aten.log_softmax", {matrix(DType::F32)}, {{"dim", 2}});
  EXPECT_NE(message.find("out of range"), std::string::npos) << message;
}

TEST(OpsReductionTest, EveryNumericDtype) {
  for (DType dtype : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32,
                      DType::I16, DType::I8, DType::U8}) {
    SCOPED_TRACE(dtypeName(dtype));
    Tensor x = makeTensor(dtype, {2, 3}, {1, 2, 3, 3, 2, 1});
    Tensor sum = runOne("aten.sum", {x}, {{"dim", dims({1})}});
    expectType(sum, isFloating(dtype) ? dtype : DType::I64, {2});
    expectValues(sum, {6, 6});
    expectValues(runOne("aten.prod", {x}), {36});
    Tensor max = runOne("aten.amax", {x}, {{"dim", dims({0})}});
    expectType(max, dtype, {3});
    expectValues(max, {3, 2, 3});
    expectValues(runOne("aten.argmax", {x}, {{"dim", 1}}), {2, 0});
    expectValues(runOne("aten.argmin", {x}), {0});
  }
}

// ---- dims, errors, symbolic inference ---------------------------------------------------------

TEST(OpsReductionTest, BadDimsAreErrors) {
  std::string message = runError("aten.sum", {matrix(DType::F32)}, {{"dim", dims({2})}});
  EXPECT_NE(message.find("dim 2 out of range"), std::string::npos) << message;
  message = runError("aten.amax", {matrix(DType::F32)}, {{"dim", dims({-3})}});
  EXPECT_NE(message.find("out of range"), std::string::npos) << message;
  message = runError("aten.mean", {matrix(DType::F32)}, {{"dim", dims({1, -1})}});
  EXPECT_NE(message.find("more than once"), std::string::npos) << message;
}

TEST(OpsReductionTest, ZeroDimInputs) {
  Tensor x = makeTensor(DType::F32, {}, {4});
  expectValues(runOne("aten.sum", {x}, {{"dim", dims({0})}}), {4});
  expectValues(runOne("aten.argmax", {x}, {{"dim", 0}}), {0});
  expectValues(runOne("aten.softmax", {x}, {{"dim", -1}}), {1});
}

TEST(OpsReductionTest, InferenceKeepsSymbolicDims) {
  SymInt s0 = SymInt::symbol("s0");
  TensorType x(DType::F32, {s0, SymInt(8)});
  AttrMap sumAttrs{{"dim", dims({1})}};
  Expected<std::vector<TensorType>> types =
      inferTypes(*registry().lookup("aten.sum"), {&x}, sumAttrs);
  ASSERT_TRUE(types.hasValue()) << types.error().message();
  EXPECT_EQ((*types)[0], TensorType(DType::F32, {s0}));

  // Reducing the symbolic dim itself cannot be checked for emptiness until run time.
  AttrMap amaxAttrs{{"dim", dims({0})}, {"keepdim", true}};
  types = inferTypes(*registry().lookup("aten.amax"), {&x}, amaxAttrs);
  ASSERT_TRUE(types.hasValue()) << types.error().message();
  EXPECT_EQ((*types)[0], TensorType(DType::F32, {SymInt(1), SymInt(8)}));

  AttrMap softmaxAttrs{{"dim", -1}};
  types = inferTypes(*registry().lookup("aten.softmax"), {&x}, softmaxAttrs);
  ASSERT_TRUE(types.hasValue()) << types.error().message();
  EXPECT_EQ((*types)[0], x);
}

TEST(OpsReductionTest, LargeSoftmaxRowsAverageToOneOverN) {
  const int64_t rows = 64, cols = 4096;
  std::vector<double> values(size_t(rows * cols));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = double(i % 101) / 8;
  Tensor x = makeTensor(DType::F32, {rows, cols}, values);
  Tensor soft = runOne("aten.softmax", {x}, {{"dim", -1}});
  Tensor mean = runOne("aten.mean", {soft}, {{"dim", dims({1})}});
  expectType(mean, DType::F32, {rows});
  for (double v : toDoubles(mean))
    EXPECT_NEAR(v, 1.0 / cols, 1e-8);
}

} // namespace
} // namespace tensorc
