// Graph -> LoopProgram: pointwise ops and views become loader functions inlined into their users'
// bodies; reductions, GEMMs and fallbacks get buffers; a pointwise value gets a buffer only when
// something needs memory (an output, a GEMM operand, a fallback) or recomputing it would cost.
#include "tensorc/Lowering/Lower.h"

#include "tensorc/Lowering/ExprVisitor.h"
#include "tensorc/Lowering/LoopVerifier.h"

#include "tensorc/IR/Printer.h"
#include "tensorc/IR/Rewriter.h"

#include <algorithm>
#include <array>
#include <bit>
#include <functional>
#include <map>
#include <set>
#include <type_traits>

namespace tensorc::loop {
namespace {

using Index = std::vector<SymInt>;
/// The value of a tensor at a multi-dim index. Loaders capture the loaders of their operands, so
/// copies share the function instead of cloning the whole chain behind it (a deep copy per node
/// made lowering quadratic in the length of a pointwise chain).
class Loader {
public:
  using Fn = std::function<ExprRef(const Index &)>;
  Loader() = default;
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, Loader>>>
  Loader(F fn) : fn_(std::make_shared<const Fn>(std::move(fn))) {}
  ExprRef operator()(const Index &index) const { return (*fn_)(index); }

private:
  std::shared_ptr<const Fn> fn_;
};

/// How a graph value is available to its users.
struct Lowered {
  Loader load;
  int buffer = -1; // when realized
  int cost = 0;    // ops recomputed per element when inlined
  bool readsTemplate = false; // the body loads a GEMM result directly (an epilogue candidate)
};

std::vector<SymInt> contiguousStrides(const std::vector<SymInt> &shape) {
  std::vector<SymInt> strides(shape.size(), SymInt(1));
  for (size_t i = shape.size(); i-- > 1;)
    strides[i - 1] = strides[i] * shape[i];
  return strides;
}

SymInt flatten(const Index &index, const std::vector<SymInt> &shape) {
  std::vector<SymInt> strides = contiguousStrides(shape);
  SymInt flat(0);
  for (size_t i = 0; i < index.size(); ++i)
    flat = flat + index[i] * strides[i];
  return flat;
}

Index loopIndex(size_t rank) {
  Index index;
  for (size_t i = 0; i < rank; ++i)
    index.push_back(SymInt::symbol(loopVar(i)));
  return index;
}

bool isOne(const SymInt &dim) { return dim.constant() == std::optional<int64_t>(1); }

/// Loop ranges of a dense buffer of `shape`: size-1 dims are dropped (their index is always 0, so
/// the flat index is unchanged); `index` gets x variables for the rest and 0 for them.
std::vector<SymInt> rangesWithoutUnitDims(const std::vector<SymInt> &shape, Index &index) {
  std::vector<SymInt> ranges;
  index.clear();
  for (const SymInt &dim : shape) {
    if (isOne(dim)) {
      index.push_back(SymInt(0));
    } else {
      index.push_back(SymInt::symbol(loopVar(ranges.size())));
      ranges.push_back(dim);
    }
  }
  return ranges;
}

std::optional<UnaryOp> unaryFor(OpId id) {
  switch (id) {
  case OpId::Neg: return UnaryOp::Neg;
  case OpId::Abs: return UnaryOp::Abs;
  case OpId::Exp: return UnaryOp::Exp;
  case OpId::Log: return UnaryOp::Log;
  case OpId::Sqrt: return UnaryOp::Sqrt;
  case OpId::Rsqrt: return UnaryOp::Rsqrt;
  case OpId::Reciprocal: return UnaryOp::Reciprocal;
  case OpId::Tanh: return UnaryOp::Tanh;
  case OpId::Sigmoid: return UnaryOp::Sigmoid;
  case OpId::Erf: return UnaryOp::Erf;
  case OpId::Floor: return UnaryOp::Floor;
  case OpId::Ceil: return UnaryOp::Ceil;
  case OpId::Round: return UnaryOp::Round;
  case OpId::Sign: return UnaryOp::Sign;
  case OpId::Relu: return UnaryOp::Relu;
  case OpId::BitwiseNot: return UnaryOp::BitwiseNot;
  default: return std::nullopt;
  }
}

std::optional<BinaryOp> binaryFor(OpId id) {
  switch (id) {
  case OpId::Add: return BinaryOp::Add;
  case OpId::Sub: return BinaryOp::Sub;
  case OpId::Mul: return BinaryOp::Mul;
  case OpId::Div: return BinaryOp::Div;
  case OpId::Pow: return BinaryOp::Pow;
  case OpId::Remainder: return BinaryOp::Remainder;
  case OpId::Fmod: return BinaryOp::Fmod;
  case OpId::Maximum: return BinaryOp::Maximum;
  case OpId::Minimum: return BinaryOp::Minimum;
  case OpId::Eq: return BinaryOp::Eq;
  case OpId::Ne: return BinaryOp::Ne;
  case OpId::Lt: return BinaryOp::Lt;
  case OpId::Le: return BinaryOp::Le;
  case OpId::Gt: return BinaryOp::Gt;
  case OpId::Ge: return BinaryOp::Ge;
  case OpId::LogicalAnd: return BinaryOp::LogicalAnd;
  case OpId::LogicalOr: return BinaryOp::LogicalOr;
  case OpId::LogicalXor: return BinaryOp::LogicalXor;
  case OpId::BitwiseAnd: return BinaryOp::BitwiseAnd;
  case OpId::BitwiseOr: return BinaryOp::BitwiseOr;
  case OpId::BitwiseXor: return BinaryOp::BitwiseXor;
  case OpId::BitwiseLeftShift: return BinaryOp::Shl;
  case OpId::BitwiseRightShift: return BinaryOp::Shr;
  default: return std::nullopt;
  }
}

int unaryCost(UnaryOp op) {
  switch (op) {
  case UnaryOp::Exp:
  case UnaryOp::Log:
  case UnaryOp::Tanh:
  case UnaryOp::Sigmoid:
  case UnaryOp::Erf:
    return 8;
  default:
    return 1;
  }
}

/// Short op name for kernel names: "aten.add" -> "add".
std::string shortName(const OpDef &op) {
  size_t dot = op.name.rfind('.');
  return dot == std::string::npos ? op.name : op.name.substr(dot + 1);
}

class Lowerer {
public:
  Lowerer(const Graph &graph, const LowerOptions &options)
      : graph_(graph), options_(options), users_(computeUsers(graph)) {}

