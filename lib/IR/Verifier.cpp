// Graph verifier.
#include "tensorc/IR/Verifier.h"

#include "tensorc/Support/StrCat.h"

#include <set>

namespace tensorc {

Status verifyGraph(const Graph &graph) {
  std::set<const Value *> defined;
  std::set<std::string> names;
  auto define = [&](const Value *value) -> Status {
    if (!names.insert(value->name()).second)
      return makeError("value %", value->name(), " is defined twice");
    defined.insert(value);
    return Status::ok();
  };
  for (const auto &input : graph.inputs())
    TC_RETURN_IF_ERROR(define(input.get()));

  for (const auto &node : graph.nodes()) {
    std::vector<const TensorType *> inputTypes;
    for (const Value *input : node->inputs()) {
      if (input && !defined.count(input))
        return makeError(node->describe(), ": operand %", input->name(),
                         " is used before it is defined");
      inputTypes.push_back(input ? &input->type() : nullptr);
    }
    AttrMap attrs = node->attrs();
    Expected<std::vector<TensorType>> types = inferTypes(node->op(), inputTypes, attrs);
    if (!types)
      return types.takeError().withContext(node->describe());
    if (attrs != node->attrs())
      return makeError(node->describe(), ": attributes are missing defaults");
    if (types->size() != node->numOutputs())
      return makeError(node->describe(), ": has ", node->numOutputs(), " results, inference gives ",
                       types->size());
    for (size_t i = 0; i < types->size(); ++i) {
      // A data-dependent dim matches whatever symbol the graph gave it.
      TensorType &inferred = (*types)[i];
      const TensorType &stored = node->output(i)->type();
      if (inferred.rank() == stored.rank())
        for (size_t d = 0; d < inferred.rank(); ++d)
          if (isDataDependentDim(inferred.shape[d]))
            inferred.shape[d] = stored.shape[d];
      if ((*types)[i] != node->output(i)->type())
        return makeError(node->describe(), ": result %", node->output(i)->name(), " has type ",
                         node->output(i)->type().str(), " but inference gives ",
                         (*types)[i].str());
      TC_RETURN_IF_ERROR(define(node->output(i)));
    }
  }

  for (const Value *output : graph.outputs())
    if (!output || !defined.count(output))
      return makeError("graph output %", output ? output->name() : "None",
                       " is not a value of the graph");

  for (const auto &[name, tensor] : graph.weights()) {
    const Value *placeholder = graph.findValue(name);
    if (!placeholder || !placeholder->isGraphInput())
      return makeError("weight '", name, "' has no placeholder");
    TensorType type = TensorType::fromStatic(tensor.dtype(), tensor.shape());
    if (type != placeholder->type())
      return makeError("weight '", name, "' is ", type.str(), " but placeholder %", name,
                       " is declared ", placeholder->type().str());
  }
  return Status::ok();
}

} // namespace tensorc
