// The LoopIR text parser: printProgram's form, line by line, into a verified LoopProgram.
#include "tensorc/Lowering/LoopParser.h"

#include "LoopText.h"
#include "LoopTextCursor.h"
#include "tensorc/Lowering/LoopVerifier.h"
#include "tensorc/Support/Safetensors.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace tensorc::loop {

namespace {

/// A temporary of the body being read: its expression, by name.
using Temps = std::map<std::string, ExprRef>;

class Parser : public TextCursor {
public:
  Parser(std::string_view text, const std::string &fileName,
         const std::map<std::string, Tensor> &weights)
      : TextCursor(text, fileName), weights_(weights) {}

  Expected<LoopProgram> run() {
    bool sawOutputs = false;
    while (nextLine()) {
      const Token &first = peek();
      if (sawOutputs)
        return error("text after the outputs line");
      if (isIdent("input") || isIdent("weight") || isIdent("buffer")) {
        if (!program_.nodes.empty())
          return error("buffers come before the nodes");
        TC_RETURN_IF_ERROR(parseBuffer());
      } else if (isIdent("pointwise") || isIdent("reduction")) {
        TC_RETURN_IF_ERROR(parseLoopNode());
      } else if (isIdent("template")) {
        TC_RETURN_IF_ERROR(parseTemplate());
      } else if (isIdent("extern")) {
        TC_RETURN_IF_ERROR(parseExtern());
      } else if (isIdent("outputs")) {
        next();
        TC_ASSIGN_OR_RETURN(program_.outputs, parseNameList());
        TC_RETURN_IF_ERROR(expectEnd());
        sawOutputs = true;
      } else {
        return error(strCat("expected a buffer, a node or the outputs, got '", first.text, "'"));
      }
    }
    if (!sawOutputs)
      return makeError(fileName_, ": no outputs line");
    finish();
    if (Status verified = verifyProgram(program_); !verified)
      return makeError(fileName_, ": ", verified.message());
    return std::move(program_);
  }

private:
  // ---- buffers ----

  Expected<int> bufferId(const std::string &name) const {
    auto it = bufferIds_.find(name);
    if (it == bufferIds_.end())
      return error(strCat("unknown buffer '", name, "'"));
    return it->second;
  }
  Expected<int> parseBufferRef() {
    if (peek().kind != Token::Kind::Ident)
      return error("expected a buffer name");
    TC_ASSIGN_OR_RETURN(int id, bufferId(peek().text));
    next();
    return id;
  }

  /// `( a, b )`: buffer names.
  Expected<std::vector<int>> parseNameList() {
    return parseList<int>("(", ")", [&] { return parseBufferRef(); });
  }

  Status parseBuffer() {
    Buffer buffer;
    std::string kind = next().text;
    buffer.kind = kind == "input"    ? Buffer::Kind::Input
                  : kind == "weight" ? Buffer::Kind::Weight
                                     : Buffer::Kind::Intermediate;
    TC_ASSIGN_OR_RETURN(buffer.name, parseName("a buffer name"));
    if (bufferIds_.count(buffer.name))
      return error(strCat("buffer '", buffer.name, "' is declared twice"));
    TC_RETURN_IF_ERROR(expectPunct(":"));
    TC_ASSIGN_OR_RETURN(buffer.dtype, parseDType());
    TC_ASSIGN_OR_RETURN(buffer.shape, parseDims());
    buffer.id = int(program_.buffers.size());
    if (buffer.kind == Buffer::Kind::Input)
      buffer.inputIndex = inputs_++;
    if (isIdent("data")) {
      if (buffer.kind != Buffer::Kind::Weight)
        return error("only weights have data");
      next();
      TC_RETURN_IF_ERROR(expectPunct("="));
      TC_ASSIGN_OR_RETURN(Tensor data, parseWeightData(buffer));
      program_.weights[buffer.name] = std::move(data);
    }
    TC_RETURN_IF_ERROR(expectEnd());
    bufferIds_[buffer.name] = buffer.id;
    program_.buffers.push_back(std::move(buffer));
    return Status::ok();
  }

