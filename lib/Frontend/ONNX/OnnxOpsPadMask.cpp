// ONNX converters for padding and pixel shuffles (Pad, DepthToSpace, SpaceToDepth) and for
// constant masks (inference-mode Dropout's mask, Trilu, EyeLike).
#include "OnnxConverters.h"
#include "OnnxTensor.h"
#include "ViewEmitters.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>

namespace tensorc::onnx {

using Ints = std::vector<int64_t>;

namespace {

Attribute intsAttr(const std::vector<SymInt> &values) { return Attribute(values); }
Attribute intsAttr(const Ints &values) { return Attribute(values); }

} // namespace

Status convertPad(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * input, c.input(0));
  size_t rank = input->type().rank();
  Ints pads;
  double value = 0;
  if (c.opset() < 11) {
    pads = c.intsAttr("pads", c.intsAttr("paddings"));
    value = c.floatAttr("value", 0);
  } else {
    TC_ASSIGN_OR_RETURN(pads, c.constantInts(1, "pads"));
    if (c.hasInput(2)) {
      std::optional<Tensor> fill = c.constantInput(2);
      if (!fill || fill->numel() != 1)
        return c.error("constant_value must be a known scalar");
      value = fill->getDouble(0);
    }
  }
  Ints axes;
  if (c.hasInput(3)) {
    TC_ASSIGN_OR_RETURN(Ints given, c.constantInts(3, "axes"));
    for (int64_t axis : given) {
      TC_ASSIGN_OR_RETURN(int64_t dim, normalizeAxis(c, axis, rank));
      axes.push_back(dim);
    }
  } else {
    for (size_t i = 0; i < rank; ++i)
      axes.push_back(int64_t(i));
  }
  if (pads.size() != 2 * axes.size())
    return c.error(strCat(pads.size(), " pads for ", axes.size(), " axes"));
  // ONNX: [b0, b1, ..., e0, e1, ...] over `axes`; torch: (last_b, last_e, prev_b, prev_e, ...).
  Ints begin(rank, 0), end(rank, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    begin[size_t(axes[i])] = pads[i];
    end[size_t(axes[i])] = pads[i + axes.size()];
  }
  Ints torchPads;
  for (size_t i = rank; i-- > 0;)
    torchPads.insert(torchPads.end(), {begin[i], end[i]});
  std::string mode = c.stringAttr("mode", "constant");
  std::string torchMode = mode == "edge" ? "replicate" : mode == "wrap" ? "circular" : mode;
  if (torchMode != "constant" && torchMode != "reflect" && torchMode != "replicate" &&
      torchMode != "circular")
    return c.error("unknown pad mode '" + mode + "'");
  AttrMap attrs;
  attrs.emplace("pad", intsAttr(torchPads));
  attrs.emplace("mode", Attribute(torchMode));
  if (torchMode == "constant")
    attrs.emplace("value", Attribute(value));
  TC_ASSIGN_OR_RETURN(Value * out, c.emit("aten.pad", {input}, std::move(attrs)));
  return c.setOutput(0, out);
}

namespace {

/// DepthToSpace / SpaceToDepth as reshape -> permute -> reshape on static NCHW shapes.
Status reshapePermuteReshape(ConvertContext &c, Value *input, const Ints &first, const Ints &perm,
                             const Ints &last) {
  TC_ASSIGN_OR_RETURN(Value * value, reshape(c, input, first));
  TC_ASSIGN_OR_RETURN(value, permute(c, value, perm));
  TC_ASSIGN_OR_RETURN(value, reshape(c, value, last));
  return c.setOutput(0, value);
}

Expected<Ints> staticNCHW(ConvertContext &c, Value *input) {
  std::optional<Ints> shape = input->type().staticShape();
  if (!shape || shape->size() != 4)
    return c.error("needs a static 4-D input, got " + input->type().str());
  return *shape;
}

} // namespace

Status convertDepthToSpace(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * input, c.input(0));
  TC_ASSIGN_OR_RETURN(Ints s, staticNCHW(c, input));
  int64_t b = c.intAttr("blocksize", 0);
  // b <= channels / b first: b * b must not overflow.
  if (b <= 0 || b > s[1] / b || s[1] % (b * b) != 0)
    return c.error(strCat("blocksize ", b, " squared does not divide ", s[1], " channels"));
  int64_t n = s[0], ch = s[1] / (b * b), h = s[2], w = s[3], outH = 0, outW = 0;
  if (__builtin_mul_overflow(h, b, &outH) || __builtin_mul_overflow(w, b, &outW))
    return c.error(
        strCat("blocksize ", b, " times the spatial dims ", h, "x", w, " overflows 64 bits"));
  if (c.stringAttr("mode", "DCR") == "CRD")
    return reshapePermuteReshape(c, input, {n, ch, b, b, h, w}, {0, 1, 4, 2, 5, 3},
                                 {n, ch, outH, outW});
  return reshapePermuteReshape(c, input, {n, b, b, ch, h, w}, {0, 3, 4, 1, 5, 2},
                               {n, ch, outH, outW});
}

