// Convolution and pooling: aten.convolution (N-d, groups, transposed), max_pool, avg_pool.
#include "DecomposeHelpers.h"
#include "DenseKernels.h"
#include "OpGroups.h"
#include "OpHelpers.h"

#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <type_traits>
#include <vector>

namespace tensorc::ops {
namespace {

/// Reads a per-spatial-dim int list attribute; a single entry applies to every dim.
Expected<std::vector<int64_t>> readSpatialList(const AttrReader &attrs, const std::string &name,
                                               size_t dims, int64_t minValue) {
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> values, attrs.getStaticInts(name));
  if (values.size() == 1)
    values.assign(dims, values[0]);
  if (values.size() != dims)
    return makeError(name, " must have 1 or ", dims, " entries, got [", join(values, ", "), "]");
  for (int64_t value : values)
    if (value < minValue)
      return makeError(name, " must be ", minValue == 0 ? "non-negative" : "positive", ", got [",
                       join(values, ", "), "]");
  return values;
}

/// Indices idx in [0, count) with 0 <= idx * stride + offset < limit, as [begin, end).
std::pair<int64_t, int64_t> validRange(int64_t count, int64_t stride, int64_t offset,
                                       int64_t limit) {
  int64_t begin = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  int64_t end = limit - 1 - offset < 0 ? 0 : (limit - 1 - offset) / stride + 1;
  begin = std::min(begin, count);
  end = std::clamp(end, begin, count);
  return {begin, end};
}

/// Unflattens `index` over `extents` (row-major) into `coords`.
void unflatten(int64_t index, const std::vector<int64_t> &extents, std::vector<int64_t> &coords) {
  for (size_t d = extents.size(); d-- > 0;) {
    coords[d] = index % extents[d];
    index /= extents[d];
  }
}

// ---- Convolution -----------------------------------------------------------------------------

struct ConvAttrs {
  std::vector<int64_t> stride, padding, dilation, outputPadding;
  bool transposed = false;
  int64_t groups = 1;
};

Expected<ConvAttrs> readConvAttrs(const AttrReader &attrs, size_t dims) {
  ConvAttrs conv;
  TC_ASSIGN_OR_RETURN(conv.stride, readSpatialList(attrs, "stride", dims, 1));
  TC_ASSIGN_OR_RETURN(conv.padding, readSpatialList(attrs, "padding", dims, 0));
  TC_ASSIGN_OR_RETURN(conv.dilation, readSpatialList(attrs, "dilation", dims, 1));
  TC_ASSIGN_OR_RETURN(conv.outputPadding, readSpatialList(attrs, "output_padding", dims, 0));
  conv.transposed = attrs.getBool("transposed");
  conv.groups = attrs.getInt("groups");
  if (conv.groups < 1)
    return makeError("groups must be positive, got ", conv.groups);
  for (size_t d = 0; d < dims; ++d) {
    if (!conv.transposed && conv.outputPadding[d] != 0)
      return makeError("output_padding is only allowed with transposed=True");
    if (conv.outputPadding[d] >= conv.stride[d] && conv.outputPadding[d] >= conv.dilation[d])
      return makeError("output_padding must be smaller than either stride or dilation, got "
                       "output_padding [",
                       join(conv.outputPadding, ", "), "], stride [", join(conv.stride, ", "),
                       "], dilation [", join(conv.dilation, ", "), "]");
  }
  return conv;
}

Expected<std::vector<TensorType>> inferConvolution(const InferContext &ctx) {
  const TensorType &input = ctx.input(0), &weight = ctx.input(1);
  if (weight.rank() < 3)
    return makeError("weight must have rank >= 3 ([out, in/groups, *kernel]), got ", weight.str());
  size_t dims = weight.rank() - 2;
  bool batched = input.rank() == dims + 2;
  if (!batched && input.rank() != dims + 1)
    return makeError("expected a ", dims + 2, "-D input [N, C, *spatial] (or ", dims + 1,
                     "-D unbatched) for a ", weight.rank(), "-D weight, got ", input.str());
  if (input.dtype != weight.dtype)
    return makeError("input ", input.str(), " and weight ", weight.str(),
                     " must have the same dtype");
  if (!isFloating(input.dtype))
    return makeError("convolution needs a floating dtype, got ", dtypeName(input.dtype));
  std::optional<std::vector<int64_t>> w = weight.staticShape();
  if (!w)
    return makeError("weight shape must be static, got ", weight.str());
  TC_ASSIGN_OR_RETURN(ConvAttrs conv, readConvAttrs(ctx, dims));
  const SymInt &channels = input.shape[batched ? 1 : 0];
  int64_t expectedChannels, outChannels;
  // in/groups (or out/groups) times groups, refused where it overflows (hostile weight dims).
  auto timesGroups = [&](int64_t perGroup, int64_t &total) -> Status {
    if (__builtin_mul_overflow(perGroup, conv.groups, &total))
      return makeError("weight ", weight.str(), " with ", conv.groups,
                       " groups has more channels than 64 bits count");
    return Status::ok();
  };
  if (!conv.transposed) {
    outChannels = (*w)[0];
    TC_RETURN_IF_ERROR(timesGroups((*w)[1], expectedChannels));
    if (outChannels % conv.groups != 0)
      return makeError("out channels (", outChannels, ") must be divisible by groups (",
                       conv.groups, ")");
  } else {
    expectedChannels = (*w)[0];
    TC_RETURN_IF_ERROR(timesGroups((*w)[1], outChannels));
    if (expectedChannels % conv.groups != 0)
      return makeError("in channels (", expectedChannels, ") must be divisible by groups (",
                       conv.groups, ")");
  }
  if (channels.isConstant() && channels != SymInt(expectedChannels))
    return makeError("expected input ", input.str(), " to have ", expectedChannels,
                     " channels (weight ", weight.str(), ", groups ", conv.groups, "), got ",
                     channels);
  if (ctx.hasInput(2)) {
    const TensorType &bias = ctx.input(2);
    if (bias.rank() != 1 || bias.shape[0] != SymInt(outChannels) || bias.dtype != input.dtype)
      return makeError("bias must be ", dtypeName(input.dtype), "[", outChannels, "], got ",
                       bias.str());
  }
  Shape out;
  if (batched)
    out.push_back(input.shape[0]);
  out.push_back(SymInt(outChannels));
  size_t first = input.rank() - dims;
  for (size_t d = 0; d < dims; ++d) {
    const SymInt &in = input.shape[first + d];
    int64_t k = (*w)[2 + d], s = conv.stride[d], p = conv.padding[d], dil = conv.dilation[d];
    // The dilated kernel's span and both paddings, refused where they overflow (hostile sizes).
    int64_t span = 0, pads = 0, shift = 0, extra = 0;
    if (__builtin_mul_overflow(dil, k - 1, &span) || __builtin_mul_overflow(int64_t(2), p, &pads) ||
        __builtin_sub_overflow(pads, span, &shift) || __builtin_sub_overflow(shift, 1, &shift) ||
        __builtin_add_overflow(conv.outputPadding[d], 1, &extra))
      return makeError("spatial dim ", d, ": kernel size ", k, ", dilation ", dil, " and padding ",
                       p, " overflow 64 bits");
    SymInt size = conv.transposed
                      ? (in - SymInt(1)) * SymInt(s) - SymInt(pads) + SymInt(span) + SymInt(extra)
                      : SymInt::floorDiv(in + SymInt(shift), s) + SymInt(1);
    if (size.isConstant() && *size.constant() < 1)
      return makeError("spatial dim ", d, ": input size ", in, " with padding ", p,
                       " is smaller than the dilated kernel size ", span + 1, " (output size ",
                       size, ")");
    out.push_back(size);
  }
  return std::vector<TensorType>{TensorType(input.dtype, out)};
}

/// Concrete sizes of one convolution, batch-major ([N, C, *spatial], N = 1 when unbatched).
struct ConvGeometry {
  int64_t batch = 1, inChannels = 0, outChannels = 0, groups = 1;
  std::vector<int64_t> inSpatial, outSpatial, kernel;
  ConvAttrs attrs;

