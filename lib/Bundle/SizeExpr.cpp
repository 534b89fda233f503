// SizeExpr: parsing and overflow-checked evaluation of the manifest's size expressions; the
// names of the manifest's enums.
#include "ManifestJson.h"

#include "tensorc/Bundle/Manifest.h"

#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <set>

namespace tensorc::bundle {

struct SizeExpr::Node {
  enum class Kind { Constant, Symbol, Negate, Add, Sub, Mul, FloorDiv, Mod } kind;
  int64_t value = 0; // Constant
  std::string name;  // Symbol
  std::shared_ptr<const Node> lhs, rhs;
};

namespace {

using NodePtr = std::shared_ptr<const SizeExpr::Node>;
using Kind = SizeExpr::Node::Kind;

NodePtr makeNode(Kind kind, NodePtr lhs = nullptr, NodePtr rhs = nullptr) {
  auto node = std::make_shared<SizeExpr::Node>();
  node->kind = kind;
  node->lhs = std::move(lhs);
  node->rhs = std::move(rhs);
  return node;
}

/// Recursive descent with Python's precedence: `+ -` below `* // %` (left-associative) below
/// unary minus, the grammar the FX parser uses for dims, so both read the same text alike.
class ExprParser {
public:
  explicit ExprParser(const std::string &text) : text_(text) {}

  Expected<NodePtr> parseAll() {
    skipSpace();
    if (pos_ == text_.size())
      return fail("empty expression");
    TC_ASSIGN_OR_RETURN(NodePtr root, parseSum());
    if (pos_ != text_.size())
      return fail("unexpected '" + tokenAt() + "'");
    return root;
  }

private:
  // Deep enough for any real expression, shallow enough that hostile text cannot exhaust the stack.
  static constexpr int kMaxDepth = 200;

  Error fail(const std::string &what) const {
    return makeError("size expression '", text_, "': ", what, " at column ", pos_ + 1);
  }
  void skipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
  }
  bool consume(std::string_view op) {
    if (text_.compare(pos_, op.size(), op) != 0)
      return false;
    pos_ += op.size();
    skipSpace();
    return true;
  }
  std::string tokenAt() const {
    if (pos_ >= text_.size())
      return "end of text";
    size_t end = pos_ + 1;
    while (end < text_.size() && std::isalnum(static_cast<unsigned char>(text_[end])))
      ++end;
    return text_.substr(pos_, end - pos_);
  }

  /// One precedence level of left-associative binary operators `ops` (tried in order), over
  /// operands parsed by `operand`.
  Expected<NodePtr>
  parseLeftAssociative(std::initializer_list<std::pair<std::string_view, Kind>> ops,
                       Expected<NodePtr> (ExprParser::*operand)()) {
    TC_ASSIGN_OR_RETURN(NodePtr lhs, (this->*operand)());
    while (true) {
      const auto *op = std::find_if(
          ops.begin(), ops.end(), [&](const auto &candidate) { return consume(candidate.first); });
      if (op == ops.end())
        return lhs;
      TC_ASSIGN_OR_RETURN(NodePtr rhs, (this->*operand)());
      lhs = makeNode(op->second, std::move(lhs), std::move(rhs));
    }
  }

  Expected<NodePtr> parseSum() {
    return parseLeftAssociative({{"+", Kind::Add}, {"-", Kind::Sub}}, &ExprParser::parseProduct);
  }

  Expected<NodePtr> parseProduct() {
    return parseLeftAssociative({{"//", Kind::FloorDiv}, {"*", Kind::Mul}, {"%", Kind::Mod}},
                                &ExprParser::parseUnary);
  }

  Expected<NodePtr> parseUnary() {
    if (++depth_ > kMaxDepth)
      return fail(strCat("nesting deeper than ", kMaxDepth));
    Expected<NodePtr> result = parseUnaryInner();
    --depth_;
    return result;
  }

