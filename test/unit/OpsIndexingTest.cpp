// Tests of the indexing, scatter and resampling ops: gather_nd, scatter, scatter_nd, resize.
#include "OpTestUtil.h"

#include <gtest/gtest.h>

namespace tensorc {
namespace {

using test::makeTensor;
using test::runOp;
using test::toDoubles;

using Doubles = std::vector<double>;

Tensor runOne(std::string_view name, const std::vector<Tensor> &inputs, AttrMap attrs) {
  Expected<std::vector<Tensor>> results = runOp(name, inputs, std::move(attrs));
  EXPECT_TRUE(results.hasValue()) << (results ? "" : results.error().message());
  if (!results || results->size() != 1)
    return Tensor();
  return (*results)[0];
}

std::string runError(std::string_view name, const std::vector<Tensor> &inputs, AttrMap attrs) {
  Expected<std::vector<Tensor>> results = runOp(name, inputs, std::move(attrs));
  EXPECT_FALSE(results.hasValue()) << name << " unexpectedly succeeded";
  return results ? "" : results.error().message();
}

// gather_nd picks whole rows with a depth-1 index and elements with a depth-2 one.
TEST(OpsIndexing, GatherNd) {
  Tensor data = makeTensor(DType::F32, {2, 2}, {0, 1, 2, 3});
  Tensor rows = makeTensor(DType::I64, {2, 1}, {1, 0});
  Tensor out = runOne("prims.gather_nd", {data, rows}, {});
  EXPECT_EQ(out.shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(toDoubles(out), (Doubles{2, 3, 0, 1}));
  Tensor elements = makeTensor(DType::I64, {2, 2}, {0, 0, 1, -1}); // -1: the last column
  EXPECT_EQ(toDoubles(runOne("prims.gather_nd", {data, elements}, {})), (Doubles{0, 3}));
}

// With batch_dims=1 each batch row indexes its own slice of the data.
TEST(OpsIndexing, GatherNdBatchDims) {
  Tensor data = makeTensor(DType::I32, {2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  Tensor index = makeTensor(DType::I64, {2, 1}, {1, 0});
  AttrMap attrs;
  attrs.emplace("batch_dims", Attribute(int64_t(1)));
  Tensor out = runOne("prims.gather_nd", {data, index}, attrs);
  EXPECT_EQ(out.shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(toDoubles(out), (Doubles{2, 3, 4, 5}));
}

TEST(OpsIndexing, GatherNdOutOfRange) {
  Tensor data = makeTensor(DType::F32, {2, 2}, {0, 1, 2, 3});
  Tensor index = makeTensor(DType::I64, {1, 1}, {2});
  EXPECT_NE(runError("prims.gather_nd", {data, index}, {}).find("out of bounds"),
            std::string::npos);
}

// ONNX's ScatterElements example along dim 1, then the same with add (duplicates accumulate).
TEST(OpsIndexing, Scatter) {
  Tensor data = makeTensor(DType::F32, {1, 5}, {1, 2, 3, 4, 5});
  Tensor index = makeTensor(DType::I64, {1, 2}, {1, 3});
  Tensor src = makeTensor(DType::F32, {1, 2}, {1.1, 2.1});
  AttrMap attrs;
  attrs.emplace("dim", Attribute(int64_t(1)));
  Tensor out = runOne("aten.scatter", {data, index, src}, attrs);
  EXPECT_EQ(toDoubles(out), (Doubles{1, 1.1f, 3, 2.1f, 5}));
  Tensor dup = makeTensor(DType::I64, {1, 2}, {1, 1});
  attrs.insert_or_assign("reduce", Attribute("add"));
  out = runOne("aten.scatter", {data, dup, src}, attrs);
  EXPECT_EQ(toDoubles(out), (Doubles{1, float(2 + 1.1f + 2.1f), 3, 4, 5}));
  attrs.insert_or_assign("reduce", Attribute("max"));
  Tensor ints = makeTensor(DType::I64, {1, 5}, {1, 2, 3, 4, 5});
  Tensor intSrc = makeTensor(DType::I64, {1, 2}, {9, 0});
  EXPECT_EQ(toDoubles(runOne("aten.scatter", {ints, index, intSrc}, attrs)),
            (Doubles{1, 9, 3, 4, 5}));
}

TEST(OpsIndexing, ScatterOutOfRange) {
  Tensor data = makeTensor(DType::F32, {1, 3}, {1, 2, 3});
  Tensor index = makeTensor(DType::I64, {1, 1}, {-4});
  Tensor src = makeTensor(DType::F32, {1, 1}, {0});
  AttrMap attrs;
  attrs.emplace("dim", Attribute(int64_t(1)));
  EXPECT_NE(runError("aten.scatter", {data, index, src}, attrs).find("out of bounds"),
            std::string::npos);
}

// scatter_nd writes rows 0 and 2 of a [4, 2] tensor; with mul it multiplies them in place.
TEST(OpsIndexing, ScatterNd) {
  Tensor data = makeTensor(DType::F32, {4, 2}, {1, 1, 2, 2, 3, 3, 4, 4});
  Tensor index = makeTensor(DType::I64, {2, 1}, {0, 2});
  Tensor updates = makeTensor(DType::F32, {2, 2}, {5, 6, 7, 8});
  EXPECT_EQ(toDoubles(runOne("prims.scatter_nd", {data, index, updates}, {})),
            (Doubles{5, 6, 2, 2, 7, 8, 4, 4}));
  AttrMap attrs;
  attrs.emplace("reduce", Attribute("mul"));
  EXPECT_EQ(toDoubles(runOne("prims.scatter_nd", {data, index, updates}, attrs)),
            (Doubles{5, 6, 2, 2, 21, 24, 4, 4}));
}

AttrMap resizeAttrs(std::vector<int64_t> size, std::vector<double> scales, std::string mode,
                    std::string coordinates) {
  AttrMap attrs;
  std::vector<double> roi(size.size(), 0.0);
  roi.resize(2 * size.size(), 1.0);
  attrs.emplace("size", Attribute(size));
  attrs.emplace("scales", Attribute(std::move(scales)));
  attrs.emplace("roi", Attribute(std::move(roi)));
  attrs.emplace("mode", Attribute(std::move(mode)));
  attrs.emplace("coordinate_transformation_mode", Attribute(std::move(coordinates)));
  return attrs;
}

// Nearest 2x upsampling with asymmetric coordinates repeats every element.
TEST(OpsIndexing, ResizeNearest) {
  Tensor x = makeTensor(DType::F32, {1, 2}, {1, 2});
  Tensor out = runOne("prims.resize", {x}, resizeAttrs({1, 4}, {1, 2}, "nearest", "asymmetric"));
  EXPECT_EQ(toDoubles(out), (Doubles{1, 1, 2, 2}));
}

// Linear half_pixel 2x upsampling of [0, 4]: sources -0.25, 0.25, 0.75, 1.25, clamped at edges.
TEST(OpsIndexing, ResizeLinearHalfPixel) {
  Tensor x = makeTensor(DType::F32, {2}, {0, 4});
  Tensor out = runOne("prims.resize", {x}, resizeAttrs({4}, {2}, "linear", "half_pixel"));
  EXPECT_EQ(toDoubles(out), (Doubles{0, 1, 3, 4}));
}

// tf_crop_and_resize samples outside the input get the extrapolation value.
TEST(OpsIndexing, ResizeExtrapolation) {
  Tensor x = makeTensor(DType::F32, {2}, {0, 4});
  AttrMap attrs = resizeAttrs({3}, {1.5}, "linear", "tf_crop_and_resize");
  attrs.insert_or_assign("roi", Attribute(std::vector<double>{0.0, 2.0}));
  attrs.emplace("extrapolation_value", Attribute(-1.0));
  // Sources 0, 1, 2 (in pixels of [0, 1]): the last lies outside.
  EXPECT_EQ(toDoubles(runOne("prims.resize", {x}, attrs)), (Doubles{0, 4, -1}));
}

} // namespace
} // namespace tensorc
