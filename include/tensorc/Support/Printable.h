// Escaping untrusted text (node and tensor names from model files) before it reaches a terminal.
#pragma once

#include <string>
#include <string_view>

namespace tensorc {

/// `text` with control characters escaped (\n, \r, \t, \x1b...; DEL and other bytes below 0x20
/// as \xNN), so a name read from a model can neither forge a line of output nor send terminal
/// escape sequences. With `keepNewlines`, '\n' passes through (for
/// multi-line text tensorc itself formats, such as IR dumps).
inline std::string printable(std::string_view text, bool keepNewlines = false) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    unsigned char byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte != 0x7f) {
      out += c;
    } else if (c == '\n') {
      out += keepNewlines ? "\n" : "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 15];
    }
  }
  return out;
}

} // namespace tensorc