  Expected<LoopProgram> run() {
    std::set<std::string> symbols;
    for (const auto &input : graph_.inputs())
      for (const SymInt &dim : input->type().shape)
        dim.collectSymbols(symbols);
    for (const std::string &symbol : symbols)
      if (symbol.size() > 1 && (symbol[0] == 'x' || symbol[0] == 'r') &&
          symbol.find_first_not_of("0123456789", 1) == std::string::npos)
        return makeError("shape symbol '", symbol,
                         "' clashes with a loop variable name; rename it");
    program_.symbols.assign(symbols.begin(), symbols.end());

    int64_t userIndex = 0;
    for (const auto &input : graph_.inputs()) {
      bool weight = graph_.isParameter(input.get());
      int id = addBuffer(input->name(), weight ? Buffer::Kind::Weight : Buffer::Kind::Input,
                         input->type());
      if (weight)
        program_.weights[input->name()] = graph_.weights().at(input->name());
      else
        program_.buffers[size_t(id)].inputIndex = userIndex++;
      setBuffer(input.get(), id);
    }
    for (const auto &node : graph_.nodes())
      TC_RETURN_IF_ERROR(lowerNode(*node));
    for (Value *output : graph_.outputs())
      program_.outputs.push_back(realize(output));
    // Only weights something reads go into the bundle (folding can leave originals unused).
    std::set<int> read(program_.outputs.begin(), program_.outputs.end());
    for (const LoopNode &node : program_.nodes)
      for (int buffer : node.reads())
        read.insert(buffer);
    for (const Buffer &buffer : program_.buffers)
      if (buffer.kind == Buffer::Kind::Weight && !read.count(buffer.id))
        program_.weights.erase(buffer.name);
#ifndef NDEBUG
    if (Status verified = verifyProgram(program_); !verified)
      return makeError("internal: lowering produced invalid loop IR: ", verified.message());
#endif
    return std::move(program_);
  }

private:
  int addBuffer(const std::string &name, Buffer::Kind kind, const TensorType &type) {
    Buffer buffer;
    buffer.id = int(program_.buffers.size());
    buffer.name = name;
    buffer.kind = kind;
    buffer.dtype = type.dtype;
    buffer.shape = type.shape;
    program_.buffers.push_back(std::move(buffer));
    return program_.buffers.back().id;
  }

  void setBuffer(const Value *value, int id) {
    const Buffer &buffer = program_.buffers[size_t(id)];
    DType dtype = buffer.dtype;
    std::vector<SymInt> shape = buffer.shape;
    Lowered lowered;
    lowered.buffer = id;
    lowered.load = [id, dtype, shape](const Index &index) {
      return makeLoad(id, dtype, flatten(index, shape));
    };
    values_[value] = std::move(lowered);
  }

  /// Gives `value` a dense buffer, computing it with a pointwise node if it has none.
  int realize(const Value *value) {
    Lowered &lowered = values_.at(value);
    if (lowered.buffer >= 0)
      return lowered.buffer;
    int id = addBuffer(value->name(), Buffer::Kind::Intermediate, value->type());
    LoopNode node;
    node.kind = LoopNode::Kind::Pointwise;
    node.name = value->name();
    node.output = id;
    Index index;
    node.ranges = rangesWithoutUnitDims(value->type().shape, index);
    node.body = simplifyBody(lowered.load(index), node.ranges, {});
    node.origins = origins_[value];
    addNode(std::move(node));
    setBuffer(value, id);
    return id;
  }

  void addNode(LoopNode node) {
    node.id = int(program_.nodes.size());
    program_.nodes.push_back(std::move(node));
  }

  /// Rewrites every Load/Index index of `body` with the loop variables' bounds known, so view
  /// arithmetic (reshape's flatten-then-split) folds back to plain strides.
  ExprRef simplifyBody(const ExprRef &body, const std::vector<SymInt> &ranges,
                       const std::vector<SymInt> &reductionRanges) {
    std::map<std::string, int64_t> bounds;
    for (size_t i = 0; i < ranges.size(); ++i)
      if (auto extent = ranges[i].constant())
        bounds[loopVar(i)] = *extent;
    for (size_t i = 0; i < reductionRanges.size(); ++i)
      if (auto extent = reductionRanges[i].constant())
        bounds[reductionVar(i)] = *extent;
    // Structurally equal subexpressions (a value inlined into several users) become one node.
    std::map<std::string, ExprRef> unique;
    return mutateWith(body, [&](const ExprRef &expr) {
      ExprRef simplified = expr;
      if (expr->kind == ExprKind::Load || expr->kind == ExprKind::IndirectLoad ||
          expr->kind == ExprKind::Index)
        simplified = withIndex(expr, expr->index.simplify(bounds));
      const Expr &e = *simplified;
      std::string key = std::to_string(int(e.kind)) + "|" + std::to_string(int(e.dtype)) + "|" +
                        std::to_string(int(e.unary)) + "|" + std::to_string(int(e.binary)) + "|" +
                        std::to_string(std::bit_cast<uint64_t>(e.value)) + "|" +
                        std::to_string(e.intValue) + "|" + std::to_string(e.buffer) + "|" +
                        e.index.str();
      for (const ExprRef &operand : e.operands)
        key += "|" + std::to_string(reinterpret_cast<uintptr_t>(operand.get()));
      return unique.emplace(key, simplified).first->second;
    });
  }

  /// A loader for `value` read at an index of `outShape`, broadcasting (numpy rules).
  Loader broadcastLoader(const Value *value, const std::vector<SymInt> &outShape, DType dtype) {
    const Lowered &lowered = values_.at(value);
    std::vector<SymInt> shape = value->type().shape;
    Loader inner = lowered.load;
    size_t offset = outShape.size() - shape.size();
    return [inner, shape, offset, dtype, outShape](const Index &index) {
      Index mapped;
      for (size_t i = 0; i < shape.size(); ++i)
        mapped.push_back(isOne(shape[i]) && !isOne(outShape[i + offset]) ? SymInt(0)
                                                                         : index[i + offset]);
      return makeCast(inner(mapped), dtype);
    };
  }

