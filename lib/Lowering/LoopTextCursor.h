// Reading LoopIR text a line at a time: tokens (with columns), a cursor over them, and the parts
// of the grammar every construct shares (names, integers, dtypes, SymInt expressions, literals).
#pragma once

#include "tensorc/Lowering/LoopIR.h"
#include "tensorc/Support/Status.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tensorc::loop {

struct Token {
  enum class Kind { Ident, Int, Float, Word, String, Punct, End } kind = Kind::End;
  std::string text;
  int64_t intValue = 0;
  double floatValue = 0;
  int column = 1;
};

/// One line's tokens. Identifiers may hold dots (aten.add); a run starting with a digit is a
/// number when it reads as one (exponents included), else a Word (a digest's hex digits).
Expected<std::vector<Token>> tokenizeLine(std::string_view line);

/// A literal as written: its text and value, and its dtype if it says one.
struct Literal {
  bool negative = false;
  Token number;
  std::optional<DType> dtype;
};

/// The lines of a text and a cursor in the current line's tokens; errors carry file:line:column.
class TextCursor {
public:
  TextCursor(std::string_view text, std::string fileName) : fileName_(std::move(fileName)) {
    for (size_t start = 0; start <= text.size();) {
      size_t end = std::min(text.find('\n', start), text.size());
      lines_.push_back(text.substr(start, end - start));
      start = end + 1;
    }
  }

protected:
  // ---- lines and tokens ----

  /// Moves to the next line that is not blank or a comment; false at the end of the text.
  bool nextLine() {
    while (++lineIndex_ < lines_.size()) {
      std::string_view line = lines_[lineIndex_];
      size_t first = line.find_first_not_of(" \t\r");
      if (first == std::string_view::npos || line[first] == '#')
        continue;
      Expected<std::vector<Token>> tokens = tokenizeLine(line);
      if (!tokens) {
        tokens_.clear();
        lexError_ = tokens.error().message();
      } else {
        tokens_ = std::move(*tokens);
        lexError_.clear();
      }
      pos_ = 0;
      limit_ = tokens_.empty() ? 0 : tokens_.size() - 1;
      return true;
    }
    return false;
  }

  /// The token `ahead` of the cursor; the End token at the line's end or at the limit (a
  /// sub-range being parsed on its own).
  const Token &peek(size_t ahead = 0) const {
    static const Token end;
    if (tokens_.empty())
      return end;
    size_t at = std::min(pos_ + ahead, limit_);
    if (at == limit_ && limit_ + 1 < tokens_.size()) {
      limitEnd_.column = tokens_[limit_].column;
      return limitEnd_;
    }
    return tokens_[at];
  }
  const Token &next() {
    const Token &token = peek();
    if (pos_ < limit_)
      ++pos_;
    return token;
  }
  bool isIdent(std::string_view text, size_t ahead = 0) const {
    return peek(ahead).kind == Token::Kind::Ident && peek(ahead).text == text;
  }
  bool isPunct(std::string_view text, size_t ahead = 0) const {
    return peek(ahead).kind == Token::Kind::Punct && peek(ahead).text == text;
  }
  bool atEnd() const { return peek().kind == Token::Kind::End; }

  Error error(const std::string &message) const { return errorAt(peek(), message); }
  Error errorAt(const Token &at, const std::string &message) const {
    if (!lexError_.empty())
      return makeError(fileName_, ":", lineIndex_ + 1, ":", lexError_);
    std::string where = at.kind == Token::Kind::End ? "end of line" : "'" + at.text + "'";
    return makeError(fileName_, ":", lineIndex_ + 1, ":", at.column, ": error: ", message, " (at ",
                     where, ")");
  }

  Status expectPunct(std::string_view text) {
    if (!isPunct(text))
      return error(strCat("expected '", text, "'"));
    next();
    return Status::ok();
  }
  Status expectIdent(std::string_view text) {
    if (!isIdent(text))
      return error(strCat("expected '", text, "'"));
    next();
    return Status::ok();
  }
  Status expectEnd() { return atEnd() ? Status::ok() : error("unexpected text"); }

  Expected<std::string> parseName(const char *what) {
    if (peek().kind != Token::Kind::Ident)
      return error(strCat("expected ", what));
    return next().text;
  }

  Expected<int64_t> parseInt() {
    bool negative = isPunct("-");
    if (negative)
      next();
    if (peek().kind != Token::Kind::Int)
      return error("expected an integer");
    int64_t value = next().intValue;
    return negative ? -value : value;
  }

