// LoopIR constructors (dtype-checked), names and the human-readable dump.
#include "tensorc/Lowering/LoopIR.h"

#include "tensorc/Lowering/ExprVisitor.h"

#include <cassert>
#include <functional>
#include <map>
#include <set>
#include <sstream>

namespace tensorc::loop {

const char *unaryName(UnaryOp op) {
  switch (op) {
#define TENSORC_CASE(e, n)                                                                         \
  case UnaryOp::e:                                                                                 \
    return n;
    TENSORC_FOR_EACH_UNARY(TENSORC_CASE)
#undef TENSORC_CASE
  }
  return "?";
}

const char *binaryName(BinaryOp op) {
  switch (op) {
#define TENSORC_CASE(e, n)                                                                         \
  case BinaryOp::e:                                                                                \
    return n;
    TENSORC_FOR_EACH_BINARY(TENSORC_CASE)
#undef TENSORC_CASE
  }
  return "?";
}

const char *reduceName(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
    return "sum";
  case ReduceOp::Prod:
    return "prod";
  case ReduceOp::Max:
    return "max";
  case ReduceOp::Min:
    return "min";
  case ReduceOp::ArgMax:
    return "argmax";
  case ReduceOp::ArgMin:
    return "argmin";
  }
  return "?";
}

std::string loopVar(size_t dim) { return "x" + std::to_string(dim); }
std::string reductionVar(size_t dim) { return "r" + std::to_string(dim); }

Expr::~Expr() {
  std::vector<ExprRef> pending = std::move(operands);
  while (!pending.empty()) {
    ExprRef next = std::move(pending.back());
    pending.pop_back();
    // The last owner takes the operands out before the node dies, so its destructor has none.
    if (next.use_count() == 1) {
      std::vector<ExprRef> &inner = const_cast<Expr &>(*next).operands;
      for (ExprRef &operand : inner)
        pending.push_back(std::move(operand));
      inner.clear();
    }
  }
}

ExprRef makeConstant(double value, DType dtype) {
  auto expr = std::make_shared<Expr>();
  expr->kind = ExprKind::Constant;
  expr->dtype = dtype;
  expr->value = value;
  expr->intValue = isFloating(dtype) ? 0 : int64_t(value);
  return expr;
}

ExprRef makeIntConstant(int64_t value, DType dtype) {
  auto expr = std::make_shared<Expr>();
  expr->kind = ExprKind::Constant;
  expr->dtype = dtype;
  expr->value = double(value);
  expr->intValue = value;
  return expr;
}

ExprRef makeLoad(int buffer, DType dtype, SymInt index) {
  auto expr = std::make_shared<Expr>();
  expr->kind = ExprKind::Load;
  expr->dtype = dtype;
  expr->buffer = buffer;
  expr->index = std::move(index);
  return expr;
}

ExprRef makeIndirectLoad(int buffer, DType dtype, SymInt index, ExprRef offset) {
  // Lowering casts the runtime index to i64 first; another dtype here is a lowering bug.
  assert(offset->dtype == DType::I64 && "indirect load offsets are i64");
  auto expr = std::make_shared<Expr>();
  expr->kind = ExprKind::IndirectLoad;
  expr->dtype = dtype;
  expr->buffer = buffer;
  expr->index = std::move(index);
  expr->operands = {std::move(offset)};
  return expr;
}

ExprRef makeIndex(SymInt index, DType dtype) {
  auto expr = std::make_shared<Expr>();
  expr->kind = ExprKind::Index;
  expr->dtype = dtype;
  expr->index = std::move(index);
  return expr;
}

ExprRef makeUnary(UnaryOp op, ExprRef x) {
  auto expr = std::make_shared<Expr>();
  expr->kind = ExprKind::Unary;
  expr->unary = op;
  expr->dtype = (op == UnaryOp::IsNan || op == UnaryOp::LogicalNot) ? DType::Bool : x->dtype;
  expr->operands = {std::move(x)};
  return expr;
}

DType binaryResultType(BinaryOp op, DType operandType) {
  switch (op) {
  case BinaryOp::Eq:
  case BinaryOp::Ne:
  case BinaryOp::Lt:
  case BinaryOp::Le:
  case BinaryOp::Gt:
  case BinaryOp::Ge:
  case BinaryOp::LogicalAnd:
  case BinaryOp::LogicalOr:
  case BinaryOp::LogicalXor:
    return DType::Bool;
  case BinaryOp::Add:
  case BinaryOp::Sub:
  case BinaryOp::Mul:
  case BinaryOp::Div:
  case BinaryOp::Pow:
  case BinaryOp::Remainder:
  case BinaryOp::Fmod:
  case BinaryOp::Maximum:
  case BinaryOp::Minimum:
  case BinaryOp::BitwiseAnd:
  case BinaryOp::BitwiseOr:
  case BinaryOp::BitwiseXor:
  case BinaryOp::Shl:
  case BinaryOp::Shr:
    return operandType;
  }
  return operandType;
}