  int64_t inSize() const { return product(inSpatial); }
  int64_t outSize() const { return product(outSpatial); }
  int64_t kernelSize() const { return product(kernel); }
};

/// One row of the patch matrix (one channel, kernel position and row of the strided grid) and
/// where it lies in the dense grid: position s of the row maps to dense element
/// denseStart + s * stride + lastOffset, which lies inside the grid for s in [begin, end).
struct PatchRow {
  int64_t colStart;   // the row's first element in the patch matrix
  int64_t denseStart; // -1 when the row maps into the padding
  int64_t length, stride, lastOffset, begin, end;
};

/// The walk im2col and its adjoint col2im share: calls fn(PatchRow) for every row of the patch
/// matrix of `channels` channels. `strided` is the grid stepped by the stride (im2col's output,
/// col2im's input), `dense` the grid it maps to (position * stride - padding + k * dilation).
template <typename Fn>
void forEachPatchRow(const ConvGeometry &g, int64_t channels, const std::vector<int64_t> &strided,
                     const std::vector<int64_t> &dense, Fn &&fn) {
  size_t dims = g.kernel.size();
  int64_t kernelSize = g.kernelSize(), stridedSize = product(strided), denseSize = product(dense);
  std::vector<int64_t> outerExtents(strided.begin(), strided.end() - 1);
  int64_t outerCount = product(outerExtents);
  std::vector<int64_t> kpos(dims), pos(dims > 1 ? dims - 1 : 0);
  PatchRow row;
  row.length = strided.back();
  row.stride = g.attrs.stride.back();
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t kidx = 0; kidx < kernelSize; ++kidx) {
      unflatten(kidx, g.kernel, kpos);
      row.lastOffset = kpos[dims - 1] * g.attrs.dilation.back() - g.attrs.padding.back();
      std::tie(row.begin, row.end) =
          validRange(row.length, row.stride, row.lastOffset, dense.back());
      for (int64_t outer = 0; outer < outerCount; ++outer) {
        unflatten(outer, outerExtents, pos);
        int64_t offset = 0;
        bool inside = true;
        for (size_t d = 0; d + 1 < dims; ++d) {
          int64_t i =
              pos[d] * g.attrs.stride[d] - g.attrs.padding[d] + kpos[d] * g.attrs.dilation[d];
          inside = inside && i >= 0 && i < dense[d];
          offset = offset * dense[d] + i;
        }
        row.colStart = (c * kernelSize + kidx) * stridedSize + outer * row.length;
        row.denseStart = inside ? c * denseSize + offset * dense.back() : -1;
        fn(row);
      }
    }
  }
}

