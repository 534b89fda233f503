// Compile-time dispatch on a dtype: each dtype's storage type, a visitor that calls a generic
// function with the dtype as a constant, and the element conversions shared by Tensor's
// accessors and the elementwise kernels.
#pragma once

#include "tensorc/Support/DType.h"

#include <cstdint>
#include <type_traits>

namespace tensorc {

template <DType D> struct StorageFor;
#define TENSORC_DTYPE_STORAGE(e, n, s, b, c, k)                                                    \
  template <> struct StorageFor<DType::e> { using type = c; };
TENSORC_FOR_EACH_DTYPE(TENSORC_DTYPE_STORAGE)
#undef TENSORC_DTYPE_STORAGE
/// The C++ type an element of dtype D is stored as.
template <DType D> using Storage = typename StorageFor<D>::type;
template <DType D> using DTypeTag = std::integral_constant<DType, D>;

/// Calls `fn(DTypeTag<D>{})` for the dtype, so kernels get the exact storage (f16 vs bf16 too).
template <typename Fn> decltype(auto) visitElem(DType dtype, Fn &&fn) {
  switch (dtype) {
#define TENSORC_DTYPE_VISIT(e, ...)                                                                \
  case DType::e:                                                                                   \
    return fn(DTypeTag<DType::e>{});
    TENSORC_FOR_EACH_DTYPE(TENSORC_DTYPE_VISIT)
#undef TENSORC_DTYPE_VISIT
  }
  return fn(DTypeTag<DType::F32>{});
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

} // namespace tensorc