  /// Records a pointwise (lazy) value; `users` > 1 with a costly body realizes it right away.
  void setPointwise(const Value *value, Loader load, int cost, bool readsTemplate,
                    std::vector<std::string> origins) {
    Lowered lowered;
    lowered.load = std::move(load);
    lowered.cost = cost;
    lowered.readsTemplate = readsTemplate;
    values_[value] = std::move(lowered);
    origins_[value] = std::move(origins);
    size_t users = users_.count(value) ? users_.at(value).size() : 0;
    // A GEMM result read by something other than pointwise ops gets a buffer here, written by
    // the GEMM's epilogue; one only feeding pointwise ops stays inline so the whole chain can
    // become the epilogue.
    if ((users > 1 && (cost >= options_.realizeCostThreshold ||
                       (readsTemplate && !onlyPointwiseUsers(value)))) ||
        cost >= options_.maxInlineCost)
      realize(value);
  }

  bool onlyPointwiseUsers(const Value *value) const {
    for (const Node *user : users_.at(value)) {
      if (!user)
        return false; // a graph output
      OpId id = user->opId();
      bool pointwise = unaryFor(id) || binaryFor(id) || id == OpId::Where ||
                       id == OpId::ConvertElementType || id == OpId::LogicalNot ||
                       id == OpId::IsNan;
      if (!pointwise)
        return false;
    }
    return true;
  }

  std::vector<std::string> mergedOrigins(const Node &node) {
    std::vector<std::string> origins;
    for (const Value *input : node.inputs())
      if (input && values_.at(input).buffer < 0) // a realized input is its own kernel's
        for (const std::string &origin : origins_[input])
          if (std::find(origins.begin(), origins.end(), origin) == origins.end())
            origins.push_back(origin);
    std::string self = shortName(node.op());
    if (std::find(origins.begin(), origins.end(), self) == origins.end())
      origins.push_back(self);
    return origins;
  }

  int inputCost(const Node &node) {
    int cost = 0;
    for (const Value *input : node.inputs())
      if (input && values_.at(input).buffer < 0)
        cost += values_.at(input).cost;
    return cost;
  }

  bool inputsReadTemplate(const Node &node) {
    for (const Value *input : node.inputs())
      if (input) {
        const Lowered &lowered = values_.at(input);
        if (lowered.buffer >= 0 ? templateOutputs_.count(lowered.buffer) != 0
                                : lowered.readsTemplate)
          return true;
      }
    return false;
  }

  Status lowerNode(const Node &node) {
    const TensorType &outType = node.output()->type();
    OpId id = node.opId();
    AttrReader attrs(node.attrs());
    if (id == OpId::Constant) {
      const Tensor &value = attrs.getTensor("value");
      if (value.numel() == 1) {
        ExprRef constant = isFloating(value.dtype())
                               ? makeConstant(value.getDouble(0), value.dtype())
                               : makeIntConstant(value.getInt(0), value.dtype());
        setPointwise(node.output(), [constant](const Index &) { return constant; }, 0, false, {});
        return Status::ok();
      }
      int buffer = addBuffer(node.output()->name(), Buffer::Kind::Weight, outType);
      program_.weights[node.output()->name()] = value;
      setBuffer(node.output(), buffer);
      return Status::ok();
    }
    if (auto unary = unaryFor(id))
      return lowerUnary(node, *unary);
    if (auto binary = binaryFor(id))
      return lowerBinary(node, *binary);
    switch (id) {
    case OpId::LogicalNot: {
      Loader x = broadcastLoader(node.input(0), outType.shape, DType::Bool);
      setPointwise(node.output(), [x](const Index &i) { return makeUnary(UnaryOp::LogicalNot, x(i)); },
                   inputCost(node) + 1, inputsReadTemplate(node), mergedOrigins(node));
      return Status::ok();
    }
    case OpId::IsNan: {
      Loader x = broadcastLoader(node.input(0), outType.shape, node.input(0)->type().dtype);
      setPointwise(node.output(), [x](const Index &i) { return makeUnary(UnaryOp::IsNan, x(i)); },
                   inputCost(node) + 1, inputsReadTemplate(node), mergedOrigins(node));
      return Status::ok();
    }
    case OpId::ConvertElementType:
    case OpId::Clone: {
      Loader x = broadcastLoader(node.input(0), outType.shape, outType.dtype);
      setPointwise(node.output(), x, inputCost(node) + 1, inputsReadTemplate(node),
                   mergedOrigins(node));
      return Status::ok();
    }
    case OpId::Where: {
      Loader c = broadcastLoader(node.input(0), outType.shape, DType::Bool);
      Loader a = broadcastLoader(node.input(1), outType.shape, outType.dtype);
      Loader b = broadcastLoader(node.input(2), outType.shape, outType.dtype);
      setPointwise(node.output(),
                   [c, a, b](const Index &i) { return makeSelect(c(i), a(i), b(i)); },
                   inputCost(node) + 1, inputsReadTemplate(node), mergedOrigins(node));
      return Status::ok();
    }
    case OpId::Full:
    case OpId::FullLike:
    case OpId::ZerosLike: {
      // A fill is a constant read at any index: it fuses into its consumers.
      double value = id == OpId::ZerosLike ? 0.0 : attrs.getScalar("fill_value");
      ExprRef constant = isFloating(outType.dtype)
                             ? makeConstant(value, outType.dtype)
                             : makeIntConstant(int64_t(value), outType.dtype);
      setPointwise(node.output(), [constant](const Index &) { return constant; }, 0, false, {});
      return Status::ok();
    }
    case OpId::View:
    case OpId::Reshape:
    case OpId::Permute:
    case OpId::Expand:
    case OpId::Squeeze:
    case OpId::Unsqueeze:
    case OpId::Slice:
      return lowerView(node);
    case OpId::Split:
      return lowerSplit(node);
    case OpId::Cat:
      return lowerCat(node);
    case OpId::Sum:
    case OpId::Prod:
    case OpId::Amax:
    case OpId::Amin:
    case OpId::Argmax:
    case OpId::Argmin:
      return lowerReduction(node);
    case OpId::Mm:
    case OpId::Bmm:
    {
      DType dtype = outType.dtype;
      bool templated = dtype == DType::F32 || (options_.halfPrecisionTemplates &&
                                               (dtype == DType::F16 || dtype == DType::BF16));
      if (templated && node.input(0)->type().dtype == dtype &&
          node.input(1)->type().dtype == dtype)
        return lowerGemm(node);
      return lowerExtern(node);
    }
    case OpId::Convolution:
      return lowerConvolution(node);
    case OpId::ScaledDotProductAttention:
      return lowerAttention(node);
    case OpId::IndexSelect:
    case OpId::Embedding:
    case OpId::Gather:
      return lowerGather(node);
    default:
      return lowerExtern(node);
    }
  }

