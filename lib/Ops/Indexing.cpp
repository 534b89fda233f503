// Indexing, scatter and resampling ops: aten.gather, aten.index_select, aten.embedding,
// prims.gather_nd, aten.scatter, prims.scatter_nd and prims.resize (ONNX Resize semantics).
#include "OpGroups.h"
#include "OpHelpers.h"

#include "tensorc/Ops/ScatterReduce.h"
#include "tensorc/Support/MultiIndex.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>

namespace tensorc::ops {

Expected<ScatterReduce> parseScatterReduce(const std::string &name) {
  if (name == "none")
    return ScatterReduce::None;
  if (name == "add" || name == "sum")
    return ScatterReduce::Add;
  if (name == "mul" || name == "multiply" || name == "prod")
    return ScatterReduce::Mul;
  if (name == "max" || name == "amax")
    return ScatterReduce::Max;
  if (name == "min" || name == "amin")
    return ScatterReduce::Min;
  return makeError("unknown reduce '", name, "' (expected none, add, mul, max or min)");
}

namespace {

using Types = std::vector<TensorType>;

Status indexOutOfRange(int64_t index, size_t dim, int64_t size) {
  return makeError("index ", index, " is out of bounds for dimension ", dim, " with size ", size);
}

/// `index` mapped into [0, size) (negative counts from the end), or an error naming `dim`.
Expected<int64_t> resolveIndex(int64_t index, int64_t size, size_t dim) {
  int64_t resolved = index < 0 ? index + size : index;
  if (resolved < 0 || resolved >= size)
    return indexOutOfRange(index, dim, size);
  return resolved;
}

// ---- Scatter reductions ----------------------------------------------------------------------

/// `reduce` of the current value `a` and the incoming `b`.
template <typename T> T reduced(T a, T b, ScatterReduce reduce) {
  switch (reduce) {
  case ScatterReduce::None:
    return b;
  case ScatterReduce::Add:
    return a + b;
  case ScatterReduce::Mul:
    return a * b;
  case ScatterReduce::Max:
    return std::max(a, b);
  case ScatterReduce::Min:
    return std::min(a, b);
  }
  return b;
}

/// out[dst] = reduce(out[dst], src[srcIndex]); integers stay exact through int64.
void combine(Tensor &out, int64_t dst, const Tensor &src, int64_t srcIndex, ScatterReduce reduce) {
  if (isFloating(out.dtype())) {
    out.setDouble(dst, reduced(out.getDouble(dst), src.getDouble(srcIndex), reduce));
    return;
  }
  int64_t r = reduced(out.getInt(dst), src.getInt(srcIndex), reduce);
  out.setInt(dst, out.dtype() == DType::Bool ? r != 0 : r);
}

void copyInto(Tensor &out, const Tensor &input) {
  if (input.nbytes() != 0)
    std::memcpy(out.mutableData(), input.data(), input.nbytes());
}

// ---- gather_nd -------------------------------------------------------------------------------

Expected<Types> inferGatherNd(const InferContext &ctx) {
  const TensorType &data = ctx.input(0), &index = ctx.input(1);
  TC_RETURN_IF_ERROR(checkIndexDType(index.dtype, "gather_nd index"));
  int64_t batchDims = ctx.getInt("batch_dims");
  if (index.rank() < 1)
    return makeError("gather_nd index must have rank >= 1, got ", index.str());
  std::optional<int64_t> depth = index.shape.back().constant();
  if (!depth)
    return makeError("the last dim of the gather_nd index must be static, got ", index.str());
  if (batchDims < 0 || size_t(batchDims) >= index.rank() ||
      size_t(batchDims) + size_t(*depth) > data.rank())
    return makeError("gather_nd: batch_dims ", batchDims, " and index depth ", *depth,
                     " do not fit data ", data.str(), " and index ", index.str());
  Shape out(index.shape.begin(), index.shape.end() - 1);
  out.insert(out.end(), data.shape.begin() + batchDims + *depth, data.shape.end());
  return Types{TensorType(data.dtype, std::move(out))};
}

Status gatherNdKernel(KernelContext &ctx) {
  const Tensor &data = ctx.input(0), &index = ctx.input(1);
  Tensor &out = ctx.output(0);
  size_t b = size_t(ctx.getInt("batch_dims"));
  size_t depth = size_t(index.shape().back());
  const std::vector<int64_t> &shape = data.shape();
  int64_t batches = product(shape, 0, b);
  int64_t tuples = product(index.shape(), b, index.rank() - 1);
  int64_t sliceSize = product(shape, b + depth, shape.size());
  int64_t batchStride = product(shape, b, shape.size());
  std::vector<int64_t> strides = data.strides();
  size_t elementSize = dtypeSize(data.dtype());
  const auto *in = static_cast<const std::byte *>(data.data());
  auto *dst = static_cast<std::byte *>(out.mutableData());
  for (int64_t batch = 0; batch < batches; ++batch) {
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t offset = batch * batchStride;
      int64_t tuple = (batch * tuples + t) * int64_t(depth);
      for (size_t m = 0; m < depth; ++m) {
        TC_ASSIGN_OR_RETURN(int64_t i,
                            resolveIndex(index.getInt(tuple + int64_t(m)), shape[b + m], b + m));
        offset += i * strides[b + m];
      }
      std::memcpy(dst, in + offset * int64_t(elementSize), size_t(sliceSize) * elementSize);
      dst += sliceSize * int64_t(elementSize);
    }
  }
  return Status::ok();
}

// ---- scatter ---------------------------------------------------------------------------------

Expected<Types> inferScatter(const InferContext &ctx) {
  const TensorType &self = ctx.input(0), &index = ctx.input(1), &src = ctx.input(2);
  TC_RETURN_IF_ERROR(checkIndexDType(index.dtype, "scatter index"));
  TC_RETURN_IF_ERROR(parseScatterReduce(ctx.getString("reduce")).status());
  TC_RETURN_IF_ERROR(normalizeDim(ctx.getInt("dim"), std::max<size_t>(self.rank(), 1)).status());
  if (index.rank() != self.rank() || src.rank() != self.rank())
    return makeError("scatter: self ", self.str(), ", index ", index.str(), " and src ", src.str(),
                     " must have the same rank");
  if (src.dtype != self.dtype)
    return makeError("scatter: src ", src.str(), " must have the dtype of self ", self.str());
  for (size_t d = 0; d < index.rank(); ++d) {
    std::optional<int64_t> i = index.shape[d].constant(), s = src.shape[d].constant();
    if (i && s && *i > *s)
      return makeError("scatter: index ", index.str(), " is larger than src ", src.str(),
                       " in dim ", d);
  }
  return Types{self};
}

Status scatterKernel(KernelContext &ctx) {
  const Tensor &self = ctx.input(0), &index = ctx.input(1), &src = ctx.input(2);
  Tensor &out = ctx.output(0);
  TC_ASSIGN_OR_RETURN(ScatterReduce reduce, parseScatterReduce(ctx.getString("reduce")));
  copyInto(out, self);
  size_t rank = self.rank();
  if (rank == 0) {
    if (index.numel() == 1) {
      TC_RETURN_IF_ERROR(resolveIndex(index.getInt(0), 1, 0).status());
      combine(out, 0, src, 0, reduce);
    }
    return Status::ok();
  }
  TC_ASSIGN_OR_RETURN(size_t dim, normalizeShapeDim(ctx.getInt("dim"), rank));
  for (size_t d = 0; d < rank; ++d)
    if (index.dim(d) > src.dim(d) || (d != dim && index.dim(d) > self.dim(d)))
      return makeError("scatter index shape [", join(index.shape(), ", "),
                       "] exceeds src or self in dim ", d);
  std::vector<int64_t> selfStrides = self.strides(), srcStrides = src.strides();
  std::vector<int64_t> coords(rank, 0);
  for (int64_t i = 0; i < index.numel(); ++i) {
    int64_t rest = i;
    for (size_t d = rank; d-- > 0;) {
      coords[d] = rest % index.dim(d);
      rest /= index.dim(d);
    }
    TC_ASSIGN_OR_RETURN(int64_t target, resolveIndex(index.getInt(i), self.dim(dim), dim));
    int64_t dst = 0, from = 0;
    for (size_t d = 0; d < rank; ++d) {
      dst += (d == dim ? target : coords[d]) * selfStrides[d];
      from += coords[d] * srcStrides[d];
    }
    combine(out, dst, src, from, reduce);
  }
  return Status::ok();
}

// ---- scatter_nd ------------------------------------------------------------------------------

Expected<Types> inferScatterNd(const InferContext &ctx) {
  const TensorType &self = ctx.input(0), &index = ctx.input(1), &src = ctx.input(2);
  TC_RETURN_IF_ERROR(checkIndexDType(index.dtype, "scatter_nd index"));
  TC_RETURN_IF_ERROR(parseScatterReduce(ctx.getString("reduce")).status());
  if (index.rank() < 1)
    return makeError("scatter_nd index must have rank >= 1, got ", index.str());
  std::optional<int64_t> depth = index.shape.back().constant();
  if (!depth || size_t(*depth) > self.rank())
    return makeError("scatter_nd: the index depth of ", index.str(),
                     " must be static and at most the rank of ", self.str());
  Shape expected(index.shape.begin(), index.shape.end() - 1);
  expected.insert(expected.end(), self.shape.begin() + *depth, self.shape.end());
  if (src.rank() != expected.size())
    return makeError("scatter_nd: updates ", src.str(), " must have shape [", join(expected, ", "),
                     "]");
  for (size_t d = 0; d < expected.size(); ++d)
    if (expected[d].isConstant() && src.shape[d].isConstant() && expected[d] != src.shape[d])
      return makeError("scatter_nd: updates ", src.str(), " must have shape [",
                       join(expected, ", "), "]");
  if (src.dtype != self.dtype)
    return makeError("scatter_nd: updates ", src.str(), " must have the dtype of ", self.str());
  return Types{self};
}

Status scatterNdKernel(KernelContext &ctx) {
  const Tensor &self = ctx.input(0), &index = ctx.input(1), &src = ctx.input(2);
  Tensor &out = ctx.output(0);
  TC_ASSIGN_OR_RETURN(ScatterReduce reduce, parseScatterReduce(ctx.getString("reduce")));
  copyInto(out, self);
  size_t depth = size_t(index.shape().back());
  int64_t tuples = product(index.shape(), 0, index.rank() - 1);
  int64_t sliceSize = product(self.shape(), depth, self.rank());
  std::vector<int64_t> strides = self.strides();
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = 0;
    for (size_t m = 0; m < depth; ++m) {
      TC_ASSIGN_OR_RETURN(
          int64_t i, resolveIndex(index.getInt(t * int64_t(depth) + int64_t(m)), self.dim(m), m));
      offset += i * strides[m];
    }
    for (int64_t e = 0; e < sliceSize; ++e)
      combine(out, offset + e, src, t * sliceSize + e, reduce);
  }
  return Status::ok();
}

