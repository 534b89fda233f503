// Tests of the view and data-movement ops: shapes (static and symbolic), values, and errors.
#include "OpTestUtil.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace tensorc {
namespace {

using test::makeTensor;
using test::registry;
using test::runOp;
using test::toDoubles;

const SymInt s0 = SymInt::symbol("s0");
const SymInt s1 = SymInt::symbol("s1");

/// 0, 1, 2, ... in row-major order.
Tensor iota(DType dtype, std::vector<int64_t> shape) {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  std::vector<double> values;
  for (int64_t i = 0; i < count; ++i)
    values.push_back(double(i));
  return makeTensor(dtype, std::move(shape), values);
}

Attribute ints(std::vector<SymInt> values) { return Attribute(std::move(values)); }

/// Runs op `name` expecting one result.
Tensor runOne(std::string_view name, const std::vector<Tensor> &inputs, AttrMap attrs) {
  Expected<std::vector<Tensor>> results = runOp(name, inputs, std::move(attrs));
  EXPECT_TRUE(results.hasValue()) << (results ? "" : results.error().message());
  if (!results || results->size() != 1) {
    ADD_FAILURE() << name << " did not give exactly one result";
    return Tensor();
  }
  return (*results)[0];
}

/// The error message of a run expected to fail ("" with a test failure if it succeeded).
std::string runError(std::string_view name, const std::vector<Tensor> &inputs, AttrMap attrs) {
  Expected<std::vector<Tensor>> results = runOp(name, inputs, std::move(attrs));
  EXPECT_FALSE(results.hasValue()) << name << " unexpectedly succeeded";
  return results ? "" : results.error().message();
}

/// Calls the op's inference directly; `attrs` must hold every attribute (defaults included).
Expected<std::vector<TensorType>> infer(std::string_view name, std::vector<TensorType> inputs,
                                        const AttrMap &attrs) {
  std::vector<const TensorType *> pointers;
  for (const TensorType &input : inputs)
    pointers.push_back(&input);
  InferContext context(pointers, attrs);
  return registry().lookup(name)->infer(context);
}

Shape inferShape(std::string_view name, std::vector<TensorType> inputs, const AttrMap &attrs) {
  Expected<std::vector<TensorType>> types = infer(name, std::move(inputs), attrs);
  EXPECT_TRUE(types.hasValue()) << (types ? "" : types.error().message());
  if (!types || types->size() != 1)
    return {};
  return (*types)[0].shape;
}

std::string inferError(std::string_view name, std::vector<TensorType> inputs,
                       const AttrMap &attrs) {
  Expected<std::vector<TensorType>> types = infer(name, std::move(inputs), attrs);
  EXPECT_FALSE(types.hasValue()) << name << " inference unexpectedly succeeded";
  return types ? "" : types.error().message();
}

TensorType f32(Shape shape) { return TensorType(DType::F32, std::move(shape)); }

// ---- view, reshape ---------------------------------------------------------------------------

TEST(OpsViewTest, ViewKeepsDataWithNewShape) {
  Tensor x = iota(DType::F32, {2, 3, 4});
  Tensor y = runOne("aten.view", {x}, {{"size", std::vector<int64_t>{4, -1}}});
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(toDoubles(y), toDoubles(x));
  Tensor z = runOne("aten.reshape", {x}, {{"shape", std::vector<int64_t>{-1}}});
  EXPECT_EQ(z.shape(), (std::vector<int64_t>{24}));
  EXPECT_EQ(toDoubles(z), toDoubles(x));
  Tensor scalar =
      runOne("aten.reshape", {iota(DType::I64, {1, 1})}, {{"shape", std::vector<int64_t>{}}});
  EXPECT_EQ(scalar.rank(), 0u);
}

TEST(OpsViewTest, ViewRejectsBadSizes) {
  Tensor x = iota(DType::F32, {2, 3});
  EXPECT_NE(runError("aten.view", {x}, {{"size", std::vector<int64_t>{-1, -1}}})
                .find("only one dimension"),
            std::string::npos);
  EXPECT_NE(runError("aten.view", {x}, {{"size", std::vector<int64_t>{5}}}).find("invalid"),
            std::string::npos);
  EXPECT_NE(
      runError("aten.view", {x}, {{"size", std::vector<int64_t>{-2, -3}}}).find("invalid size -2"),
      std::string::npos);
  EXPECT_NE(runError("aten.view", {x}, {{"size", std::vector<int64_t>{4, -1}}}).find("multiple"),
            std::string::npos);
  Tensor empty = iota(DType::F32, {0, 3});
  EXPECT_FALSE(runError("aten.reshape", {empty}, {{"shape", std::vector<int64_t>{-1, 0}}}).empty());
  Tensor reshaped = runOne("aten.reshape", {empty}, {{"shape", std::vector<int64_t>{-1, 3, 2}}});
  EXPECT_EQ(reshaped.shape(), (std::vector<int64_t>{0, 3, 2}));
}

TEST(OpsViewTest, ViewInfersSymbolicSizes) {
  EXPECT_EQ(inferShape("aten.view", {f32({s0, 4})}, {{"size", ints({-1})}}),
            (Shape{SymInt(4) * s0}));
  EXPECT_EQ(inferShape("aten.view", {f32({SymInt(4) * s0})}, {{"size", ints({s0, 4})}}),
            (Shape{s0, 4}));
  EXPECT_EQ(inferShape("aten.view", {f32({SymInt(4) * s0})}, {{"size", ints({-1, 4})}}),
            (Shape{s0, 4}));
  EXPECT_EQ(inferShape("aten.reshape", {f32({s0, s1, 6})}, {{"shape", ints({s0, -1, 3})}}),
            (Shape{s0, SymInt(2) * s1, 3}));
  EXPECT_EQ(inferShape("aten.reshape", {f32({s0, 2, 3})}, {{"shape", ints({-1})}}),
            (Shape{SymInt(6) * s0}));
  // 4*s0 elements are not provably a multiple of 8, nor equal to 5*s1.
  EXPECT_NE(inferError("aten.view", {f32({s0, 4})}, {{"size", ints({-1, 8})}}).find("multiple"),
            std::string::npos);
  EXPECT_FALSE(inferError("aten.view", {f32({s0, 4})}, {{"size", ints({s1, 5})}}).empty());
}

// ---- permute, transpose, t -------------------------------------------------------------------

TEST(OpsViewTest, PermuteMovesEveryDType) {
  for (DType dtype : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I64, DType::I32,
                      DType::I16, DType::I8, DType::U8}) {
    Tensor x = iota(dtype, {2, 3, 4});
    Tensor y = runOne("aten.permute", {x}, {{"dims", std::vector<int64_t>{2, 0, 1}}});
    ASSERT_EQ(y.shape(), (std::vector<int64_t>{4, 2, 3})) << dtypeName(dtype);
    std::vector<double> values = toDoubles(y);
    for (int64_t k = 0; k < 4; ++k)
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < 3; ++j)
          EXPECT_EQ(values[size_t(k * 6 + i * 3 + j)], double(i * 12 + j * 4 + k))
              << dtypeName(dtype);
  }
}