/// Gathers input patches: col[(c * K + kernel index), output position] for the group's channels.
/// `x` is one group of one image; padding reads zero.
template <typename T> void im2col(const ConvGeometry &g, const T *x, int64_t channels, T *col) {
  forEachPatchRow(g, channels, g.outSpatial, g.inSpatial, [&](const PatchRow &r) {
    T *dst = col + r.colStart;
    if (r.denseStart < 0) {
      std::fill(dst, dst + r.length, T(0));
      return;
    }
    const T *src = x + r.denseStart;
    std::fill(dst, dst + r.begin, T(0));
    for (int64_t o = r.begin; o < r.end; ++o)
      dst[o] = src[o * r.stride + r.lastOffset];
    std::fill(dst + r.end, dst + r.length, T(0));
  });
}

/// Scatters columns back: y[c, o] += col[(c * K + kernel index), input position] where
/// o = i * stride - padding + k * dilation (the adjoint of im2col, for transposed convolution).
template <typename T> void col2im(const ConvGeometry &g, const T *col, int64_t channels, T *y) {
  forEachPatchRow(g, channels, g.inSpatial, g.outSpatial, [&](const PatchRow &r) {
    if (r.denseStart < 0)
      return;
    const T *src = col + r.colStart;
    T *dst = y + r.denseStart;
    for (int64_t i = r.begin; i < r.end; ++i)
      dst[i * r.stride + r.lastOffset] += src[i];
  });
}

