// Creation ops: full, arange, zeros_like, full_like.
#include "OpGroups.h"
#include "OpHelpers.h"

#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>

namespace tensorc::ops {

namespace {

using Types = std::vector<TensorType>;

bool isIntegralScalar(const Attribute &value) { return value.isInt() || value.isBool(); }

int64_t integralScalar(const Attribute &value) {
  return value.isBool() ? int64_t(value.asBool()) : value.asInt();
}

/// The dtype torch picks for a fill value when none is given: bool, i64 or f32.
DType defaultFillDType(const Attribute &fill) {
  return fill.isBool() ? DType::Bool : fill.isInt() ? DType::I64 : DType::F32;
}

/// Writes `value` (an int, float or bool scalar) into every element of `tensor`.
void fillWith(Tensor &tensor, const Attribute &value) {
  int64_t count = tensor.numel();
  if (count == 0)
    return;
  // Ints go through setInt so that large i64 fills stay exact.
  if (isIntegralScalar(value))
    tensor.setInt(0, integralScalar(value));
  else
    tensor.setDouble(0, value.asFloat());
  // Replicate the first element by doubling copies.
  size_t elementSize = dtypeSize(tensor.dtype());
  auto *bytes = static_cast<std::byte *>(tensor.mutableData());
  int64_t filled = 1;
  while (filled < count) {
    int64_t chunk = std::min(filled, count - filled);
    std::memcpy(bytes + filled * int64_t(elementSize), bytes, size_t(chunk) * elementSize);
    filled += chunk;
  }
}

DType dtypeOr(const AttrReader &attrs, DType fallback) {
  return attrs.isNone("dtype") ? fallback : attrs.getDType("dtype");
}

// ---- full ------------------------------------------------------------------------------------

Expected<Types> inferFull(const InferContext &ctx) {
  const std::vector<SymInt> &size = ctx.getInts("size");
  for (size_t i = 0; i < size.size(); ++i)
    if (std::optional<int64_t> dim = size[i].constant(); dim && *dim < 0)
      return makeError("size [", join(size, ", "), "] has a negative dim ", *dim, " at position ",
                       i);
  DType dtype = dtypeOr(ctx, defaultFillDType(ctx.attr("fill_value")));
  return Types{TensorType(dtype, size)};
}

Status fillKernel(KernelContext &ctx) {
  fillWith(ctx.output(0), ctx.attr("fill_value"));
  return Status::ok();
}

// ---- arange ----------------------------------------------------------------------------------

bool integralRange(const AttrReader &attrs) {
  return isIntegralScalar(attrs.attr("start")) && isIntegralScalar(attrs.attr("end")) &&
         isIntegralScalar(attrs.attr("step"));
}

/// ceil((end - start) / step), checking that the step walks from start towards end.
Expected<int64_t> arangeLength(const AttrReader &attrs) {
  const Attribute &start = attrs.attr("start"), &end = attrs.attr("end"),
                  &step = attrs.attr("step");
  auto inconsistent = [&] {
    return makeError("arange(", start.str(), ", ", end.str(), ", ", step.str(),
                     "): the bounds are inconsistent with the step's sign");
  };
  if (integralRange(attrs)) {
    int64_t first = integralScalar(start), last = integralScalar(end),
            stride = integralScalar(step);
    if (stride == 0)
      return makeError("arange step must be nonzero");
    // In 128 bits: end - start and the rounding overflow 64 bits for far-apart bounds.
    __int128 distance = __int128(last) - first;
    if ((distance > 0 && stride < 0) || (distance < 0 && stride > 0))
      return inconsistent();
    __int128 steps = distance / stride; // same signs (or zero): ceil is one more on a remainder
    if (distance % stride != 0)
      ++steps;
    if (steps > std::numeric_limits<int64_t>::max())
      return makeError("arange(", start.str(), ", ", end.str(), ", ", step.str(),
                       ") has too many elements");
    return int64_t(steps);
  }
  double first = start.asScalar(), last = end.asScalar(), stride = step.asScalar();
  if (!std::isfinite(first) || !std::isfinite(last) || !std::isfinite(stride))
    return makeError("arange(", start.str(), ", ", end.str(), ", ", step.str(),
                     ") has a non-finite bound or step");
  if (stride == 0)
    return makeError("arange step must be nonzero");
  if (!((stride > 0 && last >= first) || (stride < 0 && last <= first)))
    return inconsistent();
  double length = std::ceil((last - first) / stride);
  if (!(length < 9.0e18))
    return makeError("arange(", start.str(), ", ", end.str(), ", ", step.str(),
                     ") has too many elements");
  return int64_t(length);
}

Expected<Types> inferArange(const InferContext &ctx) {
  TC_ASSIGN_OR_RETURN(int64_t length, arangeLength(ctx));
  DType dtype = dtypeOr(ctx, integralRange(ctx) ? DType::I64 : DType::F32);
  return Types{TensorType(dtype, {SymInt(length)})};
}

Status arangeKernel(KernelContext &ctx) {
  Tensor &output = ctx.output(0);
  // Values are start + i * step, in int64 when everything is integral, else in double.
  if (integralRange(ctx) && !isFloating(output.dtype())) {
    int64_t start = integralScalar(ctx.attr("start")), step = integralScalar(ctx.attr("step"));
    // Every value lies between start and end, but i * step alone may not fit (start 2^62, step
    // -2^62 - 1): modulo 2^64, which gives the value exactly.
    for (int64_t i = 0; i < output.numel(); ++i)
      output.setInt(i, int64_t(uint64_t(start) + uint64_t(i) * uint64_t(step)));
    return Status::ok();
  }
  double start = ctx.getScalar("start"), step = ctx.getScalar("step");
  for (int64_t i = 0; i < output.numel(); ++i)
    output.setDouble(i, start + double(i) * step);
  return Status::ok();
}

// ---- zeros_like, full_like -------------------------------------------------------------------

Expected<Types> inferLike(const InferContext &ctx) {
  const TensorType &self = ctx.input(0);
  return Types{TensorType(dtypeOr(ctx, self.dtype), self.shape)};
}

/// Outputs arrive zero-filled; nothing to write.
Status zerosKernel(KernelContext &) { return Status::ok(); }

} // namespace

Status registerCreationOps(OpRegistry &registry) {
  TC_RETURN_IF_ERROR(registry.add(
      makeOp(OpId::Full,
             {attrParam("size", AttrKind::Ints), attrParam("fill_value", AttrKind::Scalar),
              optionalAttrParam("dtype", AttrKind::DType, true)},
             inferFull, fillKernel)));
  TC_RETURN_IF_ERROR(
      registry.add(makeOp(OpId::Arange,
                          {attrParam("start", AttrKind::Scalar), attrParam("end", AttrKind::Scalar),
                           attrParam("step", AttrKind::Scalar, Attribute(1)),
                           optionalAttrParam("dtype", AttrKind::DType, true)},
                          inferArange, arangeKernel)));
  TC_RETURN_IF_ERROR(registry.add(makeOp(
      OpId::ZerosLike, {tensorParam("self"), optionalAttrParam("dtype", AttrKind::DType, true)},
      inferLike, zerosKernel)));
  TC_RETURN_IF_ERROR(
      registry.add(makeOp(OpId::FullLike,
                          {tensorParam("self"), attrParam("fill_value", AttrKind::Scalar),
                           optionalAttrParam("dtype", AttrKind::DType, true)},
                          inferLike, fillKernel)));
  return Status::ok();
}

} // namespace tensorc::ops