// ---- resize ----------------------------------------------------------------------------------

/// The input taps of one output coordinate along one dim; `outside` asks for the extrapolation
/// value (tf_crop_and_resize sampling outside the input).
struct Taps {
  bool outside = false;
  std::vector<std::pair<int64_t, double>> taps;
};

struct ResizeSpec {
  std::string mode, coordinates, nearest;
  double cubicA = -0.75;
  bool excludeOutside = false, antialias = false;
};

Expected<double> sourceCoordinate(const ResizeSpec &spec, double x, int64_t in, int64_t out,
                                  double scale, double roiStart, double roiEnd) {
  const std::string &m = spec.coordinates;
  if (m == "half_pixel")
    return (x + 0.5) / scale - 0.5;
  if (m == "pytorch_half_pixel")
    return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (m == "align_corners") { // ONNX's reference divides by the unrounded output length
    double length = scale * double(in);
    return length == 1 ? 0.0 : x * double(in - 1) / (length - 1);
  }
  if (m == "tf_half_pixel_for_nn")
    return (x + 0.5) / scale;
  if (m == "asymmetric")
    return x / scale;
  if (m == "half_pixel_symmetric") {
    double adjustment = double(out) / (scale * double(in));
    double center = double(in) / 2;
    return center * (1 - adjustment) + (x + 0.5) / scale - 0.5;
  }
  if (m == "tf_crop_and_resize")
    return out > 1 ? roiStart * double(in - 1) +
                         x * (roiEnd - roiStart) * double(in - 1) / double(out - 1)
                   : 0.5 * (roiStart + roiEnd) * double(in - 1);
  return makeError("unknown coordinate_transformation_mode '", m, "'");
}