template <typename T>
void convolve(const ConvGeometry &g, const T *x, const T *w, const T *bias, T *y) {
  int64_t inSize = g.inSize(), outSize = g.outSize(), kernelSize = g.kernelSize();
  int64_t inPerGroup = g.inChannels / g.groups, outPerGroup = g.outChannels / g.groups;
  if (bias)
    for (int64_t n = 0; n < g.batch; ++n)
      for (int64_t c = 0; c < g.outChannels; ++c)
        std::fill_n(y + (n * g.outChannels + c) * outSize, outSize, bias[c]);
  if (!g.attrs.transposed) {
    // y_g [outPerGroup, outSize] = w_g [outPerGroup, inPerGroup * K] @ col [inPerGroup * K, ...].
    int64_t rows = inPerGroup * kernelSize;
    bool pointwise = kernelSize == 1 && inSize == outSize &&
                     std::all_of(g.attrs.stride.begin(), g.attrs.stride.end(),
                                 [](int64_t s) { return s == 1; }) &&
                     std::all_of(g.attrs.padding.begin(), g.attrs.padding.end(),
                                 [](int64_t p) { return p == 0; });
    std::vector<T> col(pointwise ? 0 : size_t(rows * outSize));
    for (int64_t n = 0; n < g.batch; ++n) {
      for (int64_t group = 0; group < g.groups; ++group) {
        const T *xg = x + (n * g.inChannels + group * inPerGroup) * inSize;
        const T *patches = xg;
        if (!pointwise) {
          im2col(g, xg, inPerGroup, col.data());
          patches = col.data();
        }
        gemm(outPerGroup, outSize, rows, T(1),
             MatrixView<T>{w + group * outPerGroup * rows, rows, 1},
             MatrixView<T>{patches, outSize, 1},
             y + (n * g.outChannels + group * outPerGroup) * outSize, outSize);
      }
    }
    return;
  }
  // Transposed: col [outPerGroup * K, inSize] = w_g^T @ x_g with w_g [inPerGroup, outPerGroup*K],
  // then col2im scatters it onto the output.
  int64_t rows = outPerGroup * kernelSize;
  std::vector<T> col(size_t(rows * inSize));
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t group = 0; group < g.groups; ++group) {
      std::fill(col.begin(), col.end(), T(0));
      const T *xg = x + (n * g.inChannels + group * inPerGroup) * inSize;
      gemm(rows, inSize, inPerGroup, T(1), MatrixView<T>{w + group * inPerGroup * rows, 1, rows},
           MatrixView<T>{xg, inSize, 1}, col.data(), inSize);
      col2im(g, col.data(), outPerGroup, y + (n * g.outChannels + group * outPerGroup) * outSize);
    }
  }
}

Status runConvolution(KernelContext &ctx) {
  const Tensor &input = ctx.input(0), &weight = ctx.input(1);
  Tensor &out = ctx.output(0);
  size_t dims = weight.rank() - 2;
  bool batched = input.rank() == dims + 2;
  ConvGeometry g;
  TC_ASSIGN_OR_RETURN(g.attrs, readConvAttrs(ctx, dims));
  g.batch = batched ? input.dim(0) : 1;
  g.inChannels = input.dim(batched ? 1 : 0);
  g.outChannels = out.dim(batched ? 1 : 0);
  g.groups = g.attrs.groups;
  g.inSpatial.assign(input.shape().end() - dims, input.shape().end());
  g.outSpatial.assign(out.shape().end() - dims, out.shape().end());
  g.kernel.assign(weight.shape().begin() + 2, weight.shape().end());
  int64_t expected = g.attrs.transposed ? weight.dim(0) : weight.dim(1) * g.groups;
  if (g.inChannels != expected)
    return makeError("expected input with ", expected, " channels, got ",
                     describeShape(input.dtype(), input.shape()));
  if (out.numel() == 0)
    return Status::ok();
  const Tensor *bias = ctx.hasInput(2) ? &ctx.input(2) : nullptr;
  return dispatchFloating("convolution", {&input, &weight, bias}, out,
                          [&](auto zero, const std::vector<const Tensor *> &in, Tensor &y) {
                            using T = decltype(zero);
                            convolve<T>(g, in[0]->dataAs<T>(), in[1]->dataAs<T>(),
                                        in[2] ? in[2]->dataAs<T>() : nullptr, y.mutableDataAs<T>());
                          });
}

