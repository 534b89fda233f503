// Data-dependent and miscellaneous ops with ONNX semantics: nonzero, unique, compress,
// non_max_suppression, reverse_sequence, det, dft and stft (complex values carry a trailing dim
// of 2); Sampling.cpp has the spatial ones.
#include "OpGroups.h"
#include "OpHelpers.h"

#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>
#include <numeric>

namespace tensorc::ops {

namespace {

using Types = std::vector<TensorType>;
using Ints = std::vector<int64_t>;

SymInt symProduct(const Shape &shape) {
  SymInt result(int64_t(1));
  for (const SymInt &dim : shape)
    result = result * dim;
  return result;
}

/// Copies one element of `src` into `dst` (same dtype), bit for bit.
void copyElement(Tensor &dst, int64_t to, const Tensor &src, int64_t from) {
  size_t size = dtypeSize(src.dtype());
  std::memcpy(static_cast<std::byte *>(dst.mutableData()) + to * int64_t(size),
              static_cast<const std::byte *>(src.data()) + from * int64_t(size), size);
}

// ---- nonzero ---------------------------------------------------------------------------------

Expected<Types> inferNonZero(const InferContext &ctx) {
  return Types{TensorType(DType::I64, {SymInt(int64_t(ctx.input(0).rank())), dataDependentDim()})};
}

Status nonZeroKernel(KernelContext &ctx) {
  const Tensor &input = ctx.input(0);
  Ints hits;
  for (int64_t i = 0; i < input.numel(); ++i)
    if (input.getDouble(i) != 0)
      hits.push_back(i);
  size_t rank = input.rank();
  int64_t count = int64_t(hits.size());
  TC_ASSIGN_OR_RETURN(ctx.output(0), Tensor::zeros(DType::I64, {int64_t(rank), count}));
  Tensor &out = ctx.output(0);
  for (int64_t k = 0; k < count; ++k) {
    int64_t rest = hits[size_t(k)];
    for (size_t d = rank; d-- > 0;) {
      out.setInt(int64_t(d) * count + k, rest % input.dim(d));
      rest /= input.dim(d);
    }
  }
  return Status::ok();
}

// ---- unique ----------------------------------------------------------------------------------

Expected<Types> inferUnique(const InferContext &ctx) {
  const TensorType &x = ctx.input(0);
  SymInt unique = dataDependentDim();
  if (ctx.isNone("axis"))
    return Types{TensorType(x.dtype, {unique}), TensorType(DType::I64, {unique}),
                 TensorType(DType::I64, {symProduct(x.shape)}), TensorType(DType::I64, {unique})};
  TC_ASSIGN_OR_RETURN(size_t axis, normalizeShapeDim(ctx.getInt("axis"), x.rank()));
  Shape shape = x.shape;
  shape[axis] = unique;
  return Types{TensorType(x.dtype, shape), TensorType(DType::I64, {unique}),
               TensorType(DType::I64, {x.shape[axis]}), TensorType(DType::I64, {unique})};
}

Status uniqueKernel(KernelContext &ctx) {
  const Tensor &x = ctx.input(0);
  bool flat = ctx.isNone("axis");
  size_t axis = 0;
  if (!flat) {
    TC_ASSIGN_OR_RETURN(axis, normalizeShapeDim(ctx.getInt("axis"), x.rank()));
  }
  Ints shape = flat ? Ints{x.numel()} : x.shape();
  AxisSplit split = splitAtAxis(shape, axis);
  int64_t slices = split.size, sliceSize = split.outer * split.inner;
  // Element e of slice s, with the other dims in row-major order.
  auto at = [&](int64_t s, int64_t e) {
    return (e / split.inner * split.size + s) * split.inner + e % split.inner;
  };
  auto less = [&](int64_t a, int64_t b) {
    for (int64_t e = 0; e < sliceSize; ++e) {
      double va = x.getDouble(at(a, e)), vb = x.getDouble(at(b, e));
      if (va != vb)
        return va < vb;
    }
    return false;
  };
  // Representatives in order of first occurrence; then sorted when asked.
  Ints firsts, inverse(size_t(slices), 0), counts;
  for (int64_t s = 0; s < slices; ++s) {
    size_t found = firsts.size();
    for (size_t u = 0; u < firsts.size() && found == firsts.size(); ++u)
      if (!less(s, firsts[u]) && !less(firsts[u], s))
        found = u;
    if (found == firsts.size()) {
      firsts.push_back(s);
      counts.push_back(0);
    }
    inverse[size_t(s)] = int64_t(found);
    ++counts[found];
  }
  std::vector<size_t> order(firsts.size());
  std::iota(order.begin(), order.end(), 0);
  if (ctx.getBool("sorted"))
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return less(firsts[a], firsts[b]); });
  std::vector<int64_t> rank(order.size());
  for (size_t r = 0; r < order.size(); ++r)
    rank[order[r]] = int64_t(r);
  int64_t count = int64_t(order.size());
  Ints yShape = shape;
  yShape[axis] = count;
  TC_ASSIGN_OR_RETURN(ctx.output(0), Tensor::zeros(x.dtype(), yShape));
  TC_ASSIGN_OR_RETURN(ctx.output(1), Tensor::zeros(DType::I64, {count}));
  TC_ASSIGN_OR_RETURN(ctx.output(2), Tensor::zeros(DType::I64, {slices}));
  TC_ASSIGN_OR_RETURN(ctx.output(3), Tensor::zeros(DType::I64, {count}));
  AxisSplit ySplit = splitAtAxis(yShape, axis);
  for (int64_t r = 0; r < count; ++r) {
    int64_t s = firsts[order[size_t(r)]];
    for (int64_t e = 0; e < sliceSize; ++e)
      copyElement(ctx.output(0), (e / ySplit.inner * count + r) * ySplit.inner + e % ySplit.inner,
                  x, at(s, e));
    ctx.output(1).setInt(r, s);
    ctx.output(3).setInt(r, counts[order[size_t(r)]]);
  }
  for (int64_t s = 0; s < slices; ++s)
    ctx.output(2).setInt(s, rank[size_t(inverse[size_t(s)])]);
  return Status::ok();
}

