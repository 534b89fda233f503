// ONNX converters for data-dependent and miscellaneous ops: NonZero, Unique, Compress,
// NonMaxSuppression, GridSample, MaxPool's Indices output, training-mode BatchNormalization,
// MaxUnpool, ReverseSequence, RoiAlign, Det, DFT, STFT, the window/mel-filter generators, and
// the control flow ops If, Loop and Scan (resolved or unrolled at import time).
#include "ConvertContext.h"
#include "NNHelpers.h"
#include "OnnxTensor.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace tensorc::onnx {

namespace {

using Ints = std::vector<int64_t>;

/// The converters of OnnxOpsNN.cpp that the ones here extend, looked up when the table is built
/// (addMiscConverters runs last) and called for the cases they already handle.
ConvertFn baseMaxPool = nullptr;
ConvertFn baseBatchNormalization = nullptr;

Expected<Ints> staticShape(ConvertContext &c, Value *value, const char *what) {
  std::optional<Ints> shape = value->type().staticShape();
  if (!shape)
    return c.error(strCat(what, " must have a static shape, got ", value->type().str()));
  return *shape;
}

/// Output dtype from an ONNX `output_datatype` attribute (default FLOAT).
Expected<DType> outputDType(ConvertContext &c) {
  int64_t elemType = c.intAttr("output_datatype", 1);
  std::optional<DType> dtype = dtypeFromOnnx(int32_t(elemType));
  if (!dtype)
    return c.error(strCat("unsupported output_datatype ", onnxTypeName(int32_t(elemType))));
  return *dtype;
}

/// A scalar integer input known at import time.
Expected<int64_t> constantScalar(ConvertContext &c, size_t i, const std::string &what) {
  TC_ASSIGN_OR_RETURN(Ints values, c.constantInts(i, what));
  if (values.size() != 1)
    return c.error(strCat(what, " must hold one value, got ", values.size()));
  return values[0];
}

Expected<double> constantScalarFloat(ConvertContext &c, size_t i, const std::string &what) {
  TC_ASSIGN_OR_RETURN(std::vector<double> values, c.constantFloats(i, what));
  if (values.size() != 1)
    return c.error(strCat(what, " must hold one value, got ", values.size()));
  return values[0];
}

// ---- Data-dependent selections ---------------------------------------------------------------

Status convertNonZero(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  TC_ASSIGN_OR_RETURN(Value * y, c.emit("prims.nonzero", {x}));
  return c.setOutput(0, y);
}

Status convertUnique(ConvertContext &c) {
  TC_RETURN_IF_ERROR(c.checkAttrs({"axis", "sorted"}));
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  AttrMap attrs;
  if (c.hasAttr("axis"))
    attrs.emplace("axis", Attribute(c.intAttr("axis", 0)));
  attrs.emplace("sorted", Attribute(c.intAttr("sorted", 1) != 0));
  TC_ASSIGN_OR_RETURN(std::vector<Value *> results,
                      c.emitMulti("prims.unique", {x}, std::move(attrs)));
  for (size_t i = 0; i < results.size(); ++i)
    TC_RETURN_IF_ERROR(c.setOutput(i, results[i]));
  return Status::ok();
}

Status convertCompress(ConvertContext &c) {
  TC_RETURN_IF_ERROR(c.checkAttrs({"axis"}));
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  TC_ASSIGN_OR_RETURN(Value * condition, c.input(1));
  AttrMap attrs;
  if (c.hasAttr("axis"))
    attrs.emplace("axis", Attribute(c.intAttr("axis", 0)));
  TC_ASSIGN_OR_RETURN(Value * y, c.emit("prims.compress", {x, condition}, std::move(attrs)));
  return c.setOutput(0, y);
}

Status convertNonMaxSuppression(ConvertContext &c) {
  TC_RETURN_IF_ERROR(c.checkAttrs({"center_point_box"}));
  TC_ASSIGN_OR_RETURN(Value * boxes, c.input(0));
  TC_ASSIGN_OR_RETURN(Value * scores, c.input(1));
  AttrMap attrs;
  attrs.emplace("center_point_box", Attribute(c.intAttr("center_point_box", 0)));
  if (c.hasInput(2)) {
    TC_ASSIGN_OR_RETURN(int64_t limit, constantScalar(c, 2, "max_output_boxes_per_class"));
    attrs.emplace("max_output_boxes_per_class", Attribute(limit));
  }
  if (c.hasInput(3)) {
    TC_ASSIGN_OR_RETURN(double iou, constantScalarFloat(c, 3, "iou_threshold"));
    attrs.emplace("iou_threshold", Attribute(iou));
  }
  if (c.hasInput(4)) {
    TC_ASSIGN_OR_RETURN(double score, constantScalarFloat(c, 4, "score_threshold"));
    attrs.emplace("score_threshold", Attribute(score));
  }
  TC_ASSIGN_OR_RETURN(Value * y,
                      c.emit("prims.non_max_suppression", {boxes, scores}, std::move(attrs)));
  return c.setOutput(0, y);
}

// ---- Sampling and pooling --------------------------------------------------------------------

Status convertGridSample(ConvertContext &c) {
  TC_RETURN_IF_ERROR(c.checkAttrs({"mode", "padding_mode", "align_corners"}));
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  TC_ASSIGN_OR_RETURN(Value * grid, c.input(1));
  AttrMap attrs;
  attrs.emplace("mode", Attribute(c.stringAttr("mode", c.opset() >= 20 ? "linear" : "bilinear")));
  attrs.emplace("padding_mode", Attribute(c.stringAttr("padding_mode", "zeros")));
  attrs.emplace("align_corners", Attribute(c.intAttr("align_corners", 0) != 0));
  TC_ASSIGN_OR_RETURN(Value * y, c.emit("prims.grid_sample", {x, grid}, std::move(attrs)));
  return c.setOutput(0, y);
}

/// MaxPool with its Indices output; the plain case goes to the NN converter.
Status convertMaxPool(ConvertContext &c) {
  if (!c.hasOutput(1))
    return baseMaxPool(c);
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  TC_ASSIGN_OR_RETURN(Ints shape, staticShape(c, x, "the MaxPool input"));
  Ints kernel = c.intsAttr("kernel_shape");
  size_t dims = kernel.size();
  if (dims == 0 || shape.size() != dims + 2)
    return c.error(
        strCat("kernel_shape ", kernel.size(), " does not fit the input ", x->type().str()));
  TC_ASSIGN_OR_RETURN(kernel, nn::windowList(c, "kernel_shape", dims, 1, 1));
  TC_ASSIGN_OR_RETURN(Ints strides, nn::windowList(c, "strides", dims, 1, 1));
  TC_ASSIGN_OR_RETURN(Ints dilations, nn::windowList(c, "dilations", dims, 1, 1));
  TC_ASSIGN_OR_RETURN(Ints pads, nn::windowList(c, "pads", 2 * dims, 0, 0));
  std::string autoPad = c.stringAttr("auto_pad", "NOTSET");
  if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t d = 0; d < dims; ++d) {
      int64_t out = (shape[2 + d] + strides[d] - 1) / strides[d];
      int64_t total = std::max<int64_t>(0, (out - 1) * strides[d] + (kernel[d] - 1) * dilations[d] +
                                               1 - shape[2 + d]);
      pads[d] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pads[dims + d] = total - pads[d];
    }
  } else if (autoPad == "VALID") {
    pads.assign(2 * dims, 0);
  } else if (autoPad != "NOTSET") {
    return c.error(strCat("unknown auto_pad '", autoPad, "'"));
  }
  AttrMap attrs;
  attrs.emplace("kernel_size", Attribute(kernel));
  attrs.emplace("stride", Attribute(strides));
  attrs.emplace("padding", Attribute(pads));
  attrs.emplace("dilation", Attribute(dilations));
  attrs.emplace("ceil_mode", Attribute(c.intAttr("ceil_mode", 0) != 0));
  attrs.emplace("storage_order", Attribute(c.intAttr("storage_order", 0)));
  TC_ASSIGN_OR_RETURN(std::vector<Value *> results,
                      c.emitMulti("prims.max_pool_with_indices", {x}, std::move(attrs)));
  TC_RETURN_IF_ERROR(c.setOutput(0, results[0]));
  return c.setOutput(1, results[1]);
}