  Expected<Tensor> parseWeightData(const Buffer &buffer) {
    std::vector<int64_t> shape;
    for (const SymInt &dim : buffer.shape) {
      if (!dim.constant())
        return error(strCat("weight '", buffer.name, "' has a symbolic shape"));
      shape.push_back(*dim.constant());
    }
    if (isIdent("fnv1a64")) {
      next();
      TC_RETURN_IF_ERROR(expectPunct(":"));
      std::string digest = "fnv1a64:" + next().text;
      auto given = weights_.find(buffer.name);
      if (given == weights_.end())
        return error(strCat("weight '", buffer.name, "' (", digest,
                            ") has no data: give it in the .safetensors file next to the text"));
      if (tensorDigest(given->second) != digest)
        return error(strCat("the data given for weight '", buffer.name, "' has digest ",
                            tensorDigest(given->second), ", not ", digest));
      return given->second;
    }
    TC_ASSIGN_OR_RETURN(std::vector<Literal> values,
                        parseList<Literal>("[", "]", [&] { return parseLiteral(); }));
    Expected<int64_t> numel = checkedNumel(shape, "weight '" + buffer.name + "'");
    if (!numel || int64_t(values.size()) != *numel)
      return error(strCat("weight '", buffer.name, "' has ", values.size(), " values for ",
                          describeShape(buffer.dtype, shape)));
    TC_ASSIGN_OR_RETURN(Tensor tensor, Tensor::zeros(buffer.dtype, shape));
    for (size_t i = 0; i < values.size(); ++i) {
      TC_ASSIGN_OR_RETURN(ExprRef value, literalValue(values[i], buffer.dtype));
      if (isFloating(buffer.dtype))
        tensor.setDouble(int64_t(i), value->value);
      else
        tensor.setInt(int64_t(i), value->intValue);
    }
    return tensor;
  }

  // ---- literals and bodies ----

  /// An operand: a temporary's name or a literal (typed later, when its context is known).
  struct Operand {
    ExprRef temp;
    std::optional<Literal> literal;
  };
  Expected<Operand> parseOperand(const Temps &temps) {
    Operand operand;
    if (atLiteral()) {
      TC_ASSIGN_OR_RETURN(operand.literal, parseLiteral());
      return operand;
    }
    if (peek().kind != Token::Kind::Ident)
      return error("expected a temporary or a number");
    auto it = temps.find(peek().text);
    if (it == temps.end())
      return error(strCat("unknown temporary '", peek().text, "'"));
    operand.temp = it->second;
    next();
    return operand;
  }
  Expected<ExprRef> resolve(const Operand &operand, std::optional<DType> implied) {
    if (operand.temp)
      return operand.temp;
    if (!operand.literal->dtype && !implied)
      return errorAt(operand.literal->number, "this number needs its dtype, as in 1:f32");
    return literalValue(*operand.literal, implied.value_or(DType::F32));
  }

  Expected<std::vector<Operand>> parseOperands(const Temps &temps, size_t count) {
    std::vector<Operand> operands;
    TC_RETURN_IF_ERROR(expectPunct("("));
    for (size_t i = 0; i < count; ++i) {
      if (i > 0)
        TC_RETURN_IF_ERROR(expectPunct(","));
      TC_ASSIGN_OR_RETURN(operands.emplace_back(), parseOperand(temps));
    }
    TC_RETURN_IF_ERROR(expectPunct(")"));
    return operands;
  }

  const std::string &textAt(size_t at) const { return tokens_[at].text; }

  /// Index of the ')' closing the parenthesis the cursor is in.
  size_t closingParen() const {
    size_t depth = 0, at = pos_;
    for (; at < limit_; ++at) {
      bool punct = tokens_[at].kind == Token::Kind::Punct;
      if (punct && textAt(at) == "(")
        ++depth;
      else if (punct && textAt(at) == ")" && depth-- == 0)
        break;
    }
    return at;
  }

