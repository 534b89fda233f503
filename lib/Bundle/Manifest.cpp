// The bundle manifest: SizeExpr parsing and evaluation, and manifest.json writing and validation.
#include "tensorc/Bundle/Manifest.h"

#include "tensorc/Support/StrCat.h"

#include <cctype>
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

  Expected<NodePtr> parseSum() {
    TC_ASSIGN_OR_RETURN(NodePtr lhs, parseProduct());
    while (true) {
      Kind kind;
      if (consume("+"))
        kind = Kind::Add;
      else if (consume("-"))
        kind = Kind::Sub;
      else
        return lhs;
      TC_ASSIGN_OR_RETURN(NodePtr rhs, parseProduct());
      lhs = makeNode(kind, std::move(lhs), std::move(rhs));
    }
  }

  Expected<NodePtr> parseProduct() {
    TC_ASSIGN_OR_RETURN(NodePtr lhs, parseUnary());
    while (true) {
      Kind kind;
      if (consume("//"))
        kind = Kind::FloorDiv;
      else if (consume("*"))
        kind = Kind::Mul;
      else if (consume("%"))
        kind = Kind::Mod;
      else
        return lhs;
      TC_ASSIGN_OR_RETURN(NodePtr rhs, parseUnary());
      lhs = makeNode(kind, std::move(lhs), std::move(rhs));
    }
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

const char *bufferKindName(BufferKind kind) {
  switch (kind) {
  case BufferKind::Input:
    return "input";
  case BufferKind::Output:
    return "output";
  case BufferKind::Weight:
    return "weight";
  case BufferKind::Arena:
    return "arena";
  }
  return "?";
}

const char *launchKindName(LaunchKind kind) {
  switch (kind) {
  case LaunchKind::Kernel:
    return "kernel";
  case LaunchKind::Extern:
    return "extern";
  case LaunchKind::Copy:
    return "copy";
  }
  return "?";
}

// ---- manifest.json -----------------------------------------------------------------------------

namespace {

Json exprJson(const SizeExpr &expr) {
  // Plain integers stay JSON integers; anything else keeps its text exactly.
  std::optional<int64_t> value = expr.constantValue();
  if (value && (expr.text().empty() || expr.text() == std::to_string(*value)))
    return Json(*value);
  return Json(expr.text());
}

Json exprListJson(const std::vector<SizeExpr> &exprs) {
  Json list = Json::array();
  for (const SizeExpr &expr : exprs)
    list.push(exprJson(expr));
  return list;
}

Json tensorJson(const TensorDesc &tensor) {
  Json json = Json::object();
  json["name"] = tensor.name;
  json["dtype"] = std::string(dtypeName(tensor.dtype));
  json["shape"] = exprListJson(tensor.shape);
  return json;
}

const char *kindName(Json::Kind kind) {
  switch (kind) {
  case Json::Kind::Null:
    return "null";
  case Json::Kind::Bool:
    return "a boolean";
  case Json::Kind::Int:
    return "an integer";
  case Json::Kind::Float:
    return "a number";
  case Json::Kind::String:
    return "a string";
  case Json::Kind::Array:
    return "an array";
  case Json::Kind::Object:
    return "an object";
  }
  return "?";
}

std::string fieldPath(const std::string &parent, const std::string &key) {
  return parent.empty() ? key : parent + "." + key;
}
std::string indexPath(const std::string &parent, size_t index) {
  return strCat(parent, "[", index, "]");
}

/// Reads typed fields of one JSON object; every error names the field's path.
class ObjectReader {
public:
  static Expected<ObjectReader> open(const Json &json, std::string path) {
    if (!json.isObject())
      return makeError(path.empty() ? "manifest" : path, ": expected an object, got ",
                       kindName(json.kind()));
    return ObjectReader(json, std::move(path));
  }

  std::string path(const std::string &key) const { return fieldPath(path_, key); }

  /// The member `key` of `kind`; nullptr when absent and optional.
  Expected<const Json *> get(const std::string &key, Json::Kind kind, bool required = true) const {
    const Json *value = json_->find(key);
    if (!value) {
      if (required)
        return makeError(path(key), ": missing");
      return static_cast<const Json *>(nullptr);
    }
    if (value->kind() != kind)
      return makeError(path(key), ": expected ", kindName(kind), ", got ", kindName(value->kind()));
    return value;
  }

  Expected<std::string> string(const std::string &key, bool required = true) const {
    TC_ASSIGN_OR_RETURN(const Json *value, get(key, Json::Kind::String, required));
    return value ? value->asString() : std::string();
  }
  Expected<int64_t> integer(const std::string &key, bool required = true,
                            int64_t fallback = 0) const {
    TC_ASSIGN_OR_RETURN(const Json *value, get(key, Json::Kind::Int, required));
    return value ? value->asInt() : fallback;
  }
  Expected<bool> boolean(const std::string &key, bool required = true,
                         bool fallback = false) const {
    TC_ASSIGN_OR_RETURN(const Json *value, get(key, Json::Kind::Bool, required));
    return value ? value->asBool() : fallback;
  }
  Expected<DType> dtype(const std::string &key) const {
    TC_ASSIGN_OR_RETURN(std::string name, string(key));
    std::optional<DType> dtype = parseDType(name);
    if (!dtype)
      return makeError(path(key), ": unknown dtype '", name, "'");
    return *dtype;
  }
  Expected<SizeExpr> expr(const std::string &key, bool required = true) const {
    const Json *value = json_->find(key);
    if (!value && !required)
      return SizeExpr();
    if (!value)
      return makeError(path(key), ": missing");
    return parseExpr(*value, path(key));
  }
  Expected<std::vector<SizeExpr>> exprList(const std::string &key) const {
    TC_ASSIGN_OR_RETURN(const Json *list, get(key, Json::Kind::Array));
    std::vector<SizeExpr> exprs;
    for (size_t i = 0; i < list->items().size(); ++i) {
      TC_ASSIGN_OR_RETURN(SizeExpr expr, parseExpr(list->items()[i], indexPath(path(key), i)));
      exprs.push_back(std::move(expr));
    }
    return exprs;
  }
  Expected<std::vector<std::string>> stringList(const std::string &key, bool required) const {
    TC_ASSIGN_OR_RETURN(const Json *list, get(key, Json::Kind::Array, required));
    std::vector<std::string> strings;
    if (!list)
      return strings;
    for (size_t i = 0; i < list->items().size(); ++i) {
      const Json &item = list->items()[i];
      if (!item.isString())
        return makeError(indexPath(path(key), i), ": expected a string, got ",
                         kindName(item.kind()));
      strings.push_back(item.asString());
    }
    return strings;
  }

  static Expected<SizeExpr> parseExpr(const Json &value, const std::string &path) {
    if (value.isInt())
      return SizeExpr::constant(value.asInt());
    if (!value.isString())
      return makeError(path, ": expected an integer or a size expression string, got ",
                       kindName(value.kind()));
    Expected<SizeExpr> expr = SizeExpr::parse(value.asString());
    if (!expr)
      return makeError(path, ": ", expr.error().message());
    return expr;
  }

private:
  ObjectReader(const Json &json, std::string path) : json_(&json), path_(std::move(path)) {}
  const Json *json_;
  std::string path_;
};

/// Calls `read(item, path)` for each element of the array `key`.
template <typename T, typename ReadFn>
Expected<std::vector<T>> readList(const ObjectReader &reader, const std::string &key, bool required,
                                  ReadFn read) {
  TC_ASSIGN_OR_RETURN(const Json *list, reader.get(key, Json::Kind::Array, required));
  std::vector<T> result;
  if (!list)
    return result;
  for (size_t i = 0; i < list->items().size(); ++i) {
    TC_ASSIGN_OR_RETURN(ObjectReader item,
                        ObjectReader::open(list->items()[i], indexPath(reader.path(key), i)));
    TC_ASSIGN_OR_RETURN(T value, read(item));
    result.push_back(std::move(value));
  }
  return result;
}

Expected<TensorDesc> readTensor(const ObjectReader &reader) {
  TensorDesc tensor;
  TC_ASSIGN_OR_RETURN(tensor.name, reader.string("name"));
  TC_ASSIGN_OR_RETURN(tensor.dtype, reader.dtype("dtype"));
  TC_ASSIGN_OR_RETURN(tensor.shape, reader.exprList("shape"));
  return tensor;
}

Expected<BufferDesc> readBuffer(const ObjectReader &reader) {
  BufferDesc buffer;
  TC_ASSIGN_OR_RETURN(buffer.id, reader.integer("id"));
  TC_ASSIGN_OR_RETURN(buffer.name, reader.string("name"));
  TC_ASSIGN_OR_RETURN(std::string kind, reader.string("kind"));
  if (kind == "input")
    buffer.kind = BufferKind::Input;
  else if (kind == "output")
    buffer.kind = BufferKind::Output;
  else if (kind == "weight")
    buffer.kind = BufferKind::Weight;
  else if (kind == "arena")
    buffer.kind = BufferKind::Arena;
  else
    return makeError(reader.path("kind"), ": unknown buffer kind '", kind,
                     "' (expected input, output, weight or arena)");
  TC_ASSIGN_OR_RETURN(buffer.dtype, reader.dtype("dtype"));
  TC_ASSIGN_OR_RETURN(buffer.shape, reader.exprList("shape"));
  switch (buffer.kind) {
  case BufferKind::Input:
  case BufferKind::Output: {
    TC_ASSIGN_OR_RETURN(buffer.index, reader.integer("index"));
    break;
  }
  case BufferKind::Weight: {
    TC_ASSIGN_OR_RETURN(buffer.weight, reader.string("weight"));
    if (buffer.weight.empty())
      return makeError(reader.path("weight"), ": empty weight name");
    break;
  }
  case BufferKind::Arena: {
    TC_ASSIGN_OR_RETURN(buffer.offset, reader.expr("offset"));
    break;
  }
  }
  return buffer;
}

Expected<Launch> readLaunch(const ObjectReader &reader) {
  Launch launch;
  TC_ASSIGN_OR_RETURN(std::string kind, reader.string("kind"));
  if (kind == "kernel")
    launch.kind = LaunchKind::Kernel;
  else if (kind == "extern")
    launch.kind = LaunchKind::Extern;
  else if (kind == "copy")
    launch.kind = LaunchKind::Copy;
  else
    return makeError(reader.path("kind"), ": unknown launch kind '", kind,
                     "' (expected kernel, extern or copy)");
  TC_ASSIGN_OR_RETURN(launch.name, reader.string("name"));
  TC_ASSIGN_OR_RETURN(const Json *args, reader.get("args", Json::Kind::Array));
  for (size_t i = 0; i < args->items().size(); ++i) {
    if (!args->items()[i].isInt())
      return makeError(indexPath(reader.path("args"), i), ": expected an integer, got ",
                       kindName(args->items()[i].kind()));
    launch.args.push_back(args->items()[i].asInt());
  }
  switch (launch.kind) {
  case LaunchKind::Kernel: {
    if (launch.name.empty())
      return makeError(reader.path("name"), ": empty kernel symbol");
    TC_ASSIGN_OR_RETURN(launch.range, reader.expr("range"));
    TC_ASSIGN_OR_RETURN(launch.grain, reader.integer("grain", false, 1));
    if (launch.grain < 1)
      return makeError(reader.path("grain"), ": must be at least 1, got ", launch.grain);
    TC_ASSIGN_OR_RETURN(launch.cudaBlock, reader.integer("cuda_block", false, 0));
    if (launch.cudaBlock < 0 || launch.cudaBlock > 1024)
      return makeError(reader.path("cuda_block"), ": must be 0 to 1024 threads, got ",
                       launch.cudaBlock);
    if (launch.cudaBlock > 0) {
      TC_ASSIGN_OR_RETURN(launch.cudaGrid, reader.expr("cuda_grid"));
      // Up to the largest opt-in dynamic shared memory of any GPU so far (227 KB, sm_90).
      TC_ASSIGN_OR_RETURN(launch.cudaSharedBytes, reader.integer("cuda_smem", false, 0));
      if (launch.cudaSharedBytes < 0 || launch.cudaSharedBytes > 227 * 1024)
        return makeError(reader.path("cuda_smem"), ": must be 0 to 232448 bytes, got ",
                         launch.cudaSharedBytes);
    } else {
      launch.cudaGrid = SizeExpr::constant(0);
    }
    break;
  }
  case LaunchKind::Extern: {
    TC_ASSIGN_OR_RETURN(launch.graph, reader.string("graph"));
    if (launch.graph.empty())
      return makeError(reader.path("graph"), ": empty graph");
    break;
  }
  case LaunchKind::Copy:
    if (launch.args.size() != 2)
      return makeError(reader.path("args"), ": a copy takes 2 buffers, got ", launch.args.size());
    break;
  }
  return launch;
}

/// Bundle files must stay inside the bundle: relative, no `..` component.
Status checkBundlePath(const ObjectReader &reader, const char *key, const std::string &file) {
  bool escapes = file.empty() || file.front() == '/';
  for (size_t start = 0; !escapes && start <= file.size();) {
    size_t end = file.find('/', start);
    if (end == std::string::npos)
      end = file.size();
    escapes = file.compare(start, end - start, "..") == 0;
    start = end + 1;
  }
  if (escapes)
    return makeError(reader.path(key), ": '", file, "' is not a relative path inside the bundle");
  return Status::ok();
}

Expected<CudaImage> readCudaImage(const ObjectReader &reader) {
  CudaImage image;
  TC_ASSIGN_OR_RETURN(image.arch, reader.string("arch"));
  if (image.arch.size() < 5 || image.arch.compare(0, 3, "sm_") != 0 ||
      image.arch.find_first_not_of("0123456789", 3) != std::string::npos)
    return makeError(reader.path("arch"), ": '", image.arch, "' is not an sm_<NN> arch");
  TC_ASSIGN_OR_RETURN(image.file, reader.string("file"));
  TC_RETURN_IF_ERROR(checkBundlePath(reader, "file", image.file));
  TC_ASSIGN_OR_RETURN(std::string kind, reader.string("kind"));
  if (kind != "cubin" && kind != "ptx")
    return makeError(reader.path("kind"), ": unknown image kind '", kind,
                     "' (expected cubin or ptx)");
  image.ptx = kind == "ptx";
  return image;
}

Expected<CpuVariant> readCpuVariant(const ObjectReader &reader) {
  CpuVariant variant;
  TC_ASSIGN_OR_RETURN(variant.name, reader.string("name"));
  if (variant.name.empty())
    return makeError(reader.path("name"), ": empty variant name");
  TC_ASSIGN_OR_RETURN(variant.arch, reader.string("arch"));
  if (variant.arch != "x86_64" && variant.arch != "aarch64")
    return makeError(reader.path("arch"), ": unknown arch '", variant.arch,
                     "' (expected x86_64 or aarch64)");
  TC_ASSIGN_OR_RETURN(variant.file, reader.string("file"));
  TC_RETURN_IF_ERROR(checkBundlePath(reader, "file", variant.file));
  TC_ASSIGN_OR_RETURN(variant.requires_, reader.stringList("requires", false));
  TC_ASSIGN_OR_RETURN(variant.priority, reader.integer("priority", false, 0));
  return variant;
}

Expected<Manifest::Guard> readGuard(const ObjectReader &reader) {
  Manifest::Guard guard;
  TC_ASSIGN_OR_RETURN(guard.lhs, reader.expr("lhs"));
  TC_ASSIGN_OR_RETURN(guard.rhs, reader.expr("rhs"));
  TC_ASSIGN_OR_RETURN(guard.message, reader.string("message"));
  return guard;
}

bool isIdentifier(const std::string &name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])))
    return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
      return false;
  return true;
}

