// JSON parsing and writing.
#include "tensorc/Support/Json.h"

#include "tensorc/Support/StrCat.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace tensorc {

const Json *Json::find(const std::string &key) const {
  auto it = object_.find(key);
  return it == object_.end() ? nullptr : &it->second;
}

namespace {

void escapeTo(std::string &out, const std::string &text) {
  out += '"';
  for (unsigned char c : text) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\r':
      out += "\\r";
      break;
    default:
      if (c < 0x20) {
        char buffer[8];
        std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
        out += buffer;
      } else {
        out += char(c);
      }
    }
  }
  out += '"';
}

class Parser {
public:
  explicit Parser(std::string_view text) : text_(text) {}

  Expected<Json> parseDocument() {
    TC_ASSIGN_OR_RETURN(Json value, parseValue(0));
    skipSpace();
    if (pos_ != text_.size())
      return fail("trailing characters");
    return value;
  }

private:
  Error fail(const std::string &what) const {
    return makeError("JSON: ", what, " at byte ", pos_);
  }
  void skipSpace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  bool consume(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word)
      return false;
    pos_ += word.size();
    return true;
  }

  Expected<Json> parseValue(int depth) {
    if (depth > 64)
      return fail("nesting too deep");
    skipSpace();
    if (pos_ >= text_.size())
      return fail("unexpected end");
    char c = text_[pos_];
    if (c == '{')
      return parseObject(depth);
    if (c == '[')
      return parseArray(depth);
    if (c == '"') {
      TC_ASSIGN_OR_RETURN(std::string s, parseString());
      return Json(std::move(s));
    }
    if (consume("true"))
      return Json(true);
    if (consume("false"))
      return Json(false);
    if (consume("null"))
      return Json();
    return parseNumber();
  }

  /// The items of an array or object, separated by ',' and ended by `close`, each read by
  /// `parseItem`; pos_ is at the opening bracket.
  template <typename ParseItem> Status parseItems(char close, ParseItem &&parseItem) {
    const std::string end(1, close);
    ++pos_;
    skipSpace();
    if (consume(end))
      return Status::ok();
    while (true) {
      TC_RETURN_IF_ERROR(parseItem());
      skipSpace();
      if (consume(end))
        return Status::ok();
      if (!consume(","))
        return fail("expected ',' or '" + end + "'");
    }
  }

  Expected<Json> parseObject(int depth) {
    Json object = Json::object();
    TC_RETURN_IF_ERROR(parseItems('}', [&]() -> Status {
      skipSpace();
      if (pos_ >= text_.size() || text_[pos_] != '"')
        return fail("expected a string key");
      TC_ASSIGN_OR_RETURN(std::string key, parseString());
      skipSpace();
      if (!consume(":"))
        return fail("expected ':'");
      TC_ASSIGN_OR_RETURN(Json value, parseValue(depth + 1));
      if (object.find(key))
        return fail("duplicate key \"" + key + "\"");
      object[key] = std::move(value);
      return Status::ok();
    }));
    return object;
  }

  Expected<Json> parseArray(int depth) {
    Json array = Json::array();
    TC_RETURN_IF_ERROR(parseItems(']', [&]() -> Status {
      TC_ASSIGN_OR_RETURN(Json value, parseValue(depth + 1));
      array.push(std::move(value));
      return Status::ok();
    }));
    return array;
  }

  Expected<std::string> parseString() {
    ++pos_; // opening quote
    std::string out;
    while (pos_ < text_.size()) {
      char c = text_[pos_++];
      if (c == '"')
        return out;
      if (static_cast<unsigned char>(c) < 0x20)
        return fail("control character in string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size())
        break;
      char e = text_[pos_++];
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        if (pos_ + 4 > text_.size())
          return fail("short \\u escape");
        unsigned code = 0;
        for (int i = 0; i < 4; ++i) {
          char h = text_[pos_++];
          code <<= 4;
          if (h >= '0' && h <= '9')
            code |= unsigned(h - '0');
          else if (h >= 'a' && h <= 'f')
            code |= unsigned(h - 'a' + 10);
          else if (h >= 'A' && h <= 'F')
            code |= unsigned(h - 'A' + 10);
          else
            return fail("bad \\u escape");
        }
        // Encode the code unit as UTF-8 (surrogate pairs are kept as separate units).
        if (code < 0x80) {
          out += char(code);
        } else if (code < 0x800) {
          out += char(0xc0 | (code >> 6));
          out += char(0x80 | (code & 0x3f));
        } else {
          out += char(0xe0 | (code >> 12));
          out += char(0x80 | ((code >> 6) & 0x3f));
          out += char(0x80 | (code & 0x3f));
        }
        break;
      }
      default:
        return fail("bad escape");
      }
    }
    return fail("unterminated string");
  }

  Expected<Json> parseNumber() {
    size_t start = pos_;
    if (pos_ < text_.size() && text_[pos_] == '-')
      ++pos_;
    bool isFloat = false;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c >= '0' && c <= '9') {
        ++pos_;
      } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
        isFloat = true;
        ++pos_;
      } else {
        break;
      }
    }
    std::string token(text_.substr(start, pos_ - start));
    if (token.empty() || token == "-")
      return fail("unexpected character");
    char *end = nullptr;
    errno = 0;
    if (!isFloat) {
      long long value = std::strtoll(token.c_str(), &end, 10);
      if (errno == 0 && end == token.c_str() + token.size())
        return Json(int64_t(value));
      errno = 0;
    }
    double value = std::strtod(token.c_str(), &end);
    if (end != token.c_str() + token.size() || !std::isfinite(value))
      return fail("bad number '" + token + "'");
    return Json(value);
  }

  std::string_view text_;
  size_t pos_ = 0;
};

} // namespace

void Json::dumpTo(std::string &out, int indent, int depth) const {
  auto newline = [&](int level) {
    if (indent > 0) {
      out += '\n';
      out.append(size_t(indent * level), ' ');
    }
  };
  switch (kind_) {
  case Kind::Null:
    out += "null";
    return;
  case Kind::Bool:
    out += bool_ ? "true" : "false";
    return;
  case Kind::Int:
    out += std::to_string(int_);
    return;
  case Kind::Float: {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.17g", std::isfinite(float_) ? float_ : 0.0);
    out += buffer;
    return;
  }
  case Kind::String:
    escapeTo(out, string_);
    return;
  case Kind::Array:
    out += '[';
    for (size_t i = 0; i < array_.size(); ++i) {
      if (i)
        out += ',';
      newline(depth + 1);
      array_[i].dumpTo(out, indent, depth + 1);
    }
    if (!array_.empty())
      newline(depth);
    out += ']';
    return;
  case Kind::Object: {
    out += '{';
    bool first = true;
    for (const auto &[key, value] : object_) {
      if (!first)
        out += ',';
      first = false;
      newline(depth + 1);
      escapeTo(out, key);
      out += indent > 0 ? ": " : ":";
      value.dumpTo(out, indent, depth + 1);
    }
    if (!object_.empty())
      newline(depth);
    out += '}';
    return;
  }
  }
}

std::string Json::dump(int indent) const {
  std::string out;
  dumpTo(out, indent, 0);
  return out;
}

Expected<Json> Json::parse(std::string_view text) { return Parser(text).parseDocument(); }

} // namespace tensorc