double cubicWeight(double x, double a) {
  x = std::abs(x);
  if (x <= 1)
    return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2)
    return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

/// Filter weights for taps at base + start + j, following ONNX's reference (ratio in (0, 1]).
std::vector<double> filterWeights(const ResizeSpec &spec, double ratio, double scale,
                                  int64_t &start) {
  double s = spec.antialias ? std::min(scale, 1.0) : 1.0;
  std::vector<double> weights;
  if (spec.mode == "linear") {
    start = int64_t(std::floor(-1 / s) + 1);
    for (int64_t j = start; j < 2 - start; ++j)
      weights.push_back(std::max(0.0, 1 - std::abs((double(j) - ratio) * s)));
  } else {
    start = int64_t(std::floor(-2 / s) + 1);
    for (int64_t j = start; j < 2 - start; ++j)
      weights.push_back(cubicWeight((double(j) - ratio) * s, spec.cubicA));
  }
  if (spec.antialias) {
    double sum = 0;
    for (double w : weights)
      sum += w;
    for (double &w : weights)
      w /= sum;
  }
  return weights;
}

Expected<Taps> tapsFor(const ResizeSpec &spec, int64_t o, int64_t in, int64_t out, double scale,
                       double roiStart, double roiEnd) {
  TC_ASSIGN_OR_RETURN(double x,
                      sourceCoordinate(spec, double(o), in, out, scale, roiStart, roiEnd));
  Taps result;
  if (spec.coordinates == "tf_crop_and_resize" && (x < 0 || x > double(in - 1))) {
    result.outside = true;
    return result;
  }
  auto clampIndex = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
  double base = std::ceil(x) - 1; // the left neighbour; an integer x counts as ratio 1
  double ratio = x - base;
  if (spec.mode == "nearest") {
    bool up;
    if (ratio == 1.0)
      up = true;
    else if (spec.nearest == "round_prefer_floor")
      up = ratio > 0.5;
    else if (spec.nearest == "round_prefer_ceil")
      up = ratio >= 0.5;
    else if (spec.nearest == "floor")
      up = false;
    else if (spec.nearest == "ceil")
      up = true;
    else
      return makeError("unknown nearest_mode '", spec.nearest, "'");
    result.taps.push_back({clampIndex(int64_t(base) + (up ? 1 : 0)), 1.0});
    return result;
  }
  if (spec.mode != "linear" && spec.mode != "cubic")
    return makeError("unknown resize mode '", spec.mode, "'");
  int64_t start = 0;
  std::vector<double> weights = filterWeights(spec, ratio, scale, start);
  double total = 0;
  for (size_t j = 0; j < weights.size(); ++j) {
    int64_t i = int64_t(base) + start + int64_t(j);
    if (spec.excludeOutside && (i < 0 || i >= in))
      weights[j] = 0;
    total += weights[j];
  }
  for (size_t j = 0; j < weights.size(); ++j) {
    double w = spec.excludeOutside ? weights[j] / total : weights[j];
    if (w != 0)
      result.taps.push_back({clampIndex(int64_t(base) + start + int64_t(j)), w});
  }
  return result;
}