/// Cross-field checks: what the runtime indexes must exist and agree.
/// Every input is data or state exactly once; state pairs match in dtype and shape.
Status validateTraining(const Manifest &manifest, const TrainingInfo &training) {
  auto find = [](const std::vector<TensorDesc> &list, const std::string &name) -> const TensorDesc * {
    for (const TensorDesc &desc : list)
      if (desc.name == name)
        return &desc;
    return nullptr;
  };
  if (training.optimizer != "sgd" && training.optimizer != "adamw" && training.optimizer != "none")
    return makeError("training.optimizer: unknown optimizer '", training.optimizer, "'");
  if (manifest.outputs.empty() || manifest.outputs[0].name != training.loss)
    return makeError("training.loss: '", training.loss, "' is not the first output");
  std::map<std::string, int> uses;
  for (size_t i = 0; i < training.data.size(); ++i) {
    if (!find(manifest.inputs, training.data[i]))
      return makeError(indexPath("training.data", i), ": no input '", training.data[i], "'");
    ++uses[training.data[i]];
  }
  for (size_t i = 0; i < training.state.size(); ++i) {
    const TrainingInfo::State &state = training.state[i];
    std::string path = indexPath("training.state", i);
    const TensorDesc *in = find(manifest.inputs, state.input);
    if (in && state.output.empty()) { // state no step updates (gradient-only bundles)
      ++uses[state.input];
      continue;
    }
    const TensorDesc *out = find(manifest.outputs, state.output);
    if (!in || !out)
      return makeError(path, ": no ", in ? "output '" : "input '", in ? state.output : state.input,
                       "'");
    bool sameShape = in->shape.size() == out->shape.size();
    for (size_t d = 0; sameShape && d < in->shape.size(); ++d)
      sameShape = in->shape[d].text() == out->shape[d].text();
    if (in->dtype != out->dtype || !sameShape)
      return makeError(path, ": input '", state.input, "' and output '", state.output,
                       "' differ in dtype or shape");
    ++uses[state.input];
  }
  for (const TensorDesc &input : manifest.inputs)
    if (uses[input.name] != 1)
      return makeError("training: input '", input.name, "' must be listed once in data or state, ",
                       "found ", uses[input.name]);
  return Status::ok();
}