  /// `load(buf, index)`, or a gather: `load(buf, index + t)` with the runtime offset last (a
  /// temporary, or a number with its dtype), or `load(buf, t)` with no affine part.
  Expected<ExprRef> parseLoad(const Temps &temps, DType dtype) {
    TC_RETURN_IF_ERROR(expectPunct("("));
    TC_ASSIGN_OR_RETURN(int buffer, parseBufferRef());
    TC_RETURN_IF_ERROR(expectPunct(","));
    size_t close = closingParen(), offsetAt = close;
    if (close > pos_ && tokens_[close - 1].kind == Token::Kind::Ident &&
        temps.count(textAt(close - 1))) {
      offsetAt = close - 1;
    } else if (close >= pos_ + 3 && textAt(close - 2) == ":") {
      offsetAt = close - 3;
      if (offsetAt > pos_ && textAt(offsetAt - 1) == "-")
        --offsetAt;
    }
    bool gather = offsetAt < close && (offsetAt == pos_ || textAt(offsetAt - 1) == "+");
    size_t indexEnd = !gather ? close : offsetAt == pos_ ? pos_ : offsetAt - 1;
    SymInt index(0);
    if (indexEnd > pos_) {
      size_t saved = limit_;
      limit_ = indexEnd;
      Expected<SymInt> parsed = parseSymInt();
      Status ended = parsed ? expectEnd() : Status::ok();
      limit_ = saved;
      if (!parsed)
        return parsed.takeError();
      TC_RETURN_IF_ERROR(ended);
      index = *parsed;
      if (gather)
        next(); // the '+' before the offset
    } else if (!gather) {
      return error("expected an index");
    }
    if (!gather) {
      TC_RETURN_IF_ERROR(expectPunct(")"));
      return makeLoad(buffer, dtype, index);
    }
    TC_ASSIGN_OR_RETURN(Operand offset, parseOperand(temps));
    TC_ASSIGN_OR_RETURN(ExprRef offsetExpr, resolve(offset, DType::I64));
    TC_RETURN_IF_ERROR(expectPunct(")"));
    if (offsetExpr->dtype != DType::I64)
      return error("a gather's offset must be i64");
    return makeIndirectLoad(buffer, dtype, index, offsetExpr);
  }

  Expected<ExprRef> parseExpr(const Temps &temps, DType dtype) {
    std::string op = peek().text;
    if (peek().kind != Token::Kind::Ident)
      return error("expected an operation");
    static const std::set<std::string> known = [] {
      std::set<std::string> names = {"load", "index", "cast", "where"};
#define TENSORC_NAME(e, n) names.insert(n);
      TENSORC_FOR_EACH_UNARY(TENSORC_NAME)
      TENSORC_FOR_EACH_BINARY(TENSORC_NAME)
#undef TENSORC_NAME
      return names;
    }();
    if (!known.count(op))
      return error(strCat("unknown operation '", op, "'"));
    Token opToken = next();
    if (op == "load")
      return parseLoad(temps, dtype);
    if (op == "index") {
      TC_RETURN_IF_ERROR(expectPunct("("));
      TC_ASSIGN_OR_RETURN(SymInt index, parseSymInt());
      TC_RETURN_IF_ERROR(expectPunct(")"));
      return makeIndex(index, dtype);
    }
    if (op == "cast") {
      TC_ASSIGN_OR_RETURN(std::vector<Operand> operands, parseOperands(temps, 1));
      TC_ASSIGN_OR_RETURN(ExprRef x, resolve(operands[0], std::nullopt));
      if (x->dtype == dtype)
        return error("a cast to the operand's own dtype");
      return makeCast(x, dtype);
    }
    if (op == "where") {
      TC_ASSIGN_OR_RETURN(std::vector<Operand> operands, parseOperands(temps, 3));
      TC_ASSIGN_OR_RETURN(ExprRef c, resolve(operands[0], DType::Bool));
      TC_ASSIGN_OR_RETURN(ExprRef a, resolve(operands[1], dtype));
      TC_ASSIGN_OR_RETURN(ExprRef b, resolve(operands[2], dtype));
      if (c->dtype != DType::Bool || a->dtype != dtype || b->dtype != dtype)
        return errorAt(
            opToken, strCat("where needs a bool condition and two ", dtypeName(dtype), " values"));
      return makeSelect(c, a, b);
    }
#define TENSORC_UNARY(e, n)                                                                        \
  if (op == n)                                                                                     \
    return parseUnary(temps, dtype, UnaryOp::e);
    TENSORC_FOR_EACH_UNARY(TENSORC_UNARY)
#undef TENSORC_UNARY
#define TENSORC_BINARY(e, n)                                                                       \
  if (op == n)                                                                                     \
    return parseBinary(temps, dtype, BinaryOp::e, opToken);
    TENSORC_FOR_EACH_BINARY(TENSORC_BINARY)
#undef TENSORC_BINARY
    return error(strCat("unknown operation '", op, "'"));
  }