Expected<Types> inferResize(const InferContext &ctx) {
  const TensorType &self = ctx.input(0);
  const std::vector<SymInt> &size = ctx.getInts("size");
  if (size.size() != self.rank())
    return makeError("resize: size [", join(size, ", "), "] must have one entry per dim of ",
                     self.str());
  if (ctx.getFloats("scales").size() != self.rank() ||
      ctx.getFloats("roi").size() != 2 * self.rank())
    return makeError("resize: scales and roi must have ", self.rank(), " and ", 2 * self.rank(),
                     " entries");
  const std::string &mode = ctx.getString("mode");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return makeError("unknown resize mode '", mode, "'");
  if (self.dtype == DType::Bool && mode != "nearest")
    return makeError("resize mode '", mode, "' is not defined for bool");
  for (const SymInt &dim : size)
    if (dim.isConstant() && *dim.constant() < 0)
      return makeError("resize: negative size [", join(size, ", "), "]");
  return Types{TensorType(self.dtype, size)};
}

Status resizeKernel(KernelContext &ctx) {
  const Tensor &input = ctx.input(0);
  Tensor &out = ctx.output(0);
  ResizeSpec spec{ctx.getString("mode"),          ctx.getString("coordinate_transformation_mode"),
                  ctx.getString("nearest_mode"),  ctx.getFloat("cubic_coeff_a"),
                  ctx.getBool("exclude_outside"), ctx.getBool("antialias")};
  const std::vector<double> &scales = ctx.getFloats("scales"), &roi = ctx.getFloats("roi");
  double extrapolation = ctx.getFloat("extrapolation_value");
  size_t rank = input.rank();
  if (out.numel() == 0)
    return Status::ok();
  if (input.numel() == 0)
    return makeError("resize of an empty input of shape [", join(input.shape(), ", "), "]");
  std::vector<std::vector<Taps>> perDim(rank);
  for (size_t d = 0; d < rank; ++d)
    for (int64_t o = 0; o < out.dim(d); ++o) {
      TC_ASSIGN_OR_RETURN(
          Taps taps, tapsFor(spec, o, input.dim(d), out.dim(d), scales[d], roi[d], roi[rank + d]));
      perDim[d].push_back(std::move(taps));
    }
  std::vector<int64_t> strides = input.strides();
  std::vector<int64_t> coords(rank, 0), tapIndex(rank, 0);
  bool integral = !isFloating(out.dtype());
  for (int64_t flat = 0; flat < out.numel(); ++flat) {
    int64_t rest = flat;
    for (size_t d = rank; d-- > 0;) {
      coords[d] = rest % out.dim(d);
      rest /= out.dim(d);
    }
    bool outside = false;
    for (size_t d = 0; d < rank; ++d)
      outside = outside || perDim[d][size_t(coords[d])].outside;
    double value = 0;
    if (outside) {
      value = extrapolation;
    } else {
      // Sum over the tensor product of every dim's taps.
      std::fill(tapIndex.begin(), tapIndex.end(), 0);
      while (true) {
        double weight = 1;
        int64_t offset = 0;
        for (size_t d = 0; d < rank; ++d) {
          const auto &tap = perDim[d][size_t(coords[d])].taps[size_t(tapIndex[d])];
          weight *= tap.second;
          offset += tap.first * strides[d];
        }
        value += weight * input.getDouble(offset);
        if (!nextMultiIndex(tapIndex,
                            [&](size_t d) { return perDim[d][size_t(coords[d])].taps.size(); }))
          break;
      }
    }
    if (integral) {
      auto [lo, hi] = std::pair<double, double>{-9.2e18, 9.2e18};
      out.setInt(flat, int64_t(std::clamp(std::nearbyint(value), lo, hi)));
    } else {
      out.setDouble(flat, value);
    }
  }
  return Status::ok();
}

