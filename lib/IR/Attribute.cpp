// Attribute kinds, equality and FX-text literal printing.
#include "tensorc/IR/Attribute.h"

#include "tensorc/Support/StrCat.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace tensorc {

std::string_view attrKindName(AttrKind kind) {
  switch (kind) {
#define TENSORC_ATTR_KIND_CASE(e, n)                                                               \
  case AttrKind::e:                                                                                \
    return n;
    TENSORC_FOR_EACH_ATTR_KIND(TENSORC_ATTR_KIND_CASE)
#undef TENSORC_ATTR_KIND_CASE
  }
  return "?";
}

Attribute::Attribute(const std::vector<int64_t> &value) {
  std::vector<SymInt> ints;
  ints.reserve(value.size());
  for (int64_t v : value)
    ints.emplace_back(v);
  storage_ = std::move(ints);
}

bool Attribute::fits(AttrKind kind) const {
  switch (kind) {
  case AttrKind::Int:
    return isInt();
  case AttrKind::Float:
    return isFloat();
  case AttrKind::Bool:
    return isBool();
  case AttrKind::String:
    return isString();
  case AttrKind::Ints:
    return isInts();
  case AttrKind::Floats:
    return isFloats();
  case AttrKind::DType:
    return isDType();
  case AttrKind::Tensor:
    return isTensor();
  case AttrKind::Scalar:
    return isInt() || isFloat() || isBool();
  }
  return false;
}

double Attribute::asScalar() const {
  if (isInt())
    return double(asInt());
  if (isBool())
    return asBool() ? 1.0 : 0.0;
  return asFloat();
}

bool Attribute::operator==(const Attribute &other) const {
  if (storage_.index() != other.storage_.index())
    return false;
  if (isTensor())
    return asTensor().equals(other.asTensor());
  if (isFloat()) // NaN literals compare equal to themselves, so printed graphs round-trip
    return asFloat() == other.asFloat() ||
           (std::isnan(asFloat()) && std::isnan(other.asFloat()));
  return std::visit(
      [&](const auto &mine) {
        using T = std::decay_t<decltype(mine)>;
        if constexpr (std::is_same_v<T, Tensor>)
          return false; // handled above
        else if constexpr (std::is_same_v<T, std::monostate>)
          return true;
        else
          return mine == std::get<T>(other.storage_);
      },
      storage_);
}

std::string formatFloat(double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value > 0 ? "inf" : "-inf";
  // Shortest representation that parses back to the same double.
  char buffer[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof buffer, "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value)
      break;
  }
  std::string text = buffer;
  if (text.find_first_of(".eE") == std::string::npos)
    text += ".0";
  return text;
}

namespace {
std::string tensorLiteral(const Tensor &tensor) {
  std::string out = strCat("tensor<", describeShape(tensor.dtype(), tensor.shape()), ">[");
  for (int64_t i = 0; i < tensor.numel(); ++i) {
    if (i)
      out += ", ";
    if (tensor.dtype() == DType::Bool)
      out += tensor.getInt(i) ? "True" : "False";
    else if (isFloating(tensor.dtype()))
      out += formatFloat(tensor.getDouble(i));
    else
      out += std::to_string(tensor.getInt(i));
  }
  return out + "]";
}

std::string quote(const std::string &text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'' || c == '\\')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "'";
}
} // namespace

std::string Attribute::str() const {
  struct Printer {
    std::string operator()(std::monostate) const { return "None"; }
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const { return formatFloat(v); }
    std::string operator()(bool v) const { return v ? "True" : "False"; }
    std::string operator()(const std::string &v) const { return quote(v); }
    std::string operator()(const std::vector<SymInt> &v) const {
      return strCat("[", join(v, ", "), "]");
    }
    std::string operator()(const std::vector<double> &v) const {
      std::string out = "[";
      for (size_t i = 0; i < v.size(); ++i)
        out += (i ? ", " : "") + formatFloat(v[i]);
      return out + "]";
    }
    std::string operator()(DType v) const { return std::string(dtypeName(v)); }
    std::string operator()(const Tensor &v) const { return tensorLiteral(v); }
  };
  return std::visit(Printer{}, storage_);
}

} // namespace tensorc