/// MaxUnpool: scatters the values into a zero tensor of the output shape at their flat indices.
Status convertMaxUnpool(ConvertContext &c) {
  TC_RETURN_IF_ERROR(c.checkAttrs({"kernel_shape", "strides", "pads"}));
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  TC_ASSIGN_OR_RETURN(Value * indices, c.input(1));
  TC_ASSIGN_OR_RETURN(Ints shape, staticShape(c, x, "the MaxUnpool input"));
  Ints kernel = c.intsAttr("kernel_shape");
  size_t dims = kernel.size();
  if (dims == 0 || shape.size() != dims + 2)
    return c.error(strCat("kernel_shape does not fit the input ", x->type().str()));
  TC_ASSIGN_OR_RETURN(kernel, nn::windowList(c, "kernel_shape", dims, 1, 1));
  TC_ASSIGN_OR_RETURN(Ints strides, nn::windowList(c, "strides", dims, 1, 1));
  TC_ASSIGN_OR_RETURN(Ints pads, nn::windowList(c, "pads", 2 * dims, 0, 0));
  // The indices address the default output shape; a larger output_shape pads at the end.
  Ints inferred = {shape[0], shape[1]};
  for (size_t d = 0; d < dims; ++d) {
    int64_t size = 0;
    if (shape[2 + d] < 1 || __builtin_mul_overflow(shape[2 + d] - 1, strides[d], &size) ||
        __builtin_add_overflow(size, kernel[d] - pads[d] - pads[dims + d], &size) || size < 0)
      return c.error(strCat("the unpooled size of spatial dim ", d, " is out of range"));
    inferred.push_back(size);
  }
  Ints outShape = inferred;
  if (c.hasInput(2)) {
    TC_ASSIGN_OR_RETURN(outShape, c.constantInts(2, "output_shape"));
    if (outShape.size() != shape.size())
      return c.error(strCat("output_shape must have ", shape.size(), " entries"));
    for (size_t d = 0; d < outShape.size(); ++d)
      if (outShape[d] < inferred[d])
        return c.error(strCat("output_shape [", join(outShape, ", "),
                              "] is smaller than the unpooled shape [", join(inferred, ", "), "]"));
  }
  int64_t total = 1, count = 1;
  for (int64_t dim : inferred)
    if (__builtin_mul_overflow(total, dim, &total))
      return c.error("the unpooled shape overflows 64 bits");
  for (int64_t dim : shape)
    count *= dim; // the input's own size, checked at import
  AttrMap fill;
  fill.emplace("size", Attribute(Ints{total}));
  fill.emplace("fill_value", Attribute(0.0));
  fill.emplace("dtype", Attribute(x->type().dtype));
  TC_ASSIGN_OR_RETURN(Value * zeros, c.emit("aten.full", {}, std::move(fill)));
  TC_ASSIGN_OR_RETURN(Value * flatValues, reshape(c, x, Ints{count}));
  TC_ASSIGN_OR_RETURN(Value * flatIndices, reshape(c, indices, Ints{count}));
  AttrMap attrs;
  attrs.emplace("dim", Attribute(int64_t(0)));
  TC_ASSIGN_OR_RETURN(Value * scattered,
                      c.emit("aten.scatter", {zeros, flatIndices, flatValues}, std::move(attrs)));
  TC_ASSIGN_OR_RETURN(Value * y, reshape(c, scattered, inferred));
  if (outShape != inferred) {
    Ints padding; // aten.pad lists the last dim first
    for (size_t d = outShape.size(); d-- > 0;)
      padding.insert(padding.end(), {0, outShape[d] - inferred[d]});
    AttrMap padAttrs;
    padAttrs.emplace("pad", Attribute(padding));
    padAttrs.emplace("mode", Attribute("constant"));
    padAttrs.emplace("value", Attribute(0.0));
    TC_ASSIGN_OR_RETURN(y, c.emit("aten.pad", {y}, std::move(padAttrs)));
  }
  return c.setOutput(0, y);
}

