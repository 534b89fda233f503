// FX-text parser: tokens -> Graph, mapping call arguments onto op schemas.
#include "tensorc/Frontend/FX/FxParser.h"

#include "Lexer.h"
#include "tensorc/IR/Verifier.h"
#include "tensorc/Support/StrCat.h"

#include <cmath>
#include <limits>
#include <map>

namespace tensorc::fx {

namespace {

/// A parsed call argument before it is matched to a schema parameter.
struct Arg {
  enum class Kind { Value, Int, Float, Bool, None, String, Ident, Expr, List, TensorLiteral };
  Kind kind = Kind::None;
  std::string text; // Value name, String contents, Ident
  int64_t intValue = 0;
  double floatValue = 0;
  bool boolValue = false;
  SymInt expr;
  std::vector<Arg> items;
  Tensor tensor;
  const Token *token = nullptr;
};

class Parser {
public:
  Parser(std::vector<Token> tokens, const OpRegistry &registry, std::string fileName)
      : tokens_(std::move(tokens)), registry_(registry), fileName_(std::move(fileName)) {}

  Expected<Graph> parse() {
    collectGetitems();
    TC_RETURN_IF_ERROR(parseSignature());
    while (true) {
      if (peek().kind == TokenKind::Identifier && peek().text == "return")
        break;
      if (peek().kind == TokenKind::End)
        return fail("expected 'return' before the end of the graph");
      TC_RETURN_IF_ERROR(parseStatement());
    }
    TC_RETURN_IF_ERROR(parseReturn());
    if (peek().kind != TokenKind::End)
      return fail("unexpected text after 'return'");
    Status verified = verifyGraph(graph_);
    if (!verified)
      return verified.takeError().withContext(fileName_);
    return std::move(graph_);
  }

private:
  // ---- Token helpers -------------------------------------------------------------------------
  const Token &peek(size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  const Token &next() {
    const Token &token = tokens_[pos_];
    if (pos_ + 1 < tokens_.size())
      ++pos_;
    return token;
  }
  bool isPunct(const std::string &p, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::Punct && peek(ahead).text == p;
  }
  bool isIdent(const std::string &word) const {
    return peek().kind == TokenKind::Identifier && peek().text == word;
  }
  Error failAt(const Token &token, const std::string &message) const {
    return makeError(fileName_, ":", token.line, ":", token.column, ": error: ", message,
                     " (at '", token.kind == TokenKind::Value ? "%" : "", token.text, "')");
  }
  Error fail(const std::string &message) const { return failAt(peek(), message); }
  Status expectPunct(const std::string &p) {
    if (!isPunct(p))
      return fail("expected '" + p + "'");
    next();
    return Status::ok();
  }
  Status expectIdent(const std::string &word) {
    if (!isIdent(word))
      return fail("expected '" + word + "'");
    next();
    return Status::ok();
  }
  Status expectNewline() {
    if (peek().kind != TokenKind::Newline)
      return fail("expected the end of the line");
    next();
    return Status::ok();
  }

  /// Result names of multi-result nodes come from later getitem lines: find them first.
  void collectGetitems() {
    for (size_t i = 0; i + 12 < tokens_.size(); ++i) {
      const Token &t = tokens_[i];
      if (t.kind != TokenKind::Identifier || (t.text != "getitem" && t.text != "operator.getitem"))
        continue;
      // ... target=getitem ] ( args = ( %tuple , INDEX
      size_t j = i + 1;
      auto at = [&](size_t k) -> const Token & { return tokens_[std::min(k, tokens_.size() - 1)]; };
      if (at(j).text != "]" || at(j + 1).text != "(" || at(j + 2).text != "args" ||
          at(j + 3).text != "=" || at(j + 4).text != "(" || at(j + 5).kind != TokenKind::Value ||
          at(j + 6).text != "," || at(j + 7).kind != TokenKind::Integer)
        continue;
      // The statement's own name is the Value token at the start of the line.
      size_t k = i;
      while (k > 0 && tokens_[k - 1].kind != TokenKind::Newline)
        --k;
      if (tokens_[k].kind == TokenKind::Value)
        getitemNames_[at(j + 5).text][at(j + 7).intValue] = tokens_[k].text;
    }
  }

  // ---- Types and symbolic dims ---------------------------------------------------------------
  Expected<SymInt> parseDimExpr() {
    TC_ASSIGN_OR_RETURN(SymInt value, parseDimTerm());
    while (isPunct("+") || isPunct("-")) {
      bool minus = next().text == "-";
      TC_ASSIGN_OR_RETURN(SymInt rhs, parseDimTerm());
      value = minus ? value - rhs : value + rhs;
    }
    return value;
  }
  Expected<SymInt> parseDimTerm() {
    TC_ASSIGN_OR_RETURN(SymInt value, parseDimFactor());
    while (isPunct("*") || isPunct("//") || isPunct("%")) {
      const Token &op = next();
      TC_ASSIGN_OR_RETURN(SymInt rhs, parseDimFactor());
      if (op.text == "*") {
        value = value * rhs;
        continue;
      }
      std::optional<int64_t> divisor = rhs.constant();
      if (!divisor || *divisor <= 0)
        return failAt(op, "the divisor of '" + op.text + "' must be a positive integer");
      value = op.text == "//" ? SymInt::floorDiv(value, *divisor) : SymInt::mod(value, *divisor);
    }
    return value;
  }
  /// Bounds the recursion of nested lists and parenthesized dims, so hostile text gets an error
  /// instead of a stack overflow.
  static constexpr int kMaxNesting = 256;
  struct NestingGuard {
    int &depth;
    explicit NestingGuard(int &d) : depth(d) { ++depth; }
    ~NestingGuard() { --depth; }
  };

  Expected<SymInt> parseDimFactor() {
    NestingGuard guard(depth_);
    if (depth_ > kMaxNesting)
      return fail(strCat("nesting deeper than ", kMaxNesting));
    if (isPunct("-")) {
      next();
      TC_ASSIGN_OR_RETURN(SymInt value, parseDimFactor());
      return -value;
    }
    if (isPunct("(")) {
      next();
      TC_ASSIGN_OR_RETURN(SymInt value, parseDimExpr());
      TC_RETURN_IF_ERROR(expectPunct(")"));
      return value;
    }
    if (peek().kind == TokenKind::Integer)
      return SymInt(next().intValue);
    if (peek().kind == TokenKind::Identifier && peek().text.find('.') == std::string::npos)
      return SymInt::symbol(next().text);
    return fail("expected a dimension (integer or symbol)");
  }

  Expected<TensorType> parseType() {
    if (peek().kind != TokenKind::Identifier)
      return fail("expected a tensor type such as f32[2, 3]");
    const Token &dtypeToken = next();
    std::optional<DType> dtype = parseDType(dtypeToken.text);
    if (!dtype)
      return failAt(dtypeToken, "unknown dtype '" + dtypeToken.text + "'");
    TC_RETURN_IF_ERROR(expectPunct("["));
    Shape shape;
    TC_RETURN_IF_ERROR(parseList("]", [&]() -> Status {
      TC_ASSIGN_OR_RETURN(SymInt dim, parseDimExpr());
      if (auto constant = dim.constant(); constant && *constant < 0)
        return fail("negative dimension " + std::to_string(*constant));
      shape.push_back(std::move(dim));
      return Status::ok();
    }));
    return TensorType(*dtype, std::move(shape));
  }

  /// Items up to `close`, separated by commas, then `close` itself; `item()` parses one.
  template <typename Item> Status parseList(const std::string &close, Item item) {
    while (!isPunct(close)) {
      TC_RETURN_IF_ERROR(item());
      if (!isPunct(close))
        TC_RETURN_IF_ERROR(expectPunct(","));
    }
    next();
    return Status::ok();
  }

  // ---- Signature, statements, return ---------------------------------------------------------
  Status parseSignature() {
    TC_RETURN_IF_ERROR(expectIdent("graph"));
    TC_RETURN_IF_ERROR(expectPunct("("));
    TC_RETURN_IF_ERROR(parseList(")", [&]() -> Status {
      if (peek().kind != TokenKind::Value)
        return fail("expected a placeholder such as %x: f32[4]");
      const Token &name = next();
      TC_RETURN_IF_ERROR(expectPunct(":"));
      TC_ASSIGN_OR_RETURN(TensorType type, parseType());
      Expected<Value *> input = graph_.addInput(name.text, std::move(type));
      if (!input)
        return failAt(name, input.error().message());
      return Status::ok();
    }));
    TC_RETURN_IF_ERROR(expectPunct(":"));
    return expectNewline();
  }

  Status parseStatement() {
    if (peek().kind != TokenKind::Value)
      return fail("expected a statement such as %y : f32[4] = call_function[...](...)");
    const Token &nameToken = next();
    TC_RETURN_IF_ERROR(expectPunct(":"));
    std::vector<TensorType> declared;
    if (isPunct("(")) {
      next();
      TC_RETURN_IF_ERROR(parseList(")", [&]() -> Status {
        TC_ASSIGN_OR_RETURN(TensorType type, parseType());
        declared.push_back(std::move(type));
        return Status::ok();
      }));
    } else {
      TC_ASSIGN_OR_RETURN(TensorType type, parseType());
      declared.push_back(std::move(type));
    }
    TC_RETURN_IF_ERROR(expectPunct("="));
    TC_RETURN_IF_ERROR(expectIdent("call_function"));
    TC_RETURN_IF_ERROR(expectPunct("["));
    TC_RETURN_IF_ERROR(expectIdent("target"));
    TC_RETURN_IF_ERROR(expectPunct("="));
    if (peek().kind != TokenKind::Identifier)
      return fail("expected an op name such as aten.add");
    const Token &target = next();
    TC_RETURN_IF_ERROR(expectPunct("]"));
    TC_RETURN_IF_ERROR(expectPunct("("));
    std::vector<Arg> positional;
    std::vector<std::pair<const Token *, Arg>> keywords;
    TC_RETURN_IF_ERROR(parseCallArguments(positional, keywords));
    TC_RETURN_IF_ERROR(expectPunct(")"));
    TC_RETURN_IF_ERROR(expectNewline());

    if (target.text == "getitem" || target.text == "operator.getitem")
      return checkGetitem(nameToken, declared, positional);
    if (graph_.hasName(nameToken.text))
      return failAt(nameToken, "%" + nameToken.text + " is defined twice");
    const OpDef *op = registry_.lookup(target.text);
    if (!op)
      return failAt(target, "unknown op '" + target.text + "'");
    return buildNode(nameToken, *op, target, declared, positional, keywords);
  }

  Status parseCallArguments(std::vector<Arg> &positional,
                            std::vector<std::pair<const Token *, Arg>> &keywords) {
    while (!isPunct(")")) {
      if (isIdent("args") && isPunct("=", 1)) {
        next();
        next();
        TC_RETURN_IF_ERROR(expectPunct("("));
        TC_RETURN_IF_ERROR(parseList(")", [&]() -> Status {
          TC_ASSIGN_OR_RETURN(Arg arg, parseArg());
          positional.push_back(std::move(arg));
          return Status::ok();
        }));
      } else if (isIdent("kwargs") && isPunct("=", 1)) {
        next();
        next();
        TC_RETURN_IF_ERROR(expectPunct("{"));
        TC_RETURN_IF_ERROR(parseList("}", [&]() -> Status {
          // name=value, or Python-dict style 'name': value
          if (peek().kind != TokenKind::Identifier && peek().kind != TokenKind::String)
            return fail("expected a keyword argument name");
          const Token *name = &next();
          if (!isPunct("=") && !isPunct(":"))
            return fail("expected '=' after keyword '" + name->text + "'");
          next();
          TC_ASSIGN_OR_RETURN(Arg arg, parseArg());
          keywords.emplace_back(name, std::move(arg));
          return Status::ok();
        }));
      } else {
        return fail("expected args=(...) or kwargs={...}");
      }
      if (!isPunct(")"))
        TC_RETURN_IF_ERROR(expectPunct(","));
    }
    return Status::ok();
  }

  Expected<Arg> parseArg() {
    NestingGuard guard(depth_);
    if (depth_ > kMaxNesting)
      return fail(strCat("nesting deeper than ", kMaxNesting));
    Arg arg;
    arg.token = &peek();
    const Token &t = peek();
    if (t.kind == TokenKind::Value) {
      next();
      arg.kind = Arg::Kind::Value;
      arg.text = t.text;
      return arg;
    }
    if (t.kind == TokenKind::String) {
      next();
      arg.kind = Arg::Kind::String;
      arg.text = t.text;
      return arg;
    }
    if (isPunct("[") || isPunct("(")) {
      std::string close = isPunct("[") ? "]" : ")";
      // A parenthesized dim expression, e.g. (s0 + 1)//2, is not a tuple.
      if (close == ")" && looksLikeParenExpr())
        return parseExprArg(arg);
      next();
      arg.kind = Arg::Kind::List;
      TC_RETURN_IF_ERROR(parseList(close, [&]() -> Status {
        TC_ASSIGN_OR_RETURN(Arg item, parseArg());
        arg.items.push_back(std::move(item));
        return Status::ok();
      }));
      return arg;
    }
    if (t.kind == TokenKind::Identifier) {
      if (t.text == "True" || t.text == "False") {
        next();
        arg.kind = Arg::Kind::Bool;
        arg.boolValue = t.text == "True";
        return arg;
      }
      if (t.text == "None") {
        next();
        arg.kind = Arg::Kind::None;
        return arg;
      }
      if (t.text == "inf" || t.text == "nan") {
        next();
        arg.kind = Arg::Kind::Float;
        arg.floatValue = t.text == "inf" ? std::numeric_limits<double>::infinity()
                                         : std::numeric_limits<double>::quiet_NaN();
        return arg;
      }
      if (t.text == "tensor" && isPunct("<", 1))
        return parseTensorLiteral(arg);
      if (!isPunct("*", 1) && !isPunct("+", 1) && !isPunct("-", 1) && !isPunct("//", 1) &&
          !isPunct("%", 1)) {
        next();
        arg.kind = Arg::Kind::Ident;
        arg.text = t.text;
        return arg;
      }
      return parseExprArg(arg);
    }
    if (t.kind == TokenKind::Float || (isPunct("-") && peek(1).kind == TokenKind::Float) ||
        (isPunct("-") && peek(1).kind == TokenKind::Identifier && peek(1).text == "inf")) {
      bool negative = isPunct("-");
      if (negative)
        next();
      const Token &number = next();
      arg.kind = Arg::Kind::Float;
      arg.floatValue = number.kind == TokenKind::Float ? number.floatValue
                                                       : std::numeric_limits<double>::infinity();
      if (negative)
        arg.floatValue = -arg.floatValue;
      return arg;
    }
    if (t.kind == TokenKind::Integer || isPunct("-"))
      return parseExprArg(arg);
    return fail("expected an argument");
  }

  bool looksLikeParenExpr() const {
    // "(" expr ")" followed by an operator, or containing one with no top-level comma.
    int depth = 0;
    for (size_t i = 0;; ++i) {
      const Token &t = peek(i);
      if (t.kind == TokenKind::End || t.kind == TokenKind::Newline)
        return false;
      if (t.kind == TokenKind::Punct && (t.text == "(" || t.text == "["))
        ++depth;
      if (t.kind == TokenKind::Punct && (t.text == ")" || t.text == "]") && --depth == 0) {
        const Token &after = peek(i + 1);
        return after.kind == TokenKind::Punct &&
               (after.text == "*" || after.text == "//" || after.text == "%" ||
                after.text == "+" || after.text == "-");
      }
      if (depth == 1 && t.kind == TokenKind::Punct && t.text == ",")
        return false;
    }
  }

  Expected<Arg> parseExprArg(Arg &arg) {
    TC_ASSIGN_OR_RETURN(SymInt value, parseDimExpr());
    if (std::optional<int64_t> constant = value.constant()) {
      arg.kind = Arg::Kind::Int;
      arg.intValue = *constant;
    } else {
      arg.kind = Arg::Kind::Expr;
      arg.expr = value;
    }
    return std::move(arg);
  }

  Expected<Arg> parseTensorLiteral(Arg &arg) {
    next(); // tensor
    TC_RETURN_IF_ERROR(expectPunct("<"));
    const Token &typeToken = peek();
    TC_ASSIGN_OR_RETURN(TensorType type, parseType());
    TC_RETURN_IF_ERROR(expectPunct(">"));
    std::optional<std::vector<int64_t>> shape = type.staticShape();
    if (!shape)
      return failAt(typeToken, "a tensor literal needs a static shape");
    Expected<int64_t> count = checkedNumel(*shape, "tensor literal");
    if (!count || *count > (1 << 20))
      return failAt(typeToken, "tensor literal too large (use a weights file)");
    TC_ASSIGN_OR_RETURN(Tensor tensor, Tensor::zeros(type.dtype, *shape));
    TC_RETURN_IF_ERROR(expectPunct("["));
    int64_t index = 0;
    TC_RETURN_IF_ERROR(parseList("]", [&]() -> Status {
      const Token &element = peek();
      TC_ASSIGN_OR_RETURN(Arg value, parseArg());
      if (index >= *count)
        return failAt(element, strCat("more than ", *count, " elements for ", type.str()));
      switch (value.kind) {
      case Arg::Kind::Int:
        tensor.setInt(index, value.intValue);
        break;
      case Arg::Kind::Float:
        tensor.setDouble(index, value.floatValue);
        break;
      case Arg::Kind::Bool:
        tensor.setInt(index, value.boolValue);
        break;
      case Arg::Kind::Value:
      case Arg::Kind::None:
      case Arg::Kind::String:
      case Arg::Kind::Ident:
      case Arg::Kind::Expr:
      case Arg::Kind::List:
      case Arg::Kind::TensorLiteral:
        return failAt(element, "tensor literal elements must be numbers");
      }
      ++index;
      return Status::ok();
    }));
    if (index != *count)
      return failAt(typeToken, strCat(type.str(), " needs ", *count, " elements, got ", index));
    arg.kind = Arg::Kind::TensorLiteral;
    arg.tensor = std::move(tensor);
    return std::move(arg);
  }

  Status parseReturn() {
    next(); // return
    std::vector<Value *> outputs;
    bool parenthesized = isPunct("(");
    if (parenthesized)
      next();
    while (peek().kind == TokenKind::Value) {
      const Token &name = next();
      Value *value = graph_.findValue(name.text);
      if (!value)
        return failAt(name, "unknown value %" + name.text);
      outputs.push_back(value);
      if (isPunct(","))
        next();
    }
    if (parenthesized)
      TC_RETURN_IF_ERROR(expectPunct(")"));
    if (outputs.empty())
      return fail("a graph returns at least one value");
    graph_.setOutputs(std::move(outputs));
    return expectNewline();
  }

  // ---- Matching arguments to the schema ------------------------------------------------------
  Expected<Value *> tensorOperand(const Arg &arg, bool optional, const std::string &paramName) {
    switch (arg.kind) {
    case Arg::Kind::Value: {
      Value *value = graph_.findValue(arg.text);
      if (!value)
        return failAt(*arg.token, "unknown value %" + arg.text);
      return value;
    }
    case Arg::Kind::None:
      if (!optional)
        return failAt(*arg.token, "'" + paramName + "' is a required tensor");
      return static_cast<Value *>(nullptr);
    case Arg::Kind::TensorLiteral:
      return constantNode(arg.tensor, *arg.token);
    case Arg::Kind::Int:
    case Arg::Kind::Float:
    case Arg::Kind::Bool: {
      // A Python number where a tensor goes becomes a 0-d constant; 0-d operands promote
      // weakly (resultType), which matches torch's wrapped-number rules for these cases.
      DType dtype = arg.kind == Arg::Kind::Int    ? DType::I64
                    : arg.kind == Arg::Kind::Bool ? DType::Bool
                                                  : DType::F32;
      Tensor scalar = Tensor::zerosUnchecked(dtype, {});
      if (arg.kind == Arg::Kind::Float)
        scalar.setDouble(0, arg.floatValue);
      else
        scalar.setInt(0, arg.kind == Arg::Kind::Int ? arg.intValue : arg.boolValue);
      return constantNode(scalar, *arg.token);
    }
    case Arg::Kind::String:
    case Arg::Kind::Ident:
    case Arg::Kind::Expr:
    case Arg::Kind::List:
      break;
    }
    return failAt(*arg.token, "'" + paramName + "' expects a tensor");
  }

  Expected<Value *> constantNode(Tensor tensor, const Token &token) {
    const OpDef *constant = registry_.get(OpId::Constant);
    AttrMap attrs;
    attrs.emplace("value", Attribute(std::move(tensor)));
    Expected<Node *> node = graph_.addNode(*constant, {}, std::move(attrs), "_tensor_constant");
    if (!node)
      return failAt(token, node.error().message());
    return (*node)->output();
  }

  Expected<Attribute> attribute(const Arg &arg, const ParamSpec &param) {
    auto mismatch = [&] {
      return failAt(*arg.token, strCat("'", param.name, "' expects ",
                                       param.optional ? "an optional " : "",
                                       attrKindName(param.attrKind)));
    };
    if (arg.kind == Arg::Kind::None) {
      if (!param.optional)
        return mismatch();
      return Attribute();
    }
    switch (param.attrKind) {
    case AttrKind::Int:
      if (arg.kind != Arg::Kind::Int)
        return mismatch();
      return Attribute(arg.intValue);
    case AttrKind::Float:
      if (arg.kind == Arg::Kind::Int)
        return Attribute(double(arg.intValue));
      if (arg.kind != Arg::Kind::Float)
        return mismatch();
      return Attribute(arg.floatValue);
    case AttrKind::Bool:
      if (arg.kind != Arg::Kind::Bool)
        return mismatch();
      return Attribute(arg.boolValue);
    case AttrKind::String:
      if (arg.kind != Arg::Kind::String)
        return mismatch();
      return Attribute(arg.text);
    case AttrKind::Ints: {
      std::vector<const Arg *> items;
      if (arg.kind == Arg::Kind::List)
        for (const Arg &item : arg.items)
          items.push_back(&item);
      else
        items.push_back(&arg); // a single int stands for a one-element list, as in ATen
      std::vector<SymInt> ints;
      for (const Arg *item : items) {
        if (item->kind == Arg::Kind::Int)
          ints.emplace_back(item->intValue);
        else if (item->kind == Arg::Kind::Expr)
          ints.push_back(item->expr);
        else if (item->kind == Arg::Kind::Ident && !parseDType(item->text))
          ints.push_back(SymInt::symbol(item->text));
        else
          return mismatch();
      }
      return Attribute(std::move(ints));
    }
    case AttrKind::Floats: {
      if (arg.kind != Arg::Kind::List)
        return mismatch();
      std::vector<double> floats;
      for (const Arg &item : arg.items) {
        if (item.kind == Arg::Kind::Int)
          floats.push_back(double(item.intValue));
        else if (item.kind == Arg::Kind::Float)
          floats.push_back(item.floatValue);
        else
          return mismatch();
      }
      return Attribute(std::move(floats));
    }
    case AttrKind::DType: {
      std::optional<DType> dtype =
          arg.kind == Arg::Kind::Ident ? parseDType(arg.text) : std::nullopt;
      if (!dtype)
        return failAt(*arg.token, "'" + param.name + "' expects a dtype such as f32");
      return Attribute(*dtype);
    }
    case AttrKind::Tensor:
      if (arg.kind != Arg::Kind::TensorLiteral)
        return mismatch();
      return Attribute(arg.tensor);
    case AttrKind::Scalar:
      if (arg.kind == Arg::Kind::Int)
        return Attribute(arg.intValue);
      if (arg.kind == Arg::Kind::Float)
        return Attribute(arg.floatValue);
      if (arg.kind == Arg::Kind::Bool)
        return Attribute(arg.boolValue);
      return mismatch();
    }
    return mismatch();
  }

  Status buildNode(const Token &nameToken, const OpDef &op, const Token &target,
                   const std::vector<TensorType> &declared, const std::vector<Arg> &positional,
                   const std::vector<std::pair<const Token *, Arg>> &keywords) {
    // Assign each argument to a parameter.
    std::map<std::string, const Arg *> assigned;
    size_t index = 0;
    for (const Arg &arg : positional) {
      while (index < op.params.size() && op.params[index].kwargOnly)
        ++index;
      if (index >= op.params.size())
        return failAt(*arg.token, strCat(op.name, " takes at most ", index,
                                         " positional argument(s)"));
      assigned[op.params[index++].name] = &arg;
    }
    for (const auto &[name, arg] : keywords) {
      if (!op.findParam(name->text))
        return failAt(*name, strCat(op.name, " has no parameter '", name->text, "'"));
      if (!assigned.emplace(name->text, &arg).second)
        return failAt(*name, strCat("'", name->text, "' is given twice"));
    }

    std::vector<Value *> inputs;
    AttrMap attrs;
    for (const ParamSpec &param : op.params) {
      auto it = assigned.find(param.name);
      const Arg *arg = it == assigned.end() ? nullptr : it->second;
      switch (param.kind) {
      case ParamSpec::Kind::Tensor:
      case ParamSpec::Kind::OptionalTensor: {
        if (!arg) {
          if (param.kind == ParamSpec::Kind::Tensor)
            return failAt(target, strCat(op.name, ": missing tensor '", param.name, "'"));
          inputs.push_back(nullptr);
          break;
        }
        TC_ASSIGN_OR_RETURN(Value * value, tensorOperand(*arg, param.kind ==
                                                                    ParamSpec::Kind::OptionalTensor,
                                                         param.name));
        inputs.push_back(value);
        break;
      }
      case ParamSpec::Kind::TensorList:
        if (!arg || arg->kind != Arg::Kind::List)
          return failAt(arg ? *arg->token : target,
                        strCat(op.name, ": '", param.name, "' expects a list of tensors"));
        for (const Arg &item : arg->items) {
          TC_ASSIGN_OR_RETURN(Value * value, tensorOperand(item, false, param.name));
          inputs.push_back(value);
        }
        break;
      case ParamSpec::Kind::Attr:
        if (arg) {
          TC_ASSIGN_OR_RETURN(Attribute value, attribute(*arg, param));
          attrs.emplace(param.name, std::move(value));
        }
        break;
      }
    }

    std::vector<std::string> resultNames;
    if (declared.size() > 1) {
      auto names = getitemNames_.find(nameToken.text);
      for (size_t i = 0; i < declared.size(); ++i) {
        std::string name = strCat(nameToken.text, "_", i);
        if (names != getitemNames_.end())
          if (auto it = names->second.find(int64_t(i)); it != names->second.end())
            name = it->second;
        resultNames.push_back(name);
      }
    }
    Expected<Node *> node =
        graph_.addNode(op, std::move(inputs), std::move(attrs), nameToken.text, resultNames,
                       &declared);
    if (!node)
      return failAt(target, node.error().message());
    if ((*node)->numOutputs() != declared.size())
      return failAt(nameToken, strCat("declared ", declared.size(), " result(s) but ", op.name,
                                      " gives ", (*node)->numOutputs()));
    for (size_t i = 0; i < declared.size(); ++i)
      if ((*node)->output(i)->type() != declared[i])
        return failAt(nameToken, strCat("declared type ", declared[i].str(),
                                        " but inference gives ",
                                        (*node)->output(i)->type().str()));
    return Status::ok();
  }

  Status checkGetitem(const Token &nameToken, const std::vector<TensorType> &declared,
                      const std::vector<Arg> &positional) {
    if (positional.size() != 2 || positional[0].kind != Arg::Kind::Value ||
        positional[1].kind != Arg::Kind::Int)
      return failAt(nameToken, "getitem takes (%tuple, index)");
    Value *value = graph_.findValue(nameToken.text);
    if (!value || !value->producer() || value->producer()->name() != positional[0].text ||
        int64_t(value->resultIndex()) != positional[1].intValue)
      return failAt(nameToken, strCat("getitem of %", positional[0].text, " index ",
                                      positional[1].intValue,
                                      " does not name a result of a multi-result node"));
    if (declared.size() != 1 || declared[0] != value->type())
      return failAt(nameToken, strCat("declared type does not match the result type ",
                                      value->type().str()));
    return Status::ok();
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  const OpRegistry &registry_;
  std::string fileName_;
  Graph graph_;
  std::map<std::string, std::map<int64_t, std::string>> getitemNames_;
};

} // namespace

Expected<Graph> parseFx(std::string_view text, const OpRegistry &registry,
                        const std::string &fileName) {
  TC_ASSIGN_OR_RETURN(std::vector<Token> tokens, tokenize(text, fileName));
  return Parser(std::move(tokens), registry, fileName).parse();
}

} // namespace tensorc::fx