  Expected<ExprRef> parseUnary(const Temps &temps, DType dtype, UnaryOp op) {
    TC_ASSIGN_OR_RETURN(std::vector<Operand> operands, parseOperands(temps, 1));
    bool implied = impliedOperandType(ExprKind::Unary, op, BinaryOp::Add, false);
    TC_ASSIGN_OR_RETURN(ExprRef x,
                        resolve(operands[0], implied ? std::optional(dtype) : std::nullopt));
    return makeUnary(op, x);
  }

  Expected<ExprRef> parseBinary(const Temps &temps, DType dtype, BinaryOp op, const Token &at) {
    TC_ASSIGN_OR_RETURN(std::vector<Operand> operands, parseOperands(temps, 2));
    bool arithmetic = binaryResultType(op, DType::F32) == DType::F32;
    ExprRef sides[2];
    for (size_t i = 0; i < 2; ++i) {
      std::optional<DType> implied;
      if (arithmetic)
        implied = dtype;
      else if (const ExprRef &other = operands[1 - i].temp)
        implied = other->dtype;
      TC_ASSIGN_OR_RETURN(sides[i], resolve(operands[i], implied));
    }
    if (sides[0]->dtype != sides[1]->dtype)
      return errorAt(at, strCat(binaryName(op), " of ", dtypeName(sides[0]->dtype), " and ",
                                dtypeName(sides[1]->dtype)));
    return makeBinary(op, sides[0], sides[1]);
  }

  /// Lines `name : dtype = op(...)` up to `-> root`.
  Expected<ExprRef> parseBody(std::optional<DType> rootType) {
    Temps temps;
    while (nextLine()) {
      if (isPunct("->")) {
        next();
        TC_ASSIGN_OR_RETURN(Operand root, parseOperand(temps));
        TC_ASSIGN_OR_RETURN(ExprRef body, resolve(root, rootType));
        TC_RETURN_IF_ERROR(expectEnd());
        return body;
      }
      TC_ASSIGN_OR_RETURN(std::string name, parseName("a temporary or '->'"));
      if (temps.count(name))
        return error(strCat("temporary '", name, "' is defined twice"));
      TC_RETURN_IF_ERROR(expectPunct(":"));
      TC_ASSIGN_OR_RETURN(DType dtype, parseDType());
      TC_RETURN_IF_ERROR(expectPunct("="));
      TC_ASSIGN_OR_RETURN(ExprRef expr, parseExpr(temps, dtype));
      if (expr->dtype != dtype)
        return error(
            strCat("the operation gives ", dtypeName(expr->dtype), ", not ", dtypeName(dtype)));
      TC_RETURN_IF_ERROR(expectEnd());
      temps[name] = expr;
    }
    return makeError(fileName_, ": the body ending at the end of the text has no '->' line");
  }

  // ---- nodes ----

  /// ` name=...`, ` origins=[...]` and, for externs, ` reason="..."` after a node's header.
  Status parseNodeSuffix(LoopNode &node) {
    if (isIdent("name")) {
      next();
      TC_RETURN_IF_ERROR(expectPunct("="));
      TC_ASSIGN_OR_RETURN(node.name, parseName("a node name"));
    }
    if (isIdent("origins")) {
      next();
      TC_RETURN_IF_ERROR(expectPunct("="));
      TC_ASSIGN_OR_RETURN(
          node.origins, parseList<std::string>("[", "]", [&] { return parseName("an op name"); }));
    }
    if (node.kind == LoopNode::Kind::Extern && isIdent("reason")) {
      next();
      TC_RETURN_IF_ERROR(expectPunct("="));
      if (peek().kind != Token::Kind::String)
        return error("expected a quoted reason");
      node.externReason = next().text;
    }
    return expectEnd();
  }

  Status parseOutput(LoopNode &node) {
    TC_ASSIGN_OR_RETURN(node.output, parseBufferRef());
    node.name = program_.buffers[size_t(node.output)].name;
    return Status::ok();
  }

  void addNode(LoopNode node) {
    node.id = int(program_.nodes.size());
    program_.nodes.push_back(std::move(node));
  }