Status convertRoiAlign(ConvertContext &c) {
  TC_RETURN_IF_ERROR(c.checkAttrs({"mode", "output_height", "output_width", "sampling_ratio",
                                   "spatial_scale", "coordinate_transformation_mode"}));
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  TC_ASSIGN_OR_RETURN(Value * rois, c.input(1));
  TC_ASSIGN_OR_RETURN(Value * batch, c.input(2));
  AttrMap attrs;
  attrs.emplace("mode", Attribute(c.stringAttr("mode", "avg")));
  attrs.emplace("output_height", Attribute(c.intAttr("output_height", 1)));
  attrs.emplace("output_width", Attribute(c.intAttr("output_width", 1)));
  attrs.emplace("sampling_ratio", Attribute(c.intAttr("sampling_ratio", 0)));
  attrs.emplace("spatial_scale", Attribute(c.floatAttr("spatial_scale", 1.0)));
  // Opset 10 had no choice: its behaviour is output_half_pixel.
  attrs.emplace("coordinate_transformation_mode",
                Attribute(c.stringAttr("coordinate_transformation_mode",
                                       c.opset() >= 16 ? "half_pixel" : "output_half_pixel")));
  TC_ASSIGN_OR_RETURN(Value * y, c.emit("prims.roi_align", {x, rois, batch}, std::move(attrs)));
  return c.setOutput(0, y);
}

// ---- Normalization ---------------------------------------------------------------------------

/// Training-mode BatchNormalization: normalizes with the batch statistics and returns the
/// updated running statistics (running * momentum + batch * (1 - momentum)).
Status convertBatchNormalization(ConvertContext &c) {
  if (c.intAttr("training_mode", 0) == 0)
    return baseBatchNormalization(c);
  TC_RETURN_IF_ERROR(c.checkAttrs({"epsilon", "momentum", "training_mode"}));
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  TC_ASSIGN_OR_RETURN(Value * scale, c.input(1));
  TC_ASSIGN_OR_RETURN(Value * bias, c.input(2));
  TC_ASSIGN_OR_RETURN(Value * runningMean, c.input(3));
  TC_ASSIGN_OR_RETURN(Value * runningVar, c.input(4));
  size_t rank = x->type().rank();
  if (rank < 2)
    return c.error(strCat("expected an input of rank >= 2, got ", x->type().str()));
  Ints dims{0};
  for (size_t d = 2; d < rank; ++d)
    dims.push_back(int64_t(d));
  AttrMap meanAttrs;
  meanAttrs.emplace("dim", Attribute(dims));
  TC_ASSIGN_OR_RETURN(Value * mean, c.emit("aten.mean", {x}, std::move(meanAttrs)));
  AttrMap varAttrs;
  varAttrs.emplace("dim", Attribute(dims));
  varAttrs.emplace("correction", Attribute(int64_t(0)));
  varAttrs.emplace("keepdim", Attribute(false));
  TC_ASSIGN_OR_RETURN(Value * var, c.emit("aten.var", {x}, std::move(varAttrs)));
  AttrMap normAttrs;
  normAttrs.emplace("eps", Attribute(c.floatAttr("epsilon", 1e-5)));
  TC_ASSIGN_OR_RETURN(Value * y,
                      c.emit("aten.batch_norm", {x, scale, bias, mean, var}, std::move(normAttrs)));
  TC_RETURN_IF_ERROR(c.setOutput(0, y));
  double momentum = c.floatAttr("momentum", 0.9);
  DType dtype = x->type().dtype;
  TC_ASSIGN_OR_RETURN(Value * keep, c.scalar(momentum, dtype));
  TC_ASSIGN_OR_RETURN(Value * take, c.scalar(1 - momentum, dtype));
  Value *stats[2][2] = {{runningMean, mean}, {runningVar, var}};
  for (size_t i = 0; i < 2; ++i) {
    TC_ASSIGN_OR_RETURN(Value * old, c.emit("aten.mul", {stats[i][0], keep}));
    TC_ASSIGN_OR_RETURN(Value * fresh, c.emit("aten.mul", {stats[i][1], take}));
    TC_ASSIGN_OR_RETURN(Value * updated, c.emit("aten.add", {old, fresh}));
    TC_RETURN_IF_ERROR(c.setOutput(1 + i, updated));
  }
  return Status::ok();
}