  Status lowerUnary(const Node &node, UnaryOp op) {
    const TensorType &outType = node.output()->type();
    Loader x = broadcastLoader(node.input(0), outType.shape, outType.dtype);
    setPointwise(node.output(), [x, op](const Index &i) { return makeUnary(op, x(i)); },
                 inputCost(node) + unaryCost(op), inputsReadTemplate(node), mergedOrigins(node));
    return Status::ok();
  }

  Status lowerBinary(const Node &node, BinaryOp op) {
    const TensorType &outType = node.output()->type();
    AttrReader attrs(node.attrs());
    DType operandType = outType.dtype;
    if (outType.dtype == DType::Bool)
      operandType = promoteTypes(node.input(0)->type().dtype, node.input(1)->type().dtype);
    if (op == BinaryOp::LogicalAnd || op == BinaryOp::LogicalOr || op == BinaryOp::LogicalXor)
      operandType = DType::Bool;
    if (op == BinaryOp::Div && node.attrs().count("rounding_mode") && !attrs.isNone("rounding_mode"))
      return lowerExtern(node); // trunc/floor division: left to the reference kernel for now
    Loader a = broadcastLoader(node.input(0), outType.shape, operandType);
    Loader b = broadcastLoader(node.input(1), outType.shape, operandType);
    if ((op == BinaryOp::Add || op == BinaryOp::Sub) && attrs.getScalar("alpha") != 1.0) {
      double alpha = attrs.getScalar("alpha");
      Loader inner = b;
      b = [inner, alpha, operandType](const Index &i) {
        return makeBinary(BinaryOp::Mul, inner(i), makeConstant(alpha, operandType));
      };
    }
    setPointwise(node.output(),
                 [a, b, op](const Index &i) { return makeBinary(op, a(i), b(i)); },
                 inputCost(node) + (op == BinaryOp::Pow ? 16 : 1), inputsReadTemplate(node),
                 mergedOrigins(node));
    return Status::ok();
  }

  /// Views map the output index to the input index; no data moves.
  Status lowerView(const Node &node) {
    const std::vector<SymInt> &outShape = node.output()->type().shape;
    const std::vector<SymInt> &inShape = node.input(0)->type().shape;
    AttrReader attrs(node.attrs());
    std::function<Index(const Index &)> map;
    switch (node.opId()) {
    case OpId::View:
    case OpId::Reshape: {
      // A shared leading prefix (the symbolic batch, typically) maps one to one. Of the rest, all
      // but the first dim on each side must be static, so the flatten-and-split arithmetic has
      // constant strides ([128*s0, 768] <-> [s0, 128, 768] qualifies: the first dim's size never
      // enters the arithmetic).
      size_t prefix = 0;
      while (prefix < inShape.size() && prefix < outShape.size() &&
             inShape[prefix] == outShape[prefix])
        ++prefix;
      std::vector<SymInt> inRest(inShape.begin() + prefix, inShape.end());
      std::vector<SymInt> outRest(outShape.begin() + prefix, outShape.end());
      for (size_t i = 1; i < inRest.size(); ++i)
        if (!inRest[i].isConstant())
          return lowerExtern(node);
      for (size_t i = 1; i < outRest.size(); ++i)
        if (!outRest[i].isConstant())
          return lowerExtern(node);
      map = [prefix, inRest, outRest](const Index &index) {
        Index mapped(index.begin(), index.begin() + prefix);
        SymInt flat = flatten(Index(index.begin() + prefix, index.end()), outRest);
        std::vector<SymInt> strides = contiguousStrides(inRest);
        for (size_t i = 0; i < inRest.size(); ++i) {
          SymInt q = SymInt::floorDiv(flat, *strides[i].constant());
          mapped.push_back(i == 0 ? q : SymInt::mod(q, *inRest[i].constant()));
        }
        return mapped;
      };
      break;
    }
    case OpId::Permute: {
      TC_ASSIGN_OR_RETURN(std::vector<int64_t> dims, attrs.getStaticInts("dims"));
      int64_t rank = int64_t(dims.size());
      for (int64_t &dim : dims)
        dim = dim < 0 ? dim + rank : dim;
      map = [dims](const Index &index) {
        Index mapped(index.size());
        for (size_t i = 0; i < dims.size(); ++i)
          mapped[size_t(dims[i])] = index[i];
        return mapped;
      };
      break;
    }
    case OpId::Expand: {
      size_t offset = outShape.size() - inShape.size();
      map = [inShape, outShape, offset](const Index &index) {
        Index mapped;
        for (size_t i = 0; i < inShape.size(); ++i)
          mapped.push_back(isOne(inShape[i]) && !isOne(outShape[i + offset]) ? SymInt(0)
                                                                             : index[i + offset]);
        return mapped;
      };
      break;
    }
    case OpId::Squeeze:
    case OpId::Unsqueeze: {
      // source[i]: the output dim input dim i reads, or -1 for a removed size-1 dim (index 0).
      std::vector<int64_t> source;
      if (node.opId() == OpId::Unsqueeze) {
        int64_t newDim = attrs.getInt("dim");
        if (newDim < 0)
          newDim += int64_t(outShape.size());
        for (int64_t i = 0; i < int64_t(inShape.size()); ++i)
          source.push_back(i < newDim ? i : i + 1);
      } else {
        TC_ASSIGN_OR_RETURN(std::vector<int64_t> dims, attrs.getStaticInts("dim"));
        std::set<int64_t> removed;
        for (size_t i = 0; i < inShape.size(); ++i)
          if (isOne(inShape[i]) &&
              (dims.empty() || std::count(dims.begin(), dims.end(), int64_t(i)) ||
               std::count(dims.begin(), dims.end(), int64_t(i) - int64_t(inShape.size()))))
            removed.insert(int64_t(i));
        int64_t out = 0;
        for (int64_t i = 0; i < int64_t(inShape.size()); ++i)
          source.push_back(removed.count(i) ? -1 : out++);
        if (out != int64_t(outShape.size()))
          return lowerExtern(node);
      }
      map = [source](const Index &index) {
        Index mapped;
        for (int64_t dim : source)
          mapped.push_back(dim < 0 ? SymInt(0) : index[size_t(dim)]);
        return mapped;
      };
      break;
    }
    case OpId::Slice: {
      int64_t dim = attrs.getInt("dim");
      if (dim < 0)
        dim += int64_t(inShape.size());
      int64_t step = attrs.getInt("step");
      auto extent = inShape[size_t(dim)].constant();
      if (step <= 0 || !extent)
        return lowerExtern(node);
      int64_t start = attrs.isNone("start") ? 0 : attrs.getInt("start");
      if (start < 0)
        start += *extent;
      start = std::clamp<int64_t>(start, 0, *extent);
      map = [dim, start, step](const Index &index) {
        Index mapped = index;
        mapped[size_t(dim)] = SymInt(start) + index[size_t(dim)] * SymInt(step);
        return mapped;
      };
      break;
    }
    default:
      return lowerExtern(node);
    }
    const Lowered &input = values_.at(node.input(0));
    Loader inner = input.load;
    Lowered lowered;
    lowered.load = [inner, map](const Index &index) { return inner(map(index)); };
    lowered.cost = input.buffer >= 0 ? 0 : input.cost;
    lowered.readsTemplate = input.buffer >= 0 ? false : input.readsTemplate;
    values_[node.output()] = std::move(lowered);
    origins_[node.output()] = origins_[node.input(0)];
    return Status::ok();
  }