  Status parseLoopNode() {
    LoopNode node;
    node.kind = next().text == "pointwise" ? LoopNode::Kind::Pointwise : LoopNode::Kind::Reduction;
    TC_RETURN_IF_ERROR(parseOutput(node));
    TC_RETURN_IF_ERROR(expectIdent("over"));
    TC_ASSIGN_OR_RETURN(node.ranges, parseDims());
    if (node.kind == LoopNode::Kind::Reduction) {
      TC_RETURN_IF_ERROR(expectIdent("reducing"));
      TC_ASSIGN_OR_RETURN(node.reductionRanges, parseDims());
      TC_RETURN_IF_ERROR(expectIdent("with"));
      TC_ASSIGN_OR_RETURN(std::string op, parseName("a reduction"));
      bool known = false;
      for (ReduceOp candidate : {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min,
                                 ReduceOp::ArgMax, ReduceOp::ArgMin})
        if (op == reduceName(candidate)) {
          node.reduceOp = candidate;
          known = true;
        }
      if (!known)
        return error(strCat("unknown reduction '", op, "'"));
    }
    TC_RETURN_IF_ERROR(parseNodeSuffix(node));
    TC_ASSIGN_OR_RETURN(node.body, parseBody(impliedRootType(program_, node)));
    addNode(std::move(node));
    return Status::ok();
  }

  /// `key=` before a value.
  Status expectKey(std::string_view key) {
    TC_RETURN_IF_ERROR(expectIdent(key));
    return expectPunct("=");
  }
  /// `key=value` for each (key, field), in order.
  Status symKeys(std::initializer_list<std::pair<const char *, SymInt *>> fields) {
    for (auto [key, field] : fields) {
      TC_RETURN_IF_ERROR(expectKey(key));
      TC_ASSIGN_OR_RETURN(*field, parseSymInt());
    }
    return Status::ok();
  }
  Status intKeys(std::initializer_list<std::pair<const char *, int64_t *>> fields) {
    for (auto [key, field] : fields) {
      TC_RETURN_IF_ERROR(expectKey(key));
      TC_ASSIGN_OR_RETURN(*field, parseInt());
    }
    return Status::ok();
  }
  Status pairKey(std::string_view key, int64_t &first, int64_t &second) {
    TC_RETURN_IF_ERROR(expectKey(key));
    TC_ASSIGN_OR_RETURN(std::vector<int64_t> values, parseIntList());
    if (values.size() != 2)
      return error(strCat(key, " takes two values"));
    first = values[0];
    second = values[1];
    return Status::ok();
  }

  /// `buf offset O strides [...]`.
  Expected<StridedView> parseView() {
    TC_ASSIGN_OR_RETURN(int buffer, parseBufferRef());
    return parseViewOf(buffer);
  }
  /// `offset O strides [...]` of `buffer`.
  Expected<StridedView> parseViewOf(int buffer) {
    StridedView view{buffer, SymInt(0), {}};
    TC_RETURN_IF_ERROR(expectIdent("offset"));
    TC_ASSIGN_OR_RETURN(view.offset, parseSymInt());
    TC_RETURN_IF_ERROR(expectIdent("strides"));
    TC_ASSIGN_OR_RETURN(view.strides, parseDims());
    return view;
  }
  /// `buf` (dense over `dims`) or `buf offset O strides [...]`.
  Expected<StridedView> parseOperand(const std::vector<SymInt> &dims) {
    TC_ASSIGN_OR_RETURN(int buffer, parseBufferRef());
    if (!isIdent("offset"))
      return StridedView{buffer, SymInt(0), contiguousStrides(dims)};
    return parseViewOf(buffer);
  }
  /// The next line, `key = ` and what follows.
  Status detailLine(std::string_view key) {
    if (!nextLine())
      return makeError(fileName_, ": the text ends inside a template");
    TC_RETURN_IF_ERROR(expectIdent(key));
    return expectPunct("=");
  }