// ---- Sequences and linear algebra ------------------------------------------------------------

Status convertReverseSequence(ConvertContext &c) {
  TC_RETURN_IF_ERROR(c.checkAttrs({"batch_axis", "time_axis"}));
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  TC_ASSIGN_OR_RETURN(Value * lengths, c.input(1));
  AttrMap attrs;
  attrs.emplace("batch_axis", Attribute(c.intAttr("batch_axis", 1)));
  attrs.emplace("time_axis", Attribute(c.intAttr("time_axis", 0)));
  TC_ASSIGN_OR_RETURN(Value * y, c.emit("prims.reverse_sequence", {x, lengths}, std::move(attrs)));
  return c.setOutput(0, y);
}

Status convertDet(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  TC_ASSIGN_OR_RETURN(Value * y, c.emit("prims.det", {x}));
  return c.setOutput(0, y);
}

// ---- Signal processing -----------------------------------------------------------------------

Status convertDft(ConvertContext &c) {
  TC_RETURN_IF_ERROR(c.checkAttrs({"axis", "inverse", "onesided"}));
  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  int64_t rank = int64_t(x->type().rank());
  int64_t axis = c.intAttr("axis", 1);
  if (c.opset() >= 20) {
    axis = -2;
    if (c.hasInput(2)) {
      TC_ASSIGN_OR_RETURN(axis, constantScalar(c, 2, "axis"));
    }
  }
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank - 1)
    return c.error(strCat("axis ", axis, " is out of range for ", x->type().str()));
  int64_t length = 0;
  if (c.hasInput(1)) {
    TC_ASSIGN_OR_RETURN(length, constantScalar(c, 1, "dft_length"));
  } else {
    std::optional<int64_t> size = x->type().shape[size_t(axis)].constant();
    if (!size)
      return c.error(strCat("the transformed dim must be static, got ", x->type().str()));
    length = *size;
  }
  AttrMap attrs;
  attrs.emplace("axis", Attribute(axis));
  attrs.emplace("length", Attribute(length));
  attrs.emplace("inverse", Attribute(c.intAttr("inverse", 0) != 0));
  attrs.emplace("onesided", Attribute(c.intAttr("onesided", 0) != 0));
  TC_ASSIGN_OR_RETURN(Value * y, c.emit("prims.dft", {x}, std::move(attrs)));
  return c.setOutput(0, y);
}

Status convertStft(ConvertContext &c) {
  TC_RETURN_IF_ERROR(c.checkAttrs({"onesided"}));
  TC_ASSIGN_OR_RETURN(Value * signal, c.input(0));
  TC_ASSIGN_OR_RETURN(int64_t step, constantScalar(c, 1, "frame_step"));
  Value *window = nullptr;
  int64_t length = 0;
  if (c.hasInput(2)) {
    TC_ASSIGN_OR_RETURN(window, c.input(2));
    if (window->type().rank() != 1 || !window->type().shape[0].isConstant())
      return c.error(strCat("the window must be 1-D and static, got ", window->type().str()));
    length = *window->type().shape[0].constant();
  }
  if (c.hasInput(3)) {
    TC_ASSIGN_OR_RETURN(length, constantScalar(c, 3, "frame_length"));
  }
  if (length == 0)
    return c.error("STFT needs a window or a frame_length");
  AttrMap attrs;
  attrs.emplace("frame_step", Attribute(step));
  attrs.emplace("frame_length", Attribute(length));
  attrs.emplace("onesided", Attribute(c.intAttr("onesided", 1) != 0));
  TC_ASSIGN_OR_RETURN(Value * y, c.emit("prims.stft", {signal, window}, std::move(attrs)));
  return c.setOutput(0, y);
}

enum class WindowKind { Hann, Hamming, Blackman };

/// HannWindow, HammingWindow, BlackmanWindow: generated at import time from the constant size.
template <WindowKind Kind> Status convertWindow(ConvertContext &c) {
  TC_RETURN_IF_ERROR(c.checkAttrs({"output_datatype", "periodic"}));
  TC_ASSIGN_OR_RETURN(int64_t size, constantScalar(c, 0, "size"));
  TC_ASSIGN_OR_RETURN(DType dtype, outputDType(c));
  if (size < 0)
    return c.error(strCat("negative window size ", size));
  bool periodic = c.intAttr("periodic", 1) != 0;
  double n = double(periodic ? size : size - 1);
  TC_ASSIGN_OR_RETURN(Tensor window, Tensor::zeros(dtype, {size}));
  for (int64_t i = 0; i < size; ++i) {
    double phase = 2 * std::numbers::pi * double(i) / n, value = 0;
    switch (Kind) {
    case WindowKind::Hann:
      value = 0.5 - 0.5 * std::cos(phase);
      break;
    case WindowKind::Hamming:
      value = 25.0 / 46 - (1 - 25.0 / 46) * std::cos(phase);
      break;
    case WindowKind::Blackman:
      value = 0.42 - 0.5 * std::cos(phase) + 0.08 * std::cos(2 * phase);
      break;
    }
    window.setDouble(i, size == 1 ? 1.0 : value);
  }
  TC_ASSIGN_OR_RETURN(Value * y, c.constant(std::move(window)));
  return c.setOutput(0, y);
}

