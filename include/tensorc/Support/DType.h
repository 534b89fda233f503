// Element types: the closed list, their names, sizes, and f16/bf16 conversions.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace tensorc {

// X(Enum, fx name, safetensors name, size in bytes)
#define TENSORC_FOR_EACH_DTYPE(X)                                                                  \
  X(F64, "f64", "F64", 8)                                                                          \
  X(F32, "f32", "F32", 4)                                                                          \
  X(F16, "f16", "F16", 2)                                                                          \
  X(BF16, "bf16", "BF16", 2)                                                                       \
  X(I64, "i64", "I64", 8)                                                                          \
  X(I32, "i32", "I32", 4)                                                                          \
  X(I16, "i16", "I16", 2)                                                                          \
  X(I8, "i8", "I8", 1)                                                                             \
  X(U8, "u8", "U8", 1)                                                                             \
  X(U16, "u16", "U16", 2)                                                                          \
  X(U32, "u32", "U32", 4)                                                                          \
  X(U64, "u64", "U64", 8)                                                                          \
  X(Bool, "bool", "BOOL", 1)

enum class DType : uint8_t {
#define TENSORC_DTYPE_ENUM(e, n, s, b) e,
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

bool isFloating(DType dtype);
bool isSignedInteger(DType dtype);
inline bool isUnsignedInteger(DType dtype) {
  return dtype == DType::U8 || dtype == DType::U16 || dtype == DType::U32 || dtype == DType::U64;
}
inline bool isIntegral(DType dtype) { return !isFloating(dtype) && dtype != DType::Bool; }

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