// ---- Pooling ---------------------------------------------------------------------------------

struct PoolAttrs {
  std::vector<int64_t> kernel, stride, padding, dilation;
  bool ceilMode = false;
};

/// Reads kernel_size, stride (empty: the kernel), padding, dilation (when the op has one) and
/// ceil_mode, and checks torch's rule that padding is at most half the effective kernel.
Expected<PoolAttrs> readPoolAttrs(const AttrReader &attrs, bool hasDilation) {
  PoolAttrs pool;
  TC_ASSIGN_OR_RETURN(pool.kernel, attrs.getStaticInts("kernel_size"));
  if (pool.kernel.empty())
    return makeError("kernel_size must not be empty");
  size_t dims = pool.kernel.size();
  for (int64_t k : pool.kernel)
    if (k < 1)
      return makeError("kernel_size must be positive, got [", join(pool.kernel, ", "), "]");
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> stride, attrs.getStaticInts("stride"));
  if (stride.empty()) {
    pool.stride = pool.kernel;
  } else {
    TC_ASSIGN_OR_RETURN(pool.stride, readSpatialList(attrs, "stride", dims, 1));
  }
  TC_ASSIGN_OR_RETURN(pool.padding, readSpatialList(attrs, "padding", dims, 0));
  if (hasDilation) {
    TC_ASSIGN_OR_RETURN(pool.dilation, readSpatialList(attrs, "dilation", dims, 1));
  } else {
    pool.dilation.assign(dims, 1);
  }
  pool.ceilMode = attrs.getBool("ceil_mode");
  for (size_t d = 0; d < dims; ++d) {
    int64_t effective = pool.dilation[d] * (pool.kernel[d] - 1) + 1;
    if (pool.padding[d] > effective / 2)
      return makeError("padding should be at most half of the effective kernel size, got "
                       "padding [",
                       join(pool.padding, ", "), "] for kernel_size [", join(pool.kernel, ", "),
                       "] and dilation [", join(pool.dilation, ", "), "]");
  }
  return pool;
}

/// torch's pooling_output_shape for one dim. With ceil_mode the last window must start inside
/// the input or the left padding; for a symbolic size that rule is written with floorDiv/mod.
SymInt poolOutputSize(const SymInt &in, int64_t k, int64_t s, int64_t p, int64_t dil,
                      bool ceilMode) {
  int64_t effective = dil * (k - 1) + 1;
  if (std::optional<int64_t> size = in.constant()) {
    int64_t numerator = *size + 2 * p - effective;
    int64_t out = floorDivInt(numerator + (ceilMode ? s - 1 : 0), s) + 1;
    if (ceilMode && (out - 1) * s >= *size + p)
      --out;
    return SymInt(out);
  }
  SymInt numerator = in + SymInt(2 * p - effective);
  if (!ceilMode)
    return SymInt::floorDiv(numerator, s) + SymInt(1);
  // (out - 1) * s = numerator + r with r = (-numerator) mod s; the window is dropped when
  // r >= effective - p (>= 1 because p <= effective / 2).
  SymInt out = SymInt::floorDiv(numerator + SymInt(s - 1), s) + SymInt(1);
  int64_t threshold = effective - p;
  if (threshold > s - 1)
    return out;
  SymInt remainder = SymInt::mod(-numerator, s);
  return out - SymInt::floorDiv(remainder + SymInt(s - threshold), s);
}

