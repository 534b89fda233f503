// Tests of aten.convolution, max_pool and avg_pool against direct formulas written here.
#include "OpTestUtil.h"

#include "tensorc/IR/Graph.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace tensorc::test {
namespace {

using Dims = std::vector<int64_t>;

std::vector<double> randomValues(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> values(static_cast<size_t>(count));
  for (double &value : values)
    value = dist(rng);
  return values;
}

int64_t product(const Dims &dims) {
  int64_t result = 1;
  for (int64_t dim : dims)
    result *= dim;
  return result;
}

/// Row-major coordinates of `index` in `extents`.
Dims coordsOf(int64_t index, const Dims &extents) {
  Dims coords(extents.size());
  for (size_t d = extents.size(); d-- > 0;) {
    coords[d] = index % extents[d];
    index /= extents[d];
  }
  return coords;
}

/// Flat index of `coords` in `extents`, or -1 when outside.
int64_t flatIndex(const Dims &coords, const Dims &extents) {
  int64_t index = 0;
  for (size_t d = 0; d < extents.size(); ++d) {
    if (coords[d] < 0 || coords[d] >= extents[d])
      return -1;
    index = index * extents[d] + coords[d];
  }
  return index;
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
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(values[i])) << "element " << i;
      continue;
    }
    ASSERT_NEAR(values[i], expected[i], tolerance) << "element " << i;
  }
}

// ---- Convolution -----------------------------------------------------------------------------

struct ConvCase {
  Dims input;  // [N, C, *spatial]
  Dims weight; // [Cout, Cin/groups, *k], or [Cin, Cout/groups, *k] when transposed
  Dims stride, padding, dilation, outputPadding;
  int64_t groups = 1;
  bool transposed = false;
  bool bias = true;
};

/// Direct definition: each output element sums its receptive field (or, transposed, each input
/// element scatters into the output).
std::pair<Dims, std::vector<double>> referenceConv(const ConvCase &c, const std::vector<double> &x,
                                                   const std::vector<double> &w,
                                                   const std::vector<double> &b) {
  size_t dims = c.weight.size() - 2;
  int64_t batch = c.input[0], inChannels = c.input[1];
  Dims inSpatial(c.input.begin() + 2, c.input.end()), kernel(c.weight.begin() + 2, c.weight.end());
  int64_t outChannels = c.transposed ? c.weight[1] * c.groups : c.weight[0];
  int64_t inPerGroup = inChannels / c.groups, outPerGroup = outChannels / c.groups;
  Dims outSpatial(dims);
  for (size_t d = 0; d < dims; ++d) {
    int64_t effective = c.dilation[d] * (kernel[d] - 1) + 1;
    outSpatial[d] = c.transposed ? (inSpatial[d] - 1) * c.stride[d] - 2 * c.padding[d] + effective +
                                       c.outputPadding[d]
                                 : (inSpatial[d] + 2 * c.padding[d] - effective) / c.stride[d] + 1;
  }
  int64_t inSize = product(inSpatial), outSize = product(outSpatial), kSize = product(kernel);
  std::vector<double> y(size_t(batch * outChannels * outSize), 0.0);
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t co = 0; co < outChannels; ++co)
      for (int64_t o = 0; o < outSize; ++o)
        y[size_t((n * outChannels + co) * outSize + o)] = c.bias ? b[size_t(co)] : 0.0;
  if (!c.transposed) {
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t co = 0; co < outChannels; ++co)
        for (int64_t o = 0; o < outSize; ++o) {
          Dims opos = coordsOf(o, outSpatial);
          int64_t group = co / outPerGroup;
          double sum = 0;
          for (int64_t ci = 0; ci < inPerGroup; ++ci)
            for (int64_t kk = 0; kk < kSize; ++kk) {
              Dims kpos = coordsOf(kk, kernel), ipos(dims);
              for (size_t d = 0; d < dims; ++d)
                ipos[d] = opos[d] * c.stride[d] - c.padding[d] + kpos[d] * c.dilation[d];
              int64_t i = flatIndex(ipos, inSpatial);
              if (i < 0)
                continue;
              sum += x[size_t((n * inChannels + group * inPerGroup + ci) * inSize + i)] *
                     w[size_t((co * inPerGroup + ci) * kSize + kk)];
            }
          y[size_t((n * outChannels + co) * outSize + o)] += sum;
        }
  } else {
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t ci = 0; ci < inChannels; ++ci)
        for (int64_t i = 0; i < inSize; ++i) {
          Dims ipos = coordsOf(i, inSpatial);
          int64_t group = ci / inPerGroup;
          for (int64_t co = 0; co < outPerGroup; ++co)
            for (int64_t kk = 0; kk < kSize; ++kk) {
              Dims kpos = coordsOf(kk, kernel), opos(dims);
              for (size_t d = 0; d < dims; ++d)
                opos[d] = ipos[d] * c.stride[d] - c.padding[d] + kpos[d] * c.dilation[d];
              int64_t o = flatIndex(opos, outSpatial);
              if (o < 0)
                continue;
              y[size_t((n * outChannels + group * outPerGroup + co) * outSize + o)] +=
                  x[size_t((n * inChannels + ci) * inSize + i)] *
                  w[size_t((ci * outPerGroup + co) * kSize + kk)];
            }
        }
  }
  Dims outShape{batch, outChannels};
  outShape.insert(outShape.end(), outSpatial.begin(), outSpatial.end());
  return {outShape, y};
}