// ---- gather, index_select, embedding ---------------------------------------------------------

Expected<Types> inferGather(const InferContext &ctx) {
  const TensorType &self = ctx.input(0), &index = ctx.input(1);
  TC_RETURN_IF_ERROR(checkIndexDType(index.dtype, "gather index"));
  if (index.rank() != self.rank())
    return makeError("gather index ", index.str(), " must have the rank of the input ", self.str());
  TC_ASSIGN_OR_RETURN(size_t dim, normalizeDim(ctx.getInt("dim"), self.rank()));
  for (size_t d = 0; d < self.rank(); ++d) {
    std::optional<int64_t> indexSize = index.shape[d].constant(), size = self.shape[d].constant();
    if (d != dim && indexSize && size && *indexSize > *size)
      return makeError("gather index ", index.str(), " is larger than the input ", self.str(),
                       " in dim ", d);
  }
  return Types{TensorType(self.dtype, index.shape)};
}

Status gatherKernel(KernelContext &ctx) {
  const Tensor &input = ctx.input(0), &index = ctx.input(1);
  Tensor &output = ctx.output(0);
  TC_ASSIGN_OR_RETURN(size_t dim, normalizeDim(ctx.getInt("dim"), input.rank()));
  size_t rank = index.rank();
  std::vector<int64_t> strides = input.strides();
  int64_t size = rank == 0 ? 1 : input.dim(dim);
  int64_t dimStride = rank == 0 ? 0 : strides[dim];
  size_t elementSize = dtypeSize(input.dtype());
  const std::byte *in = bytesOf(input);
  std::byte *out = mutableBytesOf(output);
  // Walk the index in row-major order; `base` is the input offset of every coordinate but `dim`.
  std::vector<int64_t> counter(rank, 0);
  int64_t base = 0;
  for (int64_t i = 0; i < index.numel(); ++i) {
    int64_t position = index.getInt(i);
    if (position < 0 || position >= size)
      return indexOutOfRange(position, dim, size);
    std::memcpy(out + i * int64_t(elementSize),
                in + (base + position * dimStride) * int64_t(elementSize), elementSize);
    for (size_t d = rank; d-- > 0;) {
      int64_t stride = d == dim ? 0 : strides[d];
      base += stride;
      if (++counter[d] < index.dim(d))
        break;
      base -= stride * index.dim(d);
      counter[d] = 0;
    }
  }
  return Status::ok();
}