Expected<std::vector<TensorType>> inferPool(const InferContext &ctx, bool hasDilation,
                                            const char *opName) {
  const TensorType &input = ctx.input(0);
  TC_ASSIGN_OR_RETURN(PoolAttrs pool, readPoolAttrs(ctx, hasDilation));
  size_t dims = pool.kernel.size();
  if (input.rank() != dims + 1 && input.rank() != dims + 2)
    return makeError(opName, " with a ", dims, "-D kernel expects a ", dims + 1, "-D or ", dims + 2,
                     "-D input, got ", input.str());
  Shape out(input.shape.begin(), input.shape.end() - dims);
  size_t first = input.rank() - dims;
  for (size_t d = 0; d < dims; ++d) {
    SymInt size = poolOutputSize(input.shape[first + d], pool.kernel[d], pool.stride[d],
                                 pool.padding[d], pool.dilation[d], pool.ceilMode);
    if (size.isConstant() && *size.constant() < 1)
      return makeError(opName, ": input ", input.str(), " is too small for kernel_size [",
                       join(pool.kernel, ", "), "] (output size ", size, " in spatial dim ", d,
                       ")");
    out.push_back(size);
  }
  return std::vector<TensorType>{TensorType(input.dtype, out)};
}

Expected<std::vector<TensorType>> inferMaxPool(const InferContext &ctx) {
  if (ctx.input(0).dtype == DType::Bool)
    return makeError("max_pool is not defined for bool tensors");
  return inferPool(ctx, /*hasDilation=*/true, "max_pool");
}

Expected<std::vector<TensorType>> inferAvgPool(const InferContext &ctx) {
  if (!isFloating(ctx.input(0).dtype))
    return makeError("avg_pool needs a floating dtype, got ", dtypeName(ctx.input(0).dtype));
  if (!ctx.isNone("divisor_override") && ctx.getInt("divisor_override") == 0)
    return makeError("divisor_override must not be zero");
  return inferPool(ctx, /*hasDilation=*/false, "avg_pool");
}

/// Concrete pooling sizes: `planes` independent [*inSpatial] -> [*outSpatial] maps.
struct PoolGeometry {
  int64_t planes = 1;
  std::vector<int64_t> inSpatial, outSpatial;
  PoolAttrs attrs;
};

PoolGeometry poolGeometry(const Tensor &input, const Tensor &out, PoolAttrs attrs) {
  PoolGeometry g;
  size_t dims = attrs.kernel.size();
  g.inSpatial.assign(input.shape().end() - dims, input.shape().end());
  g.outSpatial.assign(out.shape().end() - dims, out.shape().end());
  g.planes = input.numel() / std::max<int64_t>(1, product(g.inSpatial));
  g.attrs = std::move(attrs);
  return g;
}

template <typename T> bool isNaN(T value) {
  if constexpr (std::is_floating_point_v<T>)
    return std::isnan(value);
  else
    return false;
}

template <typename T> void maxPool(const PoolGeometry &g, const T *x, T *y) {
  size_t dims = g.inSpatial.size();
  int64_t inSize = product(g.inSpatial), outSize = product(g.outSpatial);
  int64_t window = product(g.attrs.kernel);
  std::vector<int64_t> opos(dims), kpos(dims);
  for (int64_t plane = 0; plane < g.planes; ++plane) {
    const T *src = x + plane * inSize;
    for (int64_t o = 0; o < outSize; ++o) {
      unflatten(o, g.outSpatial, opos);
      T best = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                    : std::numeric_limits<T>::lowest();
      for (int64_t w = 0; w < window; ++w) {
        unflatten(w, g.attrs.kernel, kpos);
        int64_t offset = 0;
        bool inside = true;
        for (size_t d = 0; d < dims; ++d) {
          int64_t i =
              opos[d] * g.attrs.stride[d] - g.attrs.padding[d] + kpos[d] * g.attrs.dilation[d];
          inside = inside && i >= 0 && i < g.inSpatial[d];
          offset = offset * g.inSpatial[d] + i;
        }
        if (!inside)
          continue;
        T value = src[offset];
        if (isNaN(value)) { // NaN wins, as in torch
          best = value;
          break;
        }
        best = std::max(best, value);
      }
      y[plane * outSize + o] = best;
    }
  }
}

