// Tests of the scans and selections: cumsum (dims, dtypes) and topk (order, ties, NaN, errors).
#include "OpTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace tensorc {
namespace {

using test::makeTensor;
using test::runOp;
using test::toDoubles;

const double kNaN = std::numeric_limits<double>::quiet_NaN();

/// Runs op `name` expecting `count` results (empty with a test failure otherwise).
std::vector<Tensor> runAll(std::string_view name, const std::vector<Tensor> &inputs, AttrMap attrs,
                           size_t count) {
  Expected<std::vector<Tensor>> results = runOp(name, inputs, std::move(attrs));
  if (!results) {
    ADD_FAILURE() << name << " failed: " << results.error().message();
    return {};
  }
  EXPECT_EQ(results->size(), count);
  return *results;
}

std::string runError(std::string_view name, const std::vector<Tensor> &inputs, AttrMap attrs) {
  Expected<std::vector<Tensor>> results = runOp(name, inputs, std::move(attrs));
  EXPECT_FALSE(results.hasValue()) << name << " unexpectedly succeeded";
  return results ? "" : results.error().message();
}

void expectTensor(const Tensor &tensor, DType dtype, const std::vector<int64_t> &shape,
                  const std::vector<double> &values) {
  EXPECT_EQ(dtypeName(tensor.dtype()), dtypeName(dtype));
  EXPECT_EQ(tensor.shape(), shape);
  std::vector<double> actual = toDoubles(tensor);
  ASSERT_EQ(actual.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(values[i]))
      EXPECT_TRUE(std::isnan(actual[i])) << "element " << i << " is " << actual[i];
    else
      EXPECT_EQ(actual[i], values[i]) << "element " << i;
  }
}

// ---- cumsum -----------------------------------------------------------------------------------

TEST(OpsScanTest, CumsumAlongEachDim) {
  // [[1, 2, 3], [4, 5, 6]]: running sums along rows and along columns, worked out by hand.
  Tensor x = makeTensor(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  std::vector<Tensor> rows = runAll("aten.cumsum", {x}, {{"dim", int64_t(1)}}, 1);
  ASSERT_EQ(rows.size(), 1u);
  expectTensor(rows[0], DType::F32, {2, 3}, {1, 3, 6, 4, 9, 15});
  std::vector<Tensor> columns = runAll("aten.cumsum", {x}, {{"dim", int64_t(-2)}}, 1);
  ASSERT_EQ(columns.size(), 1u);
  expectTensor(columns[0], DType::F32, {2, 3}, {1, 2, 3, 5, 7, 9});
}

TEST(OpsScanTest, CumsumDtypes) {
  // Integers accumulate to i64 by default, as in torch; a dtype keeps i32.
  Tensor ints = makeTensor(DType::I32, {4}, {5, -2, 7, 1});
  std::vector<Tensor> widened = runAll("aten.cumsum", {ints}, {{"dim", int64_t(0)}}, 1);
  ASSERT_EQ(widened.size(), 1u);
  expectTensor(widened[0], DType::I64, {4}, {5, 3, 10, 11});
  std::vector<Tensor> kept =
      runAll("aten.cumsum", {ints}, {{"dim", int64_t(0)}, {"dtype", DType::I32}}, 1);
  ASSERT_EQ(kept.size(), 1u);
  expectTensor(kept[0], DType::I32, {4}, {5, 3, 10, 11});
  // f16 in, f16 out: 0.5 + 0.25 + 0.125 is exact in half precision.
  Tensor half = makeTensor(DType::F16, {3}, {0.5, 0.25, 0.125});
  std::vector<Tensor> halves = runAll("aten.cumsum", {half}, {{"dim", int64_t(0)}}, 1);
  ASSERT_EQ(halves.size(), 1u);
  expectTensor(halves[0], DType::F16, {3}, {0.5, 0.75, 0.875});
  Tensor flags = makeTensor(DType::Bool, {3}, {1, 0, 1});
  std::vector<Tensor> counts = runAll("aten.cumsum", {flags}, {{"dim", int64_t(0)}}, 1);
  ASSERT_EQ(counts.size(), 1u);
  expectTensor(counts[0], DType::I64, {3}, {1, 1, 2});
}

TEST(OpsScanTest, CumsumOfScalarAndBadDim) {
  std::vector<Tensor> scalar =
      runAll("aten.cumsum", {makeTensor(DType::F64, {}, {2.5})}, {{"dim", int64_t(0)}}, 1);
  ASSERT_EQ(scalar.size(), 1u);
  expectTensor(scalar[0], DType::F64, {}, {2.5});
  std::string message = runError(
      "aten.cumsum", {makeTensor(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6})}, {{"dim", int64_t(2)}});
  EXPECT_NE(message.find("out of range"), std::string::npos) << message;
}