ExprRef makeBinary(BinaryOp op, ExprRef a, ExprRef b) {
  // Lowering promotes operands first; a mismatch here is a lowering bug, not bad input.
  assert(a->dtype == b->dtype && "binary operands must share a dtype");
  auto expr = std::make_shared<Expr>();
  expr->kind = ExprKind::Binary;
  expr->binary = op;
  expr->dtype = binaryResultType(op, a->dtype);
  expr->operands = {std::move(a), std::move(b)};
  return expr;
}

ExprRef makeSelect(ExprRef cond, ExprRef a, ExprRef b) {
  assert(cond->dtype == DType::Bool && a->dtype == b->dtype && "select operand types");
  auto expr = std::make_shared<Expr>();
  expr->kind = ExprKind::Select;
  expr->dtype = a->dtype;
  expr->operands = {std::move(cond), std::move(a), std::move(b)};
  return expr;
}

ExprRef makeCast(ExprRef x, DType dtype) {
  if (x->dtype == dtype)
    return x;
  auto expr = std::make_shared<Expr>();
  expr->kind = ExprKind::Cast;
  expr->dtype = dtype;
  expr->operands = {std::move(x)};
  return expr;
}

SymInt Buffer::numel() const {
  SymInt total(1);
  for (const SymInt &dim : shape)
    total = total * dim;
  return total;
}

std::vector<int> LoopNode::reads() const {
  std::set<int> buffers;
  forEachExpr(body, [&](const Expr &expr) {
    if (expr.kind == ExprKind::Load || expr.kind == ExprKind::IndirectLoad)
      buffers.insert(expr.buffer);
  });
  if (kind == Kind::Template && templateKind == TemplateKind::Gemm) {
    buffers.insert(gemm.a.buffer);
    buffers.insert(gemm.b.buffer);
  }
  if (kind == Kind::Template && templateKind == TemplateKind::Conv2d) {
    buffers.insert(conv.input);
    buffers.insert(conv.weight.buffer);
  }
  if (kind == Kind::Template && templateKind == TemplateKind::Attention) {
    buffers.insert({attention.q, attention.k, attention.v});
    if (attention.mask.buffer >= 0)
      buffers.insert(attention.mask.buffer);
  }
  for (int input : externInputs)
    buffers.insert(input);
  return {buffers.begin(), buffers.end()};
}

namespace {

std::string joinDims(const std::vector<SymInt> &dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    out += (i ? ", " : "") + dims[i].str();
  return out + "]";
}

/// Prints a body as numbered temporaries in operand order, sharing repeated subexpressions;
/// constants print inline.
std::string printBody(const ExprRef &body, const LoopProgram &program) {
  std::string lines;
  size_t count = 0;
  auto bufferName = [&](int id) { return program.buffers[size_t(id)].name; };
  auto print = [&](const Expr &expr, const std::vector<const std::string *> &operands) {
    std::string text;
    switch (expr.kind) {
    case ExprKind::Constant:
      if (isFloating(expr.dtype)) {
        std::ostringstream os;
        os.precision(9);
        os << expr.value;
        return os.str();
      }
      return std::to_string(expr.intValue);
    case ExprKind::Load:
      text = "load(" + bufferName(expr.buffer) + ", " + expr.index.str() + ")";
      break;
    case ExprKind::IndirectLoad: {
      // load(emb, x1 + t2): the affine part, then the runtime offset's temporary.
      std::string affine = expr.index == SymInt(0) ? "" : expr.index.str() + " + ";
      text = "load(" + bufferName(expr.buffer) + ", " + affine + *operands[0] + ")";
      break;
    }
    case ExprKind::Index:
      text = "index(" + expr.index.str() + ")";
      break;
    case ExprKind::Unary:
      text = std::string(unaryName(expr.unary)) + "(" + *operands[0] + ")";
      break;
    case ExprKind::Binary:
      text = std::string(binaryName(expr.binary)) + "(" + *operands[0] + ", " + *operands[1] + ")";
      break;
    case ExprKind::Select:
      text = "where(" + *operands[0] + ", " + *operands[1] + ", " + *operands[2] + ")";
      break;
    case ExprKind::Cast:
      text = "cast(" + *operands[0] + ")";
      break;
    }
    std::string name = "t" + std::to_string(count++);
    lines += "      " + name + " : " + std::string(dtypeName(expr.dtype)) + " = " + text + "\n";
    return name;
  };
  std::string result = foldExpr<std::string>(body, print);
  return lines + "      -> " + result;
}

const char *bufferKindName(Buffer::Kind kind) {
  switch (kind) {
  case Buffer::Kind::Input:
    return "input";
  case Buffer::Kind::Weight:
    return "weight";
  case Buffer::Kind::Intermediate:
    return "buffer";
  }
  return "?";
}

} // namespace

