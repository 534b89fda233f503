// Tests of the data-dependent and miscellaneous ops: nonzero, unique, compress,
// non_max_suppression, grid_sample, max_pool_with_indices, reverse_sequence, roi_align, det,
// dft, stft.
#include "OpTestUtil.h"

#include <gtest/gtest.h>

namespace tensorc {
namespace {

using test::makeTensor;
using test::runOp;
using test::toDoubles;

using Doubles = std::vector<double>;
using Ints = std::vector<int64_t>;

std::vector<Tensor> runAll(std::string_view name, const std::vector<Tensor> &inputs,
                           AttrMap attrs = {}) {
  Expected<std::vector<Tensor>> results = runOp(name, inputs, std::move(attrs));
  EXPECT_TRUE(results.hasValue()) << (results ? "" : results.error().message());
  return results ? *results : std::vector<Tensor>{};
}

Tensor runOne(std::string_view name, const std::vector<Tensor> &inputs, AttrMap attrs = {}) {
  std::vector<Tensor> results = runAll(name, inputs, std::move(attrs));
  return results.empty() ? Tensor() : results[0];
}

std::string runError(std::string_view name, const std::vector<Tensor> &inputs, AttrMap attrs = {}) {
  Expected<std::vector<Tensor>> results = runOp(name, inputs, std::move(attrs));
  EXPECT_FALSE(results.hasValue()) << name << " unexpectedly succeeded";
  return results ? "" : results.error().message();
}

AttrMap attrs(std::initializer_list<std::pair<const std::string, Attribute>> entries) {
  return AttrMap(entries);
}

void expectNear(const Doubles &actual, const Doubles &expected, double tolerance = 1e-9) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], tolerance) << "at " << i;
}

// nonzero lists the coordinates of the nonzero elements, one row per dim.
TEST(OpsMisc, NonZero) {
  Tensor out = runOne("prims.nonzero", {makeTensor(DType::Bool, {2, 2}, {1, 0, 0, 1})});
  EXPECT_EQ(out.shape(), (Ints{2, 2}));
  EXPECT_EQ(toDoubles(out), (Doubles{0, 1, 0, 1}));
  Tensor none = runOne("prims.nonzero", {makeTensor(DType::F32, {3}, {0, 0, 0})});
  EXPECT_EQ(none.shape(), (Ints{1, 0}));
}

// Flattened unique in first-occurrence order and sorted.
TEST(OpsMisc, UniqueFlat) {
  Tensor x = makeTensor(DType::F32, {6}, {2, 1, 1, 3, 4, 3});
  std::vector<Tensor> unsorted = runAll("prims.unique", {x}, attrs({{"sorted", Attribute(false)}}));
  ASSERT_EQ(unsorted.size(), 4u);
  EXPECT_EQ(toDoubles(unsorted[0]), (Doubles{2, 1, 3, 4}));
  EXPECT_EQ(toDoubles(unsorted[1]), (Doubles{0, 1, 3, 4}));
  EXPECT_EQ(toDoubles(unsorted[2]), (Doubles{0, 1, 1, 2, 3, 2}));
  EXPECT_EQ(toDoubles(unsorted[3]), (Doubles{1, 2, 2, 1}));
  std::vector<Tensor> sorted = runAll("prims.unique", {x});
  ASSERT_EQ(sorted.size(), 4u);
  EXPECT_EQ(toDoubles(sorted[0]), (Doubles{1, 2, 3, 4}));
  EXPECT_EQ(toDoubles(sorted[1]), (Doubles{1, 0, 3, 4}));
  EXPECT_EQ(toDoubles(sorted[2]), (Doubles{1, 0, 0, 2, 3, 2}));
  EXPECT_EQ(toDoubles(sorted[3]), (Doubles{2, 1, 2, 1}));
}

// Unique rows along axis 0, sorted lexicographically.
TEST(OpsMisc, UniqueAxis) {
  Tensor x = makeTensor(DType::I64, {3, 2}, {1, 0, 0, 1, 1, 0});
  std::vector<Tensor> out = runAll("prims.unique", {x}, attrs({{"axis", Attribute(int64_t(0))}}));
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].shape(), (Ints{2, 2}));
  EXPECT_EQ(toDoubles(out[0]), (Doubles{0, 1, 1, 0}));
  EXPECT_EQ(toDoubles(out[1]), (Doubles{1, 0}));
  EXPECT_EQ(toDoubles(out[2]), (Doubles{1, 0, 1}));
  EXPECT_EQ(toDoubles(out[3]), (Doubles{1, 2}));
  EXPECT_NE(
      runError("prims.unique", {x}, attrs({{"axis", Attribute(int64_t(2))}})).find("out of range"),
      std::string::npos);
}