  Status parseTemplate() {
    next();
    LoopNode node;
    node.kind = LoopNode::Kind::Template;
    TC_ASSIGN_OR_RETURN(std::string kind, parseName("gemm, conv2d or attention"));
    TC_RETURN_IF_ERROR(parseOutput(node));
    if (kind == "gemm") {
      LoopNode::Gemm &g = node.gemm;
      TC_RETURN_IF_ERROR(symKeys({{"batch", &g.batch}, {"m", &g.m}, {"n", &g.n}, {"k", &g.k}}));
      TC_RETURN_IF_ERROR(parseNodeSuffix(node));
      TC_RETURN_IF_ERROR(detailLine("a"));
      TC_ASSIGN_OR_RETURN(g.a, parseView());
      TC_RETURN_IF_ERROR(expectEnd());
      TC_RETURN_IF_ERROR(detailLine("b"));
      TC_ASSIGN_OR_RETURN(g.b, parseView());
      if (isPunct(",")) {
        next();
        TC_RETURN_IF_ERROR(expectKey("layout"));
        TC_RETURN_IF_ERROR(expectIdent("packed16"));
        g.packedB = true;
      }
    } else if (kind == "conv2d") {
      node.templateKind = LoopNode::TemplateKind::Conv2d;
      LoopNode::Conv &c = node.conv;
      TC_RETURN_IF_ERROR(symKeys({{"n", &c.n}}));
      TC_RETURN_IF_ERROR(intKeys({{"c", &c.c}, {"h", &c.h}, {"w", &c.w}, {"oc", &c.oc}}));
      TC_RETURN_IF_ERROR(pairKey("kernel", c.kh, c.kw));
      TC_RETURN_IF_ERROR(pairKey("out", c.oh, c.ow));
      TC_RETURN_IF_ERROR(pairKey("stride", c.strideH, c.strideW));
      TC_RETURN_IF_ERROR(pairKey("padding", c.padH, c.padW));
      TC_RETURN_IF_ERROR(pairKey("dilation", c.dilationH, c.dilationW));
      TC_RETURN_IF_ERROR(intKeys({{"groups", &c.groups}}));
      if (isIdent("layout")) {
        TC_RETURN_IF_ERROR(expectKey("layout"));
        TC_ASSIGN_OR_RETURN(std::string layout, parseName("a layout (nhwc)"));
        if (layout != "nhwc")
          return error(strCat("unknown conv2d layout '", layout, "' (nhwc)"));
        c.channelsLast = true;
      }
      if (isIdent("tiles")) {
        TC_RETURN_IF_ERROR(pairKey("tiles", c.tileM, c.tileN));
        if (!c.channelsLast || c.tileM < 1 || c.tileN < 1)
          return error("conv2d tiles= needs layout=nhwc and positive tile sizes");
        c.packedWeights = true;
      }
      if (isIdent("winograd")) {
        TC_ASSIGN_OR_RETURN(std::string flag, parseName("winograd"));
        if (!c.packedWeights || c.kh != 3 || c.kw != 3)
          return error("conv2d winograd needs tiles= and a 3x3 kernel");
        c.winograd = flag == "winograd";
      }
      if (isIdent("channelwise")) {
        TC_ASSIGN_OR_RETURN(std::string flag, parseName("channelwise"));
        if (!c.packedWeights || c.groups < 2 || c.c != c.oc)
          return error("conv2d channelwise needs tiles= and groups of equal input and output "
                       "channels");
        c.channelwise = flag == "channelwise";
      }
      TC_RETURN_IF_ERROR(parseNodeSuffix(node));
      TC_RETURN_IF_ERROR(detailLine("input"));
      TC_ASSIGN_OR_RETURN(c.input, parseBufferRef());
      TC_RETURN_IF_ERROR(expectEnd());
      TC_RETURN_IF_ERROR(detailLine("weight"));
      TC_ASSIGN_OR_RETURN(c.weight, parseView());
    } else if (kind == "attention") {
      node.templateKind = LoopNode::TemplateKind::Attention;
      LoopNode::Attention &a = node.attention;
      TC_RETURN_IF_ERROR(symKeys({{"batch", &a.batch}, {"l", &a.l}, {"s", &a.s}}));
      TC_RETURN_IF_ERROR(intKeys({{"e", &a.e}, {"ev", &a.ev}}));
      TC_RETURN_IF_ERROR(expectKey("scale"));
      TC_ASSIGN_OR_RETURN(Literal scale, parseLiteral());
      TC_ASSIGN_OR_RETURN(ExprRef value, literalValue(scale, DType::F64));
      a.scale = value->value;
      if (isIdent("safe_softmax")) {
        TC_ASSIGN_OR_RETURN(std::string flag, parseName("safe_softmax"));
        a.safeSoftmax = flag == "safe_softmax";
      }
      TC_RETURN_IF_ERROR(expectKey("batch_dims"));
      TC_ASSIGN_OR_RETURN(a.batchDims, parseDims());
      TC_RETURN_IF_ERROR(parseNodeSuffix(node));
      TC_RETURN_IF_ERROR(detailLine("q"));
      TC_ASSIGN_OR_RETURN(a.q, parseOperand(a.dims(a.l, a.e)));
      TC_RETURN_IF_ERROR(expectPunct(","));
      TC_RETURN_IF_ERROR(expectKey("k"));
      TC_ASSIGN_OR_RETURN(a.k, parseOperand(a.dims(a.s, a.e)));
      TC_RETURN_IF_ERROR(expectPunct(","));
      TC_RETURN_IF_ERROR(expectKey("v"));
      TC_ASSIGN_OR_RETURN(a.v, parseOperand(a.dims(a.s, a.ev)));
      if (isPunct(",") && isIdent("mask", 1)) {
        next();
        TC_RETURN_IF_ERROR(expectKey("mask"));
        TC_ASSIGN_OR_RETURN(a.mask, parseView());
      }
      if (isPunct(",") && isIdent("out", 1)) {
        next();
        TC_RETURN_IF_ERROR(expectIdent("out"));
        TC_RETURN_IF_ERROR(expectIdent("strides"));
        TC_ASSIGN_OR_RETURN(a.outStrides, parseDims());
      }
    } else {
      return error(strCat("unknown template '", kind, "' (gemm, conv2d or attention)"));
    }
    TC_RETURN_IF_ERROR(expectEnd());
    node.ranges = program_.buffers[size_t(node.output)].shape;
    addNode(std::move(node));
    return Status::ok();
  }