  /// Each result of split_with_sizes is a view of the input along `dim`, starting at the sum of
  /// the sizes before it (symbolic sizes give a symbolic offset); no kernel of its own.
  Status lowerSplit(const Node &node) {
    const std::vector<SymInt> &inShape = node.input(0)->type().shape;
    AttrReader attrs(node.attrs());
    int64_t dim = attrs.getInt("dim");
    if (dim < 0)
      dim += int64_t(inShape.size());
    if (dim < 0 || dim >= int64_t(inShape.size()))
      return lowerExtern(node);
    const Lowered &input = values_.at(node.input(0));
    Loader inner = input.load;
    SymInt start(0);
    for (size_t k = 0; k < node.numOutputs(); ++k) {
      const Value *output = node.output(k);
      Lowered lowered;
      lowered.load = [inner, dim, start](const Index &index) {
        Index mapped = index;
        mapped[size_t(dim)] = start + index[size_t(dim)];
        return inner(mapped);
      };
      lowered.cost = input.buffer >= 0 ? 0 : input.cost;
      lowered.readsTemplate = input.buffer >= 0 ? false : input.readsTemplate;
      values_[output] = std::move(lowered);
      origins_[output] = origins_[node.input(0)];
      start = start + output->type().shape[size_t(dim)];
    }
    return Status::ok();
  }

  /// More inputs than this and every element's selects and loads would cost more than a copy.
  static constexpr size_t kMaxInlineCatParts = 16;

  /// cat as a pointwise select over the inputs' ranges along `dim`. A select computes both sides,
  /// so each input is read at its index wrapped into its own range (equal to `i - start` where it
  /// is chosen, in bounds everywhere else). Static sizes along `dim` only; else the reference
  /// kernel.
  Status lowerCat(const Node &node) {
    const TensorType &outType = node.output()->type();
    if (outType.rank() == 0)
      return lowerExtern(node);
    int64_t dim = AttrReader(node.attrs()).getInt("dim");
    if (dim < 0)
      dim += int64_t(outType.rank());
    if (dim < 0 || dim >= int64_t(outType.rank()))
      return lowerExtern(node);
    struct Part {
      Loader load;
      int64_t start, size;
    };
    std::vector<Part> parts;
    int64_t start = 0;
    for (const Value *input : node.inputs()) {
      const std::vector<SymInt> &shape = input->type().shape;
      if (shape.size() == 1 && shape[0] == SymInt(0))
        continue; // a legacy empty tensor, skipped whatever the others' rank
      if (shape.size() != outType.rank())
        return lowerExtern(node);
      std::optional<int64_t> size = shape[size_t(dim)].constant();
      if (!size)
        return lowerExtern(node);
      if (*size == 0)
        continue;
      // Every part is computed for every element (the selects keep one): a costly inline part
      // gets a buffer first.
      if (values_.at(input).buffer < 0 && values_.at(input).cost >= options_.realizeCostThreshold)
        realize(input);
      parts.push_back({values_.at(input).load, start, *size});
      start += *size;
    }
    if (parts.empty() || parts.size() > kMaxInlineCatParts)
      return lowerExtern(node);
    DType dtype = outType.dtype;
    Loader load = [parts, dim, dtype](const Index &index) {
      const SymInt &at = index[size_t(dim)];
      ExprRef result;
      for (size_t k = parts.size(); k-- > 0;) {
        const Part &part = parts[k];
        Index mapped = index;
        // (at + shift) mod size == at - start where at is in the part; shift >= 0 keeps it so
        // under any remainder convention.
        int64_t shift = (part.size - part.start % part.size) % part.size;
        mapped[size_t(dim)] = parts.size() == 1 ? at : SymInt::mod(at + SymInt(shift), part.size);
        ExprRef value = makeCast(part.load(mapped), dtype);
        if (!result) {
          result = value;
          continue;
        }
        ExprRef inside = makeBinary(BinaryOp::Lt, makeIndex(at, DType::I64),
                                    makeIntConstant(part.start + part.size, DType::I64));
        result = makeSelect(inside, value, result);
      }
      return result;
    };
    setPointwise(node.output(), load, inputCost(node) + int(parts.size()), inputsReadTemplate(node),
                 mergedOrigins(node));
    return Status::ok();
  }

