// FX-text printer.
#include "tensorc/IR/Printer.h"

#include "tensorc/Support/StrCat.h"

#include <sstream>

namespace tensorc {

namespace {

std::string operand(const Value *value) { return value ? "%" + value->name() : "None"; }

bool isDefault(const ParamSpec &param, const Attribute &value) {
  return param.defaultValue && *param.defaultValue == value;
}

/// "args=(...), kwargs={...}" in ATen schema order: positional parameters up to the last one
/// that is a tensor or differs from its default; keyword-only ones when not default.
std::string printArguments(const Node &node) {
  const OpDef &op = node.op();
  size_t fixed = op.numTensorParams() - (op.hasTensorList() ? 1 : 0);
  size_t listSize = node.inputs().size() - fixed;

  std::vector<std::string> positional, keywords;
  size_t lastPresent = 0;
  size_t inputIndex = 0;
  for (const ParamSpec &param : op.params) {
    std::string text;
    bool present = false;
    switch (param.kind) {
    case ParamSpec::Kind::Tensor:
    case ParamSpec::Kind::OptionalTensor:
      text = operand(node.input(inputIndex));
      present = node.input(inputIndex++) != nullptr;
      break;
    case ParamSpec::Kind::TensorList: {
      std::vector<std::string> items;
      for (size_t i = 0; i < listSize; ++i)
        items.push_back(operand(node.input(inputIndex++)));
      text = "[" + join(items, ", ") + "]";
      present = true;
      break;
    }
    case ParamSpec::Kind::Attr: {
      const Attribute &value = node.attr(param.name);
      text = value.str();
      present = !isDefault(param, value);
      if (param.kwargOnly) {
        if (present)
          keywords.push_back(param.name + "=" + text);
        continue;
      }
      break;
    }
    }
    positional.push_back(text);
    if (present)
      lastPresent = positional.size();
  }
  positional.resize(lastPresent);
  std::string out = "args=(" + join(positional, ", ");
  if (positional.size() == 1)
    out += ",";
  out += ")";
  if (!keywords.empty())
    out += ", kwargs={" + join(keywords, ", ") + "}";
  return out;
}

std::string resultType(const Node &node) {
  if (node.numOutputs() == 1)
    return node.output()->type().str();
  std::vector<std::string> types;
  for (Value *output : node.outputs())
    types.push_back(output->type().str());
  return "(" + join(types, ", ") + ")";
}

} // namespace

std::string printNode(const Node &node) {
  return strCat("%", node.name(), " : ", resultType(node), " = call_function[target=",
                node.op().name, "](", printArguments(node), ")");
}

std::string printGraph(const Graph &graph) {
  std::ostringstream os;
  std::vector<std::string> placeholders;
  for (const auto &input : graph.inputs())
    placeholders.push_back(strCat("%", input->name(), ": ", input->type().str()));
  os << "graph(" << join(placeholders, ", ") << "):\n";
  for (const auto &node : graph.nodes()) {
    os << "  " << printNode(*node) << "\n";
    if (node->numOutputs() == 1)
      continue;
    for (Value *output : node->outputs())
      os << "  %" << output->name() << " : " << output->type().str()
         << " = call_function[target=getitem](args=(%" << node->name() << ", "
         << output->resultIndex() << "))\n";
  }
  std::vector<std::string> outputs;
  for (const Value *output : graph.outputs())
    outputs.push_back(operand(output));
  os << "  return (" << join(outputs, ", ") << (outputs.size() == 1 ? ",)" : ")") << "\n";
  return os.str();
}

} // namespace tensorc
