// Attribute: a node's non-tensor parameter (int, float, string, int list, dtype, tensor literal...).
#pragma once

#include "tensorc/IR/SymInt.h"
#include "tensorc/Support/Tensor.h"

#include <map>
#include <string>
#include <variant>
#include <vector>

namespace tensorc {

/// The kinds a schema can ask for. Scalar accepts an int or a float (fill values, alpha, clamp
/// bounds); Ints hold SymInts so that shape lists can be symbolic ([s0, 4096]).
#define TENSORC_FOR_EACH_ATTR_KIND(X)                                                              \
  X(Int, "int")                                                                                    \
  X(Float, "float")                                                                                \
  X(Bool, "bool")                                                                                  \
  X(String, "str")                                                                                 \
  X(Ints, "int[]")                                                                                 \
  X(Floats, "float[]")                                                                             \
  X(DType, "dtype")                                                                                \
  X(Tensor, "tensor")                                                                              \
  X(Scalar, "scalar")

enum class AttrKind : uint8_t {
#define TENSORC_ATTR_KIND_ENUM(e, n) e,
  TENSORC_FOR_EACH_ATTR_KIND(TENSORC_ATTR_KIND_ENUM)
#undef TENSORC_ATTR_KIND_ENUM
};
std::string_view attrKindName(AttrKind kind);

class Attribute {
public:
  using Storage = std::variant<std::monostate, int64_t, double, bool, std::string,
                               std::vector<SymInt>, std::vector<double>, DType, Tensor>;

  Attribute() = default; // None
  Attribute(int64_t value) : storage_(value) {}
  Attribute(int value) : storage_(int64_t(value)) {}
  Attribute(double value) : storage_(value) {}
  Attribute(bool value) : storage_(value) {}
  Attribute(std::string value) : storage_(std::move(value)) {}
  Attribute(const char *value) : storage_(std::string(value)) {}
  Attribute(std::vector<SymInt> value) : storage_(std::move(value)) {}
  Attribute(const std::vector<int64_t> &value);
  Attribute(std::vector<double> value) : storage_(std::move(value)) {}
  Attribute(DType value) : storage_(value) {}
  Attribute(Tensor value) : storage_(std::move(value)) {}

  bool isNone() const { return storage_.index() == 0; }
  bool isInt() const { return std::holds_alternative<int64_t>(storage_); }
  bool isFloat() const { return std::holds_alternative<double>(storage_); }
  bool isBool() const { return std::holds_alternative<bool>(storage_); }
  bool isString() const { return std::holds_alternative<std::string>(storage_); }
  bool isInts() const { return std::holds_alternative<std::vector<SymInt>>(storage_); }
  bool isFloats() const { return std::holds_alternative<std::vector<double>>(storage_); }
  bool isDType() const { return std::holds_alternative<DType>(storage_); }
  bool isTensor() const { return std::holds_alternative<Tensor>(storage_); }
  /// Whether the stored value fits `kind` (None fits nothing; Scalar takes int, float or bool).
  bool fits(AttrKind kind) const;

  int64_t asInt() const { return std::get<int64_t>(storage_); }
  double asFloat() const { return std::get<double>(storage_); }
  bool asBool() const { return std::get<bool>(storage_); }
  const std::string &asString() const { return std::get<std::string>(storage_); }
  const std::vector<SymInt> &asInts() const { return std::get<std::vector<SymInt>>(storage_); }
  const std::vector<double> &asFloats() const { return std::get<std::vector<double>>(storage_); }
  DType asDType() const { return std::get<DType>(storage_); }
  const Tensor &asTensor() const { return std::get<Tensor>(storage_); }
  /// An int, float or bool as a double (Scalar attributes).
  double asScalar() const;
  const Storage &storage() const { return storage_; }

  bool operator==(const Attribute &other) const;
  bool operator!=(const Attribute &other) const { return !(*this == other); }

  /// FX-text literal: 3, 1e-05, True, 'none', [s0, 4096], f32, tensor<f32[2]>[1.0, 2.0], None.
  std::string str() const;

private:
  Storage storage_;
};

/// A node's attributes by name; ordered so that printing and hashing are deterministic.
using AttrMap = std::map<std::string, Attribute>;

/// Float literal text that reads back to the same double ("1.0", "1e-05", "inf", "nan").
std::string formatFloat(double value);

} // namespace tensorc