// ---- compress --------------------------------------------------------------------------------

Expected<Types> inferCompress(const InferContext &ctx) {
  const TensorType &x = ctx.input(0), &condition = ctx.input(1);
  if (condition.rank() != 1)
    return makeError("compress condition must be 1-D, got ", condition.str());
  if (ctx.isNone("axis"))
    return Types{TensorType(x.dtype, {dataDependentDim()})};
  TC_ASSIGN_OR_RETURN(size_t axis, normalizeShapeDim(ctx.getInt("axis"), x.rank()));
  Shape shape = x.shape;
  shape[axis] = dataDependentDim();
  return Types{TensorType(x.dtype, std::move(shape))};
}

Status compressKernel(KernelContext &ctx) {
  const Tensor &x = ctx.input(0), &condition = ctx.input(1);
  bool flat = ctx.isNone("axis");
  size_t axis = 0;
  if (!flat) {
    TC_ASSIGN_OR_RETURN(axis, normalizeShapeDim(ctx.getInt("axis"), x.rank()));
  }
  Ints shape = flat ? Ints{x.numel()} : x.shape();
  if (condition.numel() > shape[axis])
    return makeError("compress condition has ", condition.numel(), " entries for a dim of size ",
                     shape[axis]);
  Ints kept;
  for (int64_t i = 0; i < condition.numel(); ++i)
    if (condition.getDouble(i) != 0)
      kept.push_back(i);
  AxisSplit split = splitAtAxis(shape, axis);
  Ints outShape = shape;
  outShape[axis] = int64_t(kept.size());
  TC_ASSIGN_OR_RETURN(ctx.output(0), Tensor::zeros(x.dtype(), outShape));
  int64_t to = 0;
  for (int64_t o = 0; o < split.outer; ++o)
    for (int64_t k : kept)
      for (int64_t i = 0; i < split.inner; ++i)
        copyElement(ctx.output(0), to++, x, (o * split.size + k) * split.inner + i);
  return Status::ok();
}

// ---- non_max_suppression ---------------------------------------------------------------------

