// Helpers for rules that read their input at computed positions (pooling windows, padding,
// resampling, n-d gathers): in-bounds index arithmetic, masks and loads at run-time offsets. Loop
// IR loads are unconditional (a select computes both sides), so every load is made in bounds and
// a mask picks the value that stands for an out-of-bounds position.
#pragma once

#include "Rules.h"

#include <limits>

namespace tensorc::loop {

/// `value` as an i64 expression.
inline ExprRef indexExpr(const SymInt &value) {
  if (std::optional<int64_t> constant = value.constant())
    return makeIntConstant(*constant, DType::I64);
  return makeIndex(value, DType::I64);
}

inline ExprRef i64Constant(int64_t value) { return makeIntConstant(value, DType::I64); }

/// `a` and `b`, where a null `a` is true.
inline ExprRef allOf(const ExprRef &a, const ExprRef &b) {
  return a ? makeBinary(BinaryOp::LogicalAnd, a, b) : b;
}

/// A position `pos` (>= -below) of a dim of `size` taken into [0, size): itself where it is in
/// bounds, some in-bounds position elsewhere (where a mask discards the load). A shift by a
/// multiple of `size` keeps the remainder non-negative under any convention.
inline SymInt wrapInto(const SymInt &pos, int64_t size, int64_t below) {
  int64_t shift = below <= 0 ? 0 : (below + size - 1) / size * size;
  return SymInt::mod(pos + SymInt(shift), size);
}

/// Whether `pos` is in [0, size), given that it lies in [lowest, highest]: a null expression when
/// that is always so.
inline ExprRef insideMask(const SymInt &pos, int64_t size, int64_t lowest, int64_t highest) {
  ExprRef mask;
  if (lowest < 0)
    mask = makeBinary(BinaryOp::Ge, indexExpr(pos), i64Constant(0));
  if (highest >= size)
    mask = allOf(mask, makeBinary(BinaryOp::Lt, indexExpr(pos), i64Constant(size)));
  return mask;
}

/// An i64 expression clamped into [0, size - 1].
inline ExprRef clampIndex(const ExprRef &pos, int64_t size) {
  return makeBinary(BinaryOp::Minimum, makeBinary(BinaryOp::Maximum, pos, i64Constant(0)),
                    i64Constant(size - 1));
}

/// `view` read at `index`, where the dims with a non-null `dynamic` entry take that i64
/// expression (in bounds) instead: one load at a run-time offset.
inline ExprRef loadAt(const StridedView &view, DType dtype, const Index &index,
                      const std::vector<ExprRef> &dynamic) {
  SymInt affine = view.offset;
  ExprRef offset;
  for (size_t d = 0; d < index.size(); ++d) {
    if (!dynamic[d]) {
      affine = affine + index[d] * view.strides[d];
      continue;
    }
    ExprRef term = view.strides[d] == SymInt(1)
                       ? dynamic[d]
                       : makeBinary(BinaryOp::Mul, dynamic[d], indexExpr(view.strides[d]));
    offset = offset ? makeBinary(BinaryOp::Add, offset, term) : term;
  }
  if (!offset)
    return makeLoad(view.buffer, dtype, affine);
  return makeIndirectLoad(view.buffer, dtype, affine, offset);
}

/// The smallest value of `dtype` (-inf for floats): what max pooling's padding reads.
inline ExprRef lowestValue(DType dtype) {
  if (isFloating(dtype))
    return makeConstant(-std::numeric_limits<double>::infinity(), dtype);
  switch (dtypeSize(dtype)) {
  case 1:
    return makeIntConstant(dtype == DType::U8 ? 0 : -128, dtype);
  case 2:
    return makeIntConstant(std::numeric_limits<int16_t>::min(), dtype);
  case 4:
    return makeIntConstant(std::numeric_limits<int32_t>::min(), dtype);
  default:
    return makeIntConstant(std::numeric_limits<int64_t>::min(), dtype);
  }
}

/// The dtype arithmetic on `dtype` values runs in: f32 for the 16-bit floats.
inline DType computeType(DType dtype) {
  return dtype == DType::F16 || dtype == DType::BF16 ? DType::F32 : dtype;
}

/// Pad and resize are lowered here, registered with their families (Views.cpp, Indexing.cpp).
Status lowerPad(LowerContext &context, const Node &node);
Status lowerResize(LowerContext &context, const Node &node);
Status lowerGatherNd(LowerContext &context, const Node &node);
Status lowerScatterNd(LowerContext &context, const Node &node);

} // namespace tensorc::loop