template <typename T>
void avgPool(const PoolGeometry &g, bool countIncludePad, std::optional<int64_t> divisor,
             const T *x, T *y) {
  size_t dims = g.inSpatial.size();
  int64_t inSize = product(g.inSpatial), outSize = product(g.outSpatial);
  std::vector<int64_t> opos(dims), begin(dims), extent(dims), wpos(dims);
  for (int64_t plane = 0; plane < g.planes; ++plane) {
    const T *src = x + plane * inSize;
    for (int64_t o = 0; o < outSize; ++o) {
      unflatten(o, g.outSpatial, opos);
      int64_t padded = 1, count = 1;
      for (size_t d = 0; d < dims; ++d) {
        int64_t start = opos[d] * g.attrs.stride[d] - g.attrs.padding[d];
        int64_t end = std::min(start + g.attrs.kernel[d], g.inSpatial[d] + g.attrs.padding[d]);
        padded *= end - start;
        start = std::max<int64_t>(start, 0);
        end = std::min(end, g.inSpatial[d]);
        begin[d] = start;
        extent[d] = std::max<int64_t>(end - start, 0);
        count *= extent[d];
      }
      if (count == 0) {
        y[plane * outSize + o] = T(0); // a window of padding only
        continue;
      }
      T sum = 0;
      for (int64_t w = 0; w < count; ++w) {
        unflatten(w, extent, wpos);
        int64_t offset = 0;
        for (size_t d = 0; d < dims; ++d)
          offset = offset * g.inSpatial[d] + begin[d] + wpos[d];
        sum += src[offset];
      }
      int64_t factor = divisor ? *divisor : countIncludePad ? padded : count;
      y[plane * outSize + o] = sum / T(factor);
    }
  }
}

Status runMaxPool(KernelContext &ctx) {
  TC_ASSIGN_OR_RETURN(PoolAttrs attrs, readPoolAttrs(ctx, /*hasDilation=*/true));
  PoolGeometry g = poolGeometry(ctx.input(0), ctx.output(0), std::move(attrs));
  return dispatchCompute({&ctx.input(0)}, ctx.output(0),
                         [&](auto zero, const std::vector<const Tensor *> &in, Tensor &y) {
                           using T = decltype(zero);
                           maxPool<T>(g, in[0]->dataAs<T>(), y.mutableDataAs<T>());
                           return Status::ok();
                         });
}

Status runAvgPool(KernelContext &ctx) {
  TC_ASSIGN_OR_RETURN(PoolAttrs attrs, readPoolAttrs(ctx, /*hasDilation=*/false));
  PoolGeometry g = poolGeometry(ctx.input(0), ctx.output(0), std::move(attrs));
  bool countIncludePad = ctx.getBool("count_include_pad");
  std::optional<int64_t> divisor;
  if (!ctx.isNone("divisor_override"))
    divisor = ctx.getInt("divisor_override");
  return dispatchFloating("avg_pool", {&ctx.input(0)}, ctx.output(0),
                          [&](auto zero, const std::vector<const Tensor *> &in, Tensor &y) {
                            using T = decltype(zero);
                            avgPool<T>(g, countIncludePad, divisor, in[0]->dataAs<T>(),
                                       y.mutableDataAs<T>());
                          });
}

// ---- Decompositions ---------------------------------------------------------------------------

