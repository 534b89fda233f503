// Identifiers: the names the IR and the bundle manifest accept for values and symbols.
#pragma once

#include <cctype>
#include <string>

namespace tensorc {

/// Non-empty, letters, digits and '_', not starting with a digit.
inline bool isIdentifier(const std::string &name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])))
    return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
      return false;
  return true;
}

/// `text` made an identifier: every other character becomes '_', and `prefix` goes in front
/// when the result would be empty or start with a digit ("layer/0:out" -> "layer_0_out").
inline std::string toIdentifier(const std::string &text, const char *prefix) {
  std::string name;
  for (char c : text)
    name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])))
    name = prefix + name;
  return name;
}

} // namespace tensorc