Expected<Types> inferIndexSelect(const InferContext &ctx) {
  const TensorType &self = ctx.input(0), &index = ctx.input(1);
  TC_RETURN_IF_ERROR(checkIndexDType(index.dtype, "index_select index"));
  if (index.rank() > 1)
    return makeError("index_select index must be 0-d or 1-D, got ", index.str());
  TC_ASSIGN_OR_RETURN(size_t dim, normalizeDim(ctx.getInt("dim"), self.rank()));
  SymInt count = index.rank() == 0 ? SymInt(1) : index.shape[0];
  if (self.rank() == 0) {
    if (count != SymInt(1))
      return makeError("index_select on a 0-d input takes one index, got ", index.str());
    return Types{self};
  }
  Shape result = self.shape;
  result[dim] = count;
  return Types{TensorType(self.dtype, std::move(result))};
}

/// Copies rows `index[j]` of the (outer, size, inner) view of `input` into `output`.
Status selectRows(const Tensor &input, const Tensor &index, size_t dim, Tensor &output) {
  AxisSplit split = splitAtAxis(input.shape(), dim);
  size_t run = size_t(split.inner) * dtypeSize(input.dtype());
  int64_t count = index.numel();
  const std::byte *in = bytesOf(input);
  std::byte *out = mutableBytesOf(output);
  for (int64_t j = 0; j < count; ++j) {
    int64_t position = index.getInt(j);
    if (position < 0 || position >= split.size)
      return indexOutOfRange(position, dim, split.size);
  }
  if (run == 0)
    return Status::ok();
  for (int64_t o = 0; o < split.outer; ++o)
    for (int64_t j = 0; j < count; ++j)
      std::memcpy(out + (o * count + j) * int64_t(run),
                  in + (o * split.size + index.getInt(j)) * int64_t(run), run);
  return Status::ok();
}