Status validate(const Manifest &manifest) {
  std::set<std::string> declared;
  for (size_t i = 0; i < manifest.symbols.size(); ++i) {
    const std::string &symbol = manifest.symbols[i];
    if (!isIdentifier(symbol))
      return makeError(indexPath("symbols", i), ": '", symbol, "' is not an identifier");
    if (!declared.insert(symbol).second)
      return makeError(indexPath("symbols", i), ": duplicate symbol '", symbol, "'");
  }
  auto checkExpr = [&](const SizeExpr &expr, const std::string &path) -> Status {
    std::set<std::string> used;
    expr.collectSymbols(used);
    for (const std::string &symbol : used)
      if (!declared.count(symbol))
        return makeError(path, ": '", expr.text(), "' uses undeclared symbol '", symbol, "'");
    return Status::ok();
  };
  auto checkShape = [&](const std::vector<SizeExpr> &shape, const std::string &path) -> Status {
    for (size_t d = 0; d < shape.size(); ++d) {
      TC_RETURN_IF_ERROR(checkExpr(shape[d], indexPath(path, d)));
    }
    return Status::ok();
  };
  auto checkTensors = [&](const std::vector<TensorDesc> &tensors,
                          const std::string &field) -> Status {
    std::set<std::string> names;
    for (size_t i = 0; i < tensors.size(); ++i) {
      std::string path = indexPath(field, i);
      if (tensors[i].name.empty())
        return makeError(path, ".name: empty");
      if (!names.insert(tensors[i].name).second)
        return makeError(path, ".name: duplicate name '", tensors[i].name, "'");
      TC_RETURN_IF_ERROR(checkShape(tensors[i].shape, path + ".shape"));
    }
    return Status::ok();
  };
  TC_RETURN_IF_ERROR(checkTensors(manifest.inputs, "inputs"));
  TC_RETURN_IF_ERROR(checkTensors(manifest.outputs, "outputs"));

  std::vector<int> inputUses(manifest.inputs.size()), outputUses(manifest.outputs.size());
  for (size_t i = 0; i < manifest.buffers.size(); ++i) {
    const BufferDesc &buffer = manifest.buffers[i];
    std::string path = indexPath("buffers", i);
    if (buffer.id != int64_t(i))
      return makeError(path, ".id: is ", buffer.id, ", expected ", i,
                       " (buffers are listed densely by id)");
    TC_RETURN_IF_ERROR(checkShape(buffer.shape, path + ".shape"));
    if (buffer.kind == BufferKind::Input || buffer.kind == BufferKind::Output) {
      const auto &tensors = buffer.kind == BufferKind::Input ? manifest.inputs : manifest.outputs;
      auto &uses = buffer.kind == BufferKind::Input ? inputUses : outputUses;
      const char *field = buffer.kind == BufferKind::Input ? "inputs" : "outputs";
      if (buffer.index < 0 || buffer.index >= int64_t(tensors.size()))
        return makeError(path, ".index: no ", field, "[", buffer.index, "] (there are ",
                         tensors.size(), ")");
      const TensorDesc &tensor = tensors[size_t(buffer.index)];
      if (buffer.dtype != tensor.dtype)
        return makeError(path, ".dtype: ", dtypeName(buffer.dtype), " but ", field, "[",
                         buffer.index, "] '", tensor.name, "' is ", dtypeName(tensor.dtype));
      if (++uses[size_t(buffer.index)] > 1)
        return makeError(path, ".index: ", field, "[", buffer.index, "] '", tensor.name,
                         "' already has a buffer");
    }
    if (buffer.kind == BufferKind::Arena) {
      TC_RETURN_IF_ERROR(checkExpr(buffer.offset, path + ".offset"));
    }
  }
  for (size_t i = 0; i < outputUses.size(); ++i)
    if (outputUses[i] == 0)
      return makeError(indexPath("outputs", i), ": no buffer holds output '",
                       manifest.outputs[i].name, "'");
  TC_RETURN_IF_ERROR(checkExpr(manifest.arenaBytes, "arena_bytes"));

  for (size_t i = 0; i < manifest.launches.size(); ++i) {
    const Launch &launch = manifest.launches[i];
    std::string path = indexPath("launches", i);
    for (size_t a = 0; a < launch.args.size(); ++a)
      if (launch.args[a] < 0 || launch.args[a] >= int64_t(manifest.buffers.size()))
        return makeError(indexPath(path + ".args", a), ": no buffer ", launch.args[a]);
    if (launch.kind == LaunchKind::Kernel) {
      TC_RETURN_IF_ERROR(checkExpr(launch.range, path + ".range"));
      TC_RETURN_IF_ERROR(checkExpr(launch.cudaGrid, path + ".cuda_grid"));
      if (!manifest.cuda.empty() && launch.cudaBlock == 0)
        return makeError(path, ": kernel '", launch.name,
                         "' has no cuda_block, but the bundle has CUDA images");
    }
    if (launch.kind == LaunchKind::Copy) {
      const BufferDesc &from = manifest.buffers[size_t(launch.args[0])];
      const BufferDesc &to = manifest.buffers[size_t(launch.args[1])];
      if (from.dtype != to.dtype)
        return makeError(path, ": copy from ", dtypeName(from.dtype), " buffer '", from.name,
                         "' to ", dtypeName(to.dtype), " buffer '", to.name, "'");
      if (to.kind == BufferKind::Input || to.kind == BufferKind::Weight)
        return makeError(indexPath(path + ".args", 1), ": copy into read-only ",
                         bufferKindName(to.kind), " buffer '", to.name, "'");
    }
  }

  std::set<std::string> variantNames;
  for (size_t i = 0; i < manifest.cpu.size(); ++i)
    if (!variantNames.insert(manifest.cpu[i].name).second)
      return makeError(indexPath("cpu", i), ".name: duplicate variant '", manifest.cpu[i].name,
                       "'");
  for (size_t i = 0; i < manifest.guards.size(); ++i) {
    std::string path = indexPath("guards", i);
    TC_RETURN_IF_ERROR(checkExpr(manifest.guards[i].lhs, path + ".lhs"));
    TC_RETURN_IF_ERROR(checkExpr(manifest.guards[i].rhs, path + ".rhs"));
  }
  if (manifest.training) {
    TC_RETURN_IF_ERROR(validateTraining(manifest, *manifest.training));
  }
  return Status::ok();
}

} // namespace