  Status lowerReduction(const Node &node) {
    const Value *input = node.input(0);
    const std::vector<SymInt> &inShape = input->type().shape;
    const TensorType &outType = node.output()->type();
    AttrReader attrs(node.attrs());
    std::vector<bool> reduced(inShape.size(), false);
    bool keepdim = attrs.getBool("keepdim");
    ReduceOp op = ReduceOp::Sum;
    switch (node.opId()) {
    case OpId::Sum: op = ReduceOp::Sum; break;
    case OpId::Prod: op = ReduceOp::Prod; break;
    case OpId::Amax: op = ReduceOp::Max; break;
    case OpId::Amin: op = ReduceOp::Min; break;
    case OpId::Argmax: op = ReduceOp::ArgMax; break;
    case OpId::Argmin: op = ReduceOp::ArgMin; break;
    default: return lowerExtern(node);
    }
    if (op == ReduceOp::ArgMax || op == ReduceOp::ArgMin) {
      if (attrs.isNone("dim")) {
        if (keepdim)
          return lowerExtern(node);
        reduced.assign(inShape.size(), true);
      } else {
        int64_t dim = attrs.getInt("dim");
        reduced[size_t(dim < 0 ? dim + int64_t(inShape.size()) : dim)] = true;
      }
    } else {
      TC_ASSIGN_OR_RETURN(std::vector<int64_t> dims, attrs.getStaticInts("dim"));
      if (dims.empty())
        reduced.assign(inShape.size(), true);
      for (int64_t dim : dims)
        reduced[size_t(dim < 0 ? dim + int64_t(inShape.size()) : dim)] = true;
    }
    if (inShape.empty())
      return lowerExtern(node);

    LoopNode loop;
    loop.kind = LoopNode::Kind::Reduction;
    loop.name = node.output()->name();
    loop.reduceOp = op;
    // Output dims of size 1 (kept reduced dims among them) get no loop variable.
    Index inIndex;
    for (size_t i = 0; i < inShape.size(); ++i) {
      if (reduced[i]) {
        inIndex.push_back(SymInt::symbol(reductionVar(loop.reductionRanges.size())));
        loop.reductionRanges.push_back(inShape[i]);
      } else if (isOne(inShape[i])) {
        inIndex.push_back(SymInt(0));
      } else {
        inIndex.push_back(SymInt::symbol(loopVar(loop.ranges.size())));
        loop.ranges.push_back(inShape[i]);
      }
    }
    DType bodyType = (op == ReduceOp::ArgMax || op == ReduceOp::ArgMin) ? input->type().dtype
                                                                         : outType.dtype;
    ExprRef body = makeCast(values_.at(input).load(inIndex), bodyType);
    loop.body = simplifyBody(body, loop.ranges, loop.reductionRanges);
    loop.origins = mergedOrigins(node);
    int id = addBuffer(node.output()->name(), Buffer::Kind::Intermediate, outType);
    loop.output = id;
    addNode(std::move(loop));
    setBuffer(node.output(), id);
    return Status::ok();
  }

  /// `value` as a strided view of a buffer: its loader must be one Load whose index is affine in
  /// the loop variables. Realizes the value when it is not.
  StridedView stridedView(const Value *value) {
    size_t rank = value->type().rank();
    Index index = loopIndex(rank);
    std::map<std::string, int64_t> bounds;
    for (size_t i = 0; i < rank; ++i)
      if (auto extent = value->type().shape[i].constant())
        bounds[loopVar(i)] = *extent;
    ExprRef expr = values_.at(value).load(index);
    if (expr->kind == ExprKind::Load) {
      SymInt flat = expr->index.simplify(bounds);
      std::map<std::string, SymInt> zero;
      for (size_t i = 0; i < rank; ++i)
        zero[loopVar(i)] = SymInt(0);
      StridedView view;
      view.buffer = expr->buffer;
      view.offset = flat.substitute(zero);
      SymInt rebuilt = view.offset;
      for (size_t i = 0; i < rank; ++i) {
        std::map<std::string, SymInt> unit = zero;
        unit[loopVar(i)] = SymInt(1);
        view.strides.push_back(flat.substitute(unit) - view.offset);
        rebuilt = rebuilt + view.strides.back() * index[i];
      }
      if (rebuilt == flat)
        return view;
    }
    StridedView view;
    view.buffer = realize(value);
    view.offset = SymInt(0);
    view.strides = contiguousStrides(value->type().shape);
    return view;
  }

  /// index_select, embedding and gather as pointwise values: each output element loads the input
  /// (a strided view of a buffer, realized when it is none) with one dim picked by a runtime index.
  /// Negative indices count from the end (index + size); indices still outside [0, size) are
  /// clamped into it, as compiled code cannot report them (the reference kernels error instead).
  Status lowerGather(const Node &node) {
    const Value *self = node.input(0), *positions = node.input(1);
    const std::vector<SymInt> &selfShape = self->type().shape;
    size_t rank = selfShape.size(), indexRank = positions->type().rank();
    OpId id = node.opId();
    int64_t dim = id == OpId::Embedding ? 0 : AttrReader(node.attrs()).getInt("dim");
    if (dim < 0)
      dim += int64_t(rank);
    if (rank == 0 || dim < 0 || size_t(dim) >= rank ||
        selfShape[size_t(dim)].constant() == std::optional<int64_t>(0))
      return lowerExtern(node); // nothing to read from: the reference kernel reports it
    size_t d = size_t(dim);
    // Where each output index reads the index tensor, and which output dim runs over self's
    // dim k (k != dim): index_select and gather keep self's dims in place; embedding's row is
    // picked by all leading dims and its last dim is the weight's columns.
    std::function<Index(const Index &)> indexAt, selfAt;
    switch (id) {
    case OpId::IndexSelect:
      indexAt = [d, indexRank](const Index &i) { return indexRank ? Index{i[d]} : Index{}; };
      selfAt = [](const Index &i) { return i; };
      break;
    case OpId::Embedding:
      indexAt = [indexRank](const Index &i) { return Index(i.begin(), i.begin() + indexRank); };
      selfAt = [indexRank](const Index &i) { return Index{SymInt(0), i[indexRank]}; };
      break;
    default: // gather: the index has the output's shape
      indexAt = [](const Index &i) { return i; };
      selfAt = [](const Index &i) { return i; };
      break;
    }
    StridedView view = stridedView(self);
    Loader index = values_.at(positions).load;
    const SymInt size = selfShape[d];
    auto i64 = [](const SymInt &value) {
      if (auto constant = value.constant())
        return makeIntConstant(*constant, DType::I64);
      return makeIndex(value, DType::I64);
    };
    ExprRef zero = makeIntConstant(0, DType::I64), extent = i64(size), last = i64(size - SymInt(1));
    ExprRef stride = i64(view.strides[d]);
    DType dtype = self->type().dtype;
    setPointwise(
        node.output(),
        [=](const Index &i) {
          ExprRef position = makeCast(index(indexAt(i)), DType::I64);
          ExprRef wrapped = makeSelect(makeBinary(BinaryOp::Lt, position, zero),
                                       makeBinary(BinaryOp::Add, position, extent), position);
          ExprRef clamped =
              makeBinary(BinaryOp::Minimum, makeBinary(BinaryOp::Maximum, wrapped, zero), last);
          Index at = selfAt(i);
          SymInt affine = view.offset;
          for (size_t k = 0; k < at.size(); ++k)
            if (k != d)
              affine = affine + at[k] * view.strides[k];
          ExprRef offset =
              view.strides[d] == SymInt(1) ? clamped : makeBinary(BinaryOp::Mul, clamped, stride);
          return makeIndirectLoad(view.buffer, dtype, affine, offset);
        },
        inputCost(node) + 5, false, mergedOrigins(node));
    return Status::ok();
  }

