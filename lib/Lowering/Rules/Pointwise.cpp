// Elementwise ops: loop IR unary/binary/select/cast over broadcast operands, inlined into their
// users (a value gets a buffer only when recomputing it would cost, see setPointwise).
#include "Rules.h"

#include <utility>

namespace tensorc::loop {

namespace {

/// Every loop IR unary op lowers the graph op of the same name.
constexpr std::pair<OpId, UnaryOp> kUnaryOps[] = {
#define TENSORC_PAIR(e, n) {OpId::e, UnaryOp::e},
    TENSORC_FOR_EACH_UNARY(TENSORC_PAIR)
#undef TENSORC_PAIR
};

constexpr std::pair<OpId, BinaryOp> kBinaryOps[] = {
    {OpId::Add, BinaryOp::Add},
    {OpId::Sub, BinaryOp::Sub},
    {OpId::Mul, BinaryOp::Mul},
    {OpId::Div, BinaryOp::Div},
    {OpId::Pow, BinaryOp::Pow},
    {OpId::Remainder, BinaryOp::Remainder},
    {OpId::Fmod, BinaryOp::Fmod},
    {OpId::Maximum, BinaryOp::Maximum},
    {OpId::Minimum, BinaryOp::Minimum},
    {OpId::Eq, BinaryOp::Eq},
    {OpId::Ne, BinaryOp::Ne},
    {OpId::Lt, BinaryOp::Lt},
    {OpId::Le, BinaryOp::Le},
    {OpId::Gt, BinaryOp::Gt},
    {OpId::Ge, BinaryOp::Ge},
    {OpId::LogicalAnd, BinaryOp::LogicalAnd},
    {OpId::LogicalOr, BinaryOp::LogicalOr},
    {OpId::LogicalXor, BinaryOp::LogicalXor},
    {OpId::BitwiseAnd, BinaryOp::BitwiseAnd},
    {OpId::BitwiseOr, BinaryOp::BitwiseOr},
    {OpId::BitwiseXor, BinaryOp::BitwiseXor},
    {OpId::BitwiseLeftShift, BinaryOp::Shl},
    {OpId::BitwiseRightShift, BinaryOp::Shr},
};

/// Ops per element a unary op costs when recomputed: transcendental ones count 8.
int unaryCost(UnaryOp op) {
  switch (op) {
  case UnaryOp::Exp:
  case UnaryOp::Log:
  case UnaryOp::Tanh:
  case UnaryOp::Sigmoid:
  case UnaryOp::Erf:
    return 8;
  case UnaryOp::Neg:
  case UnaryOp::Abs:
  case UnaryOp::Sqrt:
  case UnaryOp::Rsqrt:
  case UnaryOp::Reciprocal:
  case UnaryOp::Floor:
  case UnaryOp::Ceil:
  case UnaryOp::Round:
  case UnaryOp::Sign:
  case UnaryOp::Relu:
  case UnaryOp::LogicalNot:
  case UnaryOp::BitwiseNot:
  case UnaryOp::IsNan:
    return 1;
  }
  return 1;
}

/// A pointwise value computing the unary op on the node's input, read in the result's dtype
/// (isnan reads its input's own).
Status lowerUnary(LowerContext &context, const Node &node) {
  UnaryOp op = *unaryOpFor(node.opId());
  DType operandType =
      op == UnaryOp::IsNan ? node.input(0)->type().dtype : node.output()->type().dtype;
  Loader x = context.broadcastLoader(node.input(0), node.output()->type().shape, operandType);
  context.setPointwise(
      node.output(), [x, op](const Index &i) { return makeUnary(op, x(i)); },
      context.inputCost(node) + unaryCost(op), context.inputsReadTemplate(node),
      context.mergedOrigins(node));
  return Status::ok();
}

Status lowerBinary(LowerContext &context, const Node &node) {
  BinaryOp op = *binaryOpFor(node.opId());
  const TensorType &outType = node.output()->type();
  AttrReader attrs(node.attrs());
  DType operandType = outType.dtype;
  if (outType.dtype == DType::Bool)
    operandType = promoteTypes(node.input(0)->type().dtype, node.input(1)->type().dtype);
  if (op == BinaryOp::LogicalAnd || op == BinaryOp::LogicalOr || op == BinaryOp::LogicalXor)
    operandType = DType::Bool;
  if (op == BinaryOp::Div && node.attrs().count("rounding_mode") && !attrs.isNone("rounding_mode"))
    return context.fallback(node, "no loop IR op for trunc or floor division yet");
  Loader a = context.broadcastLoader(node.input(0), outType.shape, operandType);
  Loader b = context.broadcastLoader(node.input(1), outType.shape, operandType);
  if ((op == BinaryOp::Add || op == BinaryOp::Sub) && attrs.getScalar("alpha") != 1.0) {
    double alpha = attrs.getScalar("alpha");
    Loader inner = b;
    b = [inner, alpha, operandType](const Index &i) {
      return makeBinary(BinaryOp::Mul, inner(i), makeConstant(alpha, operandType));
    };
  }
  context.setPointwise(
      node.output(), [a, b, op](const Index &i) { return makeBinary(op, a(i), b(i)); },
      context.inputCost(node) + (op == BinaryOp::Pow ? 16 : 1), context.inputsReadTemplate(node),
      context.mergedOrigins(node));
  return Status::ok();
}

/// convert_element_type and clone: the input read at the same index (cast to the result dtype).
Status lowerConvert(LowerContext &context, const Node &node) {
  const TensorType &outType = node.output()->type();
  Loader x = context.broadcastLoader(node.input(0), outType.shape, outType.dtype);
  context.setPointwise(node.output(), x, context.inputCost(node) + 1,
                       context.inputsReadTemplate(node), context.mergedOrigins(node));
  return Status::ok();
}

Status lowerWhere(LowerContext &context, const Node &node) {
  const TensorType &outType = node.output()->type();
  Loader c = context.broadcastLoader(node.input(0), outType.shape, DType::Bool);
  Loader a = context.broadcastLoader(node.input(1), outType.shape, outType.dtype);
  Loader b = context.broadcastLoader(node.input(2), outType.shape, outType.dtype);
  context.setPointwise(
      node.output(), [c, a, b](const Index &i) { return makeSelect(c(i), a(i), b(i)); },
      context.inputCost(node) + 1, context.inputsReadTemplate(node), context.mergedOrigins(node));
  return Status::ok();
}

} // namespace

std::optional<UnaryOp> unaryOpFor(OpId id) {
  for (const auto &[op, unary] : kUnaryOps)
    if (op == id)
      return unary;
  return std::nullopt;
}

std::optional<BinaryOp> binaryOpFor(OpId id) {
  for (const auto &[op, binary] : kBinaryOps)
    if (op == id)
      return binary;
  return std::nullopt;
}

bool isPointwiseOp(OpId id) {
  return unaryOpFor(id) || binaryOpFor(id) || id == OpId::Where || id == OpId::ConvertElementType ||
         id == OpId::LogicalNot || id == OpId::IsNan;
}

void addPointwiseRules(RuleTable &table) {
  for (const auto &entry : kUnaryOps)
    table.add({entry.first}, lowerUnary);
  for (const auto &entry : kBinaryOps)
    table.add({entry.first}, lowerBinary);
  table.add({OpId::ConvertElementType, OpId::Clone}, lowerConvert);
  table.add({OpId::Where}, lowerWhere);
  table.fallback({OpId::Sin, OpId::Cos, OpId::Tan, OpId::Asin, OpId::Acos, OpId::Atan, OpId::Sinh,
                  OpId::Cosh, OpId::Asinh, OpId::Acosh, OpId::Atanh},
                 "no loop IR op for it yet");
  table.fallback({OpId::Gelu, OpId::Silu, OpId::Clamp},
                 "decomposed before lowering; this case was not");
}

} // namespace tensorc::loop
