// The minifier's two model kinds: tensorc Graphs rebuilt node by node, and ONNX protobufs edited
// through the ONNX frontend's editor.
#include "Reducible.h"

#include "tensorc/Frontend/FX/FxParser.h"
#include "tensorc/Frontend/ONNX/OnnxEditor.h"
#include "tensorc/IR/Rewriter.h"
#include "tensorc/IR/Verifier.h"
#include "tensorc/Support/StrCat.h"

#include <functional>
#include <map>
#include <set>

namespace tensorc::debug {

namespace {

/// How to rebuild a graph: which values it returns, which node results become placeholders,
/// which values stand for others (removed nodes), and placeholder types to change (the types of
/// everything after them are inferred again).
struct Rebuild {
  std::vector<std::string> outputs;
  std::set<std::string> asInputs;
  std::map<std::string, std::string> replace;
  std::map<std::string, TensorType> inputTypes;
};

Expected<Graph> rebuild(const Graph &source, const Rebuild &plan) {
  auto resolve = [&](std::string name) {
    for (auto it = plan.replace.find(name); it != plan.replace.end(); it = plan.replace.find(name))
      name = it->second;
    return name;
  };
  // What the outputs need, walking back to placeholders and the new inputs.
  std::set<std::string> neededValues;
  std::set<const Node *> neededNodes;
  std::vector<std::string> stack;
  for (const std::string &output : plan.outputs)
    stack.push_back(resolve(output));
  while (!stack.empty()) {
    std::string name = stack.back();
    stack.pop_back();
    if (!neededValues.insert(name).second)
      continue;
    const Value *value = source.findValue(name);
    if (!value)
      return makeError("no value %", name);
    if (value->isGraphInput() || plan.asInputs.count(name))
      continue;
    if (!neededNodes.insert(value->producer()).second)
      continue;
    for (const Value *input : value->producer()->inputs())
      if (input)
        stack.push_back(resolve(input->name()));
  }

  Graph target;
  std::map<std::string, Value *> mapped;
  for (const auto &input : source.inputs()) {
    if (!neededValues.count(input->name()))
      continue;
    auto changed = plan.inputTypes.find(input->name());
    TensorType type = changed != plan.inputTypes.end() ? changed->second : input->type();
    TC_ASSIGN_OR_RETURN(mapped[input->name()], target.addInput(input->name(), type));
    if (source.isParameter(input.get()))
      target.weights()[input->name()] = source.weights().at(input->name());
  }
  for (const auto &node : source.nodes())
    for (const Value *output : node->outputs())
      if (plan.asInputs.count(output->name()) && neededValues.count(output->name())) {
        TC_ASSIGN_OR_RETURN(mapped[output->name()],
                            target.addInput(output->name(), output->type()));
      }
  bool reinfer = !plan.inputTypes.empty();
  for (const auto &node : source.nodes()) {
    if (!neededNodes.count(node.get()))
      continue;
    std::vector<Value *> operands;
    for (const Value *input : node->inputs())
      operands.push_back(input ? mapped.at(resolve(input->name())) : nullptr);
    Node *copy = nullptr;
    if (reinfer) {
      std::vector<std::string> resultNames;
      if (node->numOutputs() > 1)
        for (const Value *output : node->outputs())
          resultNames.push_back(output->name());
      TC_ASSIGN_OR_RETURN(
          copy, target.addNode(node->op(), operands, node->attrs(), node->name(), resultNames));
    } else {
      TC_ASSIGN_OR_RETURN(copy, copyNode(target, *node, operands));
    }
    for (size_t i = 0; i < node->numOutputs(); ++i)
      mapped[node->output(i)->name()] = copy->output(i);
  }
  std::vector<Value *> outputs;
  for (const std::string &output : plan.outputs)
    outputs.push_back(mapped.at(resolve(output)));
  target.setOutputs(std::move(outputs));
  TC_RETURN_IF_ERROR(verifyGraph(target));
  return target;
}

class GraphModel : public Reducible {
public:
  explicit GraphModel(std::shared_ptr<Graph> graph) : graph_(std::move(graph)) {}