TEST(OpsViewTest, PermuteKeepingInnerDimsTogether) {
  // [2, 3, 4, 5] -> [1, 0, 2, 3]: the inner 4x5 block moves as one run.
  Tensor y = runOne("aten.permute", {iota(DType::F32, {2, 3, 4, 5})},
                    {{"dims", std::vector<int64_t>{1, 0, -2, -1}}});
  std::vector<double> values = toDoubles(y);
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t a = 0; a < 2; ++a)
      for (int64_t r = 0; r < 20; ++r)
        EXPECT_EQ(values[size_t(b * 40 + a * 20 + r)], double(a * 60 + b * 20 + r));
}

TEST(OpsViewTest, PermuteRejectsBadDims) {
  Tensor x = iota(DType::F32, {2, 3});
  EXPECT_NE(
      runError("aten.permute", {x}, {{"dims", std::vector<int64_t>{0, 0}}}).find("more than once"),
      std::string::npos);
  EXPECT_FALSE(runError("aten.permute", {x}, {{"dims", std::vector<int64_t>{0}}}).empty());
  EXPECT_NE(
      runError("aten.permute", {x}, {{"dims", std::vector<int64_t>{0, 2}}}).find("out of range"),
      std::string::npos);
  EXPECT_EQ(inferShape("aten.permute", {f32({s0, 4, s1})}, {{"dims", ints({2, 0, 1})}}),
            (Shape{s1, s0, 4}));
}

