// Element types: the closed list, their names, sizes, and f16/bf16 conversions.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace tensorc {

// X(Enum, fx name, safetensors name, size in bytes, C++ type an element is stored as,
//   DTypeKind)
#define TENSORC_FOR_EACH_DTYPE(X)                                                                  \
  X(F64, "f64", "F64", 8, double, Float)                                                           \
  X(F32, "f32", "F32", 4, float, Float)                                                            \
  X(F16, "f16", "F16", 2, uint16_t, Float)                                                         \
  X(BF16, "bf16", "BF16", 2, uint16_t, Float)                                                      \
  X(I64, "i64", "I64", 8, int64_t, Signed)                                                         \
  X(I32, "i32", "I32", 4, int32_t, Signed)                                                         \
  X(I16, "i16", "I16", 2, int16_t, Signed)                                                         \
  X(I8, "i8", "I8", 1, int8_t, Signed)                                                             \
  X(U8, "u8", "U8", 1, uint8_t, Unsigned)                                                          \
  X(U16, "u16", "U16", 2, uint16_t, Unsigned)                                                      \
  X(U32, "u32", "U32", 4, uint32_t, Unsigned)                                                      \
  X(U64, "u64", "U64", 8, uint64_t, Unsigned)                                                      \
  X(Bool, "bool", "BOOL", 1, uint8_t, Bool)

enum class DType : uint8_t {
#define TENSORC_DTYPE_ENUM(e, ...) e,
  TENSORC_FOR_EACH_DTYPE(TENSORC_DTYPE_ENUM)
#undef TENSORC_DTYPE_ENUM
};

/// Short name used in FX-text: "f32", "bf16", "bool".
std::string_view dtypeName(DType dtype);
/// Name used in safetensors headers: "F32", "BOOL".
std::string_view dtypeSafetensorsName(DType dtype);
size_t dtypeSize(DType dtype);
/// Accepts the FX-text names and torch's spellings ("torch.float32", "float").
std::optional<DType> parseDType(std::string_view name);
std::optional<DType> parseSafetensorsDType(std::string_view name);

enum class DTypeKind : uint8_t { Float, Signed, Unsigned, Bool };
DTypeKind dtypeKind(DType dtype);
inline bool isFloating(DType dtype) { return dtypeKind(dtype) == DTypeKind::Float; }
inline bool isSignedInteger(DType dtype) { return dtypeKind(dtype) == DTypeKind::Signed; }
inline bool isUnsignedInteger(DType dtype) { return dtypeKind(dtype) == DTypeKind::Unsigned; }
inline bool isIntegral(DType dtype) { return isSignedInteger(dtype) || isUnsignedInteger(dtype); }

/// torch's promotion of two dtypes (bool < integers < floats; f16 with bf16 gives f32). Unsigned
/// integers, which torch mostly lacks, follow numpy: an unsigned with a signed integer gives the
/// smallest signed type holding both (u16 with i16 gives i32), and u64 with any signed integer
/// gives f64.
DType promoteTypes(DType a, DType b);

/// IEEE binary16 <-> float, round-to-nearest-even.
float halfToFloat(uint16_t bits);
uint16_t floatToHalf(float value);
/// bfloat16 <-> float, round-to-nearest-even (NaN stays NaN).
inline float bf16ToFloat(uint16_t bits) {
  uint32_t word = uint32_t(bits) << 16;
  float value;
  std::memcpy(&value, &word, 4);
  return value;
}
uint16_t floatToBf16(float value);

} // namespace tensorc