// ---- topk -------------------------------------------------------------------------------------

TEST(OpsScanTest, TopkLargestAndSmallest) {
  Tensor x = makeTensor(DType::F32, {2, 4}, {3, 1, 4, 1.5, 9, 2, 6, 5});
  std::vector<Tensor> top = runAll("aten.topk", {x}, {{"k", int64_t(2)}}, 2);
  ASSERT_EQ(top.size(), 2u);
  expectTensor(top[0], DType::F32, {2, 2}, {4, 3, 9, 6});
  expectTensor(top[1], DType::I64, {2, 2}, {2, 0, 0, 2});
  std::vector<Tensor> bottom = runAll("aten.topk", {x}, {{"k", int64_t(3)}, {"largest", false}}, 2);
  ASSERT_EQ(bottom.size(), 2u);
  expectTensor(bottom[0], DType::F32, {2, 3}, {1, 1.5, 3, 2, 5, 6});
  expectTensor(bottom[1], DType::I64, {2, 3}, {1, 3, 0, 1, 3, 2});
}

TEST(OpsScanTest, TopkAlongLeadingDimKeepsLowerIndexOnTies) {
  // Columns of [[1, 7], [5, 7], [5, 2]]: ties go to the lower row.
  Tensor x = makeTensor(DType::I64, {3, 2}, {1, 7, 5, 7, 5, 2});
  std::vector<Tensor> top = runAll("aten.topk", {x}, {{"k", int64_t(2)}, {"dim", int64_t(0)}}, 2);
  ASSERT_EQ(top.size(), 2u);
  expectTensor(top[0], DType::I64, {2, 2}, {5, 7, 5, 7});
  expectTensor(top[1], DType::I64, {2, 2}, {1, 0, 2, 1});
}

TEST(OpsScanTest, TopkNaNIsLargest) {
  Tensor x = makeTensor(DType::F64, {4}, {1, kNaN, 3, -2});
  std::vector<Tensor> top = runAll("aten.topk", {x}, {{"k", int64_t(2)}}, 2);
  ASSERT_EQ(top.size(), 2u);
  expectTensor(top[0], DType::F64, {2}, {kNaN, 3});
  expectTensor(top[1], DType::I64, {2}, {1, 2});
  std::vector<Tensor> bottom = runAll("aten.topk", {x}, {{"k", int64_t(4)}, {"largest", false}}, 2);
  ASSERT_EQ(bottom.size(), 2u);
  expectTensor(bottom[0], DType::F64, {4}, {-2, 1, 3, kNaN});
  expectTensor(bottom[1], DType::I64, {4}, {3, 0, 2, 1});
}

TEST(OpsScanTest, TopkHalfAndZeroK) {
  Tensor x = makeTensor(DType::BF16, {3}, {0.5, -1, 2});
  std::vector<Tensor> top = runAll("aten.topk", {x}, {{"k", int64_t(1)}}, 2);
  ASSERT_EQ(top.size(), 2u);
  expectTensor(top[0], DType::BF16, {1}, {2});
  expectTensor(top[1], DType::I64, {1}, {2});
  std::vector<Tensor> none = runAll("aten.topk", {x}, {{"k", int64_t(0)}}, 2);
  ASSERT_EQ(none.size(), 2u);
  expectTensor(none[0], DType::BF16, {0}, {});
}

TEST(OpsScanTest, TopkErrors) {
  Tensor x = makeTensor(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  std::string message = runError("aten.topk", {x}, {{"k", int64_t(4)}});
  EXPECT_NE(message.find("larger than dim 1 of size 3"), std::string::npos) << message;
  message = runError("aten.topk", {x}, {{"k", int64_t(-1)}});
  EXPECT_NE(message.find("non-negative"), std::string::npos) << message;
  message = runError("aten.topk", {x}, {{"k", int64_t(1)}, {"dim", int64_t(-3)}});
  EXPECT_NE(message.find("out of range"), std::string::npos) << message;
}

} // namespace
} // namespace tensorc