/// A 1-D convolution (not transposed) as the 2-D one over a height of 1: input [N, C, L] viewed
/// [N, C, 1, L], weight [OC, C/groups, K] viewed [OC, C/groups, 1, K], stride/padding/dilation
/// (1, s) / (0, p) / (1, d), the result [N, OC, 1, OL] viewed back. The backends' convolution
/// templates (implicit GEMM, depthwise, channels-last) are 2-D: without this a 1-D convolution
/// (audio and text CNNs, Whisper's and wav2vec's front ends) ran on the reference kernel.
DecomposeResult decomposeConvolution(RewriteContext &rewrite, const OpRegistry &registry) {
  DecomposeBuilder b(rewrite, registry);
  AttrReader attrs(b.node().attrs());
  Value *input = b.operand(0), *weight = b.operand(1);
  const Shape &in = input->type().shape, &w = weight->type().shape;
  if (in.size() != 3 || w.size() != 3 || attrs.getBool("transposed"))
    return keepNode();
  Expected<std::vector<int64_t>> stride = readSpatialList(attrs, "stride", 1, 1),
                                 padding = readSpatialList(attrs, "padding", 1, 0),
                                 dilation = readSpatialList(attrs, "dilation", 1, 1);
  if (!stride || !padding || !dilation)
    return keepNode(); // shape inference reports the bad attribute
  TC_ASSIGN_OR_RETURN(Value * input2d, b.view(input, {in[0], in[1], SymInt(1), in[2]}));
  TC_ASSIGN_OR_RETURN(Value * weight2d, b.view(weight, {w[0], w[1], SymInt(1), w[2]}));
  // The bias, or none (a null operand).
  Value *bias = b.node().inputs().size() > 2 ? b.operand(2) : nullptr;
  std::vector<Value *> operands = {input2d, weight2d, bias};
  AttrMap attrs2d = b.node().attrs();
  attrs2d["stride"] = Attribute(std::vector<int64_t>{1, (*stride)[0]});
  attrs2d["padding"] = Attribute(std::vector<int64_t>{0, (*padding)[0]});
  attrs2d["dilation"] = Attribute(std::vector<int64_t>{1, (*dilation)[0]});
  attrs2d["output_padding"] = Attribute(std::vector<int64_t>{0, 0});
  TC_ASSIGN_OR_RETURN(Value * conv, b.emit(OpId::Convolution, operands, std::move(attrs2d)));
  TC_ASSIGN_OR_RETURN(Value * result, b.view(conv, b.resultType().shape));
  return replaceWith(result);
}

} // namespace

Status registerConvolutionOps(OpRegistry &registry) {
  const std::vector<int64_t> zero{0}, one{1};
  TC_RETURN_IF_ERROR(registry.add(withDecompose(
      makeOp(OpId::Convolution,
             {tensorParam("input"), tensorParam("weight"), optionalTensorParam("bias"),
              attrParam("stride", AttrKind::Ints, Attribute(one)),
              attrParam("padding", AttrKind::Ints, Attribute(zero)),
              attrParam("dilation", AttrKind::Ints, Attribute(one)),
              attrParam("transposed", AttrKind::Bool, Attribute(false)),
              attrParam("output_padding", AttrKind::Ints, Attribute(zero)),
              attrParam("groups", AttrKind::Int, Attribute(int64_t(1)))},
             inferConvolution, runConvolution),
      decomposeConvolution)));
  TC_RETURN_IF_ERROR(
      registry.add(makeOp(OpId::MaxPool,
                          {tensorParam("self"), attrParam("kernel_size", AttrKind::Ints),
                           attrParam("stride", AttrKind::Ints, Attribute(std::vector<int64_t>{})),
                           attrParam("padding", AttrKind::Ints, Attribute(zero)),
                           attrParam("dilation", AttrKind::Ints, Attribute(one)),
                           attrParam("ceil_mode", AttrKind::Bool, Attribute(false))},
                          inferMaxPool, runMaxPool)));
  TC_RETURN_IF_ERROR(
      registry.add(makeOp(OpId::AvgPool,
                          {tensorParam("self"), attrParam("kernel_size", AttrKind::Ints),
                           attrParam("stride", AttrKind::Ints, Attribute(std::vector<int64_t>{})),
                           attrParam("padding", AttrKind::Ints, Attribute(zero)),
                           attrParam("ceil_mode", AttrKind::Bool, Attribute(false)),
                           attrParam("count_include_pad", AttrKind::Bool, Attribute(true)),
                           optionalAttrParam("divisor_override", AttrKind::Int)},
                          inferAvgPool, runAvgPool)));
  return Status::ok();
}

} // namespace tensorc::ops
