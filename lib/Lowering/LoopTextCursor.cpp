// LoopIR text tokens: identifiers, numbers, digests' hex words, quoted strings, punctuation.
#include "LoopTextCursor.h"

#include <cctype>
#include <charconv>

namespace tensorc::loop {

namespace {

bool isWordChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}

} // namespace

Expected<std::vector<Token>> tokenizeLine(std::string_view line) {
  std::vector<Token> tokens;
  size_t i = 0;
  while (i < line.size()) {
    char c = line[i];
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      continue;
    }
    Token token;
    token.column = int(i) + 1;
    if (c == '"') {
      token.kind = Token::Kind::String;
      for (++i; i < line.size() && line[i] != '"'; ++i) {
        if (line[i] == '\\' && i + 1 < line.size())
          ++i;
        token.text += line[i];
      }
      if (i >= line.size())
        return makeError(token.column, ": error: unterminated string");
      ++i;
    } else if (isWordChar(c)) {
      size_t start = i;
      while (i < line.size() && isWordChar(line[i]))
        ++i;
      // 1e+20: the exponent's sign continues a number.
      if (std::isdigit(static_cast<unsigned char>(c)) && i + 1 < line.size() &&
          (line[i - 1] == 'e' || line[i - 1] == 'E') && (line[i] == '+' || line[i] == '-') &&
          std::isdigit(static_cast<unsigned char>(line[i + 1])))
        for (i += 1; i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]));)
          ++i;
      token.text = std::string(line.substr(start, i - start));
      token.kind = Token::Kind::Ident;
      if (std::isdigit(static_cast<unsigned char>(c))) {
        const char *begin = token.text.data(), *end = begin + token.text.size();
        bool isFloat = token.text.find_first_of(".eE") != std::string::npos;
        auto parsed = isFloat ? std::from_chars(begin, end, token.floatValue)
                              : std::from_chars(begin, end, token.intValue);
        token.kind = parsed.ec == std::errc() && parsed.ptr == end
                         ? (isFloat ? Token::Kind::Float : Token::Kind::Int)
                         : Token::Kind::Word;
      }
    } else {
      token.kind = Token::Kind::Punct;
      std::string_view two = line.substr(i, 2);
      token.text = two == "//" || two == "->" ? std::string(two) : std::string(1, c);
      i += token.text.size();
    }
    tokens.push_back(std::move(token));
  }
  Token end;
  end.column = int(line.size()) + 1;
  tokens.push_back(end);
  return tokens;
}

} // namespace tensorc::loop