/// MelWeightMatrix: triangular mel filters over the DFT bins, generated at import time with the
/// ONNX reference's integer bin placement.
Status convertMelWeightMatrix(ConvertContext &c) {
  TC_RETURN_IF_ERROR(c.checkAttrs({"output_datatype"}));
  TC_ASSIGN_OR_RETURN(int64_t melBins, constantScalar(c, 0, "num_mel_bins"));
  TC_ASSIGN_OR_RETURN(int64_t dftLength, constantScalar(c, 1, "dft_length"));
  TC_ASSIGN_OR_RETURN(int64_t sampleRate, constantScalar(c, 2, "sample_rate"));
  TC_ASSIGN_OR_RETURN(double lowHertz, constantScalarFloat(c, 3, "lower_edge_hertz"));
  TC_ASSIGN_OR_RETURN(double highHertz, constantScalarFloat(c, 4, "upper_edge_hertz"));
  TC_ASSIGN_OR_RETURN(DType dtype, outputDType(c));
  if (melBins < 1 || dftLength < 1 || sampleRate < 1)
    return c.error("num_mel_bins, dft_length and sample_rate must be positive");
  int64_t spectrogramBins = dftLength / 2 + 1;
  auto toMel = [](double hertz) { return 2595 * std::log10(1 + hertz / 700); };
  double lowMel = toMel(lowHertz), step = (toMel(highHertz) - lowMel) / double(melBins + 2);
  Ints bins;
  for (int64_t i = 0; i < melBins + 2; ++i) {
    double hertz = 700 * (std::pow(10.0, (double(i) * step + lowMel) / 2595) - 1);
    bins.push_back(int64_t(std::floor(double(dftLength + 1) * hertz / double(sampleRate))));
  }
  TC_ASSIGN_OR_RETURN(Tensor matrix, Tensor::zeros(dtype, {spectrogramBins, melBins}));
  auto set = [&](int64_t row, int64_t column, double value) -> Status {
    if (row < 0 || row >= spectrogramBins)
      return c.error(
          strCat("mel filter bin ", row, " is outside the ", spectrogramBins, " spectrogram bins"));
    matrix.setDouble(row * melBins + column, value);
    return Status::ok();
  };
  for (int64_t i = 0; i < melBins; ++i) {
    int64_t low = bins[size_t(i)], center = bins[size_t(i + 1)], high = bins[size_t(i + 2)];
    if (center == low) {
      TC_RETURN_IF_ERROR(set(center, i, 1.0));
    } else {
      for (int64_t j = low; j <= center; ++j)
        TC_RETURN_IF_ERROR(set(j, i, double(j - low) / double(center - low)));
    }
    for (int64_t j = center; j < high; ++j)
      TC_RETURN_IF_ERROR(set(j, i, double(high - j) / double(high - center)));
  }
  TC_ASSIGN_OR_RETURN(Value * y, c.constant(std::move(matrix)));
  return c.setOutput(0, y);
}

// ---- Control flow ----------------------------------------------------------------------------
// If, Loop and Scan are resolved at import time: If inlines the branch its known condition
// picks, Loop and Scan inline their body once per iteration.

/// Unrolled iterations at most; a larger Loop or Scan is rejected rather than bloating the graph
/// (and Graph::uniqueName probes suffixes linearly, so import time grows with its square).
constexpr int64_t kMaxUnrolledIterations = 1000;

/// The data of `value` when a prims.constant produces it.
std::optional<Tensor> knownTensor(Value *value) {
  Node *node = value->producer();
  if (!node || node->opId() != OpId::Constant)
    return std::nullopt;
  return node->attr("value").asTensor();
}

Expected<Value *> sliceAt(ConvertContext &c, Value *value, int64_t dim, int64_t index) {
  TC_ASSIGN_OR_RETURN(Value * row, slice(c, value, dim, index, index + 1));
  return squeezeDim(c, row, dim);
}

/// Stacks same-shaped values along a new dim `dim` (unsqueeze + cat).
Expected<Value *> stack(ConvertContext &c, const std::vector<Value *> &values, int64_t dim) {
  std::vector<Value *> parts;
  for (Value *value : values) {
    TC_ASSIGN_OR_RETURN(Value * part, unsqueezeDim(c, value, dim));
    parts.push_back(part);
  }
  if (parts.size() == 1)
    return parts[0];
  AttrMap attrs;
  attrs.emplace("dim", Attribute(dim));
  return c.emit("aten.cat", std::move(parts), std::move(attrs));
}

/// An empty [0, ...] tensor for a scan output of a loop that ran zero times, built from the
/// body output's declared type (which must be static).
Expected<Value *> emptyScanOutput(ConvertContext &c, const ::onnx::ValueInfoProto &info) {
  const auto &type = info.type().tensor_type();
  std::optional<DType> dtype = dtypeFromOnnx(type.elem_type());
  bool known = dtype.has_value() && type.has_shape();
  Ints shape{0};
  for (int i = 0; known && i < type.shape().dim_size(); ++i) {
    known = type.shape().dim(i).has_dim_value();
    shape.push_back(type.shape().dim(i).dim_value());
  }
  if (!known)
    return c.error(strCat("the loop runs zero times and scan output '", info.name(),
                          "' has no static declared type to build an empty result from"));
  TC_ASSIGN_OR_RETURN(Tensor empty, Tensor::zeros(*dtype, std::move(shape)));
  return c.constant(std::move(empty));
}

