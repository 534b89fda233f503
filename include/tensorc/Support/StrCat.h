// strCat and join: build messages and printed IR from streamable parts.
#pragma once

#include <sstream>
#include <string>
#include <string_view>

namespace tensorc {

template <typename... Parts> std::string strCat(const Parts &...parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

/// Joins a range with a separator, printing each element with `os << element`.
template <typename Range> std::string join(const Range &range, std::string_view separator) {
  std::ostringstream os;
  bool first = true;
  for (const auto &element : range) {
    if (!first)
      os << separator;
    first = false;
    os << element;
  }
  return os.str();
}

} // namespace tensorc