Expected<Types> inferNonMaxSuppression(const InferContext &ctx) {
  const TensorType &boxes = ctx.input(0), &scores = ctx.input(1);
  if (boxes.rank() != 3 || scores.rank() != 3)
    return makeError("non_max_suppression expects boxes [B, N, 4] and scores [B, C, N], got ",
                     boxes.str(), " and ", scores.str());
  TC_RETURN_IF_ERROR(checkFloating(boxes, "boxes"));
  if (boxes.shape[2].isConstant() && boxes.shape[2] != SymInt(int64_t(4)))
    return makeError("boxes must have 4 coordinates per box, got ", boxes.str());
  int64_t centerPointBox = ctx.getInt("center_point_box");
  if (centerPointBox != 0 && centerPointBox != 1)
    return makeError("center_point_box must be 0 or 1, got ", centerPointBox);
  return Types{TensorType(DType::I64, {dataDependentDim(), SymInt(int64_t(3))})};
}

struct Box {
  double y1, x1, y2, x2;
};

Box readBox(const Tensor &boxes, int64_t offset, bool centerPoint) {
  double a = boxes.getDouble(offset), b = boxes.getDouble(offset + 1),
         c = boxes.getDouble(offset + 2), d = boxes.getDouble(offset + 3);
  if (centerPoint) // [x_center, y_center, width, height]
    return {b - d / 2, a - c / 2, b + d / 2, a + c / 2};
  return {std::min(a, c), std::min(b, d), std::max(a, c), std::max(b, d)};
}

bool suppresses(const Box &a, const Box &b, double iouThreshold) {
  double width = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  double height = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
  if (width <= 0 || height <= 0)
    return false;
  double intersection = width * height;
  double areaA = (a.x2 - a.x1) * (a.y2 - a.y1), areaB = (b.x2 - b.x1) * (b.y2 - b.y1);
  double unionArea = areaA + areaB - intersection;
  if (areaA <= 0 || areaB <= 0 || unionArea <= 0)
    return false;
  return intersection / unionArea > iouThreshold;
}

Status nonMaxSuppressionKernel(KernelContext &ctx) {
  const Tensor &boxes = ctx.input(0), &scores = ctx.input(1);
  int64_t batches = boxes.dim(0), count = boxes.dim(1), classes = scores.dim(1);
  if (scores.dim(0) != batches || scores.dim(2) != count)
    return makeError("scores [", join(scores.shape(), ", "), "] do not match boxes [",
                     join(boxes.shape(), ", "), "]");
  int64_t maxOutput = ctx.getInt("max_output_boxes_per_class");
  double iouThreshold = ctx.getFloat("iou_threshold");
  bool centerPoint = ctx.getInt("center_point_box") == 1;
  std::optional<double> scoreThreshold;
  if (!ctx.isNone("score_threshold"))
    scoreThreshold = ctx.getFloat("score_threshold");
  Ints selected; // (batch, class, box) triples
  for (int64_t b = 0; b < batches && maxOutput > 0; ++b) {
    for (int64_t c = 0; c < classes; ++c) {
      std::vector<std::pair<double, int64_t>> candidates;
      for (int64_t i = 0; i < count; ++i) {
        double score = scores.getDouble((b * classes + c) * count + i);
        if (!scoreThreshold || score > *scoreThreshold)
          candidates.emplace_back(score, i);
      }
      // Highest score first; ties keep the lower box index first.
      std::stable_sort(candidates.begin(), candidates.end(),
                       [](const auto &l, const auto &r) { return l.first > r.first; });
      std::vector<Box> kept;
      for (const auto &[score, i] : candidates) {
        if (int64_t(kept.size()) >= maxOutput)
          break;
        Box box = readBox(boxes, (b * count + i) * 4, centerPoint);
        bool suppressed = false;
        for (const Box &other : kept)
          suppressed = suppressed || suppresses(box, other, iouThreshold);
        if (suppressed)
          continue;
        kept.push_back(box);
        selected.insert(selected.end(), {b, c, i});
      }
    }
  }
  TC_ASSIGN_OR_RETURN(ctx.output(0), Tensor::zeros(DType::I64, {int64_t(selected.size() / 3), 3}));
  for (size_t i = 0; i < selected.size(); ++i)
    ctx.output(0).setInt(int64_t(i), selected[i]);
  return Status::ok();
}

// ---- reverse_sequence ------------------------------------------------------------------------