  Expected<NodePtr> parseUnaryInner() {
    if (consume("-")) {
      TC_ASSIGN_OR_RETURN(NodePtr operand, parseUnary());
      return makeNode(Kind::Negate, std::move(operand));
    }
    if (consume("(")) {
      TC_ASSIGN_OR_RETURN(NodePtr inner, parseSum());
      if (!consume(")"))
        return fail("expected ')' but found '" + tokenAt() + "'");
      return inner;
    }
    if (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      size_t start = pos_;
      int64_t value = 0;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        if (__builtin_mul_overflow(value, int64_t(10), &value) ||
            __builtin_add_overflow(value, int64_t(text_[pos_] - '0'), &value)) {
          pos_ = start;
          return fail("integer does not fit in int64");
        }
        ++pos_;
      }
      if (pos_ < text_.size() &&
          (std::isalpha(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
        pos_ = start;
        return fail("bad number '" + tokenAt() + "'");
      }
      skipSpace();
      auto node = std::make_shared<SizeExpr::Node>();
      node->kind = Kind::Constant;
      node->value = value;
      return NodePtr(std::move(node));
    }
    if (pos_ < text_.size() &&
        (std::isalpha(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
      size_t start = pos_;
      while (pos_ < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
        ++pos_;
      auto node = std::make_shared<SizeExpr::Node>();
      node->kind = Kind::Symbol;
      node->name = text_.substr(start, pos_ - start);
      skipSpace();
      return NodePtr(std::move(node));
    }
    return fail("expected an integer, a symbol or '(' but found '" + tokenAt() + "'");
  }

  const std::string &text_;
  size_t pos_ = 0;
  int depth_ = 0;
};

/// Evaluates with overflow checks; `what` is empty on success, else the reason.
struct Evaluator {
  const std::map<std::string, int64_t> &symbols;
  std::string what;

  int64_t eval(const SizeExpr::Node &node) {
    if (!what.empty())
      return 0;
    switch (node.kind) {
    case Kind::Constant:
      return node.value;
    case Kind::Symbol: {
      auto it = symbols.find(node.name);
      if (it == symbols.end()) {
        what = "symbol '" + node.name + "' has no value";
        return 0;
      }
      return it->second;
    }
    case Kind::Negate: {
      int64_t result = 0;
      if (__builtin_sub_overflow(int64_t(0), eval(*node.lhs), &result))
        return overflow();
      return result;
    }
    case Kind::Add:
    case Kind::Sub:
    case Kind::Mul:
    case Kind::FloorDiv:
    case Kind::Mod:
      break;
    }
    int64_t a = eval(*node.lhs);
    int64_t b = eval(*node.rhs);
    if (!what.empty())
      return 0;
    int64_t result = 0;
    switch (node.kind) {
    case Kind::Add:
      return __builtin_add_overflow(a, b, &result) ? overflow() : result;
    case Kind::Sub:
      return __builtin_sub_overflow(a, b, &result) ? overflow() : result;
    case Kind::Mul:
      return __builtin_mul_overflow(a, b, &result) ? overflow() : result;
    case Kind::FloorDiv:
    case Kind::Mod: {
      if (b == 0) {
        what = node.kind == Kind::FloorDiv ? "division by zero" : "remainder by zero";
        return 0;
      }
      if (a == INT64_MIN && b == -1)
        return node.kind == Kind::FloorDiv ? overflow() : 0;
      // Python semantics: the quotient rounds down, the remainder takes the divisor's sign.
      int64_t quotient = a / b, remainder = a % b;
      if (remainder != 0 && ((remainder < 0) != (b < 0))) {
        quotient -= 1;
        remainder += b;
      }
      return node.kind == Kind::FloorDiv ? quotient : remainder;
    }
    case Kind::Constant:
    case Kind::Symbol:
    case Kind::Negate:
      break;
    }
    return 0;
  }

  int64_t overflow() {
    what = "overflows int64";
    return 0;
  }
};

void collect(const SizeExpr::Node &node, std::set<std::string> &symbols) {
  if (node.kind == Kind::Symbol)
    symbols.insert(node.name);
  if (node.lhs)
    collect(*node.lhs, symbols);
  if (node.rhs)
    collect(*node.rhs, symbols);
}

} // namespace

Expected<SizeExpr> SizeExpr::parse(const std::string &text) {
  ExprParser parser(text);
  TC_ASSIGN_OR_RETURN(NodePtr root, parser.parseAll());
  SizeExpr expr;
  expr.text_ = text;
  expr.root_ = std::move(root);
  return expr;
}

SizeExpr SizeExpr::constant(int64_t value) {
  auto node = std::make_shared<Node>();
  node->kind = Node::Kind::Constant;
  node->value = value;
  SizeExpr expr;
  expr.text_ = std::to_string(value);
  expr.root_ = std::move(node);
  return expr;
}

Expected<int64_t> SizeExpr::evaluate(const std::map<std::string, int64_t> &symbols) const {
  // A default-constructed expression stands for 0 (fields a launch kind does not use).
  if (!root_)
    return int64_t(0);
  Evaluator evaluator{symbols, {}};
  int64_t value = evaluator.eval(*root_);
  if (!evaluator.what.empty())
    return makeError("size expression '", text_, "': ", evaluator.what);
  return value;
}

std::optional<std::string> SizeExpr::symbolName() const {
  if (root_ && root_->kind == Node::Kind::Symbol)
    return root_->name;
  return std::nullopt;
}

std::optional<int64_t> SizeExpr::constantValue() const {
  if (!root_)
    return int64_t(0);
  std::set<std::string> symbols;
  collect(*root_, symbols);
  if (!symbols.empty())
    return std::nullopt;
  Expected<int64_t> value = evaluate({});
  if (!value)
    return std::nullopt;
  return *value;
}

void SizeExpr::collectSymbols(std::set<std::string> &symbols) const {
  if (root_)
    collect(*root_, symbols);
}

const char *bufferKindName(BufferKind kind) { return enumName(kBufferKindNames, kind); }

const char *launchKindName(LaunchKind kind) { return enumName(kLaunchKindNames, kind); }

} // namespace tensorc::bundle
