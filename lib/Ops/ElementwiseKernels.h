// The elementwise kernels' machinery, shared by the unary and binary op files: compute types
// (storage and conversions: Support/DTypeDispatch.h), broadcast row iteration, and the map/zip
// kernel drivers.
#pragma once

#include "OpHelpers.h"

#include "tensorc/Support/DTypeDispatch.h"

#include <array>
#include <cmath>
#include <cstring>
#include <type_traits>

namespace tensorc::ops::elementwise {

// ---- Compute types ---------------------------------------------------------------------------

/// Calls `fn(S{})` with the type elements of `dtype` are computed in: double for f64, float for
/// f32/f16/bf16 (torch's opmath type), int64 for integers and bool, uint64 for u64 (int64 holds
/// every other integer exactly, but not u64 values above INT64_MAX).
template <typename Fn> decltype(auto) visitCompute(DType dtype, Fn &&fn) {
  switch (dtype) {
  case DType::F64:
    return fn(double{});
  case DType::F32:
  case DType::F16:
  case DType::BF16:
    return fn(float{});
  case DType::I64:
  case DType::I32:
  case DType::I16:
  case DType::I8:
  case DType::U8:
  case DType::U16:
  case DType::U32:
  case DType::Bool:
    return fn(int64_t{});
  case DType::U64:
    return fn(uint64_t{});
  }
  return fn(float{});
}

/// visitCompute restricted to floating outputs, for ops with no integer form.
template <typename Fn> decltype(auto) visitFloatCompute(DType dtype, Fn &&fn) {
  if (dtype == DType::F64)
    return fn(double{});
  return fn(float{});
}

/// NaN test that is plain `false` for integer compute types.
template <typename S> inline bool isNan(S x) {
  if constexpr (std::is_floating_point_v<S>)
    return std::isnan(x);
  else
    return false;
}

/// `x < 0`, plain `false` for unsigned compute types (without a tautological comparison).
template <typename S> inline bool isNegative(S x) {
  if constexpr (std::is_unsigned_v<S>)
    return false;
  else
    return x < S(0);
}

/// An input's elements as compute type S: the tensor's own bytes when they already are S,
/// otherwise a converted copy.
template <typename S> class ComputeInput {
public:
  explicit ComputeInput(const Tensor &tensor) {
    visitElem(tensor.dtype(), [&](auto tag) {
      constexpr DType D = decltype(tag)::value;
      const Storage<D> *raw = tensor.dataAs<Storage<D>>();
      if constexpr (std::is_same_v<Storage<D>, S>) {
        data_ = raw;
      } else {
        copy_.resize(size_t(tensor.numel()));
        for (size_t i = 0; i < copy_.size(); ++i)
          copy_[i] = loadAs<S, D>(raw[i]);
        data_ = copy_.data();
      }
    });
  }
  const S *data() const { return data_; }

private:
  std::vector<S> copy_;
  const S *data_ = nullptr;
};

/// An output written as compute type S: straight into the tensor when it stores S, otherwise
/// into a buffer that commit() converts into the tensor.
template <typename S> class ComputeOutput {
public:
  explicit ComputeOutput(Tensor &tensor) : tensor_(tensor) {
    visitElem(tensor.dtype(), [&](auto tag) {
      constexpr DType D = decltype(tag)::value;
      if constexpr (std::is_same_v<Storage<D>, S>) {
        data_ = tensor.mutableDataAs<S>();
      } else {
        buffer_.resize(size_t(tensor.numel()));
        data_ = buffer_.data();
      }
    });
  }
  S *data() { return data_; }
  void commit() {
    if (buffer_.empty())
      return;
    visitElem(tensor_.dtype(), [&](auto tag) {
      constexpr DType D = decltype(tag)::value;
      Storage<D> *raw = tensor_.mutableDataAs<Storage<D>>();
      for (size_t i = 0; i < buffer_.size(); ++i)
        raw[i] = storeAs<D, S>(buffer_[i]);
    });
  }

private:
  Tensor &tensor_;
  std::vector<S> buffer_;
  S *data_ = nullptr;
};

// ---- Broadcast iteration ----------------------------------------------------------------------

/// Walks an output shape row by row, giving each broadcast operand's offset at the row start and
/// its step along the row. Dims of size 1 are dropped and dims contiguous in every operand are
/// merged, so same-shape operands make one long row and a bias add makes rows of the bias length.
template <size_t N> class BroadcastRows {
public:
  using Offsets = std::array<int64_t, N>;

  BroadcastRows(const std::vector<int64_t> &outShape,
                const std::array<const std::vector<int64_t> *, N> &inShapes) {
    size_t rank = outShape.size();
    std::vector<Offsets> strides(rank, Offsets{});
    for (size_t k = 0; k < N; ++k) {
      const std::vector<int64_t> &shape = *inShapes[k];
      size_t lead = rank - shape.size();
      int64_t stride = 1;
      for (size_t i = shape.size(); i-- > 0;) {
        strides[i + lead][k] = shape[i] == 1 ? 0 : stride;
        stride *= shape[i];
      }
    }
    numel_ = 1;
    for (size_t i = rank; i-- > 0;) {
      numel_ *= outShape[i];
      if (outShape[i] == 1)
        continue;
      if (!sizes_.empty()) {
        bool contiguous = true;
        for (size_t k = 0; k < N; ++k)
          contiguous &= strides[i][k] == strides_.back()[k] * sizes_.back();
        if (contiguous) {
          sizes_.back() *= outShape[i];
          continue;
        }
      }
      sizes_.push_back(outShape[i]);
      strides_.push_back(strides[i]);
    }
  }

  /// Calls `fn(outOffset, inOffsets, inSteps, length)` for each row, in output order.
  template <typename Fn> void forEach(Fn &&fn) const {
    if (numel_ == 0)
      return;
    if (sizes_.empty()) {
      fn(int64_t(0), Offsets{}, Offsets{}, int64_t(1));
      return;
    }
    int64_t length = sizes_[0];
    std::vector<int64_t> counter(sizes_.size(), 0);
    Offsets offsets{};
    for (int64_t out = 0; out < numel_; out += length) {
      fn(out, offsets, strides_[0], length);
      for (size_t d = 1; d < sizes_.size(); ++d) {
        if (++counter[d] < sizes_[d]) {
          for (size_t k = 0; k < N; ++k)
            offsets[k] += strides_[d][k];
          break;
        }
        counter[d] = 0;
        for (size_t k = 0; k < N; ++k)
          offsets[k] -= strides_[d][k] * (sizes_[d] - 1);
      }
    }
  }

private:
  std::vector<int64_t> sizes_; // innermost first
  std::vector<Offsets> strides_;
  int64_t numel_ = 0;
};

/// out[i] = fn(a[..], b[..]) over broadcast rows, with tight loops for the usual step patterns.
template <typename S, typename R, typename Fn>
void binaryRows(const BroadcastRows<2> &rows, const S *a, const S *b, R *out, const Fn &fn) {
  rows.forEach([&](int64_t o, const std::array<int64_t, 2> &offset,
                   const std::array<int64_t, 2> &step, int64_t n) {
    const S *pa = a + offset[0];
    const S *pb = b + offset[1];
    R *po = out + o;
    if (step[0] == 1 && step[1] == 1) {
      for (int64_t j = 0; j < n; ++j)
        po[j] = R(fn(pa[j], pb[j]));
    } else if (step[0] == 1 && step[1] == 0) {
      S vb = *pb;
      for (int64_t j = 0; j < n; ++j)
        po[j] = R(fn(pa[j], vb));
    } else if (step[0] == 0 && step[1] == 1) {
      S va = *pa;
      for (int64_t j = 0; j < n; ++j)
        po[j] = R(fn(va, pb[j]));
    } else {
      for (int64_t j = 0; j < n; ++j)
        po[j] = R(fn(pa[j * step[0]], pb[j * step[1]]));
    }
  });
}

// ---- Shared kernel drivers --------------------------------------------------------------------

/// Whether a divisor must be checked for zero (integer division, remainder, fmod).
enum class DivisorCheck { None, NonZero };

/// Runs `fn` on inputs 0 and 1 broadcast to the output, both converted to the compute type of
/// `computeType`. `fn` returns S (stored as the output dtype) or bool (a bool output).
template <typename Fn>
Status runBinary(KernelContext &ctx, DType computeType, Fn fn,
                 DivisorCheck check = DivisorCheck::None) {
  const Tensor &a = ctx.input(0);
  const Tensor &b = ctx.input(1);
  Tensor &out = ctx.output(0);
  BroadcastRows<2> rows(out.shape(), {&a.shape(), &b.shape()});
  return visitCompute(computeType, [&](auto zero) -> Status {
    using S = decltype(zero);
    ComputeInput<S> lhs(a), rhs(b);
    if constexpr (std::is_integral_v<S>) {
      if (check == DivisorCheck::NonZero && out.numel() > 0)
        for (int64_t i = 0; i < b.numel(); ++i)
          if (rhs.data()[i] == 0)
            return makeError("integer division by zero");
    }
    using R = decltype(fn(S{}, S{}));
    if constexpr (std::is_same_v<R, bool>) {
      binaryRows(rows, lhs.data(), rhs.data(), out.mutableDataAs<uint8_t>(), fn);
    } else {
      ComputeOutput<S> result(out);
      binaryRows(rows, lhs.data(), rhs.data(), result.data(), fn);
      result.commit();
    }
    return Status::ok();
  });
}

/// out[i] = fn(in[i]) computed in S (the input converts to it).
template <typename S, typename Fn> void mapAs(KernelContext &ctx, const Fn &fn) {
  Tensor &out = ctx.output(0);
  ComputeInput<S> in(ctx.input(0));
  ComputeOutput<S> result(out);
  const S *src = in.data();
  S *dst = result.data();
  for (int64_t i = 0, n = out.numel(); i < n; ++i)
    dst[i] = fn(src[i]);
  result.commit();
}

/// out[i] = fn(in[i]) computed in the output's compute type.
template <typename Fn> void mapSameType(KernelContext &ctx, const Fn &fn) {
  visitCompute(ctx.output(0).dtype(), [&](auto zero) { mapAs<decltype(zero)>(ctx, fn); });
}

/// Like mapSameType for ops whose output is floating (float math, gelu).
template <typename Fn> void mapFloat(KernelContext &ctx, const Fn &fn) {
  visitFloatCompute(ctx.output(0).dtype(), [&](auto zero) { mapAs<decltype(zero)>(ctx, fn); });
}

/// out[i] = fn(in[i]) into a bool output, computed in the input's compute type.
template <typename Fn> void mapPredicate(KernelContext &ctx, const Fn &fn) {
  const Tensor &input = ctx.input(0);
  uint8_t *dst = ctx.output(0).mutableDataAs<uint8_t>();
  visitCompute(input.dtype(), [&](auto zero) {
    using S = decltype(zero);
    ComputeInput<S> in(input);
    const S *src = in.data();
    for (int64_t i = 0, n = input.numel(); i < n; ++i)
      dst[i] = uint8_t(fn(src[i]));
  });
}

/// Two's-complement negation without signed overflow.
inline int64_t wrapNeg(int64_t x) { return int64_t(uint64_t(0) - uint64_t(x)); }

/// A scalar attribute in compute type S (ints exactly when S is an integer).
template <typename S> S scalarAs(const Attribute &value) {
  if constexpr (std::is_integral_v<S>) {
    if (value.isInt())
      return value.asInt();
    if (value.isBool())
      return value.asBool();
    return saturatingToInt(value.asFloat());
  } else {
    return S(value.asScalar());
  }
}

/// Parameter lists of one and two tensors.
inline std::vector<ParamSpec> selfOnly() { return {tensorParam("self")}; }
inline std::vector<ParamSpec> selfOther() { return {tensorParam("self"), tensorParam("other")}; }

} // namespace tensorc::ops::elementwise