void checkConv(const ConvCase &c, DType dtype, double tolerance) {
  // Inputs rounded to the dtype first, so that only the kernel's own rounding is measured.
  auto rounded = [&](const Dims &shape, uint32_t seed) {
    return toDoubles(makeTensor(dtype, shape, randomValues(product(shape), seed)));
  };
  int64_t outChannels = c.transposed ? c.weight[1] * c.groups : c.weight[0];
  std::vector<double> x = rounded(c.input, 21), w = rounded(c.weight, 22),
                      b = rounded({outChannels}, 23);
  auto [shape, expected] = referenceConv(c, x, w, b);
  // Each list is passed with one entry per spatial dim, or one entry when all agree.
  auto list = [](const Dims &values) {
    bool same =
        std::all_of(values.begin(), values.end(), [&](int64_t v) { return v == values[0]; });
    return Attribute(same ? Dims{values[0]} : values);
  };
  AttrMap attrs{{"stride", list(c.stride)},
                {"padding", list(c.padding)},
                {"dilation", list(c.dilation)},
                {"transposed", Attribute(c.transposed)},
                {"output_padding", list(c.outputPadding)},
                {"groups", Attribute(c.groups)}};
  Tensor out = runOne("aten.convolution",
                      {makeTensor(dtype, c.input, x), makeTensor(dtype, c.weight, w),
                       c.bias ? makeTensor(dtype, {outChannels}, b) : Tensor()},
                      attrs);
  ASSERT_EQ(out.shape(), shape);
  EXPECT_EQ(out.dtype(), dtype);
  expectClose(out, expected, tolerance);
}

