// Tests of aten.batch_norm and aten.layer_norm against the textbook formulas written here.
#include "OpTestUtil.h"

#include "tensorc/IR/Graph.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace tensorc::test {
namespace {

using Dims = std::vector<int64_t>;

std::vector<double> randomValues(int64_t count, uint32_t seed, double low = -2, double high = 2) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(low, high);
  std::vector<double> values(static_cast<size_t>(count));
  for (double &value : values)
    value = dist(rng);
  return values;
}

Tensor runOne(std::string_view name, const std::vector<Tensor> &inputs, AttrMap attrs = {}) {
  Expected<std::vector<Tensor>> result = runOp(name, inputs, std::move(attrs));
  EXPECT_TRUE(result.hasValue()) << (result ? "" : result.error().message());
  if (!result)
    return Tensor();
  return (*result)[0];
}

std::string errorOf(std::string_view name, const std::vector<Tensor> &inputs, AttrMap attrs = {}) {
  Expected<std::vector<Tensor>> result = runOp(name, inputs, std::move(attrs));
  EXPECT_FALSE(result.hasValue()) << name << " should have failed";
  return result ? "" : result.error().message();
}

void expectClose(const Tensor &actual, const std::vector<double> &expected, double tolerance) {
  std::vector<double> values = toDoubles(actual);
  ASSERT_EQ(values.size(), expected.size());
  for (size_t i = 0; i < values.size(); ++i)
    ASSERT_NEAR(values[i], expected[i], tolerance) << "element " << i;
}

// ---- batch_norm ------------------------------------------------------------------------------

/// y[n, c, i] = (x - mean[c]) / sqrt(var[c] + eps) * weight[c] + bias[c]; with `training` the
/// mean and (biased) variance come from the batch.
std::vector<double> referenceBatchNorm(const Dims &shape, const std::vector<double> &x,
                                       const std::vector<double> *weight,
                                       const std::vector<double> *bias, std::vector<double> mean,
                                       std::vector<double> var, bool training, double eps) {
  int64_t batch = shape[0], channels = shape[1], inner = 1;
  for (size_t d = 2; d < shape.size(); ++d)
    inner *= shape[d];
  auto at = [&](int64_t n, int64_t c, int64_t i) { return size_t((n * channels + c) * inner + i); };
  if (training) {
    for (int64_t c = 0; c < channels; ++c) {
      double sum = 0, squares = 0;
      for (int64_t n = 0; n < batch; ++n)
        for (int64_t i = 0; i < inner; ++i)
          sum += x[at(n, c, i)];
      mean[size_t(c)] = sum / double(batch * inner);
      for (int64_t n = 0; n < batch; ++n)
        for (int64_t i = 0; i < inner; ++i)
          squares += std::pow(x[at(n, c, i)] - mean[size_t(c)], 2);
      var[size_t(c)] = squares / double(batch * inner);
    }
  }
  std::vector<double> y(x.size());
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t i = 0; i < inner; ++i) {
        double value = (x[at(n, c, i)] - mean[size_t(c)]) / std::sqrt(var[size_t(c)] + eps);
        y[at(n, c, i)] =
            value * (weight ? (*weight)[size_t(c)] : 1.0) + (bias ? (*bias)[size_t(c)] : 0.0);
      }
  return y;
}

TEST(OpsNormalization, BatchNormInferenceHandComputed) {
  // One channel, mean 1, var 4 - eps, weight 2, bias 3: y = (x - 1) / 2 * 2 + 3 = x + 2.
  double eps = 1e-5;
  Tensor x = makeTensor(DType::F64, {2, 1, 2}, {0, 1, 2, 3});
  Tensor out = runOne("aten.batch_norm",
                      {x, makeTensor(DType::F64, {1}, {2}), makeTensor(DType::F64, {1}, {3}),
                       makeTensor(DType::F64, {1}, {1}), makeTensor(DType::F64, {1}, {4 - eps})},
                      {{"eps", Attribute(eps)}});
  expectClose(out, {2, 3, 4, 5}, 1e-12);
}