/// A condition known at import time as a bool; `what` names it in the error.
Expected<bool> knownCondition(ConvertContext &c, const std::optional<Tensor> &tensor,
                              const std::string &what) {
  if (!tensor)
    return c.error(strCat(what, " must be known at import time"));
  if (tensor->numel() != 1)
    return c.error(strCat(what, " must hold one value, got ", tensor->numel()));
  return tensor->getInt(0) != 0;
}

Status convertIf(ConvertContext &c) {
  TC_RETURN_IF_ERROR(c.checkAttrs({"then_branch", "else_branch"}));
  std::optional<Tensor> condition = c.constantInput(0);
  if (!condition)
    return c.error("the condition must be known at import time");
  TC_ASSIGN_OR_RETURN(bool taken, knownCondition(c, condition, "the condition"));
  TC_ASSIGN_OR_RETURN(const ::onnx::GraphProto *branch,
                      c.graphAttr(taken ? "then_branch" : "else_branch"));
  TC_ASSIGN_OR_RETURN(std::vector<Value *> outputs, c.inlineGraph(*branch, {}));
  if (outputs.size() < c.numOutputs())
    return c.error(
        strCat("the branch returns ", outputs.size(), " values for ", c.numOutputs(), " outputs"));
  for (size_t i = 0; i < c.numOutputs(); ++i)
    if (c.hasOutput(i))
      TC_RETURN_IF_ERROR(c.setOutput(i, outputs[i]));
  return Status::ok();
}

/// Loop: unrolled while the trip count and the condition, known at import time, allow.
Status convertLoop(ConvertContext &c) {
  TC_RETURN_IF_ERROR(c.checkAttrs({"body"}));
  TC_ASSIGN_OR_RETURN(const ::onnx::GraphProto *body, c.graphAttr("body"));
  int64_t tripCount = kMaxUnrolledIterations + 1;
  if (c.hasInput(0)) {
    if (!c.constantInput(0))
      return c.error("the trip count must be known at import time");
    TC_ASSIGN_OR_RETURN(tripCount, constantScalar(c, 0, "the trip count"));
  }
  bool condition = true;
  if (c.hasInput(1)) {
    TC_ASSIGN_OR_RETURN(condition, knownCondition(c, c.constantInput(1), "the initial condition"));
  }
  std::vector<Value *> carried;
  for (size_t i = 2; i < c.numInputs(); ++i) {
    TC_ASSIGN_OR_RETURN(Value * value, c.input(i));
    carried.push_back(value);
  }
  if (body->input_size() != int(carried.size()) + 2 ||
      body->output_size() < int(carried.size()) + 1)
    return c.error(strCat("the body takes ", body->input_size(), " inputs and returns ",
                          body->output_size(), " values for ", carried.size(),
                          " loop-carried values"));
  size_t numScans = size_t(body->output_size()) - carried.size() - 1;
  std::vector<std::vector<Value *>> scans(numScans);
  int64_t iteration = 0;
  for (; iteration < tripCount && condition; ++iteration) {
    if (iteration == kMaxUnrolledIterations)
      return c.error(strCat("the loop runs more than ", kMaxUnrolledIterations,
                            " iterations, too many to unroll"));
    TC_ASSIGN_OR_RETURN(Value * index, c.scalar(double(iteration), DType::I64));
    TC_ASSIGN_OR_RETURN(Value * flag, c.scalar(1.0, DType::Bool));
    std::vector<Value *> inputs{index, flag};
    inputs.insert(inputs.end(), carried.begin(), carried.end());
    TC_ASSIGN_OR_RETURN(std::vector<Value *> outputs, c.inlineGraph(*body, inputs));
    TC_ASSIGN_OR_RETURN(condition,
                        knownCondition(c, knownTensor(outputs[0]), "the body's condition output"));
    for (size_t k = 0; k < carried.size(); ++k)
      carried[k] = outputs[1 + k];
    for (size_t k = 0; k < numScans; ++k)
      scans[k].push_back(outputs[1 + carried.size() + k]);
  }
  for (size_t k = 0; k < carried.size(); ++k)
    if (c.hasOutput(k))
      TC_RETURN_IF_ERROR(c.setOutput(k, carried[k]));
  for (size_t k = 0; k < numScans; ++k) {
    if (!c.hasOutput(carried.size() + k))
      continue;
    Value *stacked = nullptr;
    if (scans[k].empty()) {
      TC_ASSIGN_OR_RETURN(stacked, emptyScanOutput(c, body->output(int(1 + carried.size() + k))));
    } else {
      TC_ASSIGN_OR_RETURN(stacked, stack(c, scans[k], 0));
    }
    TC_RETURN_IF_ERROR(c.setOutput(carried.size() + k, stacked));
  }
  return Status::ok();
}

/// Where and in which direction Scan walks its scan inputs and stacks its scan outputs.
struct ScanLayout {
  Ints inputAxes, outputAxes;
  std::vector<bool> inputReversed, outputReversed;
};