Expected<Types> inferReverseSequence(const InferContext &ctx) {
  const TensorType &input = ctx.input(0), &lengths = ctx.input(1);
  TC_RETURN_IF_ERROR(checkIndexDType(lengths.dtype, "reverse_sequence lengths"));
  if (input.rank() < 2 || lengths.rank() != 1)
    return makeError("reverse_sequence expects input of rank >= 2 and 1-D lengths, got ",
                     input.str(), " and ", lengths.str());
  TC_ASSIGN_OR_RETURN(size_t batch, normalizeDim(ctx.getInt("batch_axis"), input.rank()));
  TC_ASSIGN_OR_RETURN(size_t time, normalizeDim(ctx.getInt("time_axis"), input.rank()));
  if (batch == time || batch > 1 || time > 1)
    return makeError("reverse_sequence: batch_axis and time_axis must be 0 and 1 in some order");
  return Types{input};
}

Status reverseSequenceKernel(KernelContext &ctx) {
  const Tensor &input = ctx.input(0), &lengths = ctx.input(1);
  Tensor &out = ctx.output(0);
  // Inference checked the axes are 0 and 1 in some order, perhaps counted from the end.
  TC_ASSIGN_OR_RETURN(size_t batchAxis, normalizeDim(ctx.getInt("batch_axis"), input.rank()));
  size_t timeAxis = 1 - batchAxis;
  int64_t batches = input.dim(batchAxis), steps = input.dim(timeAxis);
  if (lengths.numel() != batches)
    return makeError("reverse_sequence: ", lengths.numel(), " lengths for a batch of ", batches);
  int64_t inner = product(input.shape(), 2, input.rank());
  auto offset = [&](int64_t b, int64_t t) {
    return (batchAxis == 0 ? b * steps + t : t * batches + b) * inner;
  };
  for (int64_t b = 0; b < batches; ++b) {
    int64_t length = lengths.getInt(b);
    if (length < 0 || length > steps)
      return makeError("reverse_sequence: length ", length, " outside [0, ", steps, "]");
    for (int64_t t = 0; t < steps; ++t) {
      int64_t from = t < length ? length - 1 - t : t;
      for (int64_t i = 0; i < inner; ++i)
        copyElement(out, offset(b, t) + i, input, offset(b, from) + i);
    }
  }
  return Status::ok();
}

// ---- det -------------------------------------------------------------------------------------

Expected<Types> inferDet(const InferContext &ctx) {
  const TensorType &input = ctx.input(0);
  TC_RETURN_IF_ERROR(checkFloating(input, "det input"));
  size_t rank = input.rank();
  if (rank < 2 || (input.shape[rank - 1].isConstant() && input.shape[rank - 2].isConstant() &&
                   input.shape[rank - 1] != input.shape[rank - 2]))
    return makeError("det expects square matrices [..., M, M], got ", input.str());
  return Types{TensorType(input.dtype, Shape(input.shape.begin(), input.shape.end() - 2))};
}

Status detKernel(KernelContext &ctx) {
  const Tensor &input = ctx.input(0);
  Tensor &out = ctx.output(0);
  size_t rank = input.rank();
  int64_t m = input.dim(rank - 1);
  if (input.dim(rank - 2) != m)
    return makeError("det of non-square matrices [", join(input.shape(), ", "), "]");
  std::vector<double> a(size_t(m * m));
  for (int64_t batch = 0; batch < out.numel(); ++batch) {
    for (int64_t i = 0; i < m * m; ++i)
      a[size_t(i)] = input.getDouble(batch * m * m + i);
    // Gaussian elimination with partial pivoting.
    double det = 1;
    for (int64_t col = 0; col < m && det != 0; ++col) {
      int64_t pivot = col;
      for (int64_t row = col + 1; row < m; ++row)
        if (std::abs(a[size_t(row * m + col)]) > std::abs(a[size_t(pivot * m + col)]))
          pivot = row;
      if (a[size_t(pivot * m + col)] == 0) {
        det = 0;
        break;
      }
      if (pivot != col) {
        for (int64_t k = 0; k < m; ++k)
          std::swap(a[size_t(pivot * m + k)], a[size_t(col * m + k)]);
        det = -det;
      }
      double diagonal = a[size_t(col * m + col)];
      det *= diagonal;
      for (int64_t row = col + 1; row < m; ++row) {
        double factor = a[size_t(row * m + col)] / diagonal;
        for (int64_t k = col; k < m; ++k)
          a[size_t(row * m + k)] -= factor * a[size_t(col * m + k)];
      }
    }
    out.setDouble(batch, det);
  }
  return Status::ok();
}

// ---- dft and stft ----------------------------------------------------------------------------