std::string printExpr(const ExprRef &expr, const LoopProgram &program) {
  return printBody(expr, program);
}

std::string printProgram(const LoopProgram &program) {
  std::string out;
  for (const Buffer &buffer : program.buffers)
    out += std::string(bufferKindName(buffer.kind)) + " " + buffer.name + " : " +
           std::string(dtypeName(buffer.dtype)) + joinDims(buffer.shape) + "\n";
  for (const LoopNode &node : program.nodes) {
    const std::string &output = program.buffers[size_t(node.output)].name;
    switch (node.kind) {
    case LoopNode::Kind::Pointwise:
      out += "pointwise " + output + " over " + joinDims(node.ranges) + "\n";
      out += printExpr(node.body, program) + "\n";
      break;
    case LoopNode::Kind::Reduction:
      out += "reduction " + output + " over " + joinDims(node.ranges) + " reducing " +
             joinDims(node.reductionRanges) + " with " + reduceName(node.reduceOp) + "\n";
      out += printExpr(node.body, program) + "\n";
      break;
    case LoopNode::Kind::Template: {
      if (node.templateKind == LoopNode::TemplateKind::Attention) {
        const LoopNode::Attention &a = node.attention;
        out += "template attention " + output + " batch=" + a.batch.str() + " l=" + a.l.str() +
               " s=" + a.s.str() + " e=" + std::to_string(a.e) + " ev=" + std::to_string(a.ev) +
               " scale=" + std::to_string(a.scale) + "\n";
        out += "      q = " + program.buffers[size_t(a.q)].name +
               ", k = " + program.buffers[size_t(a.k)].name +
               ", v = " + program.buffers[size_t(a.v)].name;
        if (a.mask.buffer >= 0)
          out += ", mask = " + program.buffers[size_t(a.mask.buffer)].name + " strides " +
                 joinDims(a.mask.strides);
        out += "\n";
        break;
      }
      if (node.templateKind == LoopNode::TemplateKind::Conv2d) {
        const LoopNode::Conv &c = node.conv;
        auto pair = [](int64_t a, int64_t b) {
          return "[" + std::to_string(a) + ", " + std::to_string(b) + "]";
        };
        out += "template conv2d " + output + " n=" + c.n.str() + " c=" + std::to_string(c.c) +
               " h=" + std::to_string(c.h) + " w=" + std::to_string(c.w) +
               " oc=" + std::to_string(c.oc) + " kernel=" + pair(c.kh, c.kw) +
               " out=" + pair(c.oh, c.ow) + " stride=" + pair(c.strideH, c.strideW) +
               " padding=" + pair(c.padH, c.padW) + " dilation=" + pair(c.dilationH, c.dilationW) +
               " groups=" + std::to_string(c.groups) + "\n";
        out += "      input = " + program.buffers[size_t(c.input)].name + "\n";
        out += "      weight = " + program.buffers[size_t(c.weight.buffer)].name + " offset " +
               c.weight.offset.str() + " strides " + joinDims(c.weight.strides) + "\n";
        break;
      }
      const LoopNode::Gemm &g = node.gemm;
      out += "template gemm " + output + " batch=" + g.batch.str() + " m=" + g.m.str() +
             " n=" + g.n.str() + " k=" + g.k.str() + "\n";
      out += "      a = " + program.buffers[size_t(g.a.buffer)].name + " offset " +
             g.a.offset.str() + " strides " + joinDims(g.a.strides) + "\n";
      out += "      b = " + program.buffers[size_t(g.b.buffer)].name + " offset " +
             g.b.offset.str() + " strides " + joinDims(g.b.strides) + "\n";
      break;
    }
    case LoopNode::Kind::Extern: {
      out += "extern " + node.externOp + " (";
      for (size_t i = 0; i < node.externInputs.size(); ++i)
        out += (i ? ", " : "") + program.buffers[size_t(node.externInputs[i])].name;
      out += ") -> (";
      for (size_t i = 0; i < node.externOutputs.size(); ++i)
        out += (i ? ", " : "") + program.buffers[size_t(node.externOutputs[i])].name;
      out += ")\n";
      break;
    }
    }
  }
  out += "outputs (";
  for (size_t i = 0; i < program.outputs.size(); ++i)
    out += (i ? ", " : "") + program.buffers[size_t(program.outputs[i])].name;
  return out + ")\n";
}

} // namespace tensorc::loop
