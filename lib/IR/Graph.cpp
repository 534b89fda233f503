// Graph construction (checked), naming, and structural equality.
#include "tensorc/IR/Graph.h"

#include "tensorc/Support/Identifier.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>

namespace tensorc {

namespace {

/// Turns an arbitrary hint ("aten.add", "layer/0:out") into an identifier.
std::string sanitize(const std::string &hint) { return toIdentifier(hint, "_"); }

std::string opShortName(const OpDef &op) {
  size_t dot = op.name.rfind('.');
  return dot == std::string::npos ? op.name : op.name.substr(dot + 1);
}

} // namespace

std::vector<Value *> Node::outputs() const {
  std::vector<Value *> result;
  for (const auto &output : outputs_)
    result.push_back(output.get());
  return result;
}

std::string Node::describe() const { return strCat("%", name_, " = ", op_->name); }

Expected<std::vector<TensorType>> inferTypes(const OpDef &op,
                                             const std::vector<const TensorType *> &inputs,
                                             AttrMap &attrs) {
  // Arity: one input per tensor parameter, a tensor list taking whatever is left.
  size_t fixed = op.numTensorParams() - (op.hasTensorList() ? 1 : 0);
  if (op.hasTensorList() ? inputs.size() < fixed : inputs.size() != fixed)
    return makeError(op.name, " takes ", op.hasTensorList() ? "at least " : "", fixed,
                     " tensor input(s), got ", inputs.size());
  size_t index = 0;
  for (const ParamSpec &param : op.params) {
    if (!param.isTensor())
      continue;
    if (param.kind == ParamSpec::Kind::TensorList) {
      size_t count = inputs.size() - fixed;
      for (size_t i = 0; i < count; ++i, ++index)
        if (!inputs[index])
          return makeError(op.name, ": tensor list '", param.name, "' holds a None");
      continue;
    }
    if (param.kind == ParamSpec::Kind::Tensor && !inputs[index])
      return makeError(op.name, ": required tensor '", param.name, "' is None");
    ++index;
  }

  for (const auto &[name, value] : attrs) {
    const ParamSpec *param = op.findParam(name);
    if (!param || param->isTensor())
      return makeError(op.name, " has no attribute '", name, "'");
  }
  for (const ParamSpec &param : op.params) {
    if (param.isTensor())
      continue;
    auto it = attrs.find(param.name);
    if (it == attrs.end()) {
      if (!param.defaultValue)
        return makeError(op.name, ": missing required attribute '", param.name, "'");
      it = attrs.emplace(param.name, *param.defaultValue).first;
    }
    Attribute &value = it->second;
    // Coerce ints where floats are expected (eps=1, [1, 2] for a float list).
    if (param.attrKind == AttrKind::Float && value.isInt())
      value = Attribute(double(value.asInt()));
    if (param.attrKind == AttrKind::Floats && value.isInts()) {
      std::vector<double> floats;
      for (const SymInt &entry : value.asInts())
        if (auto constant = entry.constant())
          floats.push_back(double(*constant));
      if (floats.size() == value.asInts().size())
        value = Attribute(std::move(floats));
    }
    if (value.isNone() ? !param.optional : !value.fits(param.attrKind))
      return makeError(op.name, ": attribute '", param.name, "' expects ",
                       param.optional ? "an optional " : "", attrKindName(param.attrKind),
                       ", got ", value.str());
  }
  InferContext context(inputs, attrs);
  Expected<std::vector<TensorType>> types = op.infer(context);
  if (!types)
    return types.takeError().withContext(op.name);
  if (types->empty())
    return makeError("internal: ", op.name, " inferred no results");
  return types;
}

Expected<Value *> Graph::addInput(const std::string &name, TensorType type) {
  if (!isIdentifier(name))
    return makeError("placeholder name '", name, "' is not an identifier");
  if (hasName(name))
    return makeError("placeholder '%", name, "' is defined twice");
  inputs_.push_back(std::unique_ptr<Value>(new Value(name, std::move(type), nullptr, 0)));
  Value *value = inputs_.back().get();
  names_.insert(name);
  valuesByName_[name] = value;
  return value;
}

Expected<Node *> Graph::addNode(const OpDef &op, std::vector<Value *> inputs, AttrMap attrs,
                                const std::string &nameHint,
                                const std::vector<std::string> &resultNames,
                                const std::vector<TensorType> *declaredTypes) {
  std::string name = uniqueName(nameHint.empty() ? opShortName(op) : nameHint);
  std::vector<const TensorType *> inputTypes;
  for (Value *input : inputs) {
    if (input && valuesByName_.count(input->name()) == 0)
      return makeError("%", name, " = ", op.name, ": operand %", input->name(),
                       " is not a value of this graph");
    inputTypes.push_back(input ? &input->type() : nullptr);
  }
  Expected<std::vector<TensorType>> types = inferTypes(op, inputTypes, attrs);
  if (!types)
    return types.takeError().withContext(strCat("%", name));

  if (!resultNames.empty()) {
    if (resultNames.size() != types->size())
      return makeError("%", name, " = ", op.name, ": ", resultNames.size(),
                       " result names for ", types->size(), " results");
    std::set<std::string> seen{name};
    for (const std::string &resultName : resultNames)
      if (!isIdentifier(resultName) || hasName(resultName) || !seen.insert(resultName).second)
        return makeError("%", name, " = ", op.name, ": result name '%", resultName,
                         "' is taken or not an identifier");
  }

  // Data-dependent dims get symbols named after the node: deterministic, unique in the graph.
  for (size_t i = 0; i < types->size(); ++i)
    for (size_t d = 0; d < (*types)[i].shape.size(); ++d)
      if (isDataDependentDim((*types)[i].shape[d])) {
        const SymInt *declared =
            declaredTypes && i < declaredTypes->size() && d < (*declaredTypes)[i].rank()
                ? &(*declaredTypes)[i].shape[d]
                : nullptr;
        (*types)[i].shape[d] =
            declared && declared->symbolName()
                ? *declared
                : SymInt::symbol(types->size() == 1 ? strCat(name, "_d", d)
                                                    : strCat(name, "_", i, "_d", d));
      }

  auto node = std::make_unique<Node>();
  node->op_ = &op;
  node->name_ = name;
  node->inputs_ = std::move(inputs);
  node->attrs_ = std::move(attrs);
  names_.insert(name);
  for (size_t i = 0; i < types->size(); ++i) {
    std::string valueName = types->size() == 1     ? name
                            : !resultNames.empty() ? resultNames[i]
                                                   : uniqueName(strCat(name, "_", i));
    node->outputs_.push_back(std::unique_ptr<Value>(
        new Value(valueName, std::move((*types)[i]), node.get(), unsigned(i))));
    names_.insert(valueName);
    valuesByName_[valueName] = node->outputs_.back().get();
  }
  nodes_.push_back(std::move(node));
  return nodes_.back().get();
}

Status Graph::renameValue(Value *value, const std::string &name) {
  if (value->name_ == name)
    return Status::ok();
  if (!isIdentifier(name))
    return makeError("value name '", name, "' is not an identifier");
  if (hasName(name))
    return makeError("value name '%", name, "' is already taken");
  if (value->isGraphInput()) {
    if (auto it = weights_.find(value->name_); it != weights_.end()) {
      weights_[name] = it->second;
      weights_.erase(it);
    }
  }
  names_.erase(value->name_);
  valuesByName_.erase(value->name_);
  // A single-result node and its value share one name (the printer relies on it).
  if (Node *producer = value->producer(); producer && producer->numOutputs() == 1)
    producer->name_ = name;
  value->name_ = name;
  names_.insert(name);
  valuesByName_[name] = value;
  return Status::ok();
}

std::vector<Value *> Graph::userInputs() const {
  std::vector<Value *> result;
  for (const auto &input : inputs_)
    if (!isParameter(input.get()))
      result.push_back(input.get());
  return result;
}

std::string Graph::uniqueName(const std::string &hint) const {
  std::string base = sanitize(hint);
  if (!hasName(base))
    return base;
  size_t &next = nextSuffix_[base];
  for (size_t suffix = std::max<size_t>(next, 1);; ++suffix) {
    std::string candidate = strCat(base, "_", suffix);
    if (!hasName(candidate)) {
      next = suffix; // names are only ever added, so smaller suffixes stay taken
      return candidate;
    }
  }
}

Value *Graph::findValue(const std::string &name) const {
  auto it = valuesByName_.find(name);
  return it == valuesByName_.end() ? nullptr : it->second;
}

bool graphsEqual(const Graph &a, const Graph &b, std::string *difference) {
  auto differ = [&](const std::string &what) {
    if (difference)
      *difference = what;
    return false;
  };
  auto valueName = [](const Value *value) { return value ? value->name() : std::string("None"); };

  if (a.inputs().size() != b.inputs().size())
    return differ(strCat("placeholder count ", a.inputs().size(), " vs ", b.inputs().size()));
  for (size_t i = 0; i < a.inputs().size(); ++i) {
    const Value &x = *a.inputs()[i], &y = *b.inputs()[i];
    if (x.name() != y.name() || x.type() != y.type())
      return differ(strCat("placeholder ", i, ": %", x.name(), ": ", x.type().str(), " vs %",
                           y.name(), ": ", y.type().str()));
  }
  if (a.nodes().size() != b.nodes().size())
    return differ(strCat("node count ", a.nodes().size(), " vs ", b.nodes().size()));
  for (size_t i = 0; i < a.nodes().size(); ++i) {
    const Node &x = *a.nodes()[i], &y = *b.nodes()[i];
    if (x.opId() != y.opId() || x.name() != y.name())
      return differ(strCat("node ", i, ": ", x.describe(), " vs ", y.describe()));
    if (x.inputs().size() != y.inputs().size())
      return differ(strCat(x.describe(), ": operand count differs"));
    for (size_t j = 0; j < x.inputs().size(); ++j)
      if (valueName(x.input(j)) != valueName(y.input(j)))
        return differ(strCat(x.describe(), ": operand ", j, " %", valueName(x.input(j)),
                             " vs %", valueName(y.input(j))));
    if (x.attrs() != y.attrs())
      return differ(strCat(x.describe(), ": attributes differ"));
    if (x.numOutputs() != y.numOutputs())
      return differ(strCat(x.describe(), ": result count differs"));
    for (size_t j = 0; j < x.numOutputs(); ++j)
      if (x.output(j)->name() != y.output(j)->name() || x.output(j)->type() != y.output(j)->type())
        return differ(strCat(x.describe(), ": result ", j, " %", x.output(j)->name(), ": ",
                             x.output(j)->type().str(), " vs %", y.output(j)->name(), ": ",
                             y.output(j)->type().str()));
  }
  if (a.outputs().size() != b.outputs().size())
    return differ("output count differs");
  for (size_t i = 0; i < a.outputs().size(); ++i)
    if (a.outputs()[i]->name() != b.outputs()[i]->name())
      return differ(strCat("output ", i, ": %", a.outputs()[i]->name(), " vs %",
                           b.outputs()[i]->name()));
  if (a.weights().size() != b.weights().size())
    return differ("weight count differs");
  for (const auto &[name, tensor] : a.weights()) {
    auto it = b.weights().find(name);
    if (it == b.weights().end() || !it->second.equals(tensor))
      return differ(strCat("weight '", name, "' differs"));
  }
  return true;
}

const Tensor *constantData(const Graph &graph, const Value *value) {
  if (!value)
    return nullptr;
  if (graph.isParameter(value))
    return &graph.weights().at(value->name());
  if (value->producer() && value->producer()->opId() == OpId::Constant)
    return &value->producer()->attr("value").asTensor();
  return nullptr;
}

} // namespace tensorc