  std::unique_ptr<Reducible> clone() const override {
    return std::make_unique<GraphModel>(graph_); // edits replace the graph, never mutate it
  }
  size_t numNodes() const override { return graph_->nodes().size(); }
  std::vector<std::string> nodeOutputs(size_t node) const override {
    std::vector<std::string> names;
    for (const Value *output : graph_->nodes()[node]->outputs())
      names.push_back(output->name());
    return names;
  }
  size_t numNodeInputs(size_t node) const override {
    return graph_->nodes()[node]->inputs().size();
  }
  std::string describeNode(size_t node) const override {
    const Node &n = *graph_->nodes()[node];
    return strCat("%", n.name(), " (", n.op().name, ")");
  }
  std::vector<std::string> outputs() const override {
    std::vector<std::string> names;
    for (const Value *output : graph_->outputs())
      names.push_back(output->name());
    return names;
  }
  Status setOutputs(const std::vector<std::string> &values) override {
    Rebuild plan;
    plan.outputs = values;
    return apply(plan);
  }
  Status makeInputs(const std::vector<std::string> &values) override {
    Rebuild plan;
    plan.outputs = outputs();
    plan.asInputs.insert(values.begin(), values.end());
    return apply(plan);
  }
  Status bypassNode(size_t node, size_t input) override {
    const Node &n = *graph_->nodes()[node];
    if (input >= n.inputs().size() || !n.input(input) || n.numOutputs() != 1 ||
        n.input(input)->type() != n.output()->type())
      return makeError(describeNode(node), ": its result and operand ", input, " differ in type");
    Rebuild plan;
    plan.outputs = outputs();
    plan.replace[n.output()->name()] = n.input(input)->name();
    return apply(plan);
  }
  std::vector<std::pair<std::string, std::vector<int64_t>>> inputShapes() const override {
    std::vector<std::pair<std::string, std::vector<int64_t>>> shapes;
    for (const Value *input : graph_->userInputs()) {
      std::vector<int64_t> dims;
      for (const SymInt &dim : input->type().shape)
        dims.push_back(dim.constant().value_or(-1));
      shapes.emplace_back(input->name(), dims);
    }
    return shapes;
  }
  Status setInputDim(const std::string &name, size_t dim, int64_t size) override {
    const Value *input = graph_->findValue(name);
    if (!input || !input->isGraphInput() || dim >= input->type().rank())
      return makeError("no input %", name, " with dim ", dim);
    TensorType type = input->type();
    type.shape[dim] = SymInt(size);
    Rebuild plan;
    plan.outputs = outputs();
    plan.inputTypes[name] = type;
    return apply(plan);
  }
  Status save(const std::string &path) const override { return fx::saveFxFile(*graph_, path); }
  const char *extension() const override { return ".fx"; }

private:
  Status apply(const Rebuild &plan) {
    TC_ASSIGN_OR_RETURN(Graph rebuilt, rebuild(*graph_, plan));
    graph_ = std::make_shared<Graph>(std::move(rebuilt));
    return Status::ok();
  }
  std::shared_ptr<Graph> graph_;
};

class OnnxReducible : public Reducible {
public:
  explicit OnnxReducible(onnx::OnnxModel model) : model_(std::move(model)) {}
  std::unique_ptr<Reducible> clone() const override {
    return std::make_unique<OnnxReducible>(model_);
  }
  size_t numNodes() const override { return model_.numNodes(); }
  std::vector<std::string> nodeOutputs(size_t node) const override {
    return model_.nodeOutputs(node);
  }
  size_t numNodeInputs(size_t node) const override { return model_.numNodeInputs(node); }
  std::string describeNode(size_t node) const override { return model_.describeNode(node); }
  std::vector<std::string> outputs() const override { return model_.outputs(); }
  Status setOutputs(const std::vector<std::string> &values) override {
    return model_.setOutputs(values);
  }
  Status makeInputs(const std::vector<std::string> &values) override {
    return model_.makeInputs(values);
  }
  Status bypassNode(size_t node, size_t input) override { return model_.bypassNode(node, input); }
  std::vector<std::pair<std::string, std::vector<int64_t>>> inputShapes() const override {
    return model_.inputShapes();
  }
  Status setInputDim(const std::string &input, size_t dim, int64_t size) override {
    return model_.setInputDim(input, dim, size);
  }
  Status save(const std::string &path) const override { return model_.save(path); }
  const char *extension() const override { return ".onnx"; }

private:
  onnx::OnnxModel model_;
};

} // namespace

Expected<std::unique_ptr<Reducible>> loadReducible(const std::string &path,
                                                   const OpRegistry &registry) {
  if (path.ends_with(".onnx")) {
    TC_ASSIGN_OR_RETURN(onnx::OnnxModel model, onnx::OnnxModel::load(path));
    return std::unique_ptr<Reducible>(std::make_unique<OnnxReducible>(std::move(model)));
  }
  if (path.ends_with(".fx")) {
    TC_ASSIGN_OR_RETURN(Graph graph, fx::loadFxFile(path, registry));
    return std::unique_ptr<Reducible>(
        std::make_unique<GraphModel>(std::make_shared<Graph>(std::move(graph))));
  }
  return makeError(path, ": unknown model format (expected .fx or .onnx)");
}

} // namespace tensorc::debug