TEST(OpsConvolution, HandComputed2d) {
  // 3x3 input, 2x2 kernel of ones: each output is the sum of a 2x2 window, plus the bias.
  Tensor x = makeTensor(DType::F32, {1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor w = makeTensor(DType::F32, {1, 1, 2, 2}, {1, 1, 1, 1});
  Tensor b = makeTensor(DType::F32, {1}, {10});
  Tensor out = runOne("aten.convolution", {x, w, b});
  EXPECT_EQ(out.shape(), (Dims{1, 1, 2, 2}));
  EXPECT_EQ(toDoubles(out), (std::vector<double>{22, 26, 34, 38}));
}

TEST(OpsConvolution, Forward2dStridePaddingDilationGroups) {
  checkConv({{2, 3, 7, 9}, {4, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}}, DType::F32, 1e-5);
  checkConv({{2, 4, 11, 8}, {6, 2, 3, 2}, {2, 1}, {1, 0}, {2, 1}, {0, 0}, 2}, DType::F32, 1e-5);
  checkConv({{1, 6, 9, 9}, {6, 1, 3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, 6, false, false},
            DType::F64, 1e-12);
  // 1x1 convolution (no im2col) and a big enough one to go through the threaded GEMM.
  checkConv({{2, 5, 6, 7}, {3, 5, 1, 1}, {1, 1}, {0, 0}, {1, 1}, {0, 0}}, DType::F32, 1e-5);
  checkConv({{1, 16, 34, 35}, {32, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}}, DType::F32, 1e-4);
}

TEST(OpsConvolution, Forward1dAnd3d) {
  checkConv({{2, 3, 17}, {5, 3, 4}, {3}, {2}, {2}, {0}}, DType::F32, 1e-5);
  checkConv({{1, 2, 5, 6, 7}, {4, 1, 2, 3, 2}, {1, 2, 1}, {1, 0, 1}, {1, 1, 2}, {0, 0, 0}, 2},
            DType::F64, 1e-12);
}

TEST(OpsConvolution, Transposed) {
  checkConv({{2, 3, 4, 5}, {3, 2, 3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 0}, 1, true}, DType::F32,
            1e-5);
  checkConv({{1, 4, 5, 3}, {4, 3, 2, 3}, {1, 3}, {0, 1}, {2, 1}, {0, 2}, 2, true, false},
            DType::F64, 1e-12);
  checkConv({{2, 2, 7}, {2, 3, 3}, {3}, {1}, {1}, {2}, 1, true}, DType::F32, 1e-5);
  checkConv({{1, 2, 3, 2, 3}, {2, 2, 2, 2, 2}, {2, 1, 2}, {0, 0, 1}, {1, 1, 1}, {1, 0, 0}, 1, true},
            DType::F32, 1e-5);
}

TEST(OpsConvolution, HalfTypesAndUnbatchedInput) {
  checkConv({{1, 2, 6, 5}, {3, 2, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}}, DType::BF16, 3e-2);
  checkConv({{1, 2, 6, 5}, {3, 2, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}}, DType::F16, 5e-3);
  // [C, H, W] input: same numbers as the batch of one.
  std::vector<double> x = randomValues(2 * 4 * 4, 31), w = randomValues(3 * 2 * 3 * 3, 32);
  Tensor batched = runOne("aten.convolution", {makeTensor(DType::F32, {1, 2, 4, 4}, x),
                                               makeTensor(DType::F32, {3, 2, 3, 3}, w), Tensor()});
  Tensor unbatched =
      runOne("aten.convolution", {makeTensor(DType::F32, {2, 4, 4}, x),
                                  makeTensor(DType::F32, {3, 2, 3, 3}, w), Tensor()});
  EXPECT_EQ(unbatched.shape(), (Dims{3, 2, 2}));
  EXPECT_EQ(toDoubles(unbatched), toDoubles(batched));
}

TEST(OpsConvolution, ConvolutionErrors) {
  Tensor x = makeTensor(DType::F32, {1, 3, 5, 5}, std::vector<double>(75, 1));
  Tensor w = makeTensor(DType::F32, {2, 2, 3, 3}, std::vector<double>(36, 1));
  EXPECT_NE(errorOf("aten.convolution", {x, w, Tensor()}).find("to have 2 channels"),
            std::string::npos);
  Tensor w2 = makeTensor(DType::F32, {2, 3}, std::vector<double>(6, 1));
  EXPECT_NE(errorOf("aten.convolution", {x, w2, Tensor()}).find("weight must have rank >= 3"),
            std::string::npos);
  Tensor big = makeTensor(DType::F32, {1, 3, 7, 7}, std::vector<double>(147, 1));
  Tensor w3 = makeTensor(DType::F32, {1, 3, 7, 7}, std::vector<double>(147, 1));
  EXPECT_NE(errorOf("aten.convolution", {x, w3, Tensor()}).find("smaller than the dilated kernel"),
            std::string::npos);
  EXPECT_NE(
      errorOf("aten.convolution", {big, w3, Tensor()}, {{"groups", Attribute(2)}}).find("channels"),
      std::string::npos);
  Tensor w4 = makeTensor(DType::F32, {2, 3, 3, 3}, std::vector<double>(54, 1));
  EXPECT_NE(errorOf("aten.convolution", {x, w4, Tensor()}, {{"stride", Attribute(Dims{1, 1, 1})}})
                .find("stride must have 1 or 2 entries"),
            std::string::npos);
  Tensor x1 = makeTensor(DType::F32, {3, 5}, std::vector<double>(15, 1));
  EXPECT_NE(errorOf("aten.convolution", {x1, w4, Tensor()}).find("expected a 4-D input"),
            std::string::npos);
}

TEST(OpsConvolution, SymbolicSpatialDims) {
  const OpDef *conv = registry().lookup("aten.convolution");
  SymInt h = SymInt::symbol("h");
  TensorType x(DType::F32, {SymInt::symbol("n"), SymInt(3), h, SymInt(32)});
  TensorType w(DType::F32, {SymInt(8), SymInt(3), SymInt(3), SymInt(3)});
  for (bool transposed : {false, true}) {
    TensorType weight =
        transposed ? TensorType(DType::F32, {SymInt(3), SymInt(8), SymInt(3), SymInt(3)}) : w;
    AttrMap attrs{{"stride", Attribute(Dims{2})},
                  {"padding", Attribute(Dims{1})},
                  {"transposed", Attribute(transposed)}};
    Expected<std::vector<TensorType>> types = inferTypes(*conv, {&x, &weight, nullptr}, attrs);
    ASSERT_TRUE(types.hasValue()) << types.error().message();
    const SymInt &outH = (*types)[0].shape[2];
    for (int64_t value = 3; value < 20; ++value) {
      int64_t expected = transposed ? (value - 1) * 2 - 2 + 3 : (value + 2 - 3) / 2 + 1;
      EXPECT_EQ(*outH.evaluate({{"h", value}}), expected) << outH << " at h=" << value;
    }
    EXPECT_EQ((*types)[0].shape[3], SymInt(transposed ? 63 : 16));
  }
}

// ---- Pooling ---------------------------------------------------------------------------------

/// torch's pooling output size, written out.
int64_t poolOut(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil) {
  int64_t numerator = in + 2 * p - d * (k - 1) - 1;
  int64_t out = (ceil ? (numerator + s - 1) / s : numerator / s) + 1;
  if (ceil && (out - 1) * s >= in + p)
    --out;
  return out;
}

struct PoolCase {
  Dims input; // [*leading, *spatial]
  Dims kernel, stride, padding, dilation;
  bool ceil = false;
};

std::pair<Dims, std::vector<double>> referenceMaxPool(const PoolCase &c,
                                                      const std::vector<double> &x) {
  size_t dims = c.kernel.size();
  Dims leading(c.input.begin(), c.input.end() - dims), in(c.input.end() - dims, c.input.end());
  Dims out(dims);
  for (size_t d = 0; d < dims; ++d)
    out[d] = poolOut(in[d], c.kernel[d], c.stride[d], c.padding[d], c.dilation[d], c.ceil);
  int64_t planes = product(leading), inSize = product(in), outSize = product(out);
  std::vector<double> y;
  for (int64_t plane = 0; plane < planes; ++plane)
    for (int64_t o = 0; o < outSize; ++o) {
      Dims opos = coordsOf(o, out);
      double best = -std::numeric_limits<double>::infinity();
      for (int64_t kk = 0; kk < product(c.kernel); ++kk) {
        Dims kpos = coordsOf(kk, c.kernel), ipos(dims);
        for (size_t d = 0; d < dims; ++d)
          ipos[d] = opos[d] * c.stride[d] - c.padding[d] + kpos[d] * c.dilation[d];
        int64_t i = flatIndex(ipos, in);
        if (i < 0)
          continue;
        double v = x[size_t(plane * inSize + i)];
        if (std::isnan(v) || std::isnan(best))
          best = NAN;
        else
          best = std::max(best, v);
      }
      y.push_back(best);
    }
  Dims shape = leading;
  shape.insert(shape.end(), out.begin(), out.end());
  return {shape, y};
}

AttrMap poolAttrs(const PoolCase &c) {
  return {{"kernel_size", Attribute(c.kernel)},
          {"stride", Attribute(c.stride)},
          {"padding", Attribute(c.padding)},
          {"ceil_mode", Attribute(c.ceil)}};
}

void checkMaxPool(const PoolCase &c, DType dtype, std::vector<double> x = {}) {
  if (x.empty())
    x = randomValues(product(c.input), 41);
  auto [shape, expected] = referenceMaxPool(c, x);
  AttrMap attrs = poolAttrs(c);
  attrs["dilation"] = Attribute(c.dilation);
  Tensor out = runOne("aten.max_pool", {makeTensor(dtype, c.input, x)}, attrs);
  ASSERT_EQ(out.shape(), shape);
  // Max is exact in every dtype once the inputs are representable.
  expectClose(out, toDoubles(makeTensor(dtype, shape, expected)), 0);
}

TEST(OpsConvolution, MaxPoolHandComputed) {
  Tensor x =
      makeTensor(DType::F32, {1, 1, 4, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
  // Empty stride means stride = kernel_size.
  Tensor out = runOne("aten.max_pool", {x}, {{"kernel_size", Attribute(Dims{2, 2})}});
  EXPECT_EQ(out.shape(), (Dims{1, 1, 2, 2}));
  EXPECT_EQ(toDoubles(out), (std::vector<double>{6, 8, 14, 16}));
}

TEST(OpsConvolution, MaxPoolMatchesDirectWindows) {
  checkMaxPool({{2, 3, 9, 8}, {3, 2}, {2, 1}, {1, 0}, {1, 2}}, DType::F32);
  checkMaxPool({{3, 7, 7}, {3, 3}, {2, 2}, {1, 1}, {1, 1}}, DType::F64); // unbatched
  checkMaxPool({{2, 2, 11}, {4}, {3}, {2}, {1}}, DType::F32);
  checkMaxPool({{1, 2, 5, 4, 6}, {2, 2, 3}, {2, 1, 2}, {1, 0, 1}, {1, 2, 1}}, DType::BF16);
  std::vector<double> ints(2 * 5 * 5);
  for (size_t i = 0; i < ints.size(); ++i)
    ints[i] = double((i * 37) % 23) - 11;
  checkMaxPool({{2, 5, 5}, {2, 2}, {1, 1}, {0, 0}, {1, 1}}, DType::I32, ints);
}

TEST(OpsConvolution, MaxPoolCeilMode) {
  // in 6, k 2, s 4, p 1: ceil gives 3 windows, but the third would start at 7 >= 6 + 1, so 2.
  checkMaxPool({{1, 1, 6}, {2}, {4}, {1}, {1}, true}, DType::F32);
  EXPECT_EQ(poolOut(6, 2, 4, 1, 1, true), 2);
  // in 5, k 2, s 2: floor keeps 2 windows, ceil adds the partial third.
  checkMaxPool({{1, 2, 5, 5}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, true}, DType::F32);
  EXPECT_EQ(poolOut(5, 2, 2, 0, 1, true), 3);
  checkMaxPool({{2, 1, 10, 9}, {3, 2}, {3, 2}, {1, 1}, {2, 1}, true}, DType::F32);
}

TEST(OpsConvolution, MaxPoolPropagatesNaN) {
  std::vector<double> x = {1, NAN, 3, 4, 5, 6, 7, 8, 9};
  checkMaxPool({{1, 3, 3}, {2, 2}, {1, 1}, {0, 0}, {1, 1}}, DType::F32, x);
  Tensor out = runOne("aten.max_pool", {makeTensor(DType::F32, {1, 3, 3}, x)},
                      {{"kernel_size", Attribute(Dims{2, 2})}, {"stride", Attribute(Dims{1})}});
  std::vector<double> values = toDoubles(out);
  EXPECT_TRUE(std::isnan(values[0]) && std::isnan(values[1]));
  EXPECT_EQ(values[2], 8);
  EXPECT_EQ(values[3], 9);
}

TEST(OpsConvolution, AvgPoolCountsAndDivisors) {
  // 1-D, in [1, 2, 3, 4, 5], k 3, s 2, p 1: windows [pad,1,2], [2,3,4], [4,5,pad].
  Tensor x = makeTensor(DType::F32, {1, 1, 5}, {1, 2, 3, 4, 5});
  AttrMap attrs{{"kernel_size", Attribute(Dims{3})},
                {"stride", Attribute(Dims{2})},
                {"padding", Attribute(Dims{1})}};
  EXPECT_EQ(toDoubles(runOne("aten.avg_pool", {x}, attrs)), (std::vector<double>{1, 3, 3}));
  attrs["count_include_pad"] = Attribute(false);
  EXPECT_EQ(toDoubles(runOne("aten.avg_pool", {x}, attrs)), (std::vector<double>{1.5, 3, 4.5}));
  attrs["divisor_override"] = Attribute(int64_t(2));
  EXPECT_EQ(toDoubles(runOne("aten.avg_pool", {x}, attrs)), (std::vector<double>{1.5, 4.5, 4.5}));
  // ceil_mode: k 2, s 2 over 5 gives a last window of [5, pad-beyond-input]; torch divides by
  // the part inside input + padding (here 1 element, as padding is 0).
  AttrMap ceil{{"kernel_size", Attribute(Dims{2})}, {"ceil_mode", Attribute(true)}};
  EXPECT_EQ(toDoubles(runOne("aten.avg_pool", {x}, ceil)), (std::vector<double>{1.5, 3.5, 5}));
}

TEST(OpsConvolution, AvgPool2dMatchesDirectWindows) {
  int64_t h = 7, w = 6, k = 3, s = 2, p = 1;
  std::vector<double> x = randomValues(2 * h * w, 51);
  for (bool includePad : {true, false}) {
    Tensor out = runOne("aten.avg_pool", {makeTensor(DType::F64, {1, 2, h, w}, x)},
                        {{"kernel_size", Attribute(Dims{k, k})},
                         {"stride", Attribute(Dims{s, s})},
                         {"padding", Attribute(Dims{p})},
                         {"count_include_pad", Attribute(includePad)}});
    int64_t oh = poolOut(h, k, s, p, 1, false), ow = poolOut(w, k, s, p, 1, false);
    ASSERT_EQ(out.shape(), (Dims{1, 2, oh, ow}));
    std::vector<double> expected;
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double sum = 0;
          int64_t count = 0;
          for (int64_t a = i * s - p; a < i * s - p + k; ++a)
            for (int64_t b = j * s - p; b < j * s - p + k; ++b)
              if (a >= 0 && a < h && b >= 0 && b < w) {
                sum += x[size_t((c * h + a) * w + b)];
                ++count;
              }
          expected.push_back(sum / double(includePad ? k * k : count));
        }
    expectClose(out, expected, 1e-12);
  }
}

TEST(OpsConvolution, PoolErrors) {
  Tensor x = makeTensor(DType::F32, {1, 1, 4, 4}, std::vector<double>(16, 1));
  EXPECT_NE(errorOf("aten.max_pool", {x},
                    {{"kernel_size", Attribute(Dims{2, 2})}, {"padding", Attribute(Dims{2})}})
                .find("at most half"),
            std::string::npos);
  Tensor flat = makeTensor(DType::F32, {4}, std::vector<double>(4, 1));
  EXPECT_NE(errorOf("aten.max_pool", {flat}, {{"kernel_size", Attribute(Dims{2, 2})}})
                .find("expects a 3-D or 4-D input"),
            std::string::npos);
  EXPECT_NE(
      errorOf("aten.avg_pool", {x}, {{"kernel_size", Attribute(Dims{5, 5})}}).find("too small"),
      std::string::npos);
  EXPECT_NE(
      errorOf("aten.avg_pool", {x},
              {{"kernel_size", Attribute(Dims{2})}, {"divisor_override", Attribute(int64_t(0))}})
          .find("divisor_override"),
      std::string::npos);
}

// The symbolic output size (written with floorDiv/mod for ceil_mode) agrees with the concrete
// rule at every input size.
TEST(OpsConvolution, PoolSymbolicSizesMatchConcrete) {
  const OpDef *pool = registry().lookup("aten.max_pool");
  for (bool ceil : {false, true})
    for (int64_t k : {1, 2, 3, 5})
      for (int64_t s : {1, 2, 3, 4})
        for (int64_t p = 0; p <= k / 2; ++p) {
          TensorType x(DType::F32, {SymInt(1), SymInt::symbol("h")});
          AttrMap attrs{{"kernel_size", Attribute(Dims{k})},
                        {"stride", Attribute(Dims{s})},
                        {"padding", Attribute(Dims{p})},
                        {"ceil_mode", Attribute(ceil)}};
          Expected<std::vector<TensorType>> types = inferTypes(*pool, {&x}, attrs);
          ASSERT_TRUE(types.hasValue()) << types.error().message();
          const SymInt &size = (*types)[0].shape[1];
          for (int64_t h = std::max<int64_t>(1, k - 2 * p); h < 25; ++h)
            ASSERT_EQ(*size.evaluate({{"h", h}}), poolOut(h, k, s, p, 1, ceil))
                << size << " k=" << k << " s=" << s << " p=" << p << " h=" << h;
        }
}

} // namespace
} // namespace tensorc::test