  Status parseExtern() {
    next();
    LoopNode node;
    node.kind = LoopNode::Kind::Extern;
    TC_ASSIGN_OR_RETURN(node.externOp, parseName("an op name"));
    TC_ASSIGN_OR_RETURN(node.externInputs, parseNameList());
    TC_RETURN_IF_ERROR(expectPunct("->"));
    TC_ASSIGN_OR_RETURN(node.externOutputs, parseNameList());
    if (!node.externOutputs.empty()) {
      node.output = node.externOutputs[0];
      node.name = program_.buffers[size_t(node.output)].name;
    }
    TC_RETURN_IF_ERROR(parseNodeSuffix(node));
    // The op's FX-text graph: the lines behind a bar.
    while (lineIndex_ + 1 < lines_.size()) {
      std::string_view line = lines_[lineIndex_ + 1];
      size_t bar = line.find_first_not_of(" \t");
      if (bar == std::string_view::npos || line[bar] != '|')
        break;
      ++lineIndex_;
      std::string_view content = line.substr(bar + 1);
      if (!content.empty() && content[0] == ' ')
        content.remove_prefix(1);
      node.externGraph += std::string(content) + "\n";
    }
    addNode(std::move(node));
    return Status::ok();
  }

  /// What the text leaves implicit: shape symbols (of inputs and weights) and fallbacks.
  void finish() {
    std::set<std::string> symbols;
    for (const Buffer &buffer : program_.buffers)
      if (buffer.kind != Buffer::Kind::Intermediate)
        for (const SymInt &dim : buffer.shape)
          dim.collectSymbols(symbols);
    program_.symbols.assign(symbols.begin(), symbols.end());
    for (const LoopNode &node : program_.nodes)
      if (node.kind == LoopNode::Kind::Extern &&
          std::find(program_.fallbacks.begin(), program_.fallbacks.end(), node.externOp) ==
              program_.fallbacks.end())
        program_.fallbacks.push_back(node.externOp);
  }

  const std::map<std::string, Tensor> &weights_;
  std::map<std::string, int> bufferIds_;
  int64_t inputs_ = 0;
  LoopProgram program_;
};

} // namespace

Expected<LoopProgram> parseProgram(std::string_view text, const std::string &fileName,
                                   const std::map<std::string, Tensor> &weights) {
  return Parser(text, fileName, weights).run();
}

Expected<LoopProgram> loadLoopFile(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return makeError(path, ": cannot read");
  std::stringstream text;
  text << file.rdbuf();
  std::map<std::string, Tensor> weights;
  std::filesystem::path side = std::filesystem::path(path).replace_extension(".safetensors");
  std::error_code ec;
  if (std::filesystem::is_regular_file(side, ec)) {
    TC_ASSIGN_OR_RETURN(weights, readSafetensors(side.string()));
  }
  return parseProgram(text.str(), path, weights);
}

} // namespace tensorc::loop
