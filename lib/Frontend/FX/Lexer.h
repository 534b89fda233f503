// FX-text tokens and the lexer that produces them (with line:column for every token).
#pragma once

#include "tensorc/Support/Status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tensorc::fx {

enum class TokenKind {
  Value,      // %name
  Identifier, // graph, call_function, aten.add, s0, f32, True, torch.float32
  Integer,
  Float,
  String,     // 'none' (text holds the unescaped contents)
  Punct,      // ( ) [ ] { } , : = < > * + - // %
  Newline,
  End,
};

struct Token {
  TokenKind kind = TokenKind::End;
  std::string text;
  int64_t intValue = 0;
  double floatValue = 0;
  int line = 1, column = 1;
};

/// Splits `text` into tokens; comments (# ...) and blank lines vanish, each remaining line ends
/// with a Newline token. Errors carry file:line:column.
Expected<std::vector<Token>> tokenize(std::string_view text, const std::string &fileName);

} // namespace tensorc::fx