Status indexSelectKernel(KernelContext &ctx) {
  const Tensor &input = ctx.input(0);
  TC_ASSIGN_OR_RETURN(size_t dim, normalizeDim(ctx.getInt("dim"), input.rank()));
  return selectRows(input, ctx.input(1), dim, ctx.output(0));
}

Expected<Types> inferEmbedding(const InferContext &ctx) {
  const TensorType &weight = ctx.input(0), &indices = ctx.input(1);
  if (weight.rank() != 2)
    return makeError("embedding weight must be 2-D, got ", weight.str());
  TC_RETURN_IF_ERROR(checkIndexDType(indices.dtype, "embedding indices"));
  Shape result = indices.shape;
  result.push_back(weight.shape[1]);
  return Types{TensorType(weight.dtype, std::move(result))};
}

Status embeddingKernel(KernelContext &ctx) {
  return selectRows(ctx.input(0), ctx.input(1), 0, ctx.output(0));
}

} // namespace

Status registerIndexingOps(OpRegistry &registry) {
  TC_RETURN_IF_ERROR(registry.add(makeOp(
      OpId::Gather, {tensorParam("self"), attrParam("dim", AttrKind::Int), tensorParam("index")},
      inferGather, gatherKernel)));
  TC_RETURN_IF_ERROR(registry.add(
      makeOp(OpId::IndexSelect,
             {tensorParam("self"), attrParam("dim", AttrKind::Int), tensorParam("index")},
             inferIndexSelect, indexSelectKernel)));
  TC_RETURN_IF_ERROR(
      registry.add(makeOp(OpId::Embedding, {tensorParam("weight"), tensorParam("indices")},
                          inferEmbedding, embeddingKernel)));
  TC_RETURN_IF_ERROR(
      registry.add(makeOp(OpId::GatherNd,
                          {tensorParam("self"), tensorParam("index"),
                           attrParam("batch_dims", AttrKind::Int, Attribute(int64_t(0)))},
                          inferGatherNd, gatherNdKernel)));
  TC_RETURN_IF_ERROR(registry.add(
      makeOp(OpId::Scatter,
             {tensorParam("self"), attrParam("dim", AttrKind::Int), tensorParam("index"),
              tensorParam("src"), attrParam("reduce", AttrKind::String, Attribute("none"))},
             inferScatter, scatterKernel)));
  TC_RETURN_IF_ERROR(
      registry.add(makeOp(OpId::ScatterNd,
                          {tensorParam("self"), tensorParam("index"), tensorParam("src"),
                           attrParam("reduce", AttrKind::String, Attribute("none"))},
                          inferScatterNd, scatterNdKernel)));
  TC_RETURN_IF_ERROR(registry.add(makeOp(
      OpId::Resize,
      {tensorParam("self"), attrParam("size", AttrKind::Ints),
       attrParam("scales", AttrKind::Floats), attrParam("roi", AttrKind::Floats),
       attrParam("mode", AttrKind::String, Attribute("nearest")),
       attrParam("coordinate_transformation_mode", AttrKind::String, Attribute("half_pixel")),
       attrParam("nearest_mode", AttrKind::String, Attribute("round_prefer_floor")),
       attrParam("cubic_coeff_a", AttrKind::Float, Attribute(-0.75)),
       attrParam("exclude_outside", AttrKind::Bool, Attribute(false)),
       attrParam("extrapolation_value", AttrKind::Float, Attribute(0.0)),
       attrParam("antialias", AttrKind::Bool, Attribute(false))},
      inferResize, resizeKernel)));
  return Status::ok();
}

} // namespace tensorc::ops