TEST(OpsNormalization, BatchNormInferenceAndTraining) {
  Dims shape{3, 4, 5, 2};
  std::vector<double> x = randomValues(3 * 4 * 5 * 2, 1), weight = randomValues(4, 2),
                      bias = randomValues(4, 3), mean = randomValues(4, 4),
                      var = randomValues(4, 5, 0.5, 2);
  for (DType dtype : {DType::F32, DType::F64}) {
    for (bool training : {false, true}) {
      SCOPED_TRACE(testing::Message() << dtypeName(dtype) << " training=" << training);
      AttrMap attrs{{"training", Attribute(training)}, {"eps", Attribute(1e-3)}};
      Tensor out = runOne("aten.batch_norm",
                          {makeTensor(dtype, shape, x), makeTensor(dtype, {4}, weight),
                           makeTensor(dtype, {4}, bias), makeTensor(dtype, {4}, mean),
                           makeTensor(dtype, {4}, var)},
                          attrs);
      EXPECT_EQ(out.shape(), shape);
      EXPECT_EQ(out.dtype(), dtype);
      expectClose(out, referenceBatchNorm(shape, x, &weight, &bias, mean, var, training, 1e-3),
                  dtype == DType::F32 ? 1e-5 : 1e-12);
    }
  }
}

TEST(OpsNormalization, BatchNormTrainingWithoutParamsOrStats) {
  // [N, C] input (no spatial dims), no weight, bias or running stats.
  Dims shape{6, 3};
  std::vector<double> x = randomValues(18, 6);
  Tensor out = runOne("aten.batch_norm",
                      {makeTensor(DType::F32, shape, x), Tensor(), Tensor(), Tensor(), Tensor()},
                      {{"training", Attribute(true)}});
  expectClose(out,
              referenceBatchNorm(shape, x, nullptr, nullptr, std::vector<double>(3),
                                 std::vector<double>(3), true, 1e-5),
              1e-5);
}

TEST(OpsNormalization, BatchNormHalfInputWithF32Params) {
  Dims shape{2, 3, 4};
  Tensor x = makeTensor(DType::F16, shape, randomValues(24, 7));
  std::vector<double> xRounded = toDoubles(x);
  std::vector<double> mean = randomValues(3, 8), var = randomValues(3, 9, 0.5, 2);
  Tensor out = runOne("aten.batch_norm", {x, Tensor(), Tensor(), makeTensor(DType::F32, {3}, mean),
                                          makeTensor(DType::F32, {3}, var)});
  EXPECT_EQ(out.dtype(), DType::F16);
  // Mean and var pass through f32 on the way in.
  std::vector<double> mean32 = toDoubles(makeTensor(DType::F32, {3}, mean));
  std::vector<double> var32 = toDoubles(makeTensor(DType::F32, {3}, var));
  expectClose(
      out, referenceBatchNorm(shape, xRounded, nullptr, nullptr, mean32, var32, false, 1e-5), 5e-3);
}

TEST(OpsNormalization, BatchNormErrors) {
  Tensor x = makeTensor(DType::F32, {2, 3}, std::vector<double>(6, 1));
  Tensor three = makeTensor(DType::F32, {3}, {1, 1, 1});
  EXPECT_NE(errorOf("aten.batch_norm", {x, Tensor(), Tensor(), Tensor(), Tensor()})
                .find("running_mean and running_var are required"),
            std::string::npos);
  Tensor flat = makeTensor(DType::F32, {3}, {1, 2, 3});
  EXPECT_NE(errorOf("aten.batch_norm", {flat, Tensor(), Tensor(), three, three}).find("rank >= 2"),
            std::string::npos);
  Tensor four = makeTensor(DType::F32, {4}, {1, 1, 1, 1});
  EXPECT_NE(errorOf("aten.batch_norm", {x, four, Tensor(), three, three}).find("weight must be"),
            std::string::npos);
}

// ---- layer_norm ------------------------------------------------------------------------------

