// Padding: aten.pad in constant, reflect, replicate and circular modes (ONNX Pad semantics).
#include "OpGroups.h"
#include "OpHelpers.h"

#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <cstring>

namespace tensorc::ops {

namespace {

using Types = std::vector<TensorType>;

// ---- pad -------------------------------------------------------------------------------------

#define TENSORC_FOR_EACH_PAD_MODE(X)                                                               \
  X(Constant, "constant")                                                                          \
  X(Reflect, "reflect")                                                                            \
  X(Replicate, "replicate")                                                                        \
  X(Circular, "circular")

enum class PadMode : uint8_t {
#define TENSORC_PAD_MODE_ENUM(e, n) e,
  TENSORC_FOR_EACH_PAD_MODE(TENSORC_PAD_MODE_ENUM)
#undef TENSORC_PAD_MODE_ENUM
};

Expected<PadMode> parsePadMode(const std::string &name) {
#define TENSORC_PAD_MODE_PARSE(e, n)                                                               \
  if (name == n)                                                                                   \
    return PadMode::e;
  TENSORC_FOR_EACH_PAD_MODE(TENSORC_PAD_MODE_PARSE)
#undef TENSORC_PAD_MODE_PARSE
  return makeError("unknown padding mode '", name,
                   "' (expected constant, reflect, replicate or circular)");
}

/// Checks the pads of one dim of size `size` (constant or symbolic) and returns its padded size.
Expected<SymInt> paddedDim(const SymInt &size, const SymInt &before, const SymInt &after,
                           PadMode mode, size_t dim) {
  SymInt result = size + before + after;
  std::optional<int64_t> n = size.constant(), b = before.constant(), a = after.constant(),
                         out = result.constant();
  if (out && *out < 0)
    return makeError("padding (", before, ", ", after, ") of dim ", dim, " (size ", size,
                     ") gives a negative size ", *out);
  if (!n || !b || !a)
    return result;
  switch (mode) {
  case PadMode::Constant:
    break;
  case PadMode::Reflect:
    if (*b >= *n || *a >= *n)
      return makeError("reflect padding (", *b, ", ", *a, ") must be less than the size ", *n,
                       " of dim ", dim);
    break;
  case PadMode::Replicate:
    if (*n == 0 && *out > 0)
      return makeError("replicate padding of dim ", dim, " which is empty");
    break;
  case PadMode::Circular:
    if (*b > *n || *a > *n || -*b > *n || -*a > *n)
      return makeError("circular padding (", *b, ", ", *a, ") wraps around dim ", dim, " (size ",
                       *n, ") more than once");
    break;
  }
  return result;
}

Expected<Types> inferPad(const InferContext &ctx) {
  const TensorType &self = ctx.input(0);
  const std::vector<SymInt> &pad = ctx.getInts("pad");
  TC_ASSIGN_OR_RETURN(PadMode mode, parsePadMode(ctx.getString("mode")));
  if (pad.size() % 2 != 0)
    return makeError("pad ", listStr(pad), " must have an even length");
  if (pad.size() / 2 > self.rank())
    return makeError("pad ", listStr(pad), " pads ", pad.size() / 2, " dims of ", self.str());
  if (mode != PadMode::Constant && !ctx.isNone("value") && ctx.getFloat("value") != 0)
    return makeError("padding mode '", ctx.getString("mode"), "' takes no fill value");
  Shape result = self.shape;
  for (size_t k = 0; k < pad.size() / 2; ++k) {
    size_t dim = self.rank() - 1 - k;
    TC_ASSIGN_OR_RETURN(result[dim],
                        paddedDim(self.shape[dim], pad[2 * k], pad[2 * k + 1], mode, dim));
  }
  return Types{TensorType(self.dtype, std::move(result))};
}

/// For each output coordinate of one dim, the input coordinate it reads (-1: the fill value).
std::vector<int64_t> padSourceMap(int64_t size, int64_t before, int64_t outSize, PadMode mode) {
  std::vector<int64_t> map(size_t(outSize), -1);
  for (int64_t o = 0; o < outSize; ++o) {
    int64_t i = o - before;
    switch (mode) {
    case PadMode::Constant:
      map[size_t(o)] = i >= 0 && i < size ? i : -1;
      break;
    case PadMode::Reflect:
      map[size_t(o)] = i < 0 ? -i : i >= size ? 2 * (size - 1) - i : i;
      break;
    case PadMode::Replicate:
      map[size_t(o)] = std::clamp<int64_t>(i, 0, size - 1);
      break;
    case PadMode::Circular:
      map[size_t(o)] = floorModInt(i, size);
      break;
    }
  }
  return map;
}

Status padKernel(KernelContext &ctx) {
  const Tensor &input = ctx.input(0);
  Tensor &output = ctx.output(0);
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> pad, ctx.getStaticInts("pad"));
  TC_ASSIGN_OR_RETURN(PadMode mode, parsePadMode(ctx.getString("mode")));
  size_t rank = input.rank();
  if (output.numel() == 0)
    return Status::ok();
  if (rank == 0)
    return copyKernel(ctx);
  std::vector<std::vector<int64_t>> maps(rank);
  for (size_t d = 0; d < rank; ++d) {
    size_t k = rank - 1 - d;
    int64_t before = k < pad.size() / 2 ? pad[2 * k] : 0;
    maps[d] = padSourceMap(input.dim(d), before, output.dim(d), mode);
  }
  size_t elementSize = dtypeSize(input.dtype());
  Tensor fill = Tensor::zerosUnchecked(input.dtype(), {});
  fill.setDouble(0, ctx.isNone("value") ? 0.0 : ctx.getFloat("value"));
  const std::byte *fillBytes = bytesOf(fill);
  const std::byte *in = bytesOf(input);
  std::byte *out = mutableBytesOf(output);
  std::vector<int64_t> strides = input.strides();
  int64_t inner = output.dim(rank - 1);
  int64_t outer = output.numel() / inner;
  std::vector<int64_t> counter(rank - 1, 0);
  const std::vector<int64_t> &innerMap = maps[rank - 1];
  for (int64_t o = 0; o < outer; ++o) {
    int64_t rowOffset = 0;
    bool rowIsFill = false;
    for (size_t d = 0; d + 1 < rank; ++d) {
      int64_t source = maps[d][size_t(counter[d])];
      rowIsFill |= source < 0;
      rowOffset += source * strides[d];
    }
    for (int64_t j = 0; j < inner; ++j, out += elementSize) {
      int64_t source = innerMap[size_t(j)];
      bool isFill = rowIsFill || source < 0;
      std::memcpy(out, isFill ? fillBytes : in + (rowOffset + source) * int64_t(elementSize),
                  elementSize);
    }
    for (size_t d = rank - 1; d-- > 0;) {
      if (++counter[d] < output.dim(d))
        break;
      counter[d] = 0;
    }
  }
  return Status::ok();
}

} // namespace

Status registerPadOps(OpRegistry &registry) {
  TC_RETURN_IF_ERROR(
      registry.add(makeOp(OpId::Pad,
                          {tensorParam("self"), attrParam("pad", AttrKind::Ints),
                           attrParam("mode", AttrKind::String, Attribute("constant")),
                           optionalAttrParam("value", AttrKind::Float)},
                          inferPad, padKernel)));
  return Status::ok();
}

} // namespace tensorc::ops
