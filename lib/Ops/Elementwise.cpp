// Elementwise ops: constants, unary math, binary arithmetic and comparisons, where, clamp, casts.
#include "DecomposeHelpers.h"
#include "OpGroups.h"
#include "OpHelpers.h"

#include <array>
#include <cmath>
#include <cstring>
#include <type_traits>

namespace tensorc::ops {

namespace {

// ---- Element storage and conversion -----------------------------------------------------------

template <DType D> struct StorageFor;
template <> struct StorageFor<DType::F64> { using type = double; };
template <> struct StorageFor<DType::F32> { using type = float; };
template <> struct StorageFor<DType::F16> { using type = uint16_t; };
template <> struct StorageFor<DType::BF16> { using type = uint16_t; };
template <> struct StorageFor<DType::I64> { using type = int64_t; };
template <> struct StorageFor<DType::I32> { using type = int32_t; };
template <> struct StorageFor<DType::I16> { using type = int16_t; };
template <> struct StorageFor<DType::I8> { using type = int8_t; };
template <> struct StorageFor<DType::U8> { using type = uint8_t; };
template <> struct StorageFor<DType::U16> { using type = uint16_t; };
template <> struct StorageFor<DType::U32> { using type = uint32_t; };
template <> struct StorageFor<DType::U64> { using type = uint64_t; };
template <> struct StorageFor<DType::Bool> { using type = uint8_t; };
/// The C++ type an element of dtype D is stored as.
template <DType D> using Storage = typename StorageFor<D>::type;
template <DType D> using DTypeTag = std::integral_constant<DType, D>;

/// Calls `fn(DTypeTag<D>{})` for the dtype, so kernels get the exact storage (f16 vs bf16 too).
template <typename Fn> decltype(auto) visitElem(DType dtype, Fn &&fn) {
  switch (dtype) {
  case DType::F64:
    return fn(DTypeTag<DType::F64>{});
  case DType::F32:
    return fn(DTypeTag<DType::F32>{});
  case DType::F16:
    return fn(DTypeTag<DType::F16>{});
  case DType::BF16:
    return fn(DTypeTag<DType::BF16>{});
  case DType::I64:
    return fn(DTypeTag<DType::I64>{});
  case DType::I32:
    return fn(DTypeTag<DType::I32>{});
  case DType::I16:
    return fn(DTypeTag<DType::I16>{});
  case DType::I8:
    return fn(DTypeTag<DType::I8>{});
  case DType::U8:
    return fn(DTypeTag<DType::U8>{});
  case DType::U16:
    return fn(DTypeTag<DType::U16>{});
  case DType::U32:
    return fn(DTypeTag<DType::U32>{});
  case DType::U64:
    return fn(DTypeTag<DType::U64>{});
  case DType::Bool:
    return fn(DTypeTag<DType::Bool>{});
  }
  return fn(DTypeTag<DType::F32>{});
}

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

/// Float to int64 as Tensor::setDouble converts: NaN is 0, out of range saturates, else truncates.
inline int64_t saturatingToInt(double value) {
  if (value != value)
    return 0;
  if (value >= 9.2e18)
    return INT64_MAX;
  if (value <= -9.2e18)
    return INT64_MIN;
  return int64_t(value);
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

/// One stored element of dtype D as compute type S.
template <typename S, DType D> inline S loadAs(Storage<D> raw) {
  if constexpr (D == DType::F16 || D == DType::BF16) {
    float value = D == DType::F16 ? halfToFloat(raw) : bf16ToFloat(raw);
    if constexpr (std::is_integral_v<S>)
      return S(saturatingToInt(value));
    else
      return S(value);
  } else if constexpr (D == DType::Bool) {
    return S(raw != 0);
  } else if constexpr (std::is_integral_v<S> && std::is_floating_point_v<Storage<D>>) {
    return S(saturatingToInt(double(raw)));
  } else {
    return S(raw);
  }
}

/// A compute value stored as dtype D: floats round to nearest, integers wrap, floats to integers
/// truncate (saturating), anything to bool is `!= 0`.
template <DType D, typename S> inline Storage<D> storeAs(S value) {
  if constexpr (D == DType::F16) {
    return floatToHalf(float(value));
  } else if constexpr (D == DType::BF16) {
    return floatToBf16(float(value));
  } else if constexpr (D == DType::Bool) {
    return Storage<D>(value != 0);
  } else if constexpr (D == DType::U64 && std::is_floating_point_v<S>) {
    // [2^63, 2^64) converts directly; the rest saturates or wraps as for the signed types.
    if (double(value) >= 9.2e18)
      return double(value) < 18446744073709551616.0 ? uint64_t(value) : UINT64_MAX;
    return Storage<D>(saturatingToInt(double(value)));
  } else if constexpr (std::is_integral_v<Storage<D>> && std::is_floating_point_v<S>) {
    return Storage<D>(saturatingToInt(double(value)));
  } else {
    return Storage<D>(value);
  }
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

/// out[i] = fn(in[i]) computed in the output's compute type (the input converts to it).
template <typename Fn> void mapSameType(KernelContext &ctx, const Fn &fn) {
  Tensor &out = ctx.output(0);
  visitCompute(out.dtype(), [&](auto zero) {
    using S = decltype(zero);
    ComputeInput<S> in(ctx.input(0));
    ComputeOutput<S> result(out);
    const S *src = in.data();
    S *dst = result.data();
    for (int64_t i = 0, n = out.numel(); i < n; ++i)
      dst[i] = fn(src[i]);
    result.commit();
  });
}

/// Like mapSameType for ops whose output is floating (float math, gelu).
template <typename Fn> void mapFloat(KernelContext &ctx, const Fn &fn) {
  Tensor &out = ctx.output(0);
  visitFloatCompute(out.dtype(), [&](auto zero) {
    using S = decltype(zero);
    ComputeInput<S> in(ctx.input(0));
    ComputeOutput<S> result(out);
    const S *src = in.data();
    S *dst = result.data();
    for (int64_t i = 0, n = out.numel(); i < n; ++i)
      dst[i] = fn(src[i]);
    result.commit();
  });
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

// ---- Constant ---------------------------------------------------------------------------------

Expected<std::vector<TensorType>> inferConstant(const InferContext &ctx) {
  const Tensor &value = ctx.getTensor("value");
  return std::vector<TensorType>{TensorType::fromStatic(value.dtype(), value.shape())};
}

Status constantKernel(KernelContext &ctx) {
  const Tensor &value = ctx.getTensor("value");
  if (value.nbytes() > 0)
    std::memcpy(ctx.output(0).mutableData(), value.data(), value.nbytes());
  return Status::ok();
}

// ---- Unary ------------------------------------------------------------------------------------

/// Float math: integer and bool inputs compute in (and produce) f32, torch's default dtype.
Expected<std::vector<TensorType>> inferFloatMath(const InferContext &ctx) {
  const TensorType &self = ctx.input(0);
  return std::vector<TensorType>{
      TensorType(isFloating(self.dtype) ? self.dtype : DType::F32, self.shape)};
}

/// Ops that keep the dtype and have no meaning on bool (neg, abs, relu, floor, ceil, round).
Expected<std::vector<TensorType>> inferSameTypeNoBool(const InferContext &ctx) {
  const TensorType &self = ctx.input(0);
  if (self.dtype == DType::Bool)
    return makeError("not supported on bool tensors");
  return std::vector<TensorType>{self};
}

Expected<std::vector<TensorType>> inferSameType(const InferContext &ctx) {
  return std::vector<TensorType>{ctx.input(0)};
}

Expected<std::vector<TensorType>> inferPredicate(const InferContext &ctx) {
  return std::vector<TensorType>{TensorType(DType::Bool, ctx.input(0).shape)};
}

struct ExpFn {
  template <typename S> S operator()(S x) const { return std::exp(x); }
};
struct LogFn {
  template <typename S> S operator()(S x) const { return std::log(x); }
};
struct SqrtFn {
  template <typename S> S operator()(S x) const { return std::sqrt(x); }
};
struct RsqrtFn {
  template <typename S> S operator()(S x) const { return S(1) / std::sqrt(x); }
};
struct ReciprocalFn {
  template <typename S> S operator()(S x) const { return S(1) / x; }
};
struct TanhFn {
  template <typename S> S operator()(S x) const { return std::tanh(x); }
};
struct SigmoidFn {
  template <typename S> S operator()(S x) const { return S(1) / (S(1) + std::exp(-x)); }
};
struct ErfFn {
  template <typename S> S operator()(S x) const { return std::erf(x); }
};
struct SinFn {
  template <typename S> S operator()(S x) const { return std::sin(x); }
};
struct CosFn {
  template <typename S> S operator()(S x) const { return std::cos(x); }
};
struct TanFn {
  template <typename S> S operator()(S x) const { return std::tan(x); }
};
struct AsinFn {
  template <typename S> S operator()(S x) const { return std::asin(x); }
};
struct AcosFn {
  template <typename S> S operator()(S x) const { return std::acos(x); }
};
struct AtanFn {
  template <typename S> S operator()(S x) const { return std::atan(x); }
};
struct SinhFn {
  template <typename S> S operator()(S x) const { return std::sinh(x); }
};
struct CoshFn {
  template <typename S> S operator()(S x) const { return std::cosh(x); }
};
struct AsinhFn {
  template <typename S> S operator()(S x) const { return std::asinh(x); }
};
struct AcoshFn {
  template <typename S> S operator()(S x) const { return std::acosh(x); }
};
struct AtanhFn {
  template <typename S> S operator()(S x) const { return std::atanh(x); }
};
struct SiluFn {
  template <typename S> S operator()(S x) const { return x / (S(1) + std::exp(-x)); }
};

template <typename Fn> Status floatMathKernel(KernelContext &ctx) {
  mapFloat(ctx, Fn{});
  return Status::ok();
}

/// Two's-complement negation without signed overflow.
inline int64_t wrapNeg(int64_t x) { return int64_t(uint64_t(0) - uint64_t(x)); }

struct NegFn {
  template <typename S> S operator()(S x) const {
    if constexpr (std::is_integral_v<S>)
      return S(wrapNeg(int64_t(x)));
    else
      return -x;
  }
};
struct AbsFn {
  template <typename S> S operator()(S x) const {
    if constexpr (std::is_integral_v<S>)
      return isNegative(x) ? S(wrapNeg(int64_t(x))) : x;
    else
      return std::fabs(x);
  }
};
/// torch: (0 < x) - (x < 0), so sign(NaN) is 0.
struct SignFn {
  template <typename S> S operator()(S x) const { return S(int(S(0) < x) - int(isNegative(x))); }
};
struct ReluFn {
  template <typename S> S operator()(S x) const { return x > S(0) || isNan(x) ? x : S(0); }
};
struct FloorFn {
  template <typename S> S operator()(S x) const {
    if constexpr (std::is_integral_v<S>)
      return x;
    else
      return std::floor(x);
  }
};
struct CeilFn {
  template <typename S> S operator()(S x) const {
    if constexpr (std::is_integral_v<S>)
      return x;
    else
      return std::ceil(x);
  }
};
/// Half to even: nearbyint under the default rounding mode.
struct RoundFn {
  template <typename S> S operator()(S x) const {
    if constexpr (std::is_integral_v<S>)
      return x;
    else
      return std::nearbyint(x);
  }
};

template <typename Fn> Status sameTypeKernel(KernelContext &ctx) {
  mapSameType(ctx, Fn{});
  return Status::ok();
}

Status logicalNotKernel(KernelContext &ctx) {
  mapPredicate(ctx, [](auto x) { return !(x != 0); });
  return Status::ok();
}

/// Bitwise ops take integers and bool only.
Expected<std::vector<TensorType>> inferBitwiseNot(const InferContext &ctx) {
  if (isFloating(ctx.input(0).dtype))
    return makeError("bitwise ops need integer or bool tensors, got ",
                     dtypeName(ctx.input(0).dtype));
  return std::vector<TensorType>{ctx.input(0)};
}

struct BitwiseNotFn {
  template <typename S> S operator()(S x) const {
    if constexpr (std::is_integral_v<S>)
      return ~x;
    else
      return x; // unreachable: inference rejects floats
  }
};

Status bitwiseNotKernel(KernelContext &ctx) {
  if (ctx.input(0).dtype() == DType::Bool) {
    mapPredicate(ctx, [](auto x) { return !(x != 0); });
    return Status::ok();
  }
  mapSameType(ctx, BitwiseNotFn{});
  return Status::ok();
}

Status isNanKernel(KernelContext &ctx) {
  mapPredicate(ctx, [](auto x) { return isNan(x); });
  return Status::ok();
}

// ---- gelu, clamp, convert_element_type --------------------------------------------------------

Expected<std::vector<TensorType>> inferGelu(const InferContext &ctx) {
  const TensorType &self = ctx.input(0);
  if (!isFloating(self.dtype))
    return makeError("expects a floating-point tensor, got ", dtypeName(self.dtype));
  const std::string &approximate = ctx.getString("approximate");
  if (approximate != "none" && approximate != "tanh")
    return makeError("approximate must be 'none' or 'tanh', got '", approximate, "'");
  return std::vector<TensorType>{self};
}

Status geluKernel(KernelContext &ctx) {
  if (ctx.getString("approximate") == "tanh") {
    mapFloat(ctx, [](auto x) {
      using S = decltype(x);
      const S kBeta = S(0.7978845608028654); // sqrt(2 / pi)
      const S kKappa = S(0.044715);
      return S(0.5) * x * (S(1) + std::tanh(kBeta * (x + kKappa * x * x * x)));
    });
  } else {
    mapFloat(ctx, [](auto x) {
      using S = decltype(x);
      return S(0.5) * x * (S(1) + std::erf(x * S(0.7071067811865476))); // x / sqrt(2)
    });
  }
  return Status::ok();
}

/// torch promotes with the bounds as wrapped scalars: a float bound makes an integer tensor f32,
/// an integer bound makes a bool tensor i64.
Expected<std::vector<TensorType>> inferClamp(const InferContext &ctx) {
  const TensorType &self = ctx.input(0);
  if (ctx.isNone("min") && ctx.isNone("max"))
    return makeError("at least one of 'min' and 'max' must be set");
  DType dtype = self.dtype;
  for (const char *bound : {"min", "max"}) {
    const Attribute &value = ctx.attr(bound);
    if (value.isFloat() && !isFloating(dtype))
      dtype = DType::F32;
    else if (value.isInt() && dtype == DType::Bool)
      dtype = DType::I64;
  }
  return std::vector<TensorType>{TensorType(dtype, self.shape)};
}

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

Status clampKernel(KernelContext &ctx) {
  const Attribute &minValue = ctx.attr("min");
  const Attribute &maxValue = ctx.attr("max");
  bool hasMin = !minValue.isNone(), hasMax = !maxValue.isNone();
  int64_t minInt = hasMin ? scalarAs<int64_t>(minValue) : 0;
  int64_t maxInt = hasMax ? scalarAs<int64_t>(maxValue) : 0;
  double minFloat = hasMin ? minValue.asScalar() : 0.0;
  double maxFloat = hasMax ? maxValue.asScalar() : 0.0;
  // NaN in the input or a bound propagates; min > max gives max, as in torch.
  mapSameType(ctx, [&](auto x) {
    using S = decltype(x);
    S lo = std::is_integral_v<S> ? S(minInt) : S(minFloat);
    if constexpr (std::is_unsigned_v<S>)
      lo = minInt < 0 ? S(0) : lo; // a negative bound is below every u64
    S hi = std::is_integral_v<S> ? S(maxInt) : S(maxFloat);
    if (isNan(x))
      return x;
    if (hasMin)
      x = isNan(lo) ? lo : x < lo ? lo : x;
    if (hasMax)
      x = isNan(hi) ? hi : x > hi ? hi : x;
    return x;
  });
  return Status::ok();
}

Expected<std::vector<TensorType>> inferConvert(const InferContext &ctx) {
  return std::vector<TensorType>{TensorType(ctx.getDType("dtype"), ctx.input(0).shape)};
}

Status convertKernel(KernelContext &ctx) {
  const Tensor &in = ctx.input(0);
  Tensor &out = ctx.output(0);
  int64_t n = in.numel();
  visitElem(in.dtype(), [&](auto inTag) {
    constexpr DType DI = decltype(inTag)::value;
    // Integers go through int64 (u64 through uint64) so that 64-bit values survive exactly.
    using S = std::conditional_t<
        DI == DType::U64, uint64_t,
        std::conditional_t<std::is_integral_v<Storage<DI>> && DI != DType::F16 && DI != DType::BF16,
                           int64_t, double>>;
    const Storage<DI> *src = in.dataAs<Storage<DI>>();
    visitElem(out.dtype(), [&](auto outTag) {
      constexpr DType DO = decltype(outTag)::value;
      Storage<DO> *dst = out.mutableDataAs<Storage<DO>>();
      for (int64_t i = 0; i < n; ++i)
        dst[i] = storeAs<DO, S>(loadAs<S, DI>(src[i]));
    });
  });
  return Status::ok();
}

// ---- Binary -----------------------------------------------------------------------------------

/// The promoted dtype of inputs 0 and 1 (torch.result_type).
DType promotedType(const InferContext &ctx) { return resultType({&ctx.input(0), &ctx.input(1)}); }

DType promotedType(const KernelContext &ctx) {
  TensorType a = TensorType::fromStatic(ctx.input(0).dtype(), ctx.input(0).shape());
  TensorType b = TensorType::fromStatic(ctx.input(1).dtype(), ctx.input(1).shape());
  return resultType({&a, &b});
}

Expected<std::vector<TensorType>> inferArithmetic(const InferContext &ctx) {
  TC_ASSIGN_OR_RETURN(Shape shape, broadcastShapes(ctx.input(0).shape, ctx.input(1).shape));
  return std::vector<TensorType>{TensorType(promotedType(ctx), std::move(shape))};
}

Expected<std::vector<TensorType>> inferBoolResult(const InferContext &ctx) {
  TC_ASSIGN_OR_RETURN(Shape shape, broadcastShapes(ctx.input(0).shape, ctx.input(1).shape));
  return std::vector<TensorType>{TensorType(DType::Bool, std::move(shape))};
}

/// add/sub: integer results need an integral alpha; sub rejects bool operands like torch.
template <bool IsSub> Expected<std::vector<TensorType>> inferAddSub(const InferContext &ctx) {
  TC_ASSIGN_OR_RETURN(std::vector<TensorType> types, inferArithmetic(ctx));
  const Attribute &alpha = ctx.attr("alpha");
  if (!isFloating(types[0].dtype) && alpha.isFloat())
    return makeError("alpha must not be a floating-point number for ", dtypeName(types[0].dtype),
                     " operands, got ", alpha.str());
  if (IsSub && (ctx.input(0).dtype == DType::Bool || ctx.input(1).dtype == DType::Bool))
    return makeError("subtraction with a bool tensor is not supported; use logical_xor or "
                     "logical_not");
  return types;
}

template <bool IsSub> Status addSubKernel(KernelContext &ctx) {
  const Attribute &alpha = ctx.attr("alpha");
  int64_t alphaInt = scalarAs<int64_t>(alpha);
  double alphaFloat = alpha.asScalar();
  return runBinary(ctx, ctx.output(0).dtype(), [&](auto a, auto b) {
    using S = decltype(a);
    if constexpr (std::is_integral_v<S>) {
      uint64_t scaled = uint64_t(alphaInt) * uint64_t(b);
      return S(IsSub ? uint64_t(a) - scaled : uint64_t(a) + scaled);
    } else {
      S scaled = alphaFloat == 1.0 ? b : S(alphaFloat) * b;
      return IsSub ? S(a - scaled) : S(a + scaled);
    }
  });
}

Status mulKernel(KernelContext &ctx) {
  return runBinary(ctx, ctx.output(0).dtype(), [](auto a, auto b) {
    using S = decltype(a);
    if constexpr (std::is_integral_v<S>)
      return S(uint64_t(a) * uint64_t(b));
    else
      return S(a * b);
  });
}

Expected<std::vector<TensorType>> inferDiv(const InferContext &ctx) {
  TC_ASSIGN_OR_RETURN(Shape shape, broadcastShapes(ctx.input(0).shape, ctx.input(1).shape));
  DType dtype = promotedType(ctx);
  if (ctx.isNone("rounding_mode")) {
    if (!isFloating(dtype))
      dtype = DType::F32; // true division of integers
  } else {
    const std::string &mode = ctx.getString("rounding_mode");
    if (mode != "trunc" && mode != "floor")
      return makeError("rounding_mode must be None, 'trunc' or 'floor', got '", mode, "'");
  }
  return std::vector<TensorType>{TensorType(dtype, std::move(shape))};
}

/// Truncating integer division; b == -1 wraps instead of trapping on INT64_MIN.
inline int64_t truncDivInt(int64_t a, int64_t b) { return b == -1 ? wrapNeg(a) : a / b; }

/// Python floor division (b != 0).
inline int64_t floorDivInteger(int64_t a, int64_t b) {
  int64_t quotient = truncDivInt(a, b);
  return (a % b != 0 && ((a < 0) != (b < 0))) ? quotient - 1 : quotient;
}

/// torch's div_floor_floating: floor(a / b) computed through fmod so that it is exact.
template <typename S> S floorDivFloat(S a, S b) {
  if (b == 0)
    return a / b;
  S mod = std::fmod(a, b);
  S div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0))
    div -= S(1);
  if (div == 0)
    return std::copysign(S(0), a / b);
  S floorDiv = std::floor(div);
  if (div - floorDiv > S(0.5))
    floorDiv += S(1);
  return floorDiv;
}

Status divKernel(KernelContext &ctx) {
  DType outType = ctx.output(0).dtype();
  if (ctx.isNone("rounding_mode"))
    return runBinary(ctx, outType, [](auto a, auto b) { return a / b; });
  if (ctx.getString("rounding_mode") == "trunc")
    return runBinary(
        ctx, outType,
        [](auto a, auto b) {
          using S = decltype(a);
          if constexpr (std::is_unsigned_v<S>)
            return S(a / b);
          else if constexpr (std::is_integral_v<S>)
            return truncDivInt(a, b);
          else
            return S(std::trunc(a / b));
        },
        DivisorCheck::NonZero);
  return runBinary(
      ctx, outType,
      [](auto a, auto b) {
        using S = decltype(a);
        if constexpr (std::is_unsigned_v<S>)
          return S(a / b);
        else if constexpr (std::is_integral_v<S>)
          return floorDivInteger(a, b);
        else
          return floorDivFloat(a, b);
      },
      DivisorCheck::NonZero);
}

/// torch's integer pow: negative exponents give 0 except for bases 1 and -1.
inline int64_t powInt(int64_t base, int64_t exponent) {
  if (exponent < 0) {
    if (base == 1)
      return 1;
    if (base == -1)
      return (exponent & 1) ? -1 : 1;
    return 0;
  }
  uint64_t result = 1, factor = uint64_t(base);
  for (; exponent != 0; exponent >>= 1) {
    if (exponent & 1)
      result *= factor;
    factor *= factor;
  }
  return int64_t(result);
}

/// Wrapping unsigned pow (u64 operands).
inline uint64_t powUint(uint64_t base, uint64_t exponent) {
  uint64_t result = 1;
  for (; exponent != 0; exponent >>= 1) {
    if (exponent & 1)
      result *= base;
    base *= base;
  }
  return result;
}

Status powKernel(KernelContext &ctx) {
  return runBinary(ctx, ctx.output(0).dtype(), [](auto a, auto b) {
    using S = decltype(a);
    if constexpr (std::is_unsigned_v<S>)
      return S(powUint(a, b));
    else if constexpr (std::is_integral_v<S>)
      return powInt(a, b);
    else
      return S(std::pow(a, b));
  });
}

/// Python-style remainder: the result takes the divisor's sign.
Status remainderKernel(KernelContext &ctx) {
  return runBinary(
      ctx, ctx.output(0).dtype(),
      [](auto a, auto b) {
        using S = decltype(a);
        if constexpr (std::is_unsigned_v<S>) {
          return S(a % b);
        } else {
          S mod;
          if constexpr (std::is_integral_v<S>)
            mod = b == -1 ? S(0) : S(a % b);
          else
            mod = std::fmod(a, b);
          if (mod != 0 && (b < 0) != (mod < 0))
            mod += b;
          return mod;
        }
      },
      DivisorCheck::NonZero);
}

/// C-style remainder: the result takes the dividend's sign.
Status fmodKernel(KernelContext &ctx) {
  return runBinary(
      ctx, ctx.output(0).dtype(),
      [](auto a, auto b) {
        using S = decltype(a);
        if constexpr (std::is_unsigned_v<S>)
          return S(a % b);
        else if constexpr (std::is_integral_v<S>)
          return b == -1 ? S(0) : S(a % b);
        else
          return S(std::fmod(a, b));
      },
      DivisorCheck::NonZero);
}

/// maximum/minimum propagate NaN from either side, as torch does.
template <bool IsMax> Status extremumKernel(KernelContext &ctx) {
  return runBinary(ctx, ctx.output(0).dtype(), [](auto a, auto b) {
    if (isNan(a))
      return a;
    if (isNan(b))
      return b;
    return IsMax ? (a > b ? a : b) : (a < b ? a : b);
  });
}

enum class Compare { Eq, Ne, Lt, Le, Gt, Ge };

/// Comparisons happen in the promoted type (i32 3 vs f32 2.5 compares as floats).
template <Compare C> Status compareKernel(KernelContext &ctx) {
  return runBinary(ctx, promotedType(ctx), [](auto a, auto b) {
    switch (C) {
    case Compare::Eq:
      return a == b;
    case Compare::Ne:
      return a != b;
    case Compare::Lt:
      return a < b;
    case Compare::Le:
      return a <= b;
    case Compare::Gt:
      return a > b;
    case Compare::Ge:
      return a >= b;
    }
    return false;
  });
}

enum class Logical { And, Or, Xor };

template <Logical L> Status logicalKernel(KernelContext &ctx) {
  return runBinary(ctx, promotedType(ctx), [](auto a, auto b) {
    bool x = a != 0, y = b != 0;
    switch (L) {
    case Logical::And:
      return x && y;
    case Logical::Or:
      return x || y;
    case Logical::Xor:
      return x != y;
    }
    return false;
  });
}

enum class Bitwise { And, Or, Xor, LeftShift, RightShift };

Expected<std::vector<TensorType>> inferBitwise(const InferContext &ctx) {
  for (size_t i = 0; i < 2; ++i)
    if (isFloating(ctx.input(i).dtype))
      return makeError("bitwise ops need integer or bool tensors, got ",
                       dtypeName(ctx.input(i).dtype));
  return inferArithmetic(ctx);
}

/// Computed in int64 (uint64 for u64) and narrowed on store, so shifts wrap at the element width.
/// Shifting by a negative amount or by 64 or more gives 0 (or the sign for an arithmetic right
/// shift).
template <Bitwise B> Status bitwiseKernel(KernelContext &ctx) {
  return runBinary(ctx, ctx.output(0).dtype(), [](auto a, auto b) {
    using S = decltype(a);
    if constexpr (!std::is_integral_v<S>) {
      return a; // unreachable: inference rejects floats
    } else {
      switch (B) {
      case Bitwise::And:
        return S(a & b);
      case Bitwise::Or:
        return S(a | b);
      case Bitwise::Xor:
        return S(a ^ b);
      case Bitwise::LeftShift:
        return (isNegative(b) || b >= 64) ? S(0) : S(uint64_t(a) << b);
      case Bitwise::RightShift:
        return (isNegative(b) || b >= 64) ? S(isNegative(a) ? -1 : 0) : S(a >> b);
      }
      return a;
    }
  });
}

// ---- where ------------------------------------------------------------------------------------

Expected<std::vector<TensorType>> inferWhere(const InferContext &ctx) {
  const TensorType &condition = ctx.input(0);
  if (condition.dtype != DType::Bool)
    return makeError("condition must be a bool tensor, got ", dtypeName(condition.dtype));
  TC_ASSIGN_OR_RETURN(Shape shape, broadcastShapes(condition.shape, ctx.input(1).shape));
  TC_ASSIGN_OR_RETURN(shape, broadcastShapes(shape, ctx.input(2).shape));
  DType dtype = resultType({&ctx.input(1), &ctx.input(2)});
  return std::vector<TensorType>{TensorType(dtype, std::move(shape))};
}

Status whereKernel(KernelContext &ctx) {
  const Tensor &condition = ctx.input(0);
  Tensor &out = ctx.output(0);
  BroadcastRows<3> rows(out.shape(),
                        {&condition.shape(), &ctx.input(1).shape(), &ctx.input(2).shape()});
  visitCompute(out.dtype(), [&](auto zero) {
    using S = decltype(zero);
    ComputeInput<S> self(ctx.input(1)), other(ctx.input(2));
    ComputeOutput<S> result(out);
    const uint8_t *c = condition.dataAs<uint8_t>();
    const S *x = self.data();
    const S *y = other.data();
    S *dst = result.data();
    rows.forEach([&](int64_t o, const std::array<int64_t, 3> &offset,
                     const std::array<int64_t, 3> &step, int64_t n) {
      for (int64_t j = 0; j < n; ++j)
        dst[o + j] =
            c[offset[0] + j * step[0]] ? x[offset[1] + j * step[1]] : y[offset[2] + j * step[2]];
    });
    result.commit();
  });
  return Status::ok();
}

// ---- Decompositions ---------------------------------------------------------------------------
// Scalars become 0-d constants, which promote weakly: the tensor operand keeps its dtype.

/// gelu(x) = 0.5 * x * (1 + erf(x / sqrt(2))), or with approximate='tanh'
/// 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))).
DecomposeResult decomposeGelu(RewriteContext &rewrite, const OpRegistry &registry) {
  DecomposeBuilder b(rewrite, registry);
  Value *x = b.operand(0);
  Value *inner = nullptr;
  if (AttrReader(b.node().attrs()).getString("approximate") == "tanh") {
    TC_ASSIGN_OR_RETURN(Value * square, b.mul(x, x));
    TC_ASSIGN_OR_RETURN(Value * cube, b.mul(square, x));
    TC_ASSIGN_OR_RETURN(Value * scaledCube, b.binaryScalar(OpId::Mul, cube, 0.044715));
    TC_ASSIGN_OR_RETURN(Value * sum, b.add(x, scaledCube));
    TC_ASSIGN_OR_RETURN(Value * scaled, b.binaryScalar(OpId::Mul, sum, 0.7978845608028654));
    TC_ASSIGN_OR_RETURN(inner, b.unary(OpId::Tanh, scaled));
  } else {
    TC_ASSIGN_OR_RETURN(Value * scaled, b.binaryScalar(OpId::Mul, x, 0.7071067811865476));
    TC_ASSIGN_OR_RETURN(inner, b.unary(OpId::Erf, scaled));
  }
  TC_ASSIGN_OR_RETURN(Value * onePlus, b.binaryScalar(OpId::Add, inner, 1.0));
  TC_ASSIGN_OR_RETURN(Value * half, b.binaryScalar(OpId::Mul, x, 0.5));
  TC_ASSIGN_OR_RETURN(Value * result, b.mul(half, onePlus));
  return replaceWith(result);
}

/// silu(x) = x * sigmoid(x); integer inputs compute in the result's float dtype.
DecomposeResult decomposeSilu(RewriteContext &rewrite, const OpRegistry &registry) {
  DecomposeBuilder b(rewrite, registry);
  TC_ASSIGN_OR_RETURN(Value * x, b.cast(b.operand(0), b.resultType().dtype));
  TC_ASSIGN_OR_RETURN(Value * sigmoid, b.unary(OpId::Sigmoid, x));
  TC_ASSIGN_OR_RETURN(Value * result, b.mul(x, sigmoid));
  return replaceWith(result);
}

/// clamp(x, min, max) = minimum(maximum(x, min), max) in the result dtype: maximum/minimum
/// propagate NaN from either side, as clamp does (and min > max gives max). A bool result keeps
/// the node.
DecomposeResult decomposeClamp(RewriteContext &rewrite, const OpRegistry &registry) {
  DecomposeBuilder b(rewrite, registry);
  DType dtype = b.resultType().dtype;
  if (dtype == DType::Bool)
    return keepNode();
  TC_ASSIGN_OR_RETURN(Value * result, b.cast(b.operand(0), dtype));
  AttrReader attrs(b.node().attrs());
  for (auto [bound, op] : {std::pair{"min", OpId::Maximum}, std::pair{"max", OpId::Minimum}}) {
    if (attrs.isNone(bound))
      continue;
    TC_ASSIGN_OR_RETURN(Value * limit, b.scalar(attrs.attr(bound), dtype));
    TC_ASSIGN_OR_RETURN(result, b.binary(op, result, limit));
  }
  return replaceWith(result);
}

// ---- Registration -----------------------------------------------------------------------------

std::vector<ParamSpec> selfOnly() { return {tensorParam("self")}; }
std::vector<ParamSpec> selfOther() { return {tensorParam("self"), tensorParam("other")}; }

} // namespace

Status registerElementwiseOps(OpRegistry &registry) {
  ParamSpec value = attrParam("value", AttrKind::Tensor);
  value.kwargOnly = true;
  TC_RETURN_IF_ERROR(registry.add(makeOp(OpId::Constant, {value}, inferConstant, constantKernel)));

  struct Unary {
    OpId id;
    InferFn infer;
    KernelFn kernel;
  };
  const Unary unaryOps[] = {
      {OpId::Neg, inferSameTypeNoBool, sameTypeKernel<NegFn>},
      {OpId::Abs, inferSameTypeNoBool, sameTypeKernel<AbsFn>},
      {OpId::Exp, inferFloatMath, floatMathKernel<ExpFn>},
      {OpId::Log, inferFloatMath, floatMathKernel<LogFn>},
      {OpId::Sqrt, inferFloatMath, floatMathKernel<SqrtFn>},
      {OpId::Rsqrt, inferFloatMath, floatMathKernel<RsqrtFn>},
      {OpId::Reciprocal, inferFloatMath, floatMathKernel<ReciprocalFn>},
      {OpId::Tanh, inferFloatMath, floatMathKernel<TanhFn>},
      {OpId::Sigmoid, inferFloatMath, floatMathKernel<SigmoidFn>},
      {OpId::Erf, inferFloatMath, floatMathKernel<ErfFn>},
      {OpId::Sin, inferFloatMath, floatMathKernel<SinFn>},
      {OpId::Cos, inferFloatMath, floatMathKernel<CosFn>},
      {OpId::Tan, inferFloatMath, floatMathKernel<TanFn>},
      {OpId::Asin, inferFloatMath, floatMathKernel<AsinFn>},
      {OpId::Acos, inferFloatMath, floatMathKernel<AcosFn>},
      {OpId::Atan, inferFloatMath, floatMathKernel<AtanFn>},
      {OpId::Sinh, inferFloatMath, floatMathKernel<SinhFn>},
      {OpId::Cosh, inferFloatMath, floatMathKernel<CoshFn>},
      {OpId::Asinh, inferFloatMath, floatMathKernel<AsinhFn>},
      {OpId::Acosh, inferFloatMath, floatMathKernel<AcoshFn>},
      {OpId::Atanh, inferFloatMath, floatMathKernel<AtanhFn>},
      {OpId::Floor, inferSameTypeNoBool, sameTypeKernel<FloorFn>},
      {OpId::Ceil, inferSameTypeNoBool, sameTypeKernel<CeilFn>},
      {OpId::Round, inferSameTypeNoBool, sameTypeKernel<RoundFn>},
      {OpId::Sign, inferSameType, sameTypeKernel<SignFn>},
      {OpId::Relu, inferSameTypeNoBool, sameTypeKernel<ReluFn>},
      {OpId::LogicalNot, inferPredicate, logicalNotKernel},
      {OpId::BitwiseNot, inferBitwiseNot, bitwiseNotKernel},
      {OpId::IsNan, inferPredicate, isNanKernel},
  };
  for (const Unary &op : unaryOps)
    TC_RETURN_IF_ERROR(registry.add(makeOp(op.id, selfOnly(), op.infer, op.kernel)));
  TC_RETURN_IF_ERROR(registry.add(withDecompose(
      makeOp(OpId::Silu, selfOnly(), inferFloatMath, floatMathKernel<SiluFn>), decomposeSilu)));

  TC_RETURN_IF_ERROR(registry.add(withDecompose(
      makeOp(OpId::Gelu,
             {tensorParam("self"), attrParam("approximate", AttrKind::String, "none", true)},
             inferGelu, geluKernel),
      decomposeGelu)));
  TC_RETURN_IF_ERROR(registry.add(
      withDecompose(makeOp(OpId::Clamp,
                           {tensorParam("self"), optionalAttrParam("min", AttrKind::Scalar),
                            optionalAttrParam("max", AttrKind::Scalar)},
                           inferClamp, clampKernel),
                    decomposeClamp)));
  TC_RETURN_IF_ERROR(registry.add(makeOp(OpId::ConvertElementType,
                                         {tensorParam("self"), attrParam("dtype", AttrKind::DType)},
                                         inferConvert, convertKernel)));

  auto alpha = [] { return attrParam("alpha", AttrKind::Scalar, int64_t(1), true); };
  TC_RETURN_IF_ERROR(
      registry.add(makeOp(OpId::Add, {tensorParam("self"), tensorParam("other"), alpha()},
                          inferAddSub<false>, addSubKernel<false>)));
  TC_RETURN_IF_ERROR(
      registry.add(makeOp(OpId::Sub, {tensorParam("self"), tensorParam("other"), alpha()},
                          inferAddSub<true>, addSubKernel<true>)));
  TC_RETURN_IF_ERROR(registry.add(makeOp(OpId::Mul, selfOther(), inferArithmetic, mulKernel)));
  TC_RETURN_IF_ERROR(
      registry.add(makeOp(OpId::Div,
                          {tensorParam("self"), tensorParam("other"),
                           optionalAttrParam("rounding_mode", AttrKind::String, true)},
                          inferDiv, divKernel)));
  TC_RETURN_IF_ERROR(registry.add(makeOp(OpId::Pow, {tensorParam("self"), tensorParam("exponent")},
                                         inferArithmetic, powKernel)));

  struct Binary {
    OpId id;
    InferFn infer;
    KernelFn kernel;
  };
  const Binary binaryOps[] = {
      {OpId::Remainder, inferArithmetic, remainderKernel},
      {OpId::Fmod, inferArithmetic, fmodKernel},
      {OpId::Maximum, inferArithmetic, extremumKernel<true>},
      {OpId::Minimum, inferArithmetic, extremumKernel<false>},
      {OpId::Eq, inferBoolResult, compareKernel<Compare::Eq>},
      {OpId::Ne, inferBoolResult, compareKernel<Compare::Ne>},
      {OpId::Lt, inferBoolResult, compareKernel<Compare::Lt>},
      {OpId::Le, inferBoolResult, compareKernel<Compare::Le>},
      {OpId::Gt, inferBoolResult, compareKernel<Compare::Gt>},
      {OpId::Ge, inferBoolResult, compareKernel<Compare::Ge>},
      {OpId::LogicalAnd, inferBoolResult, logicalKernel<Logical::And>},
      {OpId::LogicalOr, inferBoolResult, logicalKernel<Logical::Or>},
      {OpId::LogicalXor, inferBoolResult, logicalKernel<Logical::Xor>},
      {OpId::BitwiseAnd, inferBitwise, bitwiseKernel<Bitwise::And>},
      {OpId::BitwiseOr, inferBitwise, bitwiseKernel<Bitwise::Or>},
      {OpId::BitwiseXor, inferBitwise, bitwiseKernel<Bitwise::Xor>},
      {OpId::BitwiseLeftShift, inferBitwise, bitwiseKernel<Bitwise::LeftShift>},
      {OpId::BitwiseRightShift, inferBitwise, bitwiseKernel<Bitwise::RightShift>},
  };
  for (const Binary &op : binaryOps)
    TC_RETURN_IF_ERROR(registry.add(makeOp(op.id, selfOther(), op.infer, op.kernel)));

  return registry.add(makeOp(OpId::Where,
                             {tensorParam("condition"), tensorParam("self"), tensorParam("other")},
                             inferWhere, whereKernel));
}

} // namespace tensorc::ops