  /// A constant GEMM operand read through non-unit strides (the transposed weight of a Linear)
  /// is transposed once here, at compile time, so every run reads it row-major and the GEMM's
  /// packing copies contiguous rows instead of gathering single elements.
  StridedView contiguousWeight(const StridedView &view, const std::vector<SymInt> &shape) {
    const Buffer &buffer = program_.buffers[size_t(view.buffer)];
    std::vector<SymInt> dense = contiguousStrides(shape);
    auto data = program_.weights.find(buffer.name);
    if (buffer.kind != Buffer::Kind::Weight || data == program_.weights.end() ||
        (view.strides == dense && view.offset == SymInt(0)))
      return view;
    std::vector<int64_t> dims, strides;
    for (size_t i = 0; i < shape.size(); ++i) {
      auto dim = shape[i].constant();
      auto stride = view.strides[i].constant();
      if (!dim || !stride)
        return view;
      dims.push_back(*dim);
      strides.push_back(*stride);
    }
    auto offset = view.offset.constant();
    if (!offset)
      return view;
    std::string key = buffer.name + "|" + view.offset.str();
    for (const SymInt &stride : view.strides)
      key += "|" + stride.str();
    auto cached = denseWeights_.find(key);
    if (cached == denseWeights_.end()) {
      Expected<Tensor> copy = Tensor::zeros(buffer.dtype, dims);
      if (!copy)
        return view;
      const Tensor &source = data->second;
      int64_t numel = copy->numel();
      std::vector<int64_t> index(dims.size(), 0);
      for (int64_t flat = 0; flat < numel; ++flat) {
        int64_t at = *offset;
        for (size_t d = 0; d < dims.size(); ++d)
          at += index[d] * strides[d];
        copy->setDouble(flat, source.getDouble(at));
        for (size_t d = dims.size(); d-- > 0;) {
          if (++index[d] < dims[d])
            break;
          index[d] = 0;
        }
      }
      std::string name = uniqueBufferName(buffer.name + "_dense");
      TensorType type(buffer.dtype, shape);
      int id = addBuffer(name, Buffer::Kind::Weight, type);
      program_.weights[name] = std::move(*copy);
      cached = denseWeights_.emplace(key, id).first;
    }
    StridedView result;
    result.buffer = cached->second;
    result.offset = SymInt(0);
    result.strides = dense;
    return result;
  }

  std::string uniqueBufferName(const std::string &hint) {
    std::set<std::string> taken;
    for (const Buffer &buffer : program_.buffers)
      taken.insert(buffer.name);
    std::string name = hint;
    for (int i = 1; taken.count(name); ++i)
      name = hint + "_" + std::to_string(i);
    return name;
  }

  Status lowerGemm(const Node &node) {
    const TensorType &outType = node.output()->type();
    StridedView a = stridedView(node.input(0));
    StridedView b = contiguousWeight(stridedView(node.input(1)), node.input(1)->type().shape);
    LoopNode loop;
    loop.kind = LoopNode::Kind::Template;
    loop.name = node.output()->name();
    LoopNode::Gemm &gemm = loop.gemm;
    const std::vector<SymInt> &aShape = node.input(0)->type().shape;
    if (node.opId() == OpId::Mm) {
      a.strides.insert(a.strides.begin(), SymInt(0));
      b.strides.insert(b.strides.begin(), SymInt(0));
      gemm.batch = SymInt(1);
      gemm.m = aShape[0];
      gemm.k = aShape[1];
    } else {
      gemm.batch = aShape[0];
      gemm.m = aShape[1];
      gemm.k = aShape[2];
    }
    gemm.n = outType.shape.back();
    gemm.a = a;
    gemm.b = b;
    loop.ranges = outType.shape; // all dims kept: the epilogue's (row, col) are the last two
    loop.origins = {shortName(node.op())};
    int id = addBuffer(node.output()->name(), Buffer::Kind::Intermediate, outType);
    loop.output = id;
    addNode(std::move(loop));
    templateOutputs_.insert(id);
    setBuffer(node.output(), id);
    origins_[node.output()] = {shortName(node.op())};
    return Status::ok();
  }

  /// Attention as one template over dense q, k, v and mask (realized when they are views), when
  /// enabled, with constant head dims of at most 256; else the reference kernel.
  Status lowerAttention(const Node &node) {
    const TensorType &q = node.input(0)->type(), &v = node.input(2)->type();
    const TensorType &outType = node.output()->type();
    size_t rank = q.rank();
    const Value *mask = node.inputs().size() > 3 ? node.input(3) : nullptr;
    std::optional<int64_t> e = q.shape[rank - 1].constant(), ev = v.shape[rank - 1].constant();
    if (!options_.attentionTemplates || !e || !ev || *e < 1 || *ev < 1 || *e > 256 || *ev > 256 ||
        rank < 2)
      return lowerExtern(node);
    LoopNode loop;
    loop.kind = LoopNode::Kind::Template;
    loop.templateKind = LoopNode::TemplateKind::Attention;
    loop.name = node.output()->name();
    LoopNode::Attention &a = loop.attention;
    a.q = realize(node.input(0));
    a.k = realize(node.input(1));
    a.v = realize(node.input(2));
    for (size_t d = 0; d + 2 < rank; ++d) {
      a.batch = a.batch * q.shape[d];
      a.batchDims.push_back(q.shape[d]);
    }
    a.l = q.shape[rank - 2];
    a.s = node.input(1)->type().shape[rank - 2];
    if (mask) {
      // Dense row-major strides of the mask, aligned to the scores' trailing dims [..., l, s];
      // its size-1 dims and the dims it lacks broadcast (stride 0).
      const TensorType &m = mask->type();
      a.mask.buffer = realize(mask);
      a.mask.offset = SymInt(0);
      a.mask.strides.assign(rank, SymInt(0));
      SymInt stride(1);
      for (size_t i = 0; i < m.rank(); ++i) {
        const SymInt &dim = m.shape[m.rank() - 1 - i];
        if (dim.constant() != std::optional<int64_t>(1))
          a.mask.strides[rank - 1 - i] = stride;
        stride = stride * dim;
      }
    }
    a.e = *e;
    a.ev = *ev;
    a.scale = AttrReader(node.attrs()).getFloat("scale");
    loop.ranges = outType.shape;
    loop.origins = {shortName(node.op())};
    int id = addBuffer(node.output()->name(), Buffer::Kind::Intermediate, outType);
    loop.output = id;
    addNode(std::move(loop));
    templateOutputs_.insert(id);
    setBuffer(node.output(), id);
    origins_[node.output()] = {shortName(node.op())};
    return Status::ok();
  }