/// Runs a scan body over `scanInputs` (axes already normalized), starting from `states`;
/// returns the final states followed by the stacked scan outputs.
Expected<std::vector<Value *>> unrollScan(ConvertContext &c, const ::onnx::GraphProto &body,
                                          std::vector<Value *> states,
                                          const std::vector<Value *> &scanInputs,
                                          const ScanLayout &layout) {
  if (body.input_size() != int(states.size() + scanInputs.size()) ||
      body.output_size() < int(states.size()))
    return c.error(strCat("the body takes ", body.input_size(), " inputs and returns ",
                          body.output_size(), " values for ", states.size(), " states and ",
                          scanInputs.size(), " scan inputs"));
  std::optional<int64_t> length;
  for (size_t j = 0; j < scanInputs.size(); ++j) {
    const TensorType &type = scanInputs[j]->type();
    if (layout.inputAxes[j] < 0 || size_t(layout.inputAxes[j]) >= type.rank())
      return c.error(strCat("scan axis ", layout.inputAxes[j], " is out of range for scan input ",
                            type.str()));
    std::optional<int64_t> size = type.shape[size_t(layout.inputAxes[j])].constant();
    if (!size)
      return c.error(strCat("the scanned length must be static, got ", type.str()));
    if (length && *length != *size)
      return c.error(strCat("scan inputs have different lengths ", *length, " and ", *size));
    length = size;
  }
  if (!length || *length == 0)
    return c.error("Scan needs at least one scan input of nonzero length");
  if (*length > kMaxUnrolledIterations)
    return c.error(strCat("the scan runs ", *length, " iterations, more than the ",
                          kMaxUnrolledIterations, " it unrolls"));
  size_t numScans = size_t(body.output_size()) - states.size();
  if (layout.outputAxes.size() != numScans || layout.outputReversed.size() != numScans)
    return c.error(
        strCat("scan_output_axes and scan_output_directions must list ", numScans, " entries"));
  std::vector<std::vector<Value *>> scans(numScans);
  for (int64_t t = 0; t < *length; ++t) {
    std::vector<Value *> inputs = states;
    for (size_t j = 0; j < scanInputs.size(); ++j) {
      int64_t index = layout.inputReversed[j] ? *length - 1 - t : t;
      TC_ASSIGN_OR_RETURN(Value * slice, sliceAt(c, scanInputs[j], layout.inputAxes[j], index));
      inputs.push_back(slice);
    }
    TC_ASSIGN_OR_RETURN(std::vector<Value *> outputs, c.inlineGraph(body, inputs));
    for (size_t k = 0; k < states.size(); ++k)
      states[k] = outputs[k];
    for (size_t k = 0; k < numScans; ++k)
      scans[k].push_back(outputs[states.size() + k]);
  }
  std::vector<Value *> results = states;
  for (size_t k = 0; k < numScans; ++k) {
    if (layout.outputReversed[k])
      std::reverse(scans[k].begin(), scans[k].end());
    int64_t axis = layout.outputAxes[k], rank = int64_t(scans[k][0]->type().rank()) + 1;
    if (axis < 0)
      axis += rank;
    if (axis < 0 || axis >= rank)
      return c.error(strCat("scan output axis ", layout.outputAxes[k], " is out of range for ",
                            scans[k][0]->type().str()));
    TC_ASSIGN_OR_RETURN(Value * stacked, stack(c, scans[k], axis));
    results.push_back(stacked);
  }
  return results;
}

/// Scan-8: a leading batch axis on every input and output, scanned along axis 1; each batch
/// entry is scanned on its own and the results stacked back.
Expected<std::vector<Value *>> convertScan8(ConvertContext &c, const ::onnx::GraphProto &body,
                                            int64_t numScanInputs) {
  if (c.hasInput(0)) {
    std::optional<Tensor> lengths = c.constantInput(0);
    if (!lengths)
      return c.error("sequence_lens must be known at import time");
    // Only sequence lengths equal to the scanned length (the default) are supported.
    for (size_t j = c.numInputs() - std::min(c.numInputs(), size_t(numScanInputs));
         j < c.numInputs(); ++j) {
      TC_ASSIGN_OR_RETURN(TensorType type, c.inputType(j));
      std::optional<int64_t> full =
          type.rank() >= 2 ? type.shape[1].constant() : std::optional<int64_t>();
      for (int64_t b = 0; b < lengths->numel(); ++b)
        if (!full || lengths->getInt(b) != *full)
          return c.error("sequence_lens shorter than the scan inputs are not supported");
    }
  }
  std::vector<Value *> inputs;
  for (size_t j = 1; j < c.numInputs(); ++j) {
    TC_ASSIGN_OR_RETURN(Value * value, c.input(j));
    inputs.push_back(value);
  }
  if (inputs.size() < size_t(numScanInputs) || inputs.empty())
    return c.error(
        strCat("num_scan_inputs ", numScanInputs, " exceeds the ", inputs.size(), " inputs"));
  size_t numStates = inputs.size() - size_t(numScanInputs);
  std::optional<int64_t> batch = inputs[0]->type().rank() > 0
                                     ? inputs[0]->type().shape[0].constant()
                                     : std::optional<int64_t>();
  if (!batch || *batch < 1)
    return c.error(strCat("the batch dim must be static, got ", inputs[0]->type().str()));
  size_t numScans = size_t(body.output_size()) - std::min(numStates, size_t(body.output_size()));
  Ints directions = c.intsAttr("directions", Ints(size_t(numScanInputs), 0));
  if (directions.size() != size_t(numScanInputs))
    return c.error(strCat("directions must list ", numScanInputs, " entries"));
  ScanLayout layout;
  layout.inputAxes.assign(size_t(numScanInputs), 0);
  for (int64_t direction : directions)
    layout.inputReversed.push_back(direction != 0);
  layout.outputAxes.assign(numScans, 0);
  layout.outputReversed.assign(numScans, false);
  std::vector<std::vector<Value *>> perBatch;
  for (int64_t b = 0; b < *batch; ++b) {
    std::vector<Value *> states, scanInputs;
    for (size_t j = 0; j < inputs.size(); ++j) {
      TC_ASSIGN_OR_RETURN(Value * entry, sliceAt(c, inputs[j], 0, b));
      (j < numStates ? states : scanInputs).push_back(entry);
    }
    TC_ASSIGN_OR_RETURN(std::vector<Value *> results,
                        unrollScan(c, body, std::move(states), scanInputs, layout));
    perBatch.push_back(std::move(results));
  }
  std::vector<Value *> results;
  for (size_t k = 0; k < perBatch[0].size(); ++k) {
    std::vector<Value *> entries;
    for (const std::vector<Value *> &batchResults : perBatch)
      entries.push_back(batchResults[k]);
    TC_ASSIGN_OR_RETURN(Value * stacked, stack(c, entries, 0));
    results.push_back(stacked);
  }
  return results;
}

