// Spatial sampling ops with ONNX semantics: grid_sample, max_pool_with_indices, roi_align.
#include "OpGroups.h"
#include "OpHelpers.h"

#include "tensorc/Support/MultiIndex.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <cmath>

namespace tensorc::ops {

namespace {

using Types = std::vector<TensorType>;
using Ints = std::vector<int64_t>;

// ---- grid_sample -----------------------------------------------------------------------------

enum class SampleMode { Nearest, Linear, Cubic };
enum class SamplePadding { Zeros, Border, Reflection };

Expected<SampleMode> parseSampleMode(const std::string &mode) {
  if (mode == "nearest")
    return SampleMode::Nearest;
  if (mode == "linear" || mode == "bilinear")
    return SampleMode::Linear;
  if (mode == "cubic" || mode == "bicubic")
    return SampleMode::Cubic;
  return makeError("unknown grid_sample mode '", mode, "' (expected nearest, linear or cubic)");
}

Expected<SamplePadding> parseSamplePadding(const std::string &padding) {
  if (padding == "zeros")
    return SamplePadding::Zeros;
  if (padding == "border")
    return SamplePadding::Border;
  if (padding == "reflection")
    return SamplePadding::Reflection;
  return makeError("unknown grid_sample padding_mode '", padding,
                   "' (expected zeros, border or reflection)");
}

Expected<Types> inferGridSample(const InferContext &ctx) {
  const TensorType &input = ctx.input(0), &grid = ctx.input(1);
  TC_RETURN_IF_ERROR(parseSampleMode(ctx.getString("mode")).status());
  TC_RETURN_IF_ERROR(parseSamplePadding(ctx.getString("padding_mode")).status());
  TC_RETURN_IF_ERROR(checkFloating(input, "grid_sample input"));
  size_t spatial = input.rank() < 3 ? 0 : input.rank() - 2;
  if (spatial == 0 || grid.rank() != spatial + 2 || grid.shape.back() != SymInt(int64_t(spatial)))
    return makeError("grid_sample expects input [N, C, D1..Dk] and grid [N, O1..Ok, k], got ",
                     input.str(), " and ", grid.str());
  Shape out{input.shape[0], input.shape[1]};
  out.insert(out.end(), grid.shape.begin() + 1, grid.shape.end() - 1);
  return Types{TensorType(input.dtype, std::move(out))};
}

/// Folds `x` back into [low, high] by reflecting at the borders (ONNX's reference rule).
double reflect(double x, double low, double high) {
  double range = high - low;
  if (range <= 0)
    return low;
  if (x < low || x > high) {
    bool below = x < low;
    double distance = below ? low - x : x - high;
    auto folds = int64_t(distance / range);
    double rest = distance - double(folds) * range;
    bool even = folds % 2 == 0;
    return below == even ? low + rest : high - rest;
  }
  return x;
}

void cubicCoefficients(double t, double out[4]) {
  const double a = -0.75;
  double x = t + 1;
  out[0] = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  x = t;
  out[1] = ((a + 2) * x - (a + 3)) * x * x + 1;
  x = 1 - t;
  out[2] = ((a + 2) * x - (a + 3)) * x * x + 1;
  x = 2 - t;
  out[3] = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
}

/// The (index, weight) taps of one coordinate along one dim; index -1 reads zero.
std::vector<std::pair<int64_t, double>> sampleTaps(double normalized, int64_t size, SampleMode mode,
                                                   SamplePadding padding, bool alignCorners) {
  double low = alignCorners ? 0 : -0.5, high = alignCorners ? double(size - 1) : double(size) - 0.5;
  double x = alignCorners ? (normalized + 1) / 2 * double(size - 1)
                          : ((normalized + 1) * double(size) - 1) / 2;
  if (mode == SampleMode::Nearest)
    x = std::nearbyint(x);
  if (x < low || x > high) {
    if (padding == SamplePadding::Border)
      x = std::clamp(x, 0.0, double(size - 1));
    else if (padding == SamplePadding::Reflection)
      x = reflect(x, low, high);
  }
  auto pixel = [&](int64_t i) -> int64_t {
    switch (padding) {
    case SamplePadding::Zeros:
      return i >= 0 && i < size ? i : -1;
    case SamplePadding::Border:
      return std::clamp<int64_t>(i, 0, size - 1);
    case SamplePadding::Reflection:
      return std::clamp<int64_t>(int64_t(reflect(double(i), low, high)), 0, size - 1);
    }
    return -1;
  };
  std::vector<std::pair<int64_t, double>> taps;
  switch (mode) {
  case SampleMode::Nearest:
    taps.emplace_back(pixel(int64_t(x)), 1.0);
    break;
  case SampleMode::Linear: {
    double base = std::floor(x), t = x - base;
    taps.emplace_back(pixel(int64_t(base)), 1 - t);
    taps.emplace_back(pixel(int64_t(base) + 1), t);
    break;
  }
  case SampleMode::Cubic: {
    double base = std::floor(x), weights[4];
    cubicCoefficients(x - base, weights);
    for (int64_t k = 0; k < 4; ++k)
      taps.emplace_back(pixel(int64_t(base) - 1 + k), weights[k]);
    break;
  }
  }
  return taps;
}

Status gridSampleKernel(KernelContext &ctx) {
  const Tensor &input = ctx.input(0), &grid = ctx.input(1);
  Tensor &out = ctx.output(0);
  TC_ASSIGN_OR_RETURN(SampleMode mode, parseSampleMode(ctx.getString("mode")));
  TC_ASSIGN_OR_RETURN(SamplePadding padding, parseSamplePadding(ctx.getString("padding_mode")));
  bool alignCorners = ctx.getBool("align_corners");
  size_t k = input.rank() - 2;
  int64_t batches = input.dim(0), channels = input.dim(1);
  int64_t points = product(grid.shape(), 1, grid.rank() - 1);
  int64_t planeSize = product(input.shape(), 2, input.rank());
  std::vector<int64_t> strides(k, 1);
  for (size_t d = k - 1; d-- > 0;)
    strides[d] = strides[d + 1] * input.dim(d + 3);
  std::vector<std::vector<std::pair<int64_t, double>>> taps(k);
  std::vector<size_t> tapIndex(k);
  for (int64_t n = 0; n < batches; ++n) {
    for (int64_t p = 0; p < points; ++p) {
      // The grid's last dim lists coordinates innermost dim first (x, then y, ...).
      for (size_t d = 0; d < k; ++d)
        taps[d] = sampleTaps(grid.getDouble((n * points + p) * int64_t(k) + int64_t(k - 1 - d)),
                             input.dim(2 + d), mode, padding, alignCorners);
      for (int64_t c = 0; c < channels; ++c) {
        int64_t plane = (n * channels + c) * planeSize;
        double value = 0;
        std::fill(tapIndex.begin(), tapIndex.end(), 0);
        while (true) {
          double weight = 1;
          int64_t offset = 0;
          bool zero = false;
          for (size_t d = 0; d < k; ++d) {
            const auto &[index, w] = taps[d][tapIndex[d]];
            zero = zero || index < 0;
            weight *= w;
            offset += index * strides[d];
          }
          if (!zero)
            value += weight * input.getDouble(plane + offset);
          if (!nextMultiIndex(tapIndex, [&](size_t d) { return taps[d].size(); }))
            break;
        }
        out.setDouble((n * channels + c) * points + p, value);
      }
    }
  }
  return Status::ok();
}

// ---- max_pool_with_indices -------------------------------------------------------------------

struct PoolGeometry {
  Ints kernel, stride, padBegin, dilation;
};

Expected<PoolGeometry> readPoolGeometry(const AttrReader &attrs, size_t spatial) {
  PoolGeometry g;
  TC_ASSIGN_OR_RETURN(g.kernel, attrs.getStaticInts("kernel_size"));
  TC_ASSIGN_OR_RETURN(g.stride, attrs.getStaticInts("stride"));
  TC_ASSIGN_OR_RETURN(Ints padding, attrs.getStaticInts("padding"));
  TC_ASSIGN_OR_RETURN(g.dilation, attrs.getStaticInts("dilation"));
  if (g.kernel.size() != spatial || g.stride.size() != spatial || g.dilation.size() != spatial ||
      padding.size() != 2 * spatial)
    return makeError("max_pool_with_indices: kernel_size, stride and dilation need ", spatial,
                     " entries and padding ", 2 * spatial);
  g.padBegin.assign(padding.begin(), padding.begin() + int64_t(spatial));
  for (size_t d = 0; d < spatial; ++d)
    if (g.kernel[d] < 1 || g.stride[d] < 1 || g.dilation[d] < 1)
      return makeError("max_pool_with_indices: kernel, stride and dilation must be positive");
  return g;
}

Expected<Types> inferMaxPoolWithIndices(const InferContext &ctx) {
  const TensorType &input = ctx.input(0);
  if (input.rank() < 3)
    return makeError("max_pool_with_indices expects [N, C, spatial...], got ", input.str());
  size_t spatial = input.rank() - 2;
  TC_ASSIGN_OR_RETURN(PoolGeometry g, readPoolGeometry(ctx, spatial));
  TC_ASSIGN_OR_RETURN(Ints padding, ctx.getStaticInts("padding"));
  Shape out{input.shape[0], input.shape[1]};
  for (size_t d = 0; d < spatial; ++d) {
    std::optional<int64_t> in = input.shape[2 + d].constant();
    if (!in)
      return makeError("max_pool_with_indices needs static spatial dims, got ", input.str());
    // The padded dim less the dilated window, refused where it overflows (hostile sizes).
    int64_t begin = 0, padded = 0, reach = 0, span = 0;
    if (__builtin_add_overflow(*in, padding[d], &begin) ||
        __builtin_add_overflow(begin, padding[spatial + d], &padded) ||
        __builtin_mul_overflow(g.kernel[d] - 1, g.dilation[d], &reach) ||
        __builtin_sub_overflow(padded, reach, &span) || __builtin_sub_overflow(span, 1, &span))
      return makeError("max_pool_with_indices: spatial dim ", d, " of ", input.str(),
                       " with padding ", padding[d], " and ", padding[spatial + d],
                       " overflows 64 bits");
    if (span < 0)
      return makeError("max_pool_with_indices: the window does not fit ", input.str());
    bool ceil = ctx.getBool("ceil_mode");
    int64_t size = span / g.stride[d] + (ceil && span % g.stride[d] != 0 ? 1 : 0) + 1;
    // ceil_mode: a last window starting past the input and its left padding is dropped.
    int64_t lastStart = 0;
    if (ceil && (__builtin_mul_overflow(size - 1, g.stride[d], &lastStart) || lastStart >= begin))
      --size;
    out.emplace_back(size);
  }
  return Types{TensorType(input.dtype, out), TensorType(DType::I64, out)};
}

Status maxPoolWithIndicesKernel(KernelContext &ctx) {
  const Tensor &input = ctx.input(0);
  Tensor &values = ctx.output(0), &indices = ctx.output(1);
  size_t spatial = input.rank() - 2;
  TC_ASSIGN_OR_RETURN(PoolGeometry g, readPoolGeometry(ctx, spatial));
  bool columnMajor = ctx.getInt("storage_order") == 1;
  int64_t planes = input.dim(0) * input.dim(1);
  int64_t inPlane = product(input.shape(), 2, input.rank());
  int64_t outPlane = product(values.shape(), 2, values.rank());
  Ints outPos(spatial), window(spatial), inPos(spatial);
  for (int64_t plane = 0; plane < planes; ++plane) {
    for (int64_t o = 0; o < outPlane; ++o) {
      int64_t rest = o;
      for (size_t d = spatial; d-- > 0;) {
        outPos[d] = rest % values.dim(2 + d);
        rest /= values.dim(2 + d);
      }
      std::fill(window.begin(), window.end(), 0);
      bool found = false;
      double best = 0;
      int64_t bestIndex = 0;
      while (true) {
        bool inside = true;
        int64_t flat = 0, column = 0, columnStride = 1;
        for (size_t d = 0; d < spatial; ++d) {
          inPos[d] = outPos[d] * g.stride[d] - g.padBegin[d] + window[d] * g.dilation[d];
          inside = inside && inPos[d] >= 0 && inPos[d] < input.dim(2 + d);
          flat = flat * input.dim(2 + d) + inPos[d];
          column += inPos[d] * columnStride;
          columnStride *= input.dim(2 + d);
        }
        if (inside) {
          double value = input.getDouble(plane * inPlane + flat);
          if (!found || value > best) {
            found = true;
            best = value;
            bestIndex = plane * inPlane + (columnMajor ? column : flat);
          }
        }
        if (!nextMultiIndex(window, [&](size_t d) { return g.kernel[d]; }))
          break;
      }
      values.setDouble(plane * outPlane + o, best);
      indices.setInt(plane * outPlane + o, bestIndex);
    }
  }
  return Status::ok();
}

// ---- roi_align -------------------------------------------------------------------------------

Expected<Types> inferRoiAlign(const InferContext &ctx) {
  const TensorType &input = ctx.input(0), &rois = ctx.input(1), &batch = ctx.input(2);
  TC_RETURN_IF_ERROR(checkFloating(input, "roi_align input"));
  TC_RETURN_IF_ERROR(checkIndexDType(batch.dtype, "roi_align batch_indices"));
  if (input.rank() != 4 || rois.rank() != 2 || batch.rank() != 1)
    return makeError("roi_align expects input [N, C, H, W], rois [R, 4] and batch_indices [R], "
                     "got ",
                     input.str(), ", ", rois.str(), " and ", batch.str());
  const std::string &mode = ctx.getString("mode");
  if (mode != "avg" && mode != "max")
    return makeError("roi_align mode must be avg or max, got '", mode, "'");
  const std::string &transform = ctx.getString("coordinate_transformation_mode");
  if (transform != "half_pixel" && transform != "output_half_pixel")
    return makeError("roi_align coordinate_transformation_mode must be half_pixel or "
                     "output_half_pixel, got '",
                     transform, "'");
  return Types{
      TensorType(input.dtype, {rois.shape[0], input.shape[1], SymInt(ctx.getInt("output_height")),
                               SymInt(ctx.getInt("output_width"))})};
}

/// One bilinear sample: four input offsets within a plane and their weights.
struct BilinearSample {
  int64_t offsets[4] = {0, 0, 0, 0};
  double weights[4] = {0, 0, 0, 0};
};

BilinearSample bilinearSample(double y, double x, int64_t height, int64_t width) {
  BilinearSample s;
  if (y < -1.0 || y > double(height) || x < -1.0 || x > double(width))
    return s;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  auto yLow = int64_t(y), xLow = int64_t(x), yHigh = yLow + 1, xHigh = xLow + 1;
  if (yLow >= height - 1) {
    yLow = yHigh = height - 1;
    y = double(yLow);
  }
  if (xLow >= width - 1) {
    xLow = xHigh = width - 1;
    x = double(xLow);
  }
  double ly = y - double(yLow), lx = x - double(xLow), hy = 1 - ly, hx = 1 - lx;
  s.offsets[0] = yLow * width + xLow;
  s.offsets[1] = yLow * width + xHigh;
  s.offsets[2] = yHigh * width + xLow;
  s.offsets[3] = yHigh * width + xHigh;
  s.weights[0] = hy * hx;
  s.weights[1] = hy * lx;
  s.weights[2] = ly * hx;
  s.weights[3] = ly * lx;
  return s;
}

Status roiAlignKernel(KernelContext &ctx) {
  const Tensor &input = ctx.input(0), &rois = ctx.input(1), &batchIndices = ctx.input(2);
  Tensor &out = ctx.output(0);
  int64_t channels = input.dim(1), height = input.dim(2), width = input.dim(3);
  int64_t pooledH = out.dim(2), pooledW = out.dim(3), count = rois.dim(0);
  if (rois.dim(1) != 4 || batchIndices.numel() != count)
    return makeError("roi_align: rois must be [R, 4] with R batch indices");
  bool halfPixel = ctx.getString("coordinate_transformation_mode") == "half_pixel";
  bool maxMode = ctx.getString("mode") == "max";
  double scale = ctx.getFloat("spatial_scale"), offset = halfPixel ? 0.5 : 0.0;
  int64_t samplingRatio = ctx.getInt("sampling_ratio");
  for (int64_t r = 0; r < count; ++r) {
    int64_t batch = batchIndices.getInt(r);
    if (batch < 0 || batch >= input.dim(0))
      return makeError("roi_align: batch index ", batch, " out of range");
    double startW = rois.getDouble(r * 4) * scale - offset;
    double startH = rois.getDouble(r * 4 + 1) * scale - offset;
    double roiW = rois.getDouble(r * 4 + 2) * scale - offset - startW;
    double roiH = rois.getDouble(r * 4 + 3) * scale - offset - startH;
    if (!halfPixel) {
      roiW = std::max(roiW, 1.0);
      roiH = std::max(roiH, 1.0);
    }
    double binH = roiH / double(pooledH), binW = roiW / double(pooledW);
    int64_t gridH = samplingRatio > 0 ? samplingRatio : int64_t(std::ceil(roiH / double(pooledH)));
    int64_t gridW = samplingRatio > 0 ? samplingRatio : int64_t(std::ceil(roiW / double(pooledW)));
    double samples = double(std::max<int64_t>(gridH * gridW, 1));
    for (int64_t ph = 0; ph < pooledH; ++ph) {
      for (int64_t pw = 0; pw < pooledW; ++pw) {
        std::vector<BilinearSample> taps;
        for (int64_t iy = 0; iy < gridH; ++iy)
          for (int64_t ix = 0; ix < gridW; ++ix)
            taps.push_back(bilinearSample(
                startH + double(ph) * binH + (double(iy) + 0.5) * binH / double(gridH),
                startW + double(pw) * binW + (double(ix) + 0.5) * binW / double(gridW), height,
                width));
        for (int64_t c = 0; c < channels; ++c) {
          int64_t plane = (batch * channels + c) * height * width;
          double value = 0;
          bool first = true;
          for (const BilinearSample &s : taps) {
            if (maxMode) {
              double best = s.weights[0] * input.getDouble(plane + s.offsets[0]);
              for (int t = 1; t < 4; ++t)
                best = std::max(best, s.weights[t] * input.getDouble(plane + s.offsets[t]));
              value = first ? best : std::max(value, best);
              first = false;
            } else {
              for (int t = 0; t < 4; ++t)
                value += s.weights[t] * input.getDouble(plane + s.offsets[t]);
            }
          }
          out.setDouble(((r * channels + c) * pooledH + ph) * pooledW + pw,
                        maxMode ? value : value / samples);
        }
      }
    }
  }
  return Status::ok();
}

} // namespace

Status registerSamplingOps(OpRegistry &registry) {
  auto boolAttr = [](const char *name, bool value) {
    return attrParam(name, AttrKind::Bool, Attribute(value));
  };
  TC_RETURN_IF_ERROR(
      registry.add(makeOp(OpId::GridSample,
                          {tensorParam("self"), tensorParam("grid"),
                           attrParam("mode", AttrKind::String, Attribute("linear")),
                           attrParam("padding_mode", AttrKind::String, Attribute("zeros")),
                           boolAttr("align_corners", false)},
                          inferGridSample, gridSampleKernel)));
  TC_RETURN_IF_ERROR(registry.add(
      makeOp(OpId::MaxPoolWithIndices,
             {tensorParam("self"), attrParam("kernel_size", AttrKind::Ints),
              attrParam("stride", AttrKind::Ints), attrParam("padding", AttrKind::Ints),
              attrParam("dilation", AttrKind::Ints), boolAttr("ceil_mode", false),
              attrParam("storage_order", AttrKind::Int, Attribute(int64_t(0)))},
             inferMaxPoolWithIndices, maxPoolWithIndicesKernel)));
  TC_RETURN_IF_ERROR(registry.add(makeOp(
      OpId::RoiAlign,
      {tensorParam("self"), tensorParam("rois"), tensorParam("batch_indices"),
       attrParam("mode", AttrKind::String, Attribute("avg")),
       attrParam("output_height", AttrKind::Int, Attribute(int64_t(1))),
       attrParam("output_width", AttrKind::Int, Attribute(int64_t(1))),
       attrParam("sampling_ratio", AttrKind::Int, Attribute(int64_t(0))),
       attrParam("spatial_scale", AttrKind::Float, Attribute(1.0)),
       attrParam("coordinate_transformation_mode", AttrKind::String, Attribute("half_pixel"))},
      inferRoiAlign, roiAlignKernel)));
  return Status::ok();
}

} // namespace tensorc::ops
