// Graph rebuilding with per-node replacement, and use lists.
#include "tensorc/IR/Rewriter.h"

#include "tensorc/Support/StrCat.h"

#include <set>

namespace tensorc {

namespace {
std::string shortName(const OpDef &op) {
  size_t dot = op.name.rfind('.');
  return dot == std::string::npos ? op.name : op.name.substr(dot + 1);
}
} // namespace

Expected<std::vector<Value *>> NodeEmitter::emitMulti(const OpDef &op, std::vector<Value *> inputs,
                                                      AttrMap attrs) {
  Expected<Node *> node = target_.addNode(op, std::move(inputs), std::move(attrs),
                                          strCat(nameBase_, "_", shortName(op)));
  if (!node)
    return node.takeError().withContext(errorContext_);
  return (*node)->outputs();
}

Expected<Value *> NodeEmitter::emit(const OpDef &op, std::vector<Value *> inputs,
                                       AttrMap attrs) {
  TC_ASSIGN_OR_RETURN(std::vector<Value *> results,
                      emitMulti(op, std::move(inputs), std::move(attrs)));
  return results.front();
}

Expected<Value *> NodeEmitter::constant(const OpDef &constantOp, Tensor tensor) {
  AttrMap attrs;
  attrs.emplace("value", Attribute(std::move(tensor)));
  return emit(constantOp, {}, std::move(attrs));
}

Expected<Node *> copyNode(Graph &target, const Node &node, std::vector<Value *> operands) {
  std::vector<std::string> resultNames;
  std::vector<TensorType> types;
  for (const Value *output : node.outputs()) {
    types.push_back(output->type());
    if (node.numOutputs() > 1)
      resultNames.push_back(target.hasName(output->name()) ? target.uniqueName(output->name())
                                                           : output->name());
  }
  return target.addNode(node.op(), std::move(operands), node.attrs(), node.name(), resultNames,
                        &types);
}

Expected<ValueMap> ValueMap::withInputs(const Graph &source, Graph &target) {
  ValueMap mapped;
  for (const auto &input : source.inputs()) {
    TC_ASSIGN_OR_RETURN(Value * value, target.addInput(input->name(), input->type()));
    mapped.set(input.get(), value);
  }
  target.weights() = source.weights();
  return mapped;
}

std::vector<Value *> ValueMap::operands(const Node &node) const {
  std::vector<Value *> operands;
  for (const Value *input : node.inputs())
    operands.push_back(input ? at(input) : nullptr);
  return operands;
}

std::vector<Value *> ValueMap::map(const std::vector<Value *> &values) const {
  std::vector<Value *> result;
  for (const Value *value : values)
    result.push_back(at(value));
  return result;
}

void ValueMap::mapResults(const Node &node, const Node &copy) {
  for (size_t i = 0; i < node.numOutputs(); ++i)
    set(node.output(i), copy.output(i));
}

Expected<Node *> ValueMap::copy(Graph &target, const Node &node) {
  TC_ASSIGN_OR_RETURN(Node * copy, copyNode(target, node, operands(node)));
  mapResults(node, *copy);
  return copy;
}

Expected<Graph> cloneGraph(const Graph &source) {
  Graph target;
  TC_ASSIGN_OR_RETURN(ValueMap mapped, ValueMap::withInputs(source, target));
  for (const auto &node : source.nodes())
    TC_RETURN_IF_ERROR(mapped.copy(target, *node).status());
  target.setOutputs(mapped.map(source.outputs()));
  return target;
}

Expected<Graph> isolateNode(const Node &node) {
  Graph single;
  std::vector<Value *> operands;
  for (size_t i = 0; i < node.inputs().size(); ++i) {
    const Value *input = node.input(i);
    if (!input) {
      operands.push_back(nullptr);
      continue;
    }
    TC_ASSIGN_OR_RETURN(Value * placeholder, single.addInput(strCat("in", i), input->type()));
    operands.push_back(placeholder);
  }
  TC_ASSIGN_OR_RETURN(Node * copy, copyNode(single, node, operands));
  single.setOutputs(copy->outputs());
  return single;
}

Expected<Graph> rewriteGraph(const Graph &source, const RewriteFn &rewrite) {
  Graph target;
  TC_ASSIGN_OR_RETURN(ValueMap mapped, ValueMap::withInputs(source, target));

  for (const auto &node : source.nodes()) {
    std::vector<Value *> operands = mapped.operands(*node);
    size_t nodesBefore = target.nodes().size();
    RewriteContext context(target, *node, operands);
    TC_ASSIGN_OR_RETURN(std::optional<std::vector<Value *>> replacement, rewrite(context));

    if (!replacement) {
      TC_ASSIGN_OR_RETURN(Node * copy, copyNode(target, *node, operands));
      mapped.mapResults(*node, *copy);
      continue;
    }

    if (replacement->size() != node->numOutputs())
      return makeError("internal: rewriting ", node->describe(), " gave ", replacement->size(),
                       " values for ", node->numOutputs(), " results");
    std::set<const Value *> fresh;
    for (size_t i = nodesBefore; i < target.nodes().size(); ++i)
      for (Value *output : target.nodes()[i]->outputs())
        fresh.insert(output);
    std::set<const Value *> renamed;
    for (size_t i = 0; i < node->numOutputs(); ++i) {
      Value *value = (*replacement)[i];
      const Value *original = node->output(i);
      if (!value || value->type() != original->type())
        return makeError("internal: rewriting ", node->describe(), " changed result %",
                         original->name(), " from ", original->type().str(), " to ",
                         value ? value->type().str() : std::string("None"));
      // The replacement takes the original name when it is new and the name is free.
      if (fresh.count(value) && !renamed.count(value) && !target.hasName(original->name()) &&
          target.renameValue(value, original->name()).isOk())
        renamed.insert(value);
      mapped.set(original, value);
    }
  }

  target.setOutputs(mapped.map(source.outputs()));
  return target;
}

std::map<const Value *, std::vector<const Node *>> computeUsers(const Graph &graph) {
  std::map<const Value *, std::vector<const Node *>> users;
  for (const auto &node : graph.nodes())
    for (const Value *input : node->inputs())
      if (input)
        users[input].push_back(node.get());
  for (const Value *output : graph.outputs())
    users[output].push_back(nullptr);
  return users;
}

} // namespace tensorc