/// Scan (opset 9+; Scan-8 with its batch axis through convertScan8).
Status convertScan(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(const ::onnx::GraphProto *body, c.graphAttr("body"));
  if (!c.hasAttr("num_scan_inputs"))
    return c.error("missing attribute 'num_scan_inputs'");
  int64_t numScanInputs = c.intAttr("num_scan_inputs", 0);
  if (numScanInputs < 1)
    return c.error(strCat("num_scan_inputs must be positive, got ", numScanInputs));
  std::vector<Value *> results;
  if (c.opset() < 9) {
    TC_RETURN_IF_ERROR(c.checkAttrs({"body", "num_scan_inputs", "directions"}));
    TC_ASSIGN_OR_RETURN(results, convertScan8(c, *body, numScanInputs));
  } else {
    TC_RETURN_IF_ERROR(
        c.checkAttrs({"body", "num_scan_inputs", "scan_input_axes", "scan_input_directions",
                      "scan_output_axes", "scan_output_directions"}));
    if (c.numInputs() < size_t(numScanInputs))
      return c.error(
          strCat("num_scan_inputs ", numScanInputs, " exceeds the ", c.numInputs(), " inputs"));
    size_t numStates = c.numInputs() - size_t(numScanInputs);
    std::vector<Value *> states, scanInputs;
    for (size_t j = 0; j < c.numInputs(); ++j) {
      TC_ASSIGN_OR_RETURN(Value * value, c.input(j));
      (j < numStates ? states : scanInputs).push_back(value);
    }
    size_t numScans =
        size_t(body->output_size()) - std::min(numStates, size_t(body->output_size()));
    ScanLayout layout;
    layout.inputAxes = c.intsAttr("scan_input_axes", Ints(size_t(numScanInputs), 0));
    layout.outputAxes = c.intsAttr("scan_output_axes", Ints(numScans, 0));
    Ints inputDirections = c.intsAttr("scan_input_directions", Ints(size_t(numScanInputs), 0));
    Ints outputDirections = c.intsAttr("scan_output_directions", Ints(numScans, 0));
    if (layout.inputAxes.size() != size_t(numScanInputs) ||
        inputDirections.size() != size_t(numScanInputs))
      return c.error(strCat("scan_input_axes and scan_input_directions must list ", numScanInputs,
                            " entries"));
    for (size_t j = 0; j < scanInputs.size(); ++j) {
      int64_t rank = int64_t(scanInputs[j]->type().rank());
      int64_t &axis = layout.inputAxes[j];
      if (axis < 0)
        axis += rank;
      if (axis < 0 || axis >= rank)
        return c.error(
            strCat("scan input axis ", axis, " is out of range for ", scanInputs[j]->type().str()));
      layout.inputReversed.push_back(inputDirections[j] != 0);
    }
    for (int64_t direction : outputDirections)
      layout.outputReversed.push_back(direction != 0);
    TC_ASSIGN_OR_RETURN(results, unrollScan(c, *body, std::move(states), scanInputs, layout));
  }
  for (size_t k = 0; k < results.size() && k < c.numOutputs(); ++k)
    if (c.hasOutput(k))
      TC_RETURN_IF_ERROR(c.setOutput(k, results[k]));
  return Status::ok();
}

} // namespace

void addMiscConverters(ConverterTable &table) {
  baseMaxPool = table.at("MaxPool");
  baseBatchNormalization = table.at("BatchNormalization");
  table["MaxPool"] = convertMaxPool;
  table["BatchNormalization"] = convertBatchNormalization;
  table["NonZero"] = convertNonZero;
  table["Unique"] = convertUnique;
  table["Compress"] = convertCompress;
  table["NonMaxSuppression"] = convertNonMaxSuppression;
  table["GridSample"] = convertGridSample;
  table["MaxUnpool"] = convertMaxUnpool;
  table["RoiAlign"] = convertRoiAlign;
  table["ReverseSequence"] = convertReverseSequence;
  table["Det"] = convertDet;
  table["DFT"] = convertDft;
  table["STFT"] = convertStft;
  table["HannWindow"] = convertWindow<WindowKind::Hann>;
  table["HammingWindow"] = convertWindow<WindowKind::Hamming>;
  table["BlackmanWindow"] = convertWindow<WindowKind::Blackman>;
  table["MelWeightMatrix"] = convertMelWeightMatrix;
  table["If"] = convertIf;
  table["Loop"] = convertLoop;
  table["Scan"] = convertScan;
}

} // namespace tensorc::onnx
