// FX-text lexer.
#include "Lexer.h"

#include "tensorc/Support/StrCat.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace tensorc::fx {

namespace {
bool isIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool isIdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}
} // namespace

Expected<std::vector<Token>> tokenize(std::string_view text, const std::string &fileName) {
  std::vector<Token> tokens;
  int line = 1, column = 1;
  size_t pos = 0;
  auto error = [&](const std::string &message) {
    return makeError(fileName, ":", line, ":", column, ": error: ", message);
  };
  auto advance = [&](size_t count) {
    pos += count;
    column += int(count);
  };
  auto push = [&](TokenKind kind, std::string tokenText, int tokenColumn) -> Token & {
    Token token;
    token.kind = kind;
    token.text = std::move(tokenText);
    token.line = line;
    token.column = tokenColumn;
    tokens.push_back(std::move(token));
    return tokens.back();
  };

  while (pos < text.size()) {
    char c = text[pos];
    int start = column;
    if (c == '\n') {
      if (!tokens.empty() && tokens.back().kind != TokenKind::Newline)
        push(TokenKind::Newline, "\\n", start);
      ++pos;
      ++line;
      column = 1;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      advance(1);
      continue;
    }
    if (c == '#') {
      while (pos < text.size() && text[pos] != '\n')
        advance(1);
      continue;
    }
    if (c == '%' && pos + 1 < text.size() && isIdentStart(text[pos + 1])) {
      size_t end = pos + 1;
      while (end < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_'))
        ++end;
      push(TokenKind::Value, std::string(text.substr(pos + 1, end - pos - 1)), start);
      advance(end - pos);
      continue;
    }
    if (isIdentStart(c)) {
      size_t end = pos;
      while (end < text.size() && isIdentChar(text[end]))
        ++end;
      push(TokenKind::Identifier, std::string(text.substr(pos, end - pos)), start);
      advance(end - pos);
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && pos + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[pos + 1])))) {
      size_t end = pos;
      bool isFloat = false;
      while (end < text.size()) {
        char d = text[end];
        if (std::isdigit(static_cast<unsigned char>(d))) {
          ++end;
        } else if (d == '.' || d == 'e' || d == 'E') {
          isFloat = true;
          ++end;
          if ((d == 'e' || d == 'E') && end < text.size() && (text[end] == '+' || text[end] == '-'))
            ++end;
        } else {
          break;
        }
      }
      std::string number(text.substr(pos, end - pos));
      char *parsedEnd = nullptr;
      errno = 0;
      Token &token = push(isFloat ? TokenKind::Float : TokenKind::Integer, number, start);
      if (isFloat)
        token.floatValue = std::strtod(number.c_str(), &parsedEnd);
      else
        token.intValue = std::strtoll(number.c_str(), &parsedEnd, 10);
      if (errno != 0 || parsedEnd != number.c_str() + number.size())
        return error(strCat("bad number '", number, "'"));
      advance(end - pos);
      continue;
    }
    if (c == '\'' || c == '"') {
      std::string contents;
      size_t end = pos + 1;
      while (end < text.size() && text[end] != c && text[end] != '\n') {
        if (text[end] == '\\' && end + 1 < text.size()) {
          char e = text[end + 1];
          contents += e == 'n' ? '\n' : e == 't' ? '\t' : e;
          end += 2;
          continue;
        }
        contents += text[end++];
      }
      if (end >= text.size() || text[end] != c)
        return error("unterminated string");
      push(TokenKind::String, contents, start);
      advance(end + 1 - pos);
      continue;
    }
    if (c == '/' && pos + 1 < text.size() && text[pos + 1] == '/') {
      push(TokenKind::Punct, "//", start);
      advance(2);
      continue;
    }
    if (std::string_view("()[]{},:=<>*+-%").find(c) != std::string_view::npos) {
      push(TokenKind::Punct, std::string(1, c), start);
      advance(1);
      continue;
    }
    return error(strCat("unexpected character '", std::string(1, c), "'"));
  }
  if (!tokens.empty() && tokens.back().kind != TokenKind::Newline)
    push(TokenKind::Newline, "\\n", column);
  push(TokenKind::End, "end of file", column);
  return tokens;
}

} // namespace tensorc::fx
