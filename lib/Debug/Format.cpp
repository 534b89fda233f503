// Number formatting for reports: fixed precision, so reports are deterministic text.
#include "Format.h"

#include <cstdio>

namespace tensorc::debug {

std::string formatFixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

std::string formatShort(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

std::string formatBytes(double bytes) {
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  size_t unit = 0;
  while (bytes >= 1024.0 && unit + 1 < sizeof units / sizeof units[0]) {
    bytes /= 1024.0;
    ++unit;
  }
  return (unit == 0 ? formatFixed(bytes, 0) : formatFixed(bytes, 2)) + " " + units[unit];
}

std::string formatCount(double count, const std::string &unit) {
  static const char *prefixes[] = {"", "K", "M", "G", "T", "P"};
  size_t prefix = 0;
  while (count >= 1000.0 && prefix + 1 < sizeof prefixes / sizeof prefixes[0]) {
    count /= 1000.0;
    ++prefix;
  }
  return (prefix == 0 ? formatFixed(count, 0) : formatFixed(count, 2)) + " " + prefixes[prefix] +
         unit;
}

} // namespace tensorc::debug
