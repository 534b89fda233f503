// Constant folding: evaluates nodes whose operands are all prims.constant results with the
// reference kernels and replaces them by constants.
#include "tensorc/Transforms/ConstantFold.h"

#include "tensorc/IR/Rewriter.h"
#include "tensorc/Interp/Interpreter.h"
#include "tensorc/Support/Log.h"
#include "tensorc/Support/StrCat.h"

namespace tensorc {

namespace {

/// Results larger than this stay as computation: a folded constant is stored in the bundle and
/// read from memory, which beats recomputing small tensors but not a cheap fill or broadcast.
constexpr int64_t kMaxFoldedElements = 65536;

bool isConstant(const Value *value) {
  return value->producer() && value->producer()->opId() == OpId::Constant;
}

/// Whether some operand is computed from the model's inputs: such a node is no candidate, and
/// saying so for every node would drown the log.
bool hasComputedOperand(RewriteContext &context) {
  for (const Value *operand : context.operands())
    if (operand && !isConstant(operand) && !context.graph().isParameter(operand))
      return true;
  return false;
}

/// Why a candidate node cannot be folded, or "" when it can.
std::string whyNotFoldable(RewriteContext &context) {
  const Node &node = context.node();
  for (const Value *operand : context.operands())
    if (operand && !isConstant(operand))
      return strCat("operand %", operand->name(),
                    " is a parameter (the Freeze pass turns those into constants)");
  for (const auto &[name, value] : node.attrs())
    if (value.isInts())
      for (const SymInt &dim : value.asInts())
        if (!dim.isConstant())
          return strCat("attribute '", name, "' has a symbolic dim (", dim.str(), ")");
  for (const Value *result : node.outputs()) {
    if (!result->type().isStatic())
      return strCat("result %", result->name(), " has a symbolic shape (", result->type().str(),
                    ")");
    int64_t elements = result->type().numel().constant().value_or(0);
    if (elements > kMaxFoldedElements)
      return strCat("result %", result->name(), ": ", result->type().str(), " has ", elements,
                    " elements (limit ", kMaxFoldedElements,
                    "); computing it is cheaper than storing it");
  }
  return "";
}

/// The constants replacing the node's results, or none to keep the node.
using Replacement = std::optional<std::vector<Value *>>;

Expected<Replacement> foldNode(RewriteContext &context, const OpDef &constantOp) {
  const Node &node = context.node();
  if (node.opId() == OpId::Constant || hasComputedOperand(context))
    return Replacement();
  if (std::string reason = whyNotFoldable(context); !reason.empty()) {
    log::debug("constant-fold", strCat("not folding ", node.describe(), ": ", reason));
    return Replacement();
  }

  std::vector<const Tensor *> inputs;
  for (const Value *operand : context.operands())
    inputs.push_back(operand ? &operand->producer()->attr("value").asTensor() : nullptr);
  Expected<std::vector<Tensor>> results = interp::evaluateOp(node.op(), inputs, node.attrs());
  if (!results) {
    // Not a compile error: the node stays, and the run reports the error with the node's name.
    log::debug("constant-fold", strCat("not folding ", node.describe(), ": the kernel failed (",
                                       results.error().message(), "); left for run time"));
    return Replacement();
  }
  if (results->size() != node.numOutputs())
    return makeError("internal: ", node.describe(), " evaluated to ", results->size(),
                     " tensors for ", node.numOutputs(), " results");
  for (size_t i = 0; i < node.numOutputs(); ++i) {
    const Tensor &tensor = (*results)[i];
    TensorType type = TensorType::fromStatic(tensor.dtype(), tensor.shape());
    if (type != node.output(i)->type()) {
      log::debug("constant-fold", strCat("not folding ", node.describe(), ": the kernel gave ",
                                         type.str(), " for result %", node.output(i)->name(), ": ",
                                         node.output(i)->type().str()));
      return Replacement();
    }
  }

  std::vector<Value *> constants;
  for (Tensor &tensor : *results) {
    TC_ASSIGN_OR_RETURN(Value * constant, context.constant(constantOp, std::move(tensor)));
    constants.push_back(constant);
  }
  log::debug("constant-fold", strCat("folded ", node.describe()));
  return Replacement(std::move(constants));
}

} // namespace

Status foldConstants(Graph &graph, const PassContext &context) {
  const OpDef *constantOp = context.registry.get(OpId::Constant);
  if (!constantOp)
    return makeError("internal: the registry has no prims.constant");
  // Operands are read in the graph being built, so a chain of foldable nodes folds in one sweep.
  // The constants it consumed stay behind, unused: DCE removes them.
  auto fold = [&](RewriteContext &rewrite) { return foldNode(rewrite, *constantOp); };
  TC_ASSIGN_OR_RETURN(Graph folded, rewriteGraph(graph, fold));
  graph = std::move(folded);
  return Status::ok();
}

} // namespace tensorc