// compress keeps the slices whose condition is true; a shorter condition drops the rest.
TEST(OpsMisc, Compress) {
  Tensor x = makeTensor(DType::F32, {3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor rows = runOne("prims.compress", {x, makeTensor(DType::Bool, {3}, {0, 1, 1})},
                       attrs({{"axis", Attribute(int64_t(0))}}));
  EXPECT_EQ(rows.shape(), (Ints{2, 2}));
  EXPECT_EQ(toDoubles(rows), (Doubles{3, 4, 5, 6}));
  Tensor columns = runOne("prims.compress", {x, makeTensor(DType::Bool, {1}, {1})},
                          attrs({{"axis", Attribute(int64_t(-1))}}));
  EXPECT_EQ(columns.shape(), (Ints{3, 1}));
  EXPECT_EQ(toDoubles(columns), (Doubles{1, 3, 5}));
  Tensor flat = runOne("prims.compress", {x, makeTensor(DType::Bool, {5}, {0, 1, 0, 0, 1})});
  EXPECT_EQ(toDoubles(flat), (Doubles{2, 5}));
  EXPECT_NE(runError("prims.compress", {x, makeTensor(DType::Bool, {4}, {1, 1, 1, 1})},
                     attrs({{"axis", Attribute(int64_t(0))}}))
                .find("condition has 4 entries"),
            std::string::npos);
}

// A 0-d input has no dim for compress or unique to select along: refused (dim 0 and -1 once
// passed normalization and the shape was indexed past its end). Without an axis both flatten.
TEST(OpsMisc, CompressAndUniqueRefuseAnAxisOfA0dInput) {
  Tensor scalar = makeTensor(DType::F32, {}, {7});
  Tensor condition = makeTensor(DType::Bool, {1}, {1});
  for (int64_t axis : {0, -1}) {
    EXPECT_NE(runError("prims.compress", {scalar, condition}, attrs({{"axis", Attribute(axis)}}))
                  .find("dim " + std::to_string(axis) + " out of range for a 0-d tensor"),
              std::string::npos);
    EXPECT_NE(runError("prims.unique", {scalar}, attrs({{"axis", Attribute(axis)}}))
                  .find("dim " + std::to_string(axis) + " out of range for a 0-d tensor"),
              std::string::npos);
  }
  EXPECT_EQ(toDoubles(runOne("prims.compress", {scalar, condition})), (Doubles{7}));
  EXPECT_EQ(toDoubles(runOne("prims.unique", {scalar})), (Doubles{7}));
}

// Box 1 overlaps box 0 with IoU 0.9 / 1.1 and is suppressed; box 2 is disjoint.
TEST(OpsMisc, NonMaxSuppression) {
  Tensor boxes = makeTensor(DType::F32, {1, 3, 4}, {0, 0, 1, 1, 0, 0.1, 1, 1.1, 0, 10, 1, 11});
  Tensor scores = makeTensor(DType::F32, {1, 1, 3}, {0.9, 0.75, 0.6});
  Tensor out = runOne("prims.non_max_suppression", {boxes, scores},
                      attrs({{"max_output_boxes_per_class", Attribute(int64_t(3))},
                             {"iou_threshold", Attribute(0.5)}}));
  EXPECT_EQ(out.shape(), (Ints{2, 3}));
  EXPECT_EQ(toDoubles(out), (Doubles{0, 0, 0, 0, 0, 2}));
  Tensor limited = runOne("prims.non_max_suppression", {boxes, scores},
                          attrs({{"max_output_boxes_per_class", Attribute(int64_t(3))},
                                 {"iou_threshold", Attribute(0.5)},
                                 {"score_threshold", Attribute(0.7)}}));
  EXPECT_EQ(toDoubles(limited), (Doubles{0, 0, 0}));
  EXPECT_NE(runError("prims.non_max_suppression", {boxes, scores},
                     attrs({{"center_point_box", Attribute(int64_t(2))}}))
                .find("center_point_box"),
            std::string::npos);
}

// Sampling a 2x2 image [[1, 2], [3, 4]] at chosen normalized points.
TEST(OpsMisc, GridSample) {
  Tensor image = makeTensor(DType::F32, {1, 1, 2, 2}, {1, 2, 3, 4});
  auto sample = [&](double x, double y, AttrMap a) {
    Tensor out = runOne("prims.grid_sample", {image, makeTensor(DType::F32, {1, 1, 1, 2}, {x, y})},
                        std::move(a));
    return out.defined() ? out.getDouble(0) : -1.0;
  };
  EXPECT_DOUBLE_EQ(sample(0, 0, {}), 2.5); // the center averages all four pixels
  EXPECT_DOUBLE_EQ(sample(-1, -1, attrs({{"align_corners", Attribute(true)}})), 1);
  EXPECT_DOUBLE_EQ(
      sample(1, -1, attrs({{"align_corners", Attribute(true)}, {"mode", Attribute("nearest")}})),
      2);
  // Half a pixel outside the corner: zeros padding mixes in three zeros, border clamps.
  EXPECT_DOUBLE_EQ(sample(-1, -1, {}), 0.25);
  EXPECT_DOUBLE_EQ(sample(-1, -1, attrs({{"padding_mode", Attribute("border")}})), 1);
  EXPECT_NE(runError("prims.grid_sample", {image, makeTensor(DType::F32, {1, 1, 1, 2}, {0, 0})},
                     attrs({{"mode", Attribute("area")}}))
                .find("unknown grid_sample mode"),
            std::string::npos);
}

// The index of each maximum is flat over the whole input, row- or column-major.
TEST(OpsMisc, MaxPoolWithIndices) {
  Tensor x = makeTensor(DType::F32, {1, 2, 2, 2}, {1, 4, 3, 2, 5, 6, 8, 7});
  AttrMap base = attrs({{"kernel_size", Attribute(Ints{2, 2})},
                        {"stride", Attribute(Ints{1, 1})},
                        {"padding", Attribute(Ints{0, 0, 0, 0})},
                        {"dilation", Attribute(Ints{1, 1})}});
  std::vector<Tensor> out = runAll("prims.max_pool_with_indices", {x}, base);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape(), (Ints{1, 2, 1, 1}));
  EXPECT_EQ(toDoubles(out[0]), (Doubles{4, 8}));
  EXPECT_EQ(toDoubles(out[1]), (Doubles{1, 6}));
  AttrMap columnMajor = base;
  columnMajor.insert_or_assign("storage_order", Attribute(int64_t(1)));
  out = runAll("prims.max_pool_with_indices", {x}, columnMajor);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(toDoubles(out[1]), (Doubles{2, 5}));
  AttrMap tooBig = base;
  tooBig.insert_or_assign("kernel_size", Attribute(Ints{3, 3}));
  EXPECT_NE(runError("prims.max_pool_with_indices", {x}, tooBig).find("does not fit"),
            std::string::npos);
}

// Each batch row reverses its first `length` steps.
TEST(OpsMisc, ReverseSequence) {
  Tensor x = makeTensor(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  AttrMap a = attrs({{"batch_axis", Attribute(int64_t(0))}, {"time_axis", Attribute(int64_t(1))}});
  Tensor out = runOne("prims.reverse_sequence", {x, makeTensor(DType::I64, {2}, {2, 3})}, a);
  EXPECT_EQ(toDoubles(out), (Doubles{2, 1, 3, 6, 5, 4}));
  // The same axes counted from the end (the kernel once read batch_axis -2 as axis 1).
  AttrMap negative =
      attrs({{"batch_axis", Attribute(int64_t(-2))}, {"time_axis", Attribute(int64_t(-1))}});
  Tensor same =
      runOne("prims.reverse_sequence", {x, makeTensor(DType::I64, {2}, {2, 3})}, negative);
  EXPECT_EQ(toDoubles(same), (Doubles{2, 1, 3, 6, 5, 4}));
  EXPECT_NE(runError("prims.reverse_sequence", {x, makeTensor(DType::I64, {2}, {4, 1})}, a)
                .find("length 4 outside"),
            std::string::npos);
}

// One bin over the whole 2x2 image samples its center (the mean of the four pixels).
TEST(OpsMisc, RoiAlign) {
  Tensor image = makeTensor(DType::F32, {1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor rois = makeTensor(DType::F32, {1, 4}, {0, 0, 2, 2});
  Tensor batch = makeTensor(DType::I64, {1}, {0});
  Tensor out = runOne("prims.roi_align", {image, rois, batch},
                      attrs({{"sampling_ratio", Attribute(int64_t(1))}}));
  EXPECT_EQ(out.shape(), (Ints{1, 1, 1, 1}));
  EXPECT_DOUBLE_EQ(out.getDouble(0), 2.5);
  EXPECT_NE(runError("prims.roi_align", {image, rois, makeTensor(DType::I64, {1}, {3})})
                .find("batch index 3"),
            std::string::npos);
}

// Determinants of a batch, including one that needs a row swap.
TEST(OpsMisc, Det) {
  Tensor x = makeTensor(DType::F64, {2, 2, 2}, {1, 2, 3, 4, 2, 0, 0, 3});
  expectNear(toDoubles(runOne("prims.det", {x})), {-2, 6});
  Tensor swap = makeTensor(DType::F32, {3, 3}, {0, 1, 0, 1, 0, 0, 0, 0, 1});
  expectNear(toDoubles(runOne("prims.det", {swap})), {-1});
  EXPECT_NE(
      runError("prims.det", {makeTensor(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6})}).find("square"),
      std::string::npos);
}

// DFT of [1, 2, 3, 4] is [10, -2+2i, -2, -2-2i]; the inverse gives the signal back.
TEST(OpsMisc, Dft) {
  Tensor x = makeTensor(DType::F32, {1, 4, 1}, {1, 2, 3, 4});
  AttrMap a = attrs({{"axis", Attribute(int64_t(1))}, {"length", Attribute(int64_t(4))}});
  Tensor spectrum = runOne("prims.dft", {x}, a);
  EXPECT_EQ(spectrum.shape(), (Ints{1, 4, 2}));
  expectNear(toDoubles(spectrum), {10, 0, -2, 2, -2, 0, -2, -2}, 1e-5);
  AttrMap onesided = a;
  onesided.insert_or_assign("onesided", Attribute(true));
  expectNear(toDoubles(runOne("prims.dft", {x}, onesided)), {10, 0, -2, 2, -2, 0}, 1e-5);
  AttrMap inverse = a;
  inverse.insert_or_assign("inverse", Attribute(true));
  expectNear(toDoubles(runOne("prims.dft", {spectrum}, inverse)), {1, 0, 2, 0, 3, 0, 4, 0}, 1e-5);
  AttrMap padded = a;
  padded.insert_or_assign("length", Attribute(int64_t(2))); // truncates to [1, 2]
  expectNear(toDoubles(runOne("prims.dft", {x}, padded)), {3, 0, -1, 0}, 1e-5);
  EXPECT_NE(runError("prims.dft", {makeTensor(DType::F32, {4, 3}, Doubles(12, 0))}, a)
                .find("trailing dim"),
            std::string::npos);
}

// Two frames of two samples: [1, 2] -> [3, -1], [3, 4] -> [7, -1].
TEST(OpsMisc, Stft) {
  Tensor signal = makeTensor(DType::F32, {1, 4, 1}, {1, 2, 3, 4});
  AttrMap a =
      attrs({{"frame_step", Attribute(int64_t(2))}, {"frame_length", Attribute(int64_t(2))}});
  Tensor out = runOne("prims.stft", {signal, Tensor()}, a);
  EXPECT_EQ(out.shape(), (Ints{1, 2, 2, 2}));
  expectNear(toDoubles(out), {3, 0, -1, 0, 7, 0, -1, 0}, 1e-5);
  Tensor window = makeTensor(DType::F32, {2}, {1, 0});
  expectNear(toDoubles(runOne("prims.stft", {signal, window}, a)), {1, 0, 1, 0, 3, 0, 3, 0}, 1e-5);
  AttrMap tooLong = a;
  tooLong.insert_or_assign("frame_length", Attribute(int64_t(5)));
  EXPECT_NE(runError("prims.stft", {signal, Tensor()}, tooLong).find("do not fit"),
            std::string::npos);
}

} // namespace
} // namespace tensorc