/// Discrete Fourier transform of `count` complex values read through `at` (real, imaginary),
/// written as `bins` complex outputs through `put`.
template <typename In, typename Out>
void transform(int64_t count, int64_t length, int64_t bins, bool inverse, In at, Out put) {
  double sign = inverse ? 1.0 : -1.0;
  for (int64_t k = 0; k < bins; ++k) {
    double re = 0, im = 0;
    for (int64_t n = 0; n < std::min(count, length); ++n) {
      auto [xr, xi] = at(n);
      double angle = sign * 2 * std::numbers::pi * double((k * n) % length) / double(length);
      double c = std::cos(angle), s = std::sin(angle);
      re += xr * c - xi * s;
      im += xr * s + xi * c;
    }
    if (inverse) {
      re /= double(length);
      im /= double(length);
    }
    put(k, re, im);
  }
}

Expected<Types> inferDft(const InferContext &ctx) {
  const TensorType &input = ctx.input(0);
  TC_RETURN_IF_ERROR(checkFloating(input, "dft input"));
  size_t rank = input.rank();
  if (rank < 2 || !input.shape.back().isConstant() ||
      (input.shape.back() != SymInt(int64_t(1)) && input.shape.back() != SymInt(int64_t(2))))
    return makeError("dft expects a trailing dim of 1 (real) or 2 (complex), got ", input.str());
  TC_ASSIGN_OR_RETURN(size_t axis, normalizeShapeDim(ctx.getInt("axis"), rank - 1));
  int64_t length = ctx.getInt("length");
  if (length < 1)
    return makeError("dft length must be positive, got ", length);
  if (ctx.getBool("onesided") && ctx.getBool("inverse"))
    return makeError("dft: onesided inverse transforms are not supported");
  Shape out = input.shape;
  out[axis] = SymInt(ctx.getBool("onesided") ? length / 2 + 1 : length);
  out.back() = SymInt(int64_t(2));
  return Types{TensorType(input.dtype, std::move(out))};
}

Status dftKernel(KernelContext &ctx) {
  const Tensor &input = ctx.input(0);
  Tensor &out = ctx.output(0);
  size_t rank = input.rank();
  TC_ASSIGN_OR_RETURN(size_t axis, normalizeShapeDim(ctx.getInt("axis"), rank - 1));
  int64_t length = ctx.getInt("length");
  bool complex = input.dim(rank - 1) == 2;
  Ints inShape(input.shape().begin(), input.shape().end() - 1);
  Ints outShape(out.shape().begin(), out.shape().end() - 1);
  AxisSplit in = splitAtAxis(inShape, axis), o = splitAtAxis(outShape, axis);
  int64_t parts = complex ? 2 : 1;
  for (int64_t outer = 0; outer < in.outer; ++outer)
    for (int64_t inner = 0; inner < in.inner; ++inner)
      transform(
          in.size, length, o.size, ctx.getBool("inverse"),
          [&](int64_t n) {
            int64_t at = ((outer * in.size + n) * in.inner + inner) * parts;
            return std::pair<double, double>{input.getDouble(at),
                                             complex ? input.getDouble(at + 1) : 0.0};
          },
          [&](int64_t k, double re, double im) {
            int64_t at = ((outer * o.size + k) * o.inner + inner) * 2;
            out.setDouble(at, re);
            out.setDouble(at + 1, im);
          });
  return Status::ok();
}

Expected<Types> inferStft(const InferContext &ctx) {
  const TensorType &signal = ctx.input(0);
  TC_RETURN_IF_ERROR(checkFloating(signal, "stft signal"));
  if (signal.rank() != 3 || !signal.shape[2].isConstant() ||
      (signal.shape[2] != SymInt(int64_t(1)) && signal.shape[2] != SymInt(int64_t(2))))
    return makeError("stft expects a signal [batch, length, 1 or 2], got ", signal.str());
  std::optional<int64_t> samples = signal.shape[1].constant();
  int64_t step = ctx.getInt("frame_step"), length = ctx.getInt("frame_length");
  if (!samples || step < 1 || length < 1 || length > *samples)
    return makeError("stft: frame_length ", length, " and frame_step ", step,
                     " do not fit a static signal ", signal.str());
  if (ctx.hasInput(1) && (ctx.input(1).rank() != 1 || ctx.input(1).shape[0] != SymInt(length)))
    return makeError("stft window ", ctx.input(1).str(), " must have frame_length ", length,
                     " entries");
  int64_t frames = (*samples - length) / step + 1;
  int64_t bins = ctx.getBool("onesided") ? length / 2 + 1 : length;
  return Types{TensorType(signal.dtype,
                          {signal.shape[0], SymInt(frames), SymInt(bins), SymInt(int64_t(2))})};
}

