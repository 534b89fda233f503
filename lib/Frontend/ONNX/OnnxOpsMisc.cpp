// ONNX converters for data-dependent and miscellaneous ops: NonZero, Unique, Compress,
// NonMaxSuppression, GridSample, MaxPool's Indices output, training-mode BatchNormalization,
// MaxUnpool, ReverseSequence, RoiAlign, Det, DFT, STFT, the window/mel-filter
// generators (control flow: OnnxOpsControlFlow.cpp).
#include "NNHelpers.h"
#include "OnnxConverters.h"
#include "OnnxTensor.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace tensorc::onnx {

Expected<int64_t> nn::constantScalar(ConvertContext &c, size_t i, const std::string &what) {
  TC_ASSIGN_OR_RETURN(Ints values, c.constantInts(i, what));
  if (values.size() != 1)
    return c.error(strCat(what, " must hold one value, got ", values.size()));
  return values[0];
}

using nn::constantScalar;
using Ints = std::vector<int64_t>;

namespace {

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

Expected<double> constantScalarFloat(ConvertContext &c, size_t i, const std::string &what) {
  TC_ASSIGN_OR_RETURN(std::vector<double> values, c.constantFloats(i, what));
  if (values.size() != 1)
    return c.error(strCat(what, " must hold one value, got ", values.size()));
  return values[0];
}

} // namespace

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

Status nn::maxPoolWithIndices(ConvertContext &c) {
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
      int64_t total = nn::samePaddingTotal(shape[2 + d], strides[d], kernel[d], dilations[d]);
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

Status nn::trainingBatchNormalization(ConvertContext &c) {
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

namespace {

enum class WindowKind { Hann, Hamming, Blackman };

/// HannWindow, HammingWindow, BlackmanWindow: generated at import time from the constant size.
Status window(ConvertContext &c, WindowKind kind) {
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
    switch (kind) {
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

} // namespace

Status convertHannWindow(ConvertContext &c) { return window(c, WindowKind::Hann); }
Status convertHammingWindow(ConvertContext &c) { return window(c, WindowKind::Hamming); }
Status convertBlackmanWindow(ConvertContext &c) { return window(c, WindowKind::Blackman); }

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

} // namespace tensorc::onnx