TEST(OpsViewTest, TransposeAndT) {
  Tensor x = iota(DType::I32, {2, 3});
  Tensor y = runOne("aten.transpose", {x}, {{"dim0", 0}, {"dim1", -1}});
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(toDoubles(y), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  Tensor t = runOne("aten.t", {x}, {});
  EXPECT_EQ(toDoubles(t), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  Tensor v = runOne("aten.t", {iota(DType::F32, {3})}, {});
  EXPECT_EQ(toDoubles(v), (std::vector<double>{0, 1, 2}));

  Tensor cube = iota(DType::F32, {2, 3, 4});
  Tensor z = runOne("aten.transpose", {cube}, {{"dim0", -3}, {"dim1", 2}});
  ASSERT_EQ(z.shape(), (std::vector<int64_t>{4, 3, 2}));
  std::vector<double> values = toDoubles(z);
  for (int64_t k = 0; k < 4; ++k)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t i = 0; i < 2; ++i)
        EXPECT_EQ(values[size_t(k * 6 + j * 2 + i)], double(i * 12 + j * 4 + k));

  EXPECT_NE(runError("aten.t", {cube}, {}).find("rank <= 2"), std::string::npos);
  EXPECT_NE(runError("aten.transpose", {x}, {{"dim0", 0}, {"dim1", 2}}).find("out of range"),
            std::string::npos);
  EXPECT_EQ(inferShape("aten.t", {f32({s0, 8})}, {}), (Shape{8, s0}));
}

// ---- expand ----------------------------------------------------------------------------------

TEST(OpsViewTest, ExpandBroadcastsSizeOneDims) {
  Tensor x = iota(DType::F32, {3, 1});
  Tensor y = runOne("aten.expand", {x}, {{"size", std::vector<int64_t>{2, 3, 4}}});
  ASSERT_EQ(y.shape(), (std::vector<int64_t>{2, 3, 4}));
  std::vector<double> values = toDoubles(y);
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 4; ++j)
        EXPECT_EQ(values[size_t(a * 12 + i * 4 + j)], double(i));
  Tensor z =
      runOne("aten.expand", {iota(DType::I64, {1, 3})}, {{"size", std::vector<int64_t>{2, -1}}});
  EXPECT_EQ(toDoubles(z), (std::vector<double>{0, 1, 2, 0, 1, 2}));
  Tensor scalar = runOne("aten.expand", {makeTensor(DType::F16, {}, {2.5})},
                         {{"size", std::vector<int64_t>{2, 2}}});
  EXPECT_EQ(toDoubles(scalar), (std::vector<double>{2.5, 2.5, 2.5, 2.5}));
}

TEST(OpsViewTest, ExpandRejectsBadSizes) {
  Tensor x = iota(DType::F32, {3, 1});
  EXPECT_NE(
      runError("aten.expand", {x}, {{"size", std::vector<int64_t>{4, 2}}}).find("cannot expand"),
      std::string::npos);
  EXPECT_FALSE(runError("aten.expand", {x}, {{"size", std::vector<int64_t>{2}}}).empty());
  EXPECT_NE(
      runError("aten.expand", {x}, {{"size", std::vector<int64_t>{-1, 3, 2}}}).find("leading"),
      std::string::npos);
  EXPECT_EQ(inferShape("aten.expand", {f32({s0, 1})}, {{"size", ints({2, -1, 8})}}),
            (Shape{2, s0, 8}));
  EXPECT_EQ(inferShape("aten.expand", {f32({1, 4})}, {{"size", ints({s0, 4})}}), (Shape{s0, 4}));
}

// ---- squeeze, unsqueeze ----------------------------------------------------------------------

