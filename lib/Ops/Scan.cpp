// Scans and selection: cumsum (running sum along a dim) and topk (k extreme values and indices).
#include "OpGroups.h"
#include "OpHelpers.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>

namespace tensorc::ops {

namespace {

/// Element `i` of a raw array of `dtype` as a double (f16/bf16 decoded, bool as 0/1).
template <typename T> double elementAsDouble(const T *raw, int64_t i, DType dtype) {
  if constexpr (std::is_same_v<T, uint16_t>)
    return dtype == DType::F16    ? halfToFloat(raw[i])
           : dtype == DType::BF16 ? bf16ToFloat(raw[i])
                                  : double(raw[i]); // u16
  else if constexpr (std::is_same_v<T, uint8_t>)
    return dtype == DType::Bool ? double(raw[i] != 0) : double(raw[i]);
  else
    return double(raw[i]);
}

// ---- cumsum -----------------------------------------------------------------------------------

/// Like torch: bool and integer inputs accumulate to i64 unless a dtype is given; u64 stays u64,
/// as in sum.
Expected<std::vector<TensorType>> inferCumsum(const InferContext &ctx) {
  const TensorType &self = ctx.input(0);
  TC_RETURN_IF_ERROR(normalizeDim(ctx.getInt("dim"), self.rank()).status());
  DType dtype = !ctx.isNone("dtype")                                 ? ctx.getDType("dtype")
                : isFloating(self.dtype) || self.dtype == DType::U64 ? self.dtype
                                                                     : DType::I64;
  return std::vector<TensorType>{TensorType(dtype, self.shape)};
}

/// Floats accumulate in double and integers in (wrapping) int64, then convert to the output.
Status cumsumKernel(KernelContext &ctx) {
  const Tensor &input = ctx.input(0);
  Tensor &out = ctx.output(0);
  TC_ASSIGN_OR_RETURN(size_t axis, normalizeDim(ctx.getInt("dim"), input.rank()));
  AxisSplit split = input.rank() == 0 ? AxisSplit{} : splitAtAxis(input.shape(), axis);
  bool floating = isFloating(out.dtype()) || isFloating(input.dtype());
  for (int64_t outer = 0; outer < split.outer; ++outer) {
    for (int64_t inner = 0; inner < split.inner; ++inner) {
      int64_t base = outer * split.size * split.inner + inner;
      double sum = 0;
      uint64_t intSum = 0;
      for (int64_t k = 0; k < split.size; ++k) {
        int64_t at = base + k * split.inner;
        if (floating) {
          sum += input.getDouble(at);
          out.setDouble(at, sum);
        } else {
          intSum += uint64_t(input.getInt(at));
          out.setInt(at, int64_t(intSum));
        }
      }
    }
  }
  return Status::ok();
}

// ---- topk -------------------------------------------------------------------------------------

Expected<std::vector<TensorType>> inferTopk(const InferContext &ctx) {
  const TensorType &self = ctx.input(0);
  int64_t k = ctx.getInt("k");
  if (k < 0)
    return makeError("k must be non-negative, got ", k);
  TC_ASSIGN_OR_RETURN(size_t dim, normalizeDim(ctx.getInt("dim"), self.rank()));
  Shape shape = self.shape;
  if (self.rank() == 0) {
    if (k > 1)
      return makeError("k ", k, " is larger than the 1 element of a 0-d tensor");
    return std::vector<TensorType>{self, TensorType(DType::I64, shape)};
  }
  if (std::optional<int64_t> size = shape[dim].constant(); size && k > *size)
    return makeError("k ", k, " is larger than dim ", dim, " of size ", *size, " (shape [",
                     join(shape, ", "), "])");
  shape[dim] = SymInt(k);
  return std::vector<TensorType>{TensorType(self.dtype, shape), TensorType(DType::I64, shape)};
}

/// Orders positions along the dim: the larger (or smaller) value first, NaN counting as larger
/// than every number as in torch, ties broken by the lower index (ONNX TopK).
template <typename Key> struct TopkOrder {
  const std::vector<Key> *keys;
  bool largest;
  bool operator()(int64_t a, int64_t b) const {
    Key x = (*keys)[size_t(a)], y = (*keys)[size_t(b)];
    bool before = false, after = false;
    if constexpr (std::is_floating_point_v<Key>) {
      bool nanX = std::isnan(x), nanY = std::isnan(y);
      if (nanX || nanY) {
        before = largest ? nanX && !nanY : nanY && !nanX;
        after = largest ? nanY && !nanX : nanX && !nanY;
        return before || (!after && a < b);
      }
    }
    before = largest ? x > y : x < y;
    after = largest ? y > x : y < x;
    return before || (!after && a < b);
  }
};

/// Selects the top k positions of every row; the values are copied in their own dtype so that
/// nothing is rounded.
template <typename Key> Status topkRows(KernelContext &ctx, const std::vector<Key> &keys) {
  const Tensor &input = ctx.input(0);
  Tensor &values = ctx.output(0);
  Tensor &indices = ctx.output(1);
  int64_t k = ctx.getInt("k");
  bool largest = ctx.getBool("largest");
  size_t axis = 0;
  AxisSplit split;
  if (input.rank() > 0) {
    TC_ASSIGN_OR_RETURN(axis, normalizeDim(ctx.getInt("dim"), input.rank()));
    split = splitAtAxis(input.shape(), axis);
  }
  if (k > split.size)
    return makeError("k ", k, " is larger than the dim's size ", split.size);
  std::vector<Key> row(size_t(split.size));
  std::vector<int64_t> order(size_t(split.size));
  size_t elementSize = dtypeSize(input.dtype());
  const auto *src = static_cast<const unsigned char *>(input.data());
  auto *dst = static_cast<unsigned char *>(values.mutableData());
  for (int64_t outer = 0; outer < split.outer; ++outer) {
    for (int64_t inner = 0; inner < split.inner; ++inner) {
      int64_t inBase = outer * split.size * split.inner + inner;
      int64_t outBase = outer * k * split.inner + inner;
      for (int64_t j = 0; j < split.size; ++j)
        row[size_t(j)] = keys[size_t(inBase + j * split.inner)];
      std::iota(order.begin(), order.end(), int64_t(0));
      TopkOrder<Key> less{&row, largest};
      std::partial_sort(order.begin(), order.begin() + k, order.end(), less);
      for (int64_t j = 0; j < k; ++j) {
        int64_t from = inBase + order[size_t(j)] * split.inner;
        int64_t to = outBase + j * split.inner;
        std::copy_n(src + size_t(from) * elementSize, elementSize, dst + size_t(to) * elementSize);
        indices.setInt(to, order[size_t(j)]);
      }
    }
  }
  return Status::ok();
}

/// Floats compare as doubles (f16/bf16 decoded), integers as int64, so both compare exactly.
Status topkKernel(KernelContext &ctx) {
  const Tensor &input = ctx.input(0);
  DType dtype = input.dtype();
  int64_t n = input.numel();
  if (isFloating(dtype)) {
    std::vector<double> keys(static_cast<size_t>(n));
    visitDType(dtype, [&](auto zero) {
      using T = decltype(zero);
      const T *raw = input.dataAs<T>();
      for (int64_t i = 0; i < n; ++i)
        keys[size_t(i)] = elementAsDouble(raw, i, dtype);
    });
    return topkRows(ctx, keys);
  }
  if (dtype == DType::U64) { // int64 keys would order values above INT64_MAX below zero
    const uint64_t *raw = input.dataAs<uint64_t>();
    return topkRows(ctx, std::vector<uint64_t>(raw, raw + n));
  }
  std::vector<int64_t> keys(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    keys[size_t(i)] = input.getInt(i);
  return topkRows(ctx, keys);
}

} // namespace

Status registerScanOps(OpRegistry &registry) {
  TC_RETURN_IF_ERROR(registry.add(makeOp(OpId::Cumsum,
                                         {tensorParam("self"), attrParam("dim", AttrKind::Int),
                                          optionalAttrParam("dtype", AttrKind::DType, true)},
                                         inferCumsum, cumsumKernel)));
  return registry.add(makeOp(OpId::Topk,
                             {tensorParam("self"), attrParam("k", AttrKind::Int),
                              attrParam("dim", AttrKind::Int, Attribute(-1)),
                              attrParam("largest", AttrKind::Bool, Attribute(true)),
                              attrParam("sorted", AttrKind::Bool, Attribute(true))},
                             inferTopk, topkKernel));
}

} // namespace tensorc::ops