Json Manifest::toJson() const {
  Json json = Json::object();
  json["format_version"] = formatVersion;
  json["tensorc_version"] = tensorcVersion;
  json["source_hash"] = sourceHash;
  json["model"] = model;
  Json symbolList = Json::array();
  for (const std::string &symbol : symbols)
    symbolList.push(symbol);
  json["symbols"] = std::move(symbolList);
  Json inputList = Json::array(), outputList = Json::array();
  for (const TensorDesc &input : inputs)
    inputList.push(tensorJson(input));
  for (const TensorDesc &output : outputs)
    outputList.push(tensorJson(output));
  json["inputs"] = std::move(inputList);
  json["outputs"] = std::move(outputList);

  Json bufferList = Json::array();
  for (const BufferDesc &buffer : buffers) {
    Json item = Json::object();
    item["id"] = buffer.id;
    item["name"] = buffer.name;
    item["kind"] = bufferKindName(buffer.kind);
    item["dtype"] = std::string(dtypeName(buffer.dtype));
    item["shape"] = exprListJson(buffer.shape);
    switch (buffer.kind) {
    case BufferKind::Input:
    case BufferKind::Output:
      item["index"] = buffer.index;
      break;
    case BufferKind::Weight:
      item["weight"] = buffer.weight;
      break;
    case BufferKind::Arena:
      item["offset"] = exprJson(buffer.offset);
      break;
    }
    bufferList.push(std::move(item));
  }
  json["buffers"] = std::move(bufferList);
  json["arena_bytes"] = exprJson(arenaBytes);
  json["peak_bytes"] = peakBytes;

  Json launchList = Json::array();
  for (const Launch &launch : launches) {
    Json item = Json::object();
    item["kind"] = launchKindName(launch.kind);
    item["name"] = launch.name;
    Json args = Json::array();
    for (int64_t arg : launch.args)
      args.push(arg);
    item["args"] = std::move(args);
    switch (launch.kind) {
    case LaunchKind::Kernel:
      item["range"] = exprJson(launch.range);
      item["grain"] = launch.grain;
      if (launch.cudaBlock > 0) {
        item["cuda_grid"] = exprJson(launch.cudaGrid);
        item["cuda_block"] = launch.cudaBlock;
        if (launch.cudaSharedBytes > 0)
          item["cuda_smem"] = launch.cudaSharedBytes;
      }
      break;
    case LaunchKind::Extern:
      item["graph"] = launch.graph;
      break;
    case LaunchKind::Copy:
      break;
    }
    launchList.push(std::move(item));
  }
  json["launches"] = std::move(launchList);

  Json variantList = Json::array();
  for (const CpuVariant &variant : cpu) {
    Json item = Json::object();
    item["name"] = variant.name;
    item["arch"] = variant.arch;
    item["file"] = variant.file;
    Json features = Json::array();
    for (const std::string &feature : variant.requires_)
      features.push(feature);
    item["requires"] = std::move(features);
    item["priority"] = variant.priority;
    variantList.push(std::move(item));
  }
  json["cpu"] = std::move(variantList);
  if (!cuda.empty()) {
    Json imageList = Json::array();
    for (const CudaImage &image : cuda) {
      Json item = Json::object();
      item["arch"] = image.arch;
      item["file"] = image.file;
      item["kind"] = std::string(image.ptx ? "ptx" : "cubin");
      imageList.push(std::move(item));
    }
    json["cuda"] = std::move(imageList);
    json["cuda_graphs"] = cudaGraphs;
  }

  Json guardList = Json::array();
  for (const Guard &guard : guards) {
    Json item = Json::object();
    item["lhs"] = exprJson(guard.lhs);
    item["rhs"] = exprJson(guard.rhs);
    item["message"] = guard.message;
    guardList.push(std::move(item));
  }
  json["guards"] = std::move(guardList);
  if (training) {
    Json info = Json::object();
    info["optimizer"] = training->optimizer;
    info["loss"] = training->loss;
    Json data = Json::array();
    for (const std::string &name : training->data)
      data.push(name);
    info["data"] = std::move(data);
    Json stateList = Json::array();
    for (const TrainingInfo::State &state : training->state) {
      Json item = Json::object();
      item["input"] = state.input;
      item["output"] = state.output;
      item["init"] = state.init;
      stateList.push(std::move(item));
    }
    info["state"] = std::move(stateList);
    json["training"] = std::move(info);
  }
  return json;
}