  /// f32 2-D convolution (not transposed, static channels and spatial sizes) as an implicit-GEMM
  /// template without its bias; the bias add becomes a pointwise value reading the template's
  /// result, so it (and whatever pointwise ops follow) can be fused as the epilogue.
  Status lowerConvolution(const Node &node) {
    const TensorType &outType = node.output()->type();
    const TensorType &inType = node.input(0)->type(), &wType = node.input(1)->type();
    AttrReader attrs(node.attrs());
    const Value *bias = node.inputs().size() > 2 ? node.input(2) : nullptr;
    if (outType.dtype != DType::F32 || inType.dtype != DType::F32 || wType.dtype != DType::F32 ||
        (bias && bias->type().dtype != DType::F32) || inType.rank() != 4 || wType.rank() != 4 ||
        outType.rank() != 4 || attrs.getBool("transposed"))
      return lowerExtern(node);
    auto constants = [](const std::vector<SymInt> &dims, size_t from) {
      std::vector<int64_t> values;
      for (size_t i = from; i < dims.size(); ++i)
        if (auto value = dims[i].constant(); value && *value > 0)
          values.push_back(*value);
      return values;
    };
    std::vector<int64_t> in = constants(inType.shape, 1), w = constants(wType.shape, 0),
                         out = constants(outType.shape, 1);
    if (in.size() != 3 || w.size() != 4 || out.size() != 3)
      return lowerExtern(node); // symbolic or empty dims other than the batch
    auto pairOf = [&](const char *name) -> std::optional<std::array<int64_t, 2>> {
      Expected<std::vector<int64_t>> values = attrs.getStaticInts(name);
      if (!values || values->empty() || values->size() > 2)
        return std::nullopt;
      return std::array<int64_t, 2>{values->front(), values->back()};
    };
    auto stride = pairOf("stride"), padding = pairOf("padding"), dilation = pairOf("dilation");
    int64_t groups = attrs.getInt("groups");
    if (!stride || !padding || !dilation || groups < 1 || in[0] % groups != 0 ||
        w[0] % groups != 0 || w[1] * groups != in[0])
      return lowerExtern(node);

    LoopNode loop;
    loop.kind = LoopNode::Kind::Template;
    loop.templateKind = LoopNode::TemplateKind::Conv2d;
    LoopNode::Conv &conv = loop.conv;
    conv.input = realize(node.input(0));
    conv.weight = stridedView(node.input(1));
    // The micro-kernel reads a group's weights as an OC x (C/groups*KH*KW) matrix.
    const std::vector<SymInt> &ws = conv.weight.strides;
    if (ws[2] != ws[3] * SymInt(w[3]) || ws[1] != ws[2] * SymInt(w[2]))
      conv.weight = {realize(node.input(1)), SymInt(0), contiguousStrides(wType.shape)};
    conv.n = inType.shape[0];
    conv.c = in[0], conv.h = in[1], conv.w = in[2];
    conv.oc = w[0], conv.kh = w[2], conv.kw = w[3];
    conv.oh = out[1], conv.ow = out[2];
    conv.strideH = (*stride)[0], conv.strideW = (*stride)[1];
    conv.padH = (*padding)[0], conv.padW = (*padding)[1];
    conv.dilationH = (*dilation)[0], conv.dilationW = (*dilation)[1];
    conv.groups = groups;
    loop.ranges = outType.shape;
    loop.origins = {shortName(node.op())};
    std::string name = node.output()->name() + (bias ? "_nobias" : "");
    loop.name = name;
    int id = addBuffer(name, Buffer::Kind::Intermediate, outType);
    loop.output = id;
    addNode(std::move(loop));
    templateOutputs_.insert(id);
    if (!bias) {
      setBuffer(node.output(), id);
      origins_[node.output()] = {shortName(node.op())};
      return Status::ok();
    }
    Loader biasLoad = values_.at(bias).load;
    std::vector<SymInt> shape = outType.shape;
    setPointwise(node.output(),
                 [id, shape, biasLoad](const Index &i) {
                   return makeBinary(BinaryOp::Add, makeLoad(id, DType::F32, flatten(i, shape)),
                                     makeCast(biasLoad({i[1]}), DType::F32));
                 },
                 1 + (values_.at(bias).buffer >= 0 ? 0 : values_.at(bias).cost),
                 /*readsTemplate=*/true, {shortName(node.op())});
    return Status::ok();
  }

  Status lowerExtern(const Node &node) {
    LoopNode loop;
    loop.kind = LoopNode::Kind::Extern;
    loop.name = node.output()->name();
    loop.externOp = node.op().name;
    Graph single;
    std::vector<Value *> operands;
    for (size_t i = 0; i < node.inputs().size(); ++i) {
      const Value *input = node.input(i);
      if (!input) {
        operands.push_back(nullptr);
        continue;
      }
      loop.externInputs.push_back(realize(input));
      TC_ASSIGN_OR_RETURN(Value * placeholder,
                          single.addInput("in" + std::to_string(i), input->type()));
      operands.push_back(placeholder);
    }
    TC_ASSIGN_OR_RETURN(Node * copy, copyNode(single, node, operands));
    single.setOutputs(copy->outputs());
    loop.externGraph = printGraph(single);
    for (size_t i = 0; i < node.numOutputs(); ++i) {
      const Value *output = node.output(i);
      int id = addBuffer(output->name(), Buffer::Kind::Intermediate, output->type());
      loop.externOutputs.push_back(id);
      setBuffer(output, id);
      origins_[output] = {shortName(node.op())};
    }
    loop.output = loop.externOutputs.empty() ? -1 : loop.externOutputs[0];
    loop.origins = {shortName(node.op())};
    if (std::find(program_.fallbacks.begin(), program_.fallbacks.end(), node.op().name) ==
        program_.fallbacks.end())
      program_.fallbacks.push_back(node.op().name);
    addNode(std::move(loop));
    return Status::ok();
  }

  const Graph &graph_;
  LowerOptions options_;
  std::map<const Value *, std::vector<const Node *>> users_;
  std::map<const Value *, Lowered> values_;
  std::map<const Value *, std::vector<std::string>> origins_;
  std::set<int> templateOutputs_;
  std::map<std::string, int> denseWeights_; // transposed weight copies, by source and strides
  LoopProgram program_;
};

} // namespace

Expected<LoopProgram> lower(const Graph &graph, const LowerOptions &options) {
  return Lowerer(graph, options).run();
}

} // namespace tensorc::loop