Status stftKernel(KernelContext &ctx) {
  const Tensor &signal = ctx.input(0);
  Tensor &out = ctx.output(0);
  int64_t step = ctx.getInt("frame_step"), length = ctx.getInt("frame_length");
  int64_t samples = signal.dim(1), parts = signal.dim(2);
  int64_t frames = out.dim(1), bins = out.dim(2);
  for (int64_t b = 0; b < signal.dim(0); ++b)
    for (int64_t f = 0; f < frames; ++f)
      transform(
          length, length, bins, false,
          [&](int64_t n) {
            double w = ctx.hasInput(1) ? ctx.input(1).getDouble(n) : 1.0;
            int64_t at = (b * samples + f * step + n) * parts;
            return std::pair<double, double>{w * signal.getDouble(at),
                                             parts == 2 ? w * signal.getDouble(at + 1) : 0.0};
          },
          [&](int64_t k, double re, double im) {
            int64_t at = ((b * frames + f) * bins + k) * 2;
            out.setDouble(at, re);
            out.setDouble(at + 1, im);
          });
  return Status::ok();
}

OpDef dataDependent(OpDef def) {
  def.dataDependentShape = true;
  return def;
}

} // namespace

Status registerMiscOps(OpRegistry &registry) {
  auto boolAttr = [](const char *name, bool value) {
    return attrParam(name, AttrKind::Bool, Attribute(value));
  };
  TC_RETURN_IF_ERROR(registry.add(
      dataDependent(makeOp(OpId::NonZero, {tensorParam("self")}, inferNonZero, nonZeroKernel))));
  TC_RETURN_IF_ERROR(registry.add(dataDependent(makeOp(
      OpId::Unique,
      {tensorParam("self"), optionalAttrParam("axis", AttrKind::Int), boolAttr("sorted", true)},
      inferUnique, uniqueKernel))));
  TC_RETURN_IF_ERROR(registry.add(dataDependent(makeOp(
      OpId::Compress,
      {tensorParam("self"), tensorParam("condition"), optionalAttrParam("axis", AttrKind::Int)},
      inferCompress, compressKernel))));
  TC_RETURN_IF_ERROR(registry.add(dataDependent(
      makeOp(OpId::NonMaxSuppression,
             {tensorParam("boxes"), tensorParam("scores"),
              attrParam("max_output_boxes_per_class", AttrKind::Int, Attribute(int64_t(0))),
              attrParam("iou_threshold", AttrKind::Float, Attribute(0.0)),
              optionalAttrParam("score_threshold", AttrKind::Float),
              attrParam("center_point_box", AttrKind::Int, Attribute(int64_t(0)))},
             inferNonMaxSuppression, nonMaxSuppressionKernel))));
  TC_RETURN_IF_ERROR(
      registry.add(makeOp(OpId::ReverseSequence,
                          {tensorParam("self"), tensorParam("lengths"),
                           attrParam("batch_axis", AttrKind::Int, Attribute(int64_t(1))),
                           attrParam("time_axis", AttrKind::Int, Attribute(int64_t(0)))},
                          inferReverseSequence, reverseSequenceKernel)));
  TC_RETURN_IF_ERROR(registry.add(makeOp(OpId::Det, {tensorParam("self")}, inferDet, detKernel)));
  TC_RETURN_IF_ERROR(registry.add(makeOp(OpId::Dft,
                                         {tensorParam("self"), attrParam("axis", AttrKind::Int),
                                          attrParam("length", AttrKind::Int),
                                          boolAttr("inverse", false), boolAttr("onesided", false)},
                                         inferDft, dftKernel)));
  TC_RETURN_IF_ERROR(registry.add(makeOp(
      OpId::Stft,
      {tensorParam("signal"), optionalTensorParam("window"), attrParam("frame_step", AttrKind::Int),
       attrParam("frame_length", AttrKind::Int), boolAttr("onesided", true)},
      inferStft, stftKernel)));
  return Status::ok();
}

} // namespace tensorc::ops