Expected<Manifest> Manifest::fromJson(const Json &json) {
  TC_ASSIGN_OR_RETURN(ObjectReader reader, ObjectReader::open(json, ""));
  Manifest manifest;
  // The version comes first: a newer format may change every other field.
  TC_ASSIGN_OR_RETURN(manifest.formatVersion, reader.integer("format_version"));
  if (manifest.formatVersion != kFormatVersion)
    return makeError("bundle format version ", manifest.formatVersion, ", this runtime reads ",
                     kFormatVersion);
  TC_ASSIGN_OR_RETURN(manifest.tensorcVersion, reader.string("tensorc_version", false));
  TC_ASSIGN_OR_RETURN(manifest.sourceHash, reader.string("source_hash", false));
  TC_ASSIGN_OR_RETURN(manifest.model, reader.string("model", false));
  TC_ASSIGN_OR_RETURN(manifest.symbols, reader.stringList("symbols", true));
  TC_ASSIGN_OR_RETURN(manifest.inputs, readList<TensorDesc>(reader, "inputs", true, readTensor));
  TC_ASSIGN_OR_RETURN(manifest.outputs, readList<TensorDesc>(reader, "outputs", true, readTensor));
  TC_ASSIGN_OR_RETURN(manifest.buffers, readList<BufferDesc>(reader, "buffers", true, readBuffer));
  TC_ASSIGN_OR_RETURN(manifest.arenaBytes, reader.expr("arena_bytes"));
  TC_ASSIGN_OR_RETURN(manifest.peakBytes, reader.integer("peak_bytes", false, 0));
  TC_ASSIGN_OR_RETURN(manifest.launches, readList<Launch>(reader, "launches", true, readLaunch));
  TC_ASSIGN_OR_RETURN(manifest.cpu, readList<CpuVariant>(reader, "cpu", true, readCpuVariant));
  TC_ASSIGN_OR_RETURN(manifest.cuda, readList<CudaImage>(reader, "cuda", false, readCudaImage));
  TC_ASSIGN_OR_RETURN(manifest.cudaGraphs, reader.boolean("cuda_graphs", false, false));
  TC_ASSIGN_OR_RETURN(manifest.guards, readList<Guard>(reader, "guards", false, readGuard));
  TC_ASSIGN_OR_RETURN(const Json *training, reader.get("training", Json::Kind::Object, false));
  if (training) {
    TC_ASSIGN_OR_RETURN(ObjectReader info, ObjectReader::open(*training, "training"));
    TrainingInfo parsed;
    TC_ASSIGN_OR_RETURN(parsed.optimizer, info.string("optimizer"));
    TC_ASSIGN_OR_RETURN(parsed.loss, info.string("loss"));
    TC_ASSIGN_OR_RETURN(parsed.data, info.stringList("data", true));
    TC_ASSIGN_OR_RETURN(parsed.state, readList<TrainingInfo::State>(
                                          info, "state", true,
                                          [](const ObjectReader &item)
                                              -> Expected<TrainingInfo::State> {
                                            TrainingInfo::State state;
                                            TC_ASSIGN_OR_RETURN(state.input, item.string("input"));
                                            TC_ASSIGN_OR_RETURN(state.output,
                                                                item.string("output"));
                                            TC_ASSIGN_OR_RETURN(state.init,
                                                                item.string("init", false));
                                            return state;
                                          }));
    manifest.training = std::move(parsed);
  }
  TC_RETURN_IF_ERROR(validate(manifest));
  return manifest;
}

} // namespace tensorc::bundle
