// The reference interpreter: walks the graph in order, calling each op's reference kernel.
#include "tensorc/Interp/Interpreter.h"

#include "tensorc/Support/StrCat.h"

#include <map>

namespace tensorc::interp {

namespace {

/// Substitutes bound symbols in Ints attributes so kernels see concrete lists.
Expected<AttrMap> concretizeAttrs(const AttrMap &attrs, const SymbolBindings &bindings) {
  AttrMap result;
  for (const auto &[name, value] : attrs) {
    if (!value.isInts()) {
      result.emplace(name, value);
      continue;
    }
    std::vector<SymInt> ints;
    for (const SymInt &entry : value.asInts()) {
      Expected<int64_t> concrete = entry.evaluate(bindings);
      if (!concrete)
        return concrete.takeError().withContext(strCat("attribute '", name, "'"));
      ints.emplace_back(*concrete);
    }
    result.emplace(name, Attribute(std::move(ints)));
  }
  return result;
}

/// Binds the symbols of `declared` from a concrete shape, checking constants and consistency.
Status bindShape(const TensorType &declared, const Tensor &actual, const std::string &what,
                 SymbolBindings &bindings) {
  auto mismatch = [&] {
    return makeError(what, ": expected ", declared.str(), ", got ",
                     describeShape(actual.dtype(), actual.shape()));
  };
  if (declared.dtype != actual.dtype() || declared.rank() != actual.rank())
    return mismatch();
  for (size_t i = 0; i < declared.rank(); ++i) {
    const SymInt &dim = declared.shape[i];
    if (std::optional<std::string> symbol = dim.symbolName()) {
      auto [it, inserted] = bindings.emplace(*symbol, actual.dim(i));
      if (!inserted && it->second != actual.dim(i))
        return makeError(what, ": dim ", i, " is ", actual.dim(i), " but symbol ", *symbol,
                         " is already ", it->second);
      continue;
    }
    Expected<int64_t> expected = dim.evaluate(bindings);
    if (expected && *expected != actual.dim(i))
      return mismatch();
  }
  return Status::ok();
}

} // namespace

Expected<std::vector<Tensor>> evaluateOp(const OpDef &op, const std::vector<const Tensor *> &inputs,
                                         AttrMap attrs, int64_t maxTensorBytes) {
  if (!op.kernel)
    return makeError(op.name, " has no reference kernel");
  std::vector<TensorType> inputTypes;
  inputTypes.reserve(inputs.size());
  for (const Tensor *input : inputs)
    inputTypes.push_back(input ? TensorType::fromStatic(input->dtype(), input->shape())
                               : TensorType());
  std::vector<const TensorType *> typePointers;
  for (size_t i = 0; i < inputs.size(); ++i)
    typePointers.push_back(inputs[i] ? &inputTypes[i] : nullptr);
  TC_ASSIGN_OR_RETURN(std::vector<TensorType> outputTypes, inferTypes(op, typePointers, attrs));
  std::vector<Tensor> outputs;
  for (size_t i = 0; i < outputTypes.size(); ++i) {
    const TensorType &type = outputTypes[i];
    std::optional<std::vector<int64_t>> shape = type.staticShape();
    if (!shape && op.dataDependentShape) {
      outputs.emplace_back(); // the kernel allocates it (no larger than its operands)
      continue;
    }
    if (!shape)
      return makeError(op.name, ": result shape ", type.str(), " is not concrete");
    TC_RETURN_IF_ERROR(checkTensorBytes(type.dtype, *shape, maxTensorBytes, strCat("result ", i)));
    TC_ASSIGN_OR_RETURN(Tensor output, Tensor::zeros(type.dtype, std::move(*shape)));
    outputs.push_back(std::move(output));
  }
  KernelContext context(inputs, attrs, std::move(outputs));
  Status status = op.kernel(context);
  if (!status)
    return status.takeError().withContext(op.name);
  std::vector<Tensor> results = context.takeOutputs();
  for (size_t i = 0; i < results.size(); ++i)
    if (!results[i].defined() || results[i].dtype() != outputTypes[i].dtype ||
        results[i].rank() != outputTypes[i].rank())
      return makeError("internal: ", op.name, " result ", i, " does not match ",
                       outputTypes[i].str());
  return results;
}

Expected<std::vector<Tensor>> interpret(const Graph &graph, const std::vector<Tensor> &userInputs,
                                        const SymbolBindings &known, int64_t maxTensorBytes) {
  return interpret(graph, userInputs, known, ValueObserver(), maxTensorBytes);
}

Expected<std::vector<Tensor>> interpret(const Graph &graph, const std::vector<Tensor> &userInputs,
                                        const SymbolBindings &known, const ValueObserver &observe,
                                        int64_t maxTensorBytes) {
  TC_ASSIGN_OR_RETURN(int64_t limit, resolveMaxTensorBytes(maxTensorBytes));
  std::vector<Value *> placeholders = graph.userInputs();
  if (placeholders.size() != userInputs.size())
    return makeError("graph takes ", placeholders.size(), " input(s), got ", userInputs.size());

  std::map<const Value *, Tensor> values;
  SymbolBindings bindings = known;
  for (size_t i = 0; i < placeholders.size(); ++i) {
    TC_RETURN_IF_ERROR(bindShape(placeholders[i]->type(), userInputs[i],
                                 strCat("input %", placeholders[i]->name()), bindings));
    values[placeholders[i]] = userInputs[i];
  }
  for (const auto &[name, tensor] : graph.weights())
    if (const Value *placeholder = graph.findValue(name))
      values[placeholder] = tensor;

  // Last use of each value, so intermediates are freed as soon as possible.
  std::map<const Value *, size_t> lastUse;
  for (size_t i = 0; i < graph.nodes().size(); ++i)
    for (const Value *input : graph.nodes()[i]->inputs())
      if (input)
        lastUse[input] = i;
  for (const Value *output : graph.outputs())
    lastUse[output] = graph.nodes().size();

  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    const Node &node = *graph.nodes()[i];
    std::vector<const Tensor *> inputs;
    for (const Value *input : node.inputs()) {
      if (!input) {
        inputs.push_back(nullptr);
        continue;
      }
      auto it = values.find(input);
      if (it == values.end())
        return makeError(node.describe(), ": operand %", input->name(), " has no value");
      inputs.push_back(&it->second);
    }
    Expected<AttrMap> attrs = concretizeAttrs(node.attrs(), bindings);
    if (!attrs)
      return attrs.takeError().withContext(node.describe());
    Expected<std::vector<Tensor>> results = evaluateOp(node.op(), inputs, std::move(*attrs), limit);
    if (!results)
      return results.takeError().withContext(node.describe());
    for (size_t j = 0; j < node.numOutputs(); ++j) {
      Status bound = bindShape(node.output(j)->type(), (*results)[j],
                               strCat(node.describe(), ": result %", node.output(j)->name()),
                               bindings);
      if (!bound)
        return bound.takeError();
      if (observe)
        observe(*node.output(j), (*results)[j]);
      values[node.output(j)] = std::move((*results)[j]);
    }
    for (const Value *input : node.inputs())
      if (input && lastUse[input] == i && !input->isGraphInput())
        values.erase(input);
  }

  std::vector<Tensor> outputs;
  for (const Value *output : graph.outputs())
    outputs.push_back(values.at(output));
  return outputs;
}

} // namespace tensorc::interp
