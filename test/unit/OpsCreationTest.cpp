// Tests of the creation ops: full, arange, zeros_like, full_like (dtypes, values, errors).
#include "OpTestUtil.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace tensorc {
namespace {

using test::makeTensor;
using test::registry;
using test::runOp;
using test::toDoubles;

Tensor runOne(std::string_view name, const std::vector<Tensor> &inputs, AttrMap attrs) {
  Expected<std::vector<Tensor>> results = runOp(name, inputs, std::move(attrs));
  EXPECT_TRUE(results.hasValue()) << (results ? "" : results.error().message());
  if (!results || results->size() != 1) {
    ADD_FAILURE() << name << " did not give exactly one result";
    return Tensor();
  }
  return (*results)[0];
}

std::string runError(std::string_view name, const std::vector<Tensor> &inputs, AttrMap attrs) {
  Expected<std::vector<Tensor>> results = runOp(name, inputs, std::move(attrs));
  EXPECT_FALSE(results.hasValue()) << name << " unexpectedly succeeded";
  return results ? "" : results.error().message();
}

TEST(OpsCreationTest, FullPicksDTypeFromFillValue) {
  Tensor floats =
      runOne("aten.full", {}, {{"size", std::vector<int64_t>{2, 3}}, {"fill_value", 1.5}});
  EXPECT_EQ(floats.dtype(), DType::F32);
  EXPECT_EQ(floats.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(toDoubles(floats), std::vector<double>(6, 1.5));

  Tensor ints = runOne("aten.full", {}, {{"size", std::vector<int64_t>{3}}, {"fill_value", 7}});
  EXPECT_EQ(ints.dtype(), DType::I64);
  EXPECT_EQ(toDoubles(ints), (std::vector<double>{7, 7, 7}));

  Tensor bools = runOne("aten.full", {}, {{"size", std::vector<int64_t>{2}}, {"fill_value", true}});
  EXPECT_EQ(bools.dtype(), DType::Bool);
  EXPECT_EQ(toDoubles(bools), (std::vector<double>{1, 1}));

  Tensor scalar = runOne("aten.full", {}, {{"size", std::vector<int64_t>{}}, {"fill_value", -2}});
  EXPECT_EQ(scalar.rank(), 0u);
  EXPECT_EQ(scalar.getInt(0), -2);
}

TEST(OpsCreationTest, FullWithExplicitDType) {
  Tensor half =
      runOne("aten.full", {},
             {{"size", std::vector<int64_t>{5}}, {"fill_value", 0.25}, {"dtype", DType::F16}});
  EXPECT_EQ(half.dtype(), DType::F16);
  EXPECT_EQ(toDoubles(half), std::vector<double>(5, 0.25));

  Tensor truncated =
      runOne("aten.full", {},
             {{"size", std::vector<int64_t>{2}}, {"fill_value", 2.75}, {"dtype", DType::I32}});
  EXPECT_EQ(toDoubles(truncated), (std::vector<double>{2, 2}));

  // A large i64 fill survives exactly (no trip through double).
  int64_t big = (int64_t(1) << 53) + 1;
  Tensor exact = runOne("aten.full", {}, {{"size", std::vector<int64_t>{3}}, {"fill_value", big}});
  for (int64_t i = 0; i < 3; ++i)
    EXPECT_EQ(exact.getInt(i), big);

  Tensor empty = runOne("aten.full", {}, {{"size", std::vector<int64_t>{0, 4}}, {"fill_value", 1}});
  EXPECT_EQ(empty.numel(), 0);
}

TEST(OpsCreationTest, FullRejectsNegativeSizes) {
  EXPECT_NE(runError("aten.full", {}, {{"size", std::vector<int64_t>{2, -1}}, {"fill_value", 0}})
                .find("negative"),
            std::string::npos);
}

TEST(OpsCreationTest, FullInfersSymbolicShape) {
  SymInt s0 = SymInt::symbol("s0");
  AttrMap attrs{{"size", std::vector<SymInt>{s0, 2}}, {"fill_value", 0.5}, {"dtype", Attribute()}};
  InferContext context({}, attrs);
  Expected<std::vector<TensorType>> types = registry().lookup("aten.full")->infer(context);
  ASSERT_TRUE(types.hasValue()) << types.error().message();
  EXPECT_EQ((*types)[0], TensorType(DType::F32, {s0, 2}));
}

AttrMap arangeAttrs(Attribute start, Attribute end, Attribute step = Attribute(1)) {
  return {{"start", std::move(start)}, {"end", std::move(end)}, {"step", std::move(step)}};
}

TEST(OpsCreationTest, ArangeIntegers) {
  Tensor a = runOne("aten.arange", {}, arangeAttrs(0, 5));
  EXPECT_EQ(a.dtype(), DType::I64);
  EXPECT_EQ(toDoubles(a), (std::vector<double>{0, 1, 2, 3, 4}));
  Tensor down = runOne("aten.arange", {}, arangeAttrs(5, 0, -2));
  EXPECT_EQ(toDoubles(down), (std::vector<double>{5, 3, 1}));
  Tensor stepped = runOne("aten.arange", {}, arangeAttrs(-3, 4, 3));
  EXPECT_EQ(toDoubles(stepped), (std::vector<double>{-3, 0, 3}));
  Tensor empty = runOne("aten.arange", {}, arangeAttrs(3, 3));
  EXPECT_EQ(empty.shape(), (std::vector<int64_t>{0}));
}

TEST(OpsCreationTest, ArangeValuesFitWhereIndexTimesStepDoesNot) {
  // 2^62, -1, -(2^62 + 2): 2 * step is -2^63 - 2, past int64 (a fuzzed ONNX Range), the values
  // are not.
  const int64_t big = int64_t(1) << 62;
  Tensor a = runOne("aten.arange", {}, arangeAttrs(big, -big - 3, -big - 1));
  ASSERT_EQ(a.numel(), 3);
  EXPECT_EQ(a.getInt(0), big);
  EXPECT_EQ(a.getInt(1), -1);
  EXPECT_EQ(a.getInt(2), -big - 2);
}

TEST(OpsCreationTest, ArangeFloats) {
  Tensor quarters = runOne("aten.arange", {}, arangeAttrs(0, 1, 0.25));
  EXPECT_EQ(quarters.dtype(), DType::F32);
  EXPECT_EQ(toDoubles(quarters), (std::vector<double>{0, 0.25, 0.5, 0.75}));
  // ceil((2.5 - 1) / 0.5) = 3 elements.
  Tensor halves = runOne("aten.arange", {}, arangeAttrs(1.0, 2.5, 0.5));
  EXPECT_EQ(toDoubles(halves), (std::vector<double>{1, 1.5, 2}));
  AttrMap attrs = arangeAttrs(0, 3);
  attrs["dtype"] = DType::F64;
  Tensor doubles = runOne("aten.arange", {}, attrs);
  EXPECT_EQ(doubles.dtype(), DType::F64);
  EXPECT_EQ(toDoubles(doubles), (std::vector<double>{0, 1, 2}));
  attrs = arangeAttrs(0.5, 3);
  attrs["dtype"] = DType::I32;
  Tensor truncated = runOne("aten.arange", {}, attrs);
  EXPECT_EQ(toDoubles(truncated), (std::vector<double>{0, 1, 2}));
}

TEST(OpsCreationTest, ArangeRejectsBadSteps) {
  EXPECT_NE(runError("aten.arange", {}, arangeAttrs(0, 5, 0)).find("nonzero"), std::string::npos);
  EXPECT_NE(runError("aten.arange", {}, arangeAttrs(0.0, 1.0, 0.0)).find("nonzero"),
            std::string::npos);
  EXPECT_NE(runError("aten.arange", {}, arangeAttrs(0, 5, -1)).find("sign"), std::string::npos);
  EXPECT_NE(runError("aten.arange", {}, arangeAttrs(5.0, 0.0, 0.5)).find("sign"),
            std::string::npos);
}

TEST(OpsCreationTest, ZerosLikeAndFullLike) {
  Tensor x = makeTensor(DType::I32, {2, 2}, {1, 2, 3, 4});
  Tensor zeros = runOne("aten.zeros_like", {x}, {});
  EXPECT_EQ(zeros.dtype(), DType::I32);
  EXPECT_EQ(zeros.shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(toDoubles(zeros), (std::vector<double>{0, 0, 0, 0}));
  Tensor zerosF16 = runOne("aten.zeros_like", {x}, {{"dtype", DType::F16}});
  EXPECT_EQ(zerosF16.dtype(), DType::F16);

  // The input's dtype wins over the fill value's, as in torch (2.5 truncates to 2).
  Tensor filled = runOne("aten.full_like", {x}, {{"fill_value", 2.5}});
  EXPECT_EQ(filled.dtype(), DType::I32);
  EXPECT_EQ(toDoubles(filled), (std::vector<double>{2, 2, 2, 2}));
  Tensor asFloat = runOne("aten.full_like", {x}, {{"fill_value", 2.5}, {"dtype", DType::BF16}});
  EXPECT_EQ(asFloat.dtype(), DType::BF16);
  EXPECT_EQ(toDoubles(asFloat), (std::vector<double>{2.5, 2.5, 2.5, 2.5}));

  SymInt s0 = SymInt::symbol("s0");
  TensorType symbolic(DType::F32, {s0, 4});
  AttrMap attrs{{"dtype", Attribute()}};
  InferContext context({&symbolic}, attrs);
  Expected<std::vector<TensorType>> types = registry().lookup("aten.zeros_like")->infer(context);
  ASSERT_TRUE(types.hasValue()) << types.error().message();
  EXPECT_EQ((*types)[0], symbolic);
}

} // namespace
} // namespace tensorc
