// A small JSON value with a strict parser and a deterministic writer (safetensors headers,
// manifests, reports).
#pragma once

#include "tensorc/Support/Status.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tensorc {

class Json {
public:
  enum class Kind { Null, Bool, Int, Float, String, Array, Object };

  Json() = default;
  Json(std::nullptr_t) {}
  Json(bool value) : kind_(Kind::Bool), bool_(value) {}
  Json(int value) : kind_(Kind::Int), int_(value) {}
  Json(int64_t value) : kind_(Kind::Int), int_(value) {}
  Json(uint64_t value) : kind_(Kind::Int), int_(int64_t(value)) {}
  Json(double value) : kind_(Kind::Float), float_(value) {}
  Json(std::string value) : kind_(Kind::String), string_(std::move(value)) {}
  Json(const char *value) : kind_(Kind::String), string_(value) {}
  static Json array() { Json j; j.kind_ = Kind::Array; return j; }
  static Json object() { Json j; j.kind_ = Kind::Object; return j; }

  Kind kind() const { return kind_; }
  bool isNull() const { return kind_ == Kind::Null; }
  bool isInt() const { return kind_ == Kind::Int; }
  bool isNumber() const { return kind_ == Kind::Int || kind_ == Kind::Float; }
  bool isString() const { return kind_ == Kind::String; }
  bool isArray() const { return kind_ == Kind::Array; }
  bool isObject() const { return kind_ == Kind::Object; }

  bool asBool() const { return bool_; }
  int64_t asInt() const { return int_; }
  double asNumber() const { return kind_ == Kind::Int ? double(int_) : float_; }
  const std::string &asString() const { return string_; }
  const std::vector<Json> &items() const { return array_; }
  /// Members in key order (the writer's order too, so output is deterministic).
  const std::map<std::string, Json> &members() const { return object_; }

  void push(Json value) { array_.push_back(std::move(value)); }
  Json &operator[](const std::string &key) { return object_[key]; }
  const Json *find(const std::string &key) const;

  /// Compact text; `indent` > 0 pretty-prints.
  std::string dump(int indent = 0) const;
  /// Strict RFC 8259 parse of the whole text; errors give the byte offset.
  static Expected<Json> parse(std::string_view text);

private:
  void dumpTo(std::string &out, int indent, int depth) const;
  Kind kind_ = Kind::Null;
  bool bool_ = false;
  int64_t int_ = 0;
  double float_ = 0;
  std::string string_;
  std::vector<Json> array_;
  std::map<std::string, Json> object_;
};

} // namespace tensorc
