// Tests of the unsigned dtypes in the op kernels: u64 values above INT64_MAX must compare, divide,
// shift and reduce as unsigned, not as the negative int64 they share their bits with.
#include "OpTestUtil.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace tensorc {
namespace {

using test::makeTensor;
using test::runOp;

constexpr uint64_t kTop = uint64_t(1) << 63; // 2^63, negative as an int64

Tensor u64Tensor(std::vector<int64_t> shape, const std::vector<uint64_t> &values) {
  Tensor tensor = Tensor::zerosUnchecked(DType::U64, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i)
    tensor.mutableDataAs<uint64_t>()[i] = values[i];
  return tensor;
}

std::vector<uint64_t> u64Values(const Tensor &tensor) {
  EXPECT_EQ(dtypeName(tensor.dtype()), "u64");
  if (tensor.dtype() != DType::U64)
    return {};
  const uint64_t *raw = tensor.dataAs<uint64_t>();
  return std::vector<uint64_t>(raw, raw + tensor.numel());
}

std::vector<Tensor> run(std::string_view name, const std::vector<Tensor> &inputs,
                        AttrMap attrs = {}) {
  Expected<std::vector<Tensor>> results = runOp(name, inputs, std::move(attrs));
  if (!results) {
    ADD_FAILURE() << name << " failed: " << results.error().message();
    return {makeTensor(DType::F32, {0}, {})};
  }
  return *results;
}

TEST(OpsUnsigned, ComparisonsOrderLargeU64AboveSmall) {
  Tensor a = u64Tensor({3}, {kTop + 5, 1, kTop});
  Tensor b = u64Tensor({3}, {1, kTop + 5, kTop});
  Tensor gt = run("aten.gt", {a, b})[0];
  ASSERT_EQ(gt.dtype(), DType::Bool);
  EXPECT_EQ(gt.getInt(0), 1);
  EXPECT_EQ(gt.getInt(1), 0);
  EXPECT_EQ(gt.getInt(2), 0);
}

TEST(OpsUnsigned, MaximumMinimumAndDivision) {
  Tensor a = u64Tensor({2}, {kTop + 6, 7});
  Tensor b = u64Tensor({2}, {3, kTop});
  EXPECT_EQ(u64Values(run("aten.maximum", {a, b})[0]), (std::vector<uint64_t>{kTop + 6, kTop}));
  EXPECT_EQ(u64Values(run("aten.minimum", {a, b})[0]), (std::vector<uint64_t>{3, 7}));
  Tensor floor = run("aten.div", {a, b}, {{"rounding_mode", "floor"}})[0];
  EXPECT_EQ(u64Values(floor), (std::vector<uint64_t>{(kTop + 6) / 3, 0}));
  EXPECT_EQ(u64Values(run("aten.remainder", {a, b})[0]),
            (std::vector<uint64_t>{(kTop + 6) % 3, 7}));
}

TEST(OpsUnsigned, RightShiftIsLogical) {
  Tensor a = u64Tensor({2}, {kTop, ~uint64_t(0)});
  Tensor shift = u64Tensor({2}, {63, 4});
  EXPECT_EQ(u64Values(run("aten.bitwise_right_shift", {a, shift})[0]),
            (std::vector<uint64_t>{1, ~uint64_t(0) >> 4}));
  EXPECT_EQ(
      u64Values(run("aten.bitwise_left_shift", {u64Tensor({1}, {3}), u64Tensor({1}, {62})})[0]),
      (std::vector<uint64_t>{uint64_t(3) << 62}));
}

TEST(OpsUnsigned, SumStaysU64AndWraps) {
  Tensor a = u64Tensor({3}, {kTop, kTop + 1, 2});
  // 2^64 + 3 wraps to 3, and the sum keeps the u64 dtype (i64 cannot hold it).
  EXPECT_EQ(u64Values(run("aten.sum", {a})[0]), (std::vector<uint64_t>{3}));
  Tensor u16 = makeTensor(DType::U16, {2}, {65535, 65535});
  Tensor sum16 = run("aten.sum", {u16})[0];
  EXPECT_EQ(dtypeName(sum16.dtype()), "i64");
  EXPECT_EQ(sum16.getInt(0), 131070);
}

TEST(OpsUnsigned, ArgmaxAmaxAndTopkSeeLargeValues) {
  Tensor a = u64Tensor({4}, {5, kTop + 1, 7, kTop});
  EXPECT_EQ(run("aten.argmax", {a})[0].getInt(0), 1);
  EXPECT_EQ(run("aten.argmin", {a})[0].getInt(0), 0);
  EXPECT_EQ(u64Values(run("aten.amax", {a}, {{"dim", Attribute(std::vector<int64_t>{})}})[0]),
            (std::vector<uint64_t>{kTop + 1}));
  std::vector<Tensor> top = run("aten.topk", {a}, {{"k", int64_t(2)}});
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(u64Values(top[0]), (std::vector<uint64_t>{kTop + 1, kTop}));
}

TEST(OpsUnsigned, ConvertKeepsLargeU64) {
  Tensor a = u64Tensor({1}, {kTop + 2048});
  Tensor wide = run("prims.convert_element_type", {a}, {{"dtype", DType::F64}})[0];
  EXPECT_EQ(wide.getDouble(0), double(kTop + 2048));
  Tensor back = run("prims.convert_element_type", {wide}, {{"dtype", DType::U64}})[0];
  EXPECT_EQ(u64Values(back), (std::vector<uint64_t>{kTop + 2048}));
  // u16 is an integer, not a half: 1000 stays 1000.
  Tensor u16 = makeTensor(DType::U16, {1}, {1000});
  EXPECT_EQ(run("prims.convert_element_type", {u16}, {{"dtype", DType::F32}})[0].getDouble(0),
            1000.0);
}

} // namespace
} // namespace tensorc