  Expected<DType> parseDType() {
    if (peek().kind != Token::Kind::Ident)
      return error("expected a dtype");
    std::optional<DType> dtype = tensorc::parseDType(peek().text);
    if (!dtype)
      return error(strCat("unknown dtype '", peek().text, "'"));
    next();
    return *dtype;
  }

  // ---- SymInt: sums of products of integers, symbols, //, % and parentheses ----

  Expected<SymInt> parseSymInt() {
    TC_ASSIGN_OR_RETURN(SymInt value, parseSymTerm());
    while (isPunct("+") || isPunct("-")) {
      bool minus = next().text == "-";
      TC_ASSIGN_OR_RETURN(SymInt rhs, parseSymTerm());
      value = minus ? value - rhs : value + rhs;
    }
    return value;
  }
  Expected<SymInt> parseSymTerm() {
    TC_ASSIGN_OR_RETURN(SymInt value, parseSymFactor());
    while (isPunct("*") || isPunct("//") || isPunct("%")) {
      std::string op = next().text;
      TC_ASSIGN_OR_RETURN(SymInt rhs, parseSymFactor());
      if (op == "*") {
        value = value * rhs;
        continue;
      }
      std::optional<int64_t> divisor = rhs.constant();
      if (!divisor || *divisor <= 0)
        return error(strCat("divisor ", rhs.str(), " is not a positive integer"));
      value = op == "//" ? SymInt::floorDiv(value, *divisor) : SymInt::mod(value, *divisor);
    }
    return value;
  }
  Expected<SymInt> parseSymFactor() {
    if (isPunct("-")) {
      next();
      TC_ASSIGN_OR_RETURN(SymInt value, parseSymFactor());
      return -value;
    }
    if (isPunct("(")) {
      next();
      TC_ASSIGN_OR_RETURN(SymInt value, parseSymInt());
      TC_RETURN_IF_ERROR(expectPunct(")"));
      return value;
    }
    if (peek().kind == Token::Kind::Int)
      return SymInt(next().intValue);
    if (peek().kind == Token::Kind::Ident && peek().text.find('.') == std::string::npos)
      return SymInt::symbol(next().text);
    return error("expected an integer expression");
  }

  /// `open item, item, ... close` (maybe empty), each item read by `item()`.
  template <typename T, typename Fn>
  Expected<std::vector<T>> parseList(std::string_view open, std::string_view close, Fn item) {
    TC_RETURN_IF_ERROR(expectPunct(open));
    std::vector<T> values;
    while (!isPunct(close)) {
      if (!values.empty())
        TC_RETURN_IF_ERROR(expectPunct(","));
      TC_ASSIGN_OR_RETURN(values.emplace_back(), item());
    }
    next();
    return values;
  }
  Expected<std::vector<SymInt>> parseDims() {
    return parseList<SymInt>("[", "]", [&] { return parseSymInt(); });
  }
  Expected<std::vector<int64_t>> parseIntList() {
    return parseList<int64_t>("[", "]", [&] { return parseInt(); });
  }

  bool atLiteral() const {
    size_t at = isPunct("-") ? 1 : 0;
    const Token &token = peek(at);
    return token.kind == Token::Kind::Int || token.kind == Token::Kind::Float ||
           (token.kind == Token::Kind::Ident && (token.text == "nan" || token.text == "inf"));
  }

  Expected<Literal> parseLiteral() {
    Literal literal;
    literal.negative = isPunct("-");
    if (literal.negative)
      next();
    if (!atLiteral())
      return error("expected a number");
    literal.number = next();
    if (isPunct(":")) {
      next();
      TC_ASSIGN_OR_RETURN(literal.dtype, parseDType());
    }
    return literal;
  }

  /// The constant `literal` is as `dtype` (its own when it names one).
  Expected<ExprRef> literalValue(const Literal &literal, DType dtype) {
    if (literal.dtype)
      dtype = *literal.dtype;
    const Token &number = literal.number;
    if (isFloating(dtype)) {
      double value = number.kind == Token::Kind::Int     ? double(number.intValue)
                     : number.kind == Token::Kind::Float ? number.floatValue
                     : number.text == "nan"              ? NAN
                                                         : INFINITY;
      return makeConstant(literal.negative ? -value : value, dtype);
    }
    if (number.kind != Token::Kind::Int)
      return errorAt(number, strCat("'", number.text, "' is not a ", dtypeName(dtype), " value"));
    return makeIntConstant(literal.negative ? -number.intValue : number.intValue, dtype);
  }

  std::string fileName_;
  std::vector<std::string_view> lines_;
  size_t lineIndex_ = size_t(-1);
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  size_t limit_ = 0; // index of the token the line ends at for now (its End token normally)
  mutable Token limitEnd_;
  std::string lexError_;
};

} // namespace tensorc::loop
