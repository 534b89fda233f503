// The joint forward + backward graph: reverse-mode differentiation with the registry's rules.
#include "tensorc/Autodiff/Autodiff.h"

#include "tensorc/IR/Rewriter.h"
#include "tensorc/Support/StrCat.h"

#include <map>
#include <set>

namespace tensorc::autodiff {

namespace {

/// A tensor of `type` filled with `value`, for gradient seeds and gradients nothing reached.
Expected<Value *> fill(Graph &graph, const OpRegistry &registry, const TensorType &type,
                       double value, const std::string &name) {
  const OpDef *full = registry.get(OpId::Full);
  if (!full)
    return makeError("autodiff: the registry has no aten.full");
  AttrMap attrs{{"size", Attribute(type.shape)},
                {"fill_value", Attribute(value)},
                {"dtype", Attribute(type.dtype)}};
  TC_ASSIGN_OR_RETURN(Node * node, graph.addNode(*full, {}, std::move(attrs), name));
  return node->output();
}

bool isOneElement(const TensorType &type) {
  for (const SymInt &dim : type.shape)
    if (dim != SymInt(1))
      return false;
  return true;
}

} // namespace

Expected<JointGraph> buildJointGraph(const Graph &forward, const GradOptions &options,
                                     const OpRegistry &registry) {
  JointGraph joint;
  TC_ASSIGN_OR_RETURN(joint.graph, cloneGraph(forward));
  Graph &graph = joint.graph;
  joint.numForwardNodes = graph.nodes().size();
  std::vector<Value *> forwardOutputs = graph.outputs();
  joint.numForwardOutputs = forwardOutputs.size();

  // What depends on the differentiated inputs (only those values get gradients).
  std::set<const Value *> requiresGrad;
  std::vector<Value *> wrtValues;
  for (const std::string &name : options.wrt) {
    Value *value = graph.findValue(name);
    if (!value || !value->isGraphInput())
      return makeError("autodiff: no placeholder named '", name, "' to differentiate");
    if (!isFloating(value->type().dtype))
      return makeError("autodiff: %", name, " is ", value->type().str(),
                       "; only floating-point inputs have gradients");
    requiresGrad.insert(value);
    wrtValues.push_back(value);
  }
  joint.wrt = options.wrt;
  for (size_t i = 0; i < joint.numForwardNodes; ++i) {
    const Node &node = *graph.nodes()[i];
    bool any = false;
    for (const Value *input : node.inputs())
      any = any || (input && requiresGrad.count(input));
    if (any)
      for (const Value *output : node.outputs())
        if (isFloating(output->type().dtype))
          requiresGrad.insert(output);
  }

  // Seeds.
  std::map<const Value *, Value *> grads;
  const OpDef *add = registry.get(OpId::Add);
  if (!add)
    return makeError("autodiff: the registry has no aten.add");
  auto accumulate = [&](const Value *value, Value *grad) -> Status {
    auto it = grads.find(value);
    if (it == grads.end()) {
      grads[value] = grad;
      return Status::ok();
    }
    TC_ASSIGN_OR_RETURN(Node * sum, graph.addNode(*add, {it->second, grad}, {},
                                                  value->name() + "_grad_sum"));
    it->second = sum->output();
    return Status::ok();
  };
  if (options.scalarLoss) {
    if (forwardOutputs.size() != 1 || !isOneElement(forwardOutputs[0]->type()) ||
        !isFloating(forwardOutputs[0]->type().dtype))
      return makeError("autodiff: the loss must be the graph's one output, a floating-point "
                       "scalar; the graph returns ",
                       forwardOutputs.size(), " values",
                       forwardOutputs.empty() ? "" : ", the first " +
                                                         forwardOutputs[0]->type().str());
    TC_ASSIGN_OR_RETURN(Value * seed, fill(graph, registry, forwardOutputs[0]->type(), 1.0,
                                           forwardOutputs[0]->name() + "_grad_seed"));
    TC_RETURN_IF_ERROR(accumulate(forwardOutputs[0], seed));
  } else {
    for (Value *output : forwardOutputs) {
      std::string name = graph.uniqueName("tangent_" + output->name());
      TC_ASSIGN_OR_RETURN(Value * tangent, graph.addInput(name, output->type()));
      joint.tangents.push_back(name);
      TC_RETURN_IF_ERROR(accumulate(output, tangent));
    }
  }

  // Reverse sweep over the forward nodes; the rules append the backward nodes.
  for (size_t i = joint.numForwardNodes; i-- > 0;) {
    const Node &node = *graph.nodes()[i];
    std::vector<Value *> resultGrads;
    bool reached = false;
    for (const Value *output : node.outputs()) {
      auto it = grads.find(output);
      resultGrads.push_back(it == grads.end() ? nullptr : it->second);
      reached = reached || it != grads.end();
    }
    bool needed = false;
    for (const Value *input : node.inputs())
      needed = needed || (input && requiresGrad.count(input));
    if (!reached || !needed)
      continue;
    if (!node.op().gradient)
      return makeError("autodiff: no gradient rule for ", node.op().name, " (", node.describe(),
                       "), on the path from the loss to the parameters");
    GradContext context(graph, node, resultGrads);
    TC_ASSIGN_OR_RETURN(std::vector<Value *> inputGrads, node.op().gradient(context, registry));
    if (inputGrads.size() != node.inputs().size())
      return makeError("internal: the gradient rule of ", node.op().name, " gave ",
                       inputGrads.size(), " gradients for ", node.inputs().size(), " inputs");
    for (size_t j = 0; j < inputGrads.size(); ++j) {
      const Value *input = node.input(j);
      if (!input || !inputGrads[j] || !requiresGrad.count(input))
        continue;
      if (inputGrads[j]->type() != input->type())
        return makeError("internal: the gradient rule of ", node.op().name, " gave ",
                         inputGrads[j]->type().str(), " for input %", input->name(), " of type ",
                         input->type().str());
      TC_RETURN_IF_ERROR(accumulate(input, inputGrads[j]));
    }
  }

  std::vector<Value *> outputs = forwardOutputs;
  for (Value *value : wrtValues) {
    auto it = grads.find(value);
    if (it != grads.end()) {
      outputs.push_back(it->second);
      continue;
    }
    // Nothing reached it: its gradient is zero.
    TC_ASSIGN_OR_RETURN(Value * zero,
                        fill(graph, registry, value->type(), 0.0, value->name() + "_grad_zero"));
    outputs.push_back(zero);
  }
  graph.setOutputs(std::move(outputs));
  return joint;
}

} // namespace tensorc::autodiff