TEST(OpsViewTest, SqueezeDropsOnlySizeOneDims) {
  Tensor x = iota(DType::F32, {1, 3, 1, 2});
  AttrMap all;
  EXPECT_EQ(runOne("aten.squeeze", {x}, all).shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(runOne("aten.squeeze", {x}, {{"dim", std::vector<int64_t>{0}}}).shape(),
            (std::vector<int64_t>{3, 1, 2}));
  // A listed dim that is not 1 stays, as in torch.
  EXPECT_EQ(runOne("aten.squeeze", {x}, {{"dim", std::vector<int64_t>{1}}}).shape(),
            (std::vector<int64_t>{1, 3, 1, 2}));
  Tensor y = runOne("aten.squeeze", {x}, {{"dim", std::vector<int64_t>{-2, 0}}});
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(toDoubles(y), toDoubles(x));
  EXPECT_FALSE(runError("aten.squeeze", {x}, {{"dim", std::vector<int64_t>{4}}}).empty());
  EXPECT_EQ(inferShape("aten.squeeze", {f32({s0, 1, 4})}, {{"dim", ints({})}}), (Shape{s0, 4}));
}

TEST(OpsViewTest, UnsqueezeInsertsADim) {
  Tensor x = iota(DType::F32, {2, 3});
  EXPECT_EQ(runOne("aten.unsqueeze", {x}, {{"dim", 0}}).shape(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(runOne("aten.unsqueeze", {x}, {{"dim", 2}}).shape(), (std::vector<int64_t>{2, 3, 1}));
  EXPECT_EQ(runOne("aten.unsqueeze", {x}, {{"dim", -1}}).shape(), (std::vector<int64_t>{2, 3, 1}));
  EXPECT_EQ(runOne("aten.unsqueeze", {x}, {{"dim", -3}}).shape(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(runOne("aten.unsqueeze", {makeTensor(DType::F32, {}, {1})}, {{"dim", 0}}).shape(),
            (std::vector<int64_t>{1}));
  EXPECT_NE(runError("aten.unsqueeze", {x}, {{"dim", 3}}).find("out of range"), std::string::npos);
  EXPECT_EQ(inferShape("aten.unsqueeze", {f32({s0})}, {{"dim", 1}}), (Shape{s0, 1}));
}

// ---- slice -----------------------------------------------------------------------------------

AttrMap sliceAttrs(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
                   int64_t step = 1) {
  return {{"dim", dim},
          {"start", start ? Attribute(*start) : Attribute()},
          {"end", end ? Attribute(*end) : Attribute()},
          {"step", step}};
}

TEST(OpsViewTest, SliceClampsLikePython) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  Tensor x = iota(DType::F32, {5});
  auto slice = [&](std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) {
    return toDoubles(runOne("aten.slice", {x}, sliceAttrs(0, start, end, step)));
  };
  EXPECT_EQ(slice(1, 4, 2), (std::vector<double>{1, 3}));
  EXPECT_EQ(slice(-2, std::nullopt, 1), (std::vector<double>{3, 4}));
  EXPECT_EQ(slice(std::nullopt, -3, 1), (std::vector<double>{0, 1}));
  EXPECT_EQ(slice(0, kMax, 3), (std::vector<double>{0, 3}));
  EXPECT_EQ(slice(kMin, 2, 1), (std::vector<double>{0, 1}));
  EXPECT_EQ(slice(-100, 100, 1), (std::vector<double>{0, 1, 2, 3, 4}));
  EXPECT_EQ(slice(7, kMax, 1), (std::vector<double>{}));
  EXPECT_EQ(slice(3, 1, 1), (std::vector<double>{}));
  EXPECT_EQ(slice(std::nullopt, std::nullopt, 4), (std::vector<double>{0, 4}));
}

TEST(OpsViewTest, SliceInnerDimWithStep) {
  Tensor x = iota(DType::I16, {3, 7});
  Tensor y = runOne("aten.slice", {x}, sliceAttrs(1, 1, -1, 2));
  ASSERT_EQ(y.shape(), (std::vector<int64_t>{3, 3}));
  std::vector<double> values = toDoubles(y);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 3; ++j)
      EXPECT_EQ(values[size_t(i * 3 + j)], double(i * 7 + 1 + 2 * j));
  Tensor rows = runOne("aten.slice", {x}, sliceAttrs(-2, 1, std::nullopt));
  EXPECT_EQ(rows.shape(), (std::vector<int64_t>{2, 7}));
  EXPECT_EQ(toDoubles(rows)[0], 7.0);
}

TEST(OpsViewTest, SliceRejectsBadArguments) {
  Tensor x = iota(DType::F32, {4});
  EXPECT_NE(runError("aten.slice", {x}, sliceAttrs(0, 0, 2, 0)).find("step"), std::string::npos);
  EXPECT_FALSE(runError("aten.slice", {x}, sliceAttrs(1, 0, 2)).empty());
  EXPECT_NE(
      runError("aten.slice", {makeTensor(DType::F32, {}, {1})}, sliceAttrs(0, 0, 1)).find("0-d"),
      std::string::npos);
}

TEST(OpsViewTest, SliceInfersSymbolicLengths) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  TensorType x = f32({s0, 10});
  EXPECT_EQ(inferShape("aten.slice", {x}, sliceAttrs(0, 1, std::nullopt)), (Shape{s0 - 1, 10}));
  EXPECT_EQ(inferShape("aten.slice", {x}, sliceAttrs(0, 1, kMax)), (Shape{s0 - 1, 10}));
  EXPECT_EQ(inferShape("aten.slice", {x}, sliceAttrs(0, std::nullopt, -1)), (Shape{s0 - 1, 10}));
  EXPECT_EQ(inferShape("aten.slice", {x}, sliceAttrs(0, -3, std::nullopt)), (Shape{3, 10}));
  EXPECT_EQ(inferShape("aten.slice", {x}, sliceAttrs(0, std::nullopt, std::nullopt, 2)),
            (Shape{SymInt::floorDiv(s0 + 1, 2), 10}));
  EXPECT_EQ(inferShape("aten.slice", {x}, sliceAttrs(1, 2, kMax, 3)), (Shape{s0, 3}));
  // Constant bounds on a symbolic dim are assumed to lie inside it.
  EXPECT_EQ(inferShape("aten.slice", {x}, sliceAttrs(0, 2, 5)), (Shape{3, 10}));
}

// ---- cat, split_with_sizes -------------------------------------------------------------------

TEST(OpsViewTest, CatAlongEachDim) {
  Tensor a = iota(DType::F32, {2, 2});
  Tensor b = makeTensor(DType::F32, {1, 2}, {10, 11});
  Tensor rows = runOne("aten.cat", {a, b}, {{"dim", 0}});
  EXPECT_EQ(rows.shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(toDoubles(rows), (std::vector<double>{0, 1, 2, 3, 10, 11}));
  Tensor c = makeTensor(DType::F32, {2, 3}, {10, 11, 12, 13, 14, 15});
  Tensor cols = runOne("aten.cat", {a, c}, {{"dim", -1}});
  EXPECT_EQ(cols.shape(), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(toDoubles(cols), (std::vector<double>{0, 1, 10, 11, 12, 2, 3, 13, 14, 15}));
  Tensor one = runOne("aten.cat", {a}, {});
  EXPECT_EQ(toDoubles(one), toDoubles(a));
}

TEST(OpsViewTest, CatPromotesAndSkipsLegacyEmpty) {
  Tensor a = makeTensor(DType::I32, {2}, {1, 2});
  Tensor b = makeTensor(DType::F32, {1}, {0.5});
  Tensor promoted = runOne("aten.cat", {a, b}, {});
  EXPECT_EQ(promoted.dtype(), DType::F32);
  EXPECT_EQ(toDoubles(promoted), (std::vector<double>{1, 2, 0.5}));
  Tensor big = makeTensor(DType::I64, {1}, {0});
  big.setInt(0, (int64_t(1) << 53) + 1);
  Tensor exact = runOne("aten.cat", {a, big}, {});
  EXPECT_EQ(exact.dtype(), DType::I64);
  EXPECT_EQ(exact.getInt(2), (int64_t(1) << 53) + 1);

  Tensor legacy = Tensor::zerosUnchecked(DType::F32, {0});
  Tensor m = iota(DType::F32, {2, 2});
  Tensor skipped = runOne("aten.cat", {legacy, m, legacy}, {{"dim", 1}});
  EXPECT_EQ(skipped.shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(toDoubles(skipped), toDoubles(m));
  Tensor allEmpty = runOne("aten.cat", {legacy, legacy}, {});
  EXPECT_EQ(allEmpty.shape(), (std::vector<int64_t>{0}));
}

TEST(OpsViewTest, CatRejectsMismatches) {
  Tensor a = iota(DType::F32, {2, 2});
  EXPECT_NE(runError("aten.cat", {a, iota(DType::F32, {2, 3})}, {{"dim", 0}}).find("must match"),
            std::string::npos);
  EXPECT_NE(runError("aten.cat", {a, iota(DType::F32, {4})}, {}).find("rank"), std::string::npos);
  EXPECT_NE(runError("aten.cat", {makeTensor(DType::F32, {}, {1})}, {}).find("0-d"),
            std::string::npos);
  EXPECT_FALSE(runError("aten.cat", {a, a}, {{"dim", 2}}).empty());
  EXPECT_EQ(inferShape("aten.cat", {f32({s0, 4}), f32({s1, 4}), f32({2, 4})}, {{"dim", 0}}),
            (Shape{s0 + s1 + SymInt(2), 4}));
  EXPECT_EQ(inferShape("aten.cat", {f32({s0, 4}), f32({3, 4})}, {{"dim", 1}}), (Shape{3, 8}));
}

TEST(OpsViewTest, SplitWithSizes) {
  Tensor x = iota(DType::F32, {5, 2});
  Expected<std::vector<Tensor>> parts =
      runOp("aten.split_with_sizes", {x}, {{"split_sizes", std::vector<int64_t>{2, 0, 3}}});
  ASSERT_TRUE(parts.hasValue()) << parts.error().message();
  ASSERT_EQ(parts->size(), 3u);
  EXPECT_EQ(toDoubles((*parts)[0]), (std::vector<double>{0, 1, 2, 3}));
  EXPECT_EQ((*parts)[1].shape(), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(toDoubles((*parts)[2]), (std::vector<double>{4, 5, 6, 7, 8, 9}));

  Expected<std::vector<Tensor>> cols = runOp(
      "aten.split_with_sizes", {x}, {{"split_sizes", std::vector<int64_t>{1, 1}}, {"dim", -1}});
  ASSERT_TRUE(cols.hasValue()) << cols.error().message();
  EXPECT_EQ(toDoubles((*cols)[0]), (std::vector<double>{0, 2, 4, 6, 8}));
  EXPECT_EQ(toDoubles((*cols)[1]), (std::vector<double>{1, 3, 5, 7, 9}));

  EXPECT_NE(runError("aten.split_with_sizes", {x}, {{"split_sizes", std::vector<int64_t>{2, 2}}})
                .find("sum to 4"),
            std::string::npos);
  EXPECT_NE(runError("aten.split_with_sizes", {x}, {{"split_sizes", std::vector<int64_t>{6, -1}}})
                .find("negative"),
            std::string::npos);

  Expected<std::vector<TensorType>> types = infer("aten.split_with_sizes", {f32({s0, 4})},
                                                  {{"split_sizes", ints({1, s0 - 1})}, {"dim", 0}});
  ASSERT_TRUE(types.hasValue()) << types.error().message();
  ASSERT_EQ(types->size(), 2u);
  EXPECT_EQ((*types)[0].shape, (Shape{1, 4}));
  EXPECT_EQ((*types)[1].shape, (Shape{s0 - 1, 4}));
}

// ---- gather, index_select, embedding ---------------------------------------------------------

TEST(OpsViewTest, GatherPicksAlongDim) {
  Tensor x = iota(DType::F32, {2, 3});
  for (DType indexType : {DType::I64, DType::I32}) {
    Tensor index = makeTensor(indexType, {2, 2}, {0, 2, 1, 0});
    Tensor y = runOne("aten.gather", {x, index}, {{"dim", 1}});
    // out[i][j] = x[i][index[i][j]]
    EXPECT_EQ(toDoubles(y), (std::vector<double>{0, 2, 4, 3}));
  }
  // out[i][j] = x[index[i][j]][j], index smaller than x in dim 1.
  Tensor index = makeTensor(DType::I64, {3, 2}, {1, 0, 0, 0, 1, 1});
  Tensor y = runOne("aten.gather", {x, index}, {{"dim", 0}});
  EXPECT_EQ(toDoubles(y), (std::vector<double>{3, 1, 0, 1, 3, 4}));
}

TEST(OpsViewTest, GatherRejectsBadIndices) {
  Tensor x = iota(DType::F32, {2, 3});
  EXPECT_NE(runError("aten.gather", {x, makeTensor(DType::I64, {1, 1}, {3})}, {{"dim", 1}})
                .find("index 3 is out of bounds"),
            std::string::npos);
  EXPECT_NE(runError("aten.gather", {x, makeTensor(DType::I64, {1, 1}, {-1})}, {{"dim", 1}})
                .find("index -1"),
            std::string::npos);
  EXPECT_NE(runError("aten.gather", {x, makeTensor(DType::F32, {1, 1}, {0})}, {{"dim", 1}})
                .find("i64 or i32"),
            std::string::npos);
  EXPECT_NE(
      runError("aten.gather", {x, makeTensor(DType::I64, {2}, {0, 0})}, {{"dim", 1}}).find("rank"),
      std::string::npos);
  EXPECT_FALSE(
      runError("aten.gather", {x, makeTensor(DType::I64, {1, 4}, {0, 0, 0, 0})}, {{"dim", 0}})
          .empty());
}

TEST(OpsViewTest, IndexSelectPicksSlices) {
  Tensor x = iota(DType::I8, {3, 2});
  Tensor rows =
      runOne("aten.index_select", {x, makeTensor(DType::I64, {3}, {2, 0, 2})}, {{"dim", 0}});
  EXPECT_EQ(rows.shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(toDoubles(rows), (std::vector<double>{4, 5, 0, 1, 4, 5}));
  Tensor cols = runOne("aten.index_select", {x, makeTensor(DType::I32, {1}, {1})}, {{"dim", -1}});
  EXPECT_EQ(cols.shape(), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(toDoubles(cols), (std::vector<double>{1, 3, 5}));
  Tensor scalarIndex =
      runOne("aten.index_select", {x, makeTensor(DType::I64, {}, {1})}, {{"dim", 0}});
  EXPECT_EQ(scalarIndex.shape(), (std::vector<int64_t>{1, 2}));

  EXPECT_NE(runError("aten.index_select", {x, makeTensor(DType::I64, {2}, {0, 3})}, {{"dim", 0}})
                .find("index 3 is out of bounds for dimension 0 with size 3"),
            std::string::npos);
  EXPECT_NE(runError("aten.index_select", {x, makeTensor(DType::I64, {1}, {-1})}, {{"dim", 0}})
                .find("index -1"),
            std::string::npos);
  EXPECT_FALSE(runError("aten.index_select", {x, makeTensor(DType::I64, {1, 1}, {0})}, {{"dim", 0}})
                   .empty());
  EXPECT_EQ(
      inferShape("aten.index_select", {f32({s0, 8}), TensorType(DType::I64, {s1})}, {{"dim", 0}}),
      (Shape{s1, 8}));
}

TEST(OpsViewTest, EmbeddingLooksUpRows) {
  Tensor weight = iota(DType::F32, {4, 3});
  Tensor indices = makeTensor(DType::I64, {2, 2}, {1, 3, 0, 0});
  Tensor y = runOne("aten.embedding", {weight, indices}, {});
  ASSERT_EQ(y.shape(), (std::vector<int64_t>{2, 2, 3}));
  std::vector<double> expected;
  for (double row : {1, 3, 0, 0})
    for (int64_t c = 0; c < 3; ++c)
      expected.push_back(row * 3 + double(c));
  EXPECT_EQ(toDoubles(y), expected);

  EXPECT_NE(runError("aten.embedding", {weight, makeTensor(DType::I32, {1}, {4})}, {})
                .find("index 4 is out of bounds"),
            std::string::npos);
  EXPECT_FALSE(runError("aten.embedding", {iota(DType::F32, {4}), indices}, {}).empty());
  EXPECT_EQ(inferShape("aten.embedding", {f32({100, 16}), TensorType(DType::I64, {s0, 7})}, {}),
            (Shape{s0, 7, 16}));
}

// ---- pad -------------------------------------------------------------------------------------

AttrMap padAttrs(std::vector<int64_t> pad, const char *mode, std::optional<double> value = {}) {
  return {{"pad", pad}, {"mode", mode}, {"value", value ? Attribute(*value) : Attribute()}};
}

TEST(OpsViewTest, PadConstant) {
  Tensor x = iota(DType::F32, {2, 3});
  Tensor y = runOne("aten.pad", {x}, padAttrs({1, 2}, "constant", 9.0));
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(toDoubles(y), (std::vector<double>{9, 0, 1, 2, 9, 9, 9, 3, 4, 5, 9, 9}));
  Tensor z = runOne("aten.pad", {x}, padAttrs({0, 0, 1, 0}, "constant"));
  EXPECT_EQ(toDoubles(z), (std::vector<double>{0, 0, 0, 0, 1, 2, 3, 4, 5}));
  // Negative pads crop.
  Tensor cropped = runOne("aten.pad", {x}, padAttrs({-1, 1}, "constant", 7.0));
  EXPECT_EQ(toDoubles(cropped), (std::vector<double>{1, 2, 7, 4, 5, 7}));
  Tensor ints = runOne("aten.pad", {iota(DType::I64, {2})},
                       {{"pad", std::vector<int64_t>{1, 1}}, {"value", 3.0}});
  EXPECT_EQ(toDoubles(ints), (std::vector<double>{3, 0, 1, 3}));
}

TEST(OpsViewTest, PadReflectReplicateCircular) {
  Tensor x = iota(DType::F32, {1, 1, 4});
  EXPECT_EQ(toDoubles(runOne("aten.pad", {x}, padAttrs({2, 1}, "reflect"))),
            (std::vector<double>{2, 1, 0, 1, 2, 3, 2}));
  EXPECT_EQ(toDoubles(runOne("aten.pad", {x}, padAttrs({2, 1}, "replicate"))),
            (std::vector<double>{0, 0, 0, 1, 2, 3, 3}));
  EXPECT_EQ(toDoubles(runOne("aten.pad", {x}, padAttrs({2, 1}, "circular"))),
            (std::vector<double>{2, 3, 0, 1, 2, 3, 0}));

  // 2-D reflect, checked against the reflection formula.
  Tensor image = iota(DType::F64, {1, 3, 3});
  Tensor y = runOne("aten.pad", {image}, padAttrs({1, 2, 2, 1}, "reflect"));
  ASSERT_EQ(y.shape(), (std::vector<int64_t>{1, 6, 6}));
  auto reflect = [](int64_t i, int64_t n) { return i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i; };
  std::vector<double> values = toDoubles(y);
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t c = 0; c < 6; ++c)
      EXPECT_EQ(values[size_t(r * 6 + c)], double(reflect(r - 2, 3) * 3 + reflect(c - 1, 3)));
}

TEST(OpsViewTest, PadRejectsBadArguments) {
  Tensor x = iota(DType::F32, {2, 3});
  EXPECT_NE(runError("aten.pad", {x}, padAttrs({3, 0}, "reflect")).find("less than"),
            std::string::npos);
  EXPECT_NE(runError("aten.pad", {x}, padAttrs({1}, "constant")).find("even"), std::string::npos);
  EXPECT_FALSE(runError("aten.pad", {x}, padAttrs({1, 1, 1, 1, 1, 1}, "constant")).empty());
  EXPECT_NE(runError("aten.pad", {x}, padAttrs({1, 1}, "wrap")).find("unknown padding mode"),
            std::string::npos);
  EXPECT_NE(runError("aten.pad", {x}, padAttrs({1, 1}, "reflect", 1.0)).find("fill value"),
            std::string::npos);
  EXPECT_NE(runError("aten.pad", {x}, padAttrs({-2, -2}, "constant")).find("negative"),
            std::string::npos);
  EXPECT_FALSE(runError("aten.pad", {x}, padAttrs({4, 0}, "circular")).empty());
  EXPECT_EQ(inferShape("aten.pad", {f32({s0, 5})}, padAttrs({1, 2, 0, 3}, "reflect")),
            (Shape{s0 + 3, 8}));
}

// ---- clone -----------------------------------------------------------------------------------

TEST(OpsViewTest, CloneCopiesStorage) {
  Tensor x = iota(DType::BF16, {2, 3});
  Tensor y = runOne("aten.clone", {x}, {});
  EXPECT_TRUE(y.equals(x));
  EXPECT_NE(y.data(), x.data());
  EXPECT_EQ(inferShape("aten.clone", {f32({s0, 2})}, {}), (Shape{s0, 2}));
}

} // namespace
} // namespace tensorc