Status convertSpaceToDepth(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * input, c.input(0));
  TC_ASSIGN_OR_RETURN(Ints s, staticNCHW(c, input));
  int64_t b = c.intAttr("blocksize", 0);
  int64_t squared = 0, ignored = 0;
  if (b <= 0 || s[2] % b != 0 || s[3] % b != 0 || __builtin_mul_overflow(b, b, &squared) ||
      __builtin_mul_overflow(s[1], squared, &ignored))
    return c.error(strCat("blocksize ", b, " does not divide the spatial dims"));
  int64_t n = s[0], ch = s[1], h = s[2] / b, w = s[3] / b;
  return reshapePermuteReshape(c, input, {n, ch, h, b, w, b}, {0, 3, 5, 1, 2, 4},
                               {n, ch * b * b, h, w});
}

Status convertDropout(ConvertContext &c) {
  if (c.hasInput(2)) {
    std::optional<Tensor> training = c.constantInput(2);
    if (!training || training->numel() != 1)
      return c.error("training_mode must be a scalar known at import time");
    if (training->getInt(0) != 0) {
      std::optional<Tensor> ratio = c.hasInput(1) ? c.constantInput(1) : std::nullopt;
      if (c.hasInput(1) && (!ratio || ratio->numel() != 1))
        return c.error("the ratio of training-mode dropout must be a scalar known at import time");
      if (!ratio || ratio->getDouble(0) != 0.0) // the default ratio is 0.5
        return c.error("training-mode dropout with a non-zero ratio is random and not supported");
    }
  }
  TC_ASSIGN_OR_RETURN(Value * input, c.input(0));
  TC_RETURN_IF_ERROR(c.setOutput(0, input));
  if (c.hasOutput(1)) {
    AttrMap attrs;
    attrs.emplace("size", intsAttr(input->type().shape));
    attrs.emplace("fill_value", Attribute(true));
    attrs.emplace("dtype", Attribute(DType::Bool));
    TC_ASSIGN_OR_RETURN(Value * mask, c.emit("aten.full", {}, std::move(attrs)));
    TC_RETURN_IF_ERROR(c.setOutput(1, mask));
  }
  return Status::ok();
}

namespace {

/// A static boolean mask over the last two dims: keep (i, j) when `keep(j - i)`.
template <typename Keep>
Expected<Value *> diagonalMask(ConvertContext &c, int64_t rows, int64_t cols, Keep keep) {
  TC_ASSIGN_OR_RETURN(Tensor mask, c.newTensor(DType::Bool, {rows, cols}, "the triangle mask"));
  // An empty mask may still have a huge dim (rows 2^63-1 by 0 columns): loop over none.
  if (mask.numel() == 0)
    return c.constant(std::move(mask));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      mask.setInt(i * cols + j, keep(j - i));
  return c.constant(std::move(mask));
}

} // namespace

Status convertTrilu(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * input, c.input(0));
  std::optional<Ints> shape = input->type().staticShape();
  if (!shape || shape->size() < 2)
    return c.error("needs a static input of rank >= 2, got " + input->type().str());
  int64_t k = 0;
  if (c.hasInput(1)) {
    TC_ASSIGN_OR_RETURN(Ints given, c.constantInts(1, "k"));
    k = given.empty() ? 0 : given[0];
  }
  bool upper = c.intAttr("upper", 1) != 0;
  int64_t rows = (*shape)[shape->size() - 2], cols = shape->back();
  TC_ASSIGN_OR_RETURN(Value * mask, diagonalMask(c, rows, cols, [&](int64_t diagonal) {
                        return upper ? diagonal >= k : diagonal <= k;
                      }));
  TC_ASSIGN_OR_RETURN(Value * zero, c.scalar(0, input->type().dtype));
  TC_ASSIGN_OR_RETURN(Value * value, c.emit("aten.where", {mask, input, zero}));
  return c.setOutput(0, value);
}

Status convertEyeLike(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * input, c.input(0));
  std::optional<Ints> shape = input->type().staticShape();
  if (!shape || shape->size() != 2)
    return c.error("needs a static 2-D input, got " + input->type().str());
  DType dtype = input->type().dtype;
  if (c.hasAttr("dtype")) {
    std::optional<DType> given = dtypeFromOnnx(int32_t(c.intAttr("dtype", 1)));
    if (!given)
      return c.error("unsupported dtype");
    dtype = *given;
  }
  int64_t k = c.intAttr("k", 0);
  TC_ASSIGN_OR_RETURN(Tensor eye, c.newTensor(dtype, *shape, "the identity matrix"));
  // Row i has its one at column i + k: rows max(0, -k) .. min(rows, cols - k). A k outside
  // [-rows, cols] places no ones, as the clamped one does, and cannot overflow.
  int64_t rows = (*shape)[0], cols = (*shape)[1];
  k = std::clamp(k, -rows, cols);
  int64_t firstRow = std::max<int64_t>(0, -k), endRow = std::min(rows, cols - k);
  for (int64_t i = firstRow; i < endRow; ++i)
    eye.setInt(i * cols + i + k, 1);
  TC_ASSIGN_OR_RETURN(Value * value, c.constant(std::move(eye)));
  return c.setOutput(0, value);
}

} // namespace tensorc::onnx
