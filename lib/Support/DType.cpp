// Element type names, sizes, promotion and half-precision conversions.
#include "tensorc/Support/DType.h"

#include <cmath>
#include <iterator>

namespace tensorc {

namespace {
/// The X-macro's columns as a table indexed by the enum (which follows the macro's order).
struct DTypeInfo {
  DType dtype;
  std::string_view name, safetensorsName;
  size_t size;
  DTypeKind kind;
};
constexpr DTypeInfo kDTypes[] = {
#define TENSORC_DTYPE_INFO(e, n, s, b, c, k) {DType::e, n, s, b, DTypeKind::k},
    TENSORC_FOR_EACH_DTYPE(TENSORC_DTYPE_INFO)
#undef TENSORC_DTYPE_INFO
};

const DTypeInfo *findInfo(DType dtype) {
  size_t index = size_t(dtype);
  return index < std::size(kDTypes) ? &kDTypes[index] : nullptr;
}

std::optional<DType> findByName(std::string_view DTypeInfo::*field, std::string_view name) {
  for (const DTypeInfo &info : kDTypes)
    if (info.*field == name)
      return info.dtype;
  return std::nullopt;
}
} // namespace

std::string_view dtypeName(DType dtype) {
  const DTypeInfo *info = findInfo(dtype);
  return info ? info->name : "?";
}

std::string_view dtypeSafetensorsName(DType dtype) {
  const DTypeInfo *info = findInfo(dtype);
  return info ? info->safetensorsName : "?";
}

size_t dtypeSize(DType dtype) {
  const DTypeInfo *info = findInfo(dtype);
  return info ? info->size : 0;
}

DTypeKind dtypeKind(DType dtype) {
  const DTypeInfo *info = findInfo(dtype);
  return info ? info->kind : DTypeKind::Bool;
}

std::optional<DType> parseDType(std::string_view name) {
  if (std::optional<DType> dtype = findByName(&DTypeInfo::name, name))
    return dtype;
  if (name.substr(0, 6) == "torch.")
    name.remove_prefix(6);
  struct Alias {
    std::string_view name;
    DType dtype;
  };
  static constexpr Alias aliases[] = {
      {"float64", DType::F64},   {"double", DType::F64},  {"float32", DType::F32},
      {"float", DType::F32},     {"float16", DType::F16}, {"half", DType::F16},
      {"bfloat16", DType::BF16}, {"int64", DType::I64},   {"long", DType::I64},
      {"int32", DType::I32},     {"int", DType::I32},     {"int16", DType::I16},
      {"short", DType::I16},     {"int8", DType::I8},     {"uint8", DType::U8},
      {"uint16", DType::U16},    {"uint32", DType::U32},  {"uint64", DType::U64},
      {"bool", DType::Bool}};
  for (const Alias &alias : aliases)
    if (alias.name == name)
      return alias.dtype;
  return std::nullopt;
}

std::optional<DType> parseSafetensorsDType(std::string_view name) {
  return findByName(&DTypeInfo::safetensorsName, name);
}

namespace {
/// Categories are bool(0) < integer(1) < float(2).
int category(DType dtype) { return dtype == DType::Bool ? 0 : isFloating(dtype) ? 2 : 1; }
/// Rank among the floats.
int floatRank(DType dtype) {
  switch (dtype) {
  case DType::F16:
  case DType::BF16:
    return 1;
  case DType::F32:
    return 2;
  default:
    return 3;
  }
}
} // namespace

DType promoteTypes(DType a, DType b) {
  if (a == b)
    return a;
  int ca = category(a), cb = category(b);
  if (ca != cb)
    return ca > cb ? a : b;
  if (ca == 2) {
    int ra = floatRank(a), rb = floatRank(b);
    if (ra == rb) // f16 with bf16
      return DType::F32;
    return ra > rb ? a : b;
  }
  // Integers of one signedness: the wider. An unsigned with a signed integer: the signed one when
  // it is wider, else the next wider signed type (u8 with i8 gives i16, as in torch and numpy);
  // nothing signed holds every u64, so u64 with a signed integer gives f64, as in numpy.
  if (isSignedInteger(a) == isSignedInteger(b))
    return dtypeSize(a) >= dtypeSize(b) ? a : b;
  DType unsignedType = isSignedInteger(a) ? b : a;
  DType signedType = isSignedInteger(a) ? a : b;
  if (dtypeSize(signedType) > dtypeSize(unsignedType))
    return signedType;
  switch (dtypeSize(unsignedType)) {
  case 1:
    return DType::I16;
  case 2:
    return DType::I32;
  case 4:
    return DType::I64;
  default:
    return DType::F64;
  }
}

float halfToFloat(uint16_t bits) {
  uint32_t sign = uint32_t(bits & 0x8000) << 16;
  uint32_t exponent = (bits >> 10) & 0x1f;
  uint32_t mantissa = bits & 0x3ff;
  uint32_t word;
  if (exponent == 0) {
    if (mantissa == 0) {
      word = sign;
    } else { // subnormal: normalize
      int shift = 0;
      while (!(mantissa & 0x400)) {
        mantissa <<= 1;
        ++shift;
      }
      mantissa &= 0x3ff;
      word = sign | (uint32_t(127 - 15 - shift + 1) << 23) | (mantissa << 13);
    }
  } else if (exponent == 0x1f) {
    word = sign | 0x7f800000u | (mantissa << 13);
  } else {
    word = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float value;
  std::memcpy(&value, &word, 4);
  return value;
}

uint16_t floatToHalf(float value) {
  uint32_t word;
  std::memcpy(&word, &value, 4);
  uint32_t sign = (word >> 16) & 0x8000;
  uint32_t absWord = word & 0x7fffffff;
  if (absWord > 0x7f800000) // NaN: keep it quiet
    return uint16_t(sign | 0x7e00);
  if (absWord >= 0x477ff000) // rounds to >= 65520: infinity
    return uint16_t(sign | 0x7c00);
  if (absWord < 0x38800000) { // below the smallest normal half: subnormal or zero
    float magnitude;
    std::memcpy(&magnitude, &absWord, 4);
    // Scaling by 2^24 puts the subnormal's units in the integer part; nearbyint rounds to even.
    return uint16_t(sign | uint32_t(std::nearbyint(magnitude * 16777216.0f)));
  }
  uint32_t exponent = ((absWord >> 23) - 127 + 15) << 10;
  uint32_t mantissa = absWord & 0x7fffff;
  uint32_t half = exponent | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
    ++half; // may carry into the exponent, which is the right result
  return uint16_t(sign | half);
}

uint16_t floatToBf16(float value) {
  uint32_t word;
  std::memcpy(&word, &value, 4);
  if ((word & 0x7fffffff) > 0x7f800000)
    return uint16_t((word >> 16) | 0x40);
  uint32_t rounding = 0x7fff + ((word >> 16) & 1);
  return uint16_t((word + rounding) >> 16);
}

} // namespace tensorc