std::vector<double> referenceLayerNorm(const std::vector<double> &x, int64_t rowSize,
                                       const std::vector<double> *weight,
                                       const std::vector<double> *bias, double eps) {
  std::vector<double> y(x.size());
  for (size_t start = 0; start < x.size(); start += size_t(rowSize)) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < rowSize; ++i)
      mean += x[start + size_t(i)] / double(rowSize);
    for (int64_t i = 0; i < rowSize; ++i)
      var += std::pow(x[start + size_t(i)] - mean, 2) / double(rowSize);
    for (int64_t i = 0; i < rowSize; ++i)
      y[start + size_t(i)] = (x[start + size_t(i)] - mean) / std::sqrt(var + eps) *
                                 (weight ? (*weight)[size_t(i)] : 1.0) +
                             (bias ? (*bias)[size_t(i)] : 0.0);
  }
  return y;
}

TEST(OpsNormalization, LayerNormHandComputed) {
  // Row [1, 3]: mean 2, var 1, so y = [-1, 1] / sqrt(1 + eps).
  Tensor out =
      runOne("aten.layer_norm", {makeTensor(DType::F64, {1, 2}, {1, 3}), Tensor(), Tensor()},
             {{"normalized_shape", Attribute(Dims{2})}, {"eps", Attribute(0.0)}});
  expectClose(out, {-1, 1}, 1e-12);
}

TEST(OpsNormalization, LayerNormOverTrailingDims) {
  std::vector<double> x = randomValues(2 * 3 * 4 * 5, 11);
  // An offset mean makes a one-pass variance lose digits; the kernel must not.
  for (double &value : x)
    value += 1000;
  std::vector<double> weight = randomValues(20, 12), bias = randomValues(20, 13);
  for (DType dtype : {DType::F32, DType::F64}) {
    SCOPED_TRACE(dtypeName(dtype));
    std::vector<double> xRounded = toDoubles(makeTensor(dtype, {2, 3, 4, 5}, x));
    Tensor out = runOne("aten.layer_norm",
                        {makeTensor(dtype, {2, 3, 4, 5}, x), makeTensor(dtype, {4, 5}, weight),
                         makeTensor(dtype, {4, 5}, bias)},
                        {{"normalized_shape", Attribute(Dims{4, 5})}});
    EXPECT_EQ(out.shape(), (Dims{2, 3, 4, 5}));
    std::vector<double> weightRounded = toDoubles(makeTensor(dtype, {20}, weight));
    std::vector<double> biasRounded = toDoubles(makeTensor(dtype, {20}, bias));
    expectClose(out, referenceLayerNorm(xRounded, 20, &weightRounded, &biasRounded, 1e-5),
                dtype == DType::F32 ? 1e-4 : 1e-10);
  }
  // Only the last dim, no affine parameters, bf16.
  Tensor half = makeTensor(DType::BF16, {6, 7}, randomValues(42, 14));
  Tensor out = runOne("aten.layer_norm", {half, Tensor(), Tensor()},
                      {{"normalized_shape", Attribute(Dims{7})}});
  EXPECT_EQ(out.dtype(), DType::BF16);
  expectClose(out, referenceLayerNorm(toDoubles(half), 7, nullptr, nullptr, 1e-5), 3e-2);
}

TEST(OpsNormalization, LayerNormErrorsAndSymbolicShapes) {
  Tensor x = makeTensor(DType::F32, {2, 3}, std::vector<double>(6, 1));
  EXPECT_NE(errorOf("aten.layer_norm", {x, Tensor(), Tensor()},
                    {{"normalized_shape", Attribute(Dims{2})}})
                .find("does not match the trailing dims"),
            std::string::npos);
  EXPECT_NE(errorOf("aten.layer_norm", {x, makeTensor(DType::F32, {2}, {1, 1}), Tensor()},
                    {{"normalized_shape", Attribute(Dims{3})}})
                .find("weight must be"),
            std::string::npos);

  const OpDef *layerNorm = registry().lookup("aten.layer_norm");
  TensorType input(DType::F32, {SymInt::symbol("s0"), SymInt(16)});
  AttrMap attrs{{"normalized_shape", Attribute(Dims{16})}};
  Expected<std::vector<TensorType>> types =
      inferTypes(*layerNorm, {&input, nullptr, nullptr}, attrs);
  ASSERT_TRUE(types.hasValue()) << types.error().message();
  EXPECT_EQ((*types)[0], input);
}

} // namespace
} // namespace tensorc::test
