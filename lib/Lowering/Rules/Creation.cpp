// Constants and fills: a scalar is a literal read at any index (it fuses into its users), a
// larger constant a weight buffer.
#include "Rules.h"

namespace tensorc::loop {

namespace {

Status lowerConstant(LowerContext &context, const Node &node) {
  const Tensor &value = AttrReader(node.attrs()).getTensor("value");
  if (value.numel() == 1) {
    context.setConstant(node.output(), value);
    return Status::ok();
  }
  int buffer =
      context.addBuffer(node.output()->name(), Buffer::Kind::Weight, node.output()->type());
  context.program().weights[node.output()->name()] = value;
  context.setBuffer(node.output(), buffer);
  return Status::ok();
}

/// full, full_like, zeros_like: a constant read at any index.
Status lowerFill(LowerContext &context, const Node &node) {
  DType dtype = node.output()->type().dtype;
  double value =
      node.opId() == OpId::ZerosLike ? 0.0 : AttrReader(node.attrs()).getScalar("fill_value");
  ExprRef constant =
      isFloating(dtype) ? makeConstant(value, dtype) : makeIntConstant(int64_t(value), dtype);
  context.setPointwise(node.output(), [constant](const Index &) { return constant; }, 0, false, {});
  return Status::ok();
}

} // namespace

void addCreationRules(RuleTable &table) {
  table.add({OpId::Constant}, lowerConstant);
  table.add({OpId::Full, OpId::FullLike, OpId::ZerosLike}, lowerFill);
  table.fallback({OpId::Arange}, "no lowering rule yet (constant folding removes static ones)");
}

} // namespace tensorc::loop
