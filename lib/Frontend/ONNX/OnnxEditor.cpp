// ONNX model editing on the protobuf: cuts, inputs from values, node removal, dim changes.
#include "tensorc/Frontend/ONNX/OnnxEditor.h"

#include "tensorc/Support/StrCat.h"

#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace tensorc::onnx {

struct OnnxModel::Impl {
  ::onnx::ModelProto model;
  /// Inferred (or declared) type of every value: inputs, initializers, node outputs.
  std::map<std::string, ::onnx::TypeProto> types;

  Status inferTypes();
  /// Removes nodes the outputs do not need, then initializers and inputs nothing reads.
  void prune();
  const ::onnx::TypeProto *typeOf(const std::string &name) const {
    auto it = types.find(name);
    return it == types.end() ? nullptr : &it->second;
  }
};

namespace {

/// The names a node reads, including those its subgraphs (If, Loop, Scan bodies) read from the
/// enclosing scope.
void collectReads(const ::onnx::NodeProto &node, std::set<std::string> &reads) {
  for (const std::string &input : node.input())
    if (!input.empty())
      reads.insert(input);
  for (const ::onnx::AttributeProto &attribute : node.attribute()) {
    std::vector<const ::onnx::GraphProto *> graphs;
    if (attribute.has_g())
      graphs.push_back(&attribute.g());
    for (const ::onnx::GraphProto &graph : attribute.graphs())
      graphs.push_back(&graph);
    for (const ::onnx::GraphProto *graph : graphs)
      for (const ::onnx::NodeProto &inner : graph->node())
        collectReads(inner, reads);
  }
}

bool hasTypeAndShape(const ::onnx::TypeProto &type) {
  return type.has_tensor_type() && type.tensor_type().has_shape() &&
         type.tensor_type().elem_type() != 0;
}

} // namespace

Status OnnxModel::Impl::inferTypes() {
  // Inference fills value_info; declared output shapes may conflict with inferred ones after a
  // dim change, so both start from the element types alone.
  ::onnx::GraphProto *graph = model.mutable_graph();
  graph->clear_value_info();
  for (::onnx::ValueInfoProto &output : *graph->mutable_output())
    output.mutable_type()->mutable_tensor_type()->clear_shape();
  try {
    ::onnx::shape_inference::InferShapes(model);
  } catch (const std::exception &error) {
    return makeError("ONNX shape inference failed: ", error.what());
  }
  types.clear();
  for (const ::onnx::TensorProto &initializer : graph->initializer()) {
    ::onnx::TypeProto type;
    type.mutable_tensor_type()->set_elem_type(initializer.data_type());
    ::onnx::TensorShapeProto *shape = type.mutable_tensor_type()->mutable_shape();
    for (int64_t dim : initializer.dims())
      shape->add_dim()->set_dim_value(dim);
    types[initializer.name()] = type;
  }
  for (const auto *list : {&graph->input(), &graph->value_info(), &graph->output()})
    for (const ::onnx::ValueInfoProto &info : *list)
      if (info.has_type())
        types[info.name()] = info.type();
  graph->clear_value_info();
  return Status::ok();
}

void OnnxModel::Impl::prune() {
  ::onnx::GraphProto *graph = model.mutable_graph();
  std::set<std::string> needed;
  for (const ::onnx::ValueInfoProto &output : graph->output())
    needed.insert(output.name());
  std::vector<bool> keep(size_t(graph->node_size()), false);
  for (int i = graph->node_size(); i-- > 0;) {
    const ::onnx::NodeProto &node = graph->node(i);
    bool used = false;
    for (const std::string &output : node.output())
      used = used || (!output.empty() && needed.count(output));
    if (!used)
      continue;
    keep[size_t(i)] = true;
    collectReads(node, needed);
  }
  google::protobuf::RepeatedPtrField<::onnx::NodeProto> nodes;
  for (int i = 0; i < graph->node_size(); ++i)
    if (keep[size_t(i)])
      *nodes.Add() = graph->node(i);
  graph->mutable_node()->Swap(&nodes);
  google::protobuf::RepeatedPtrField<::onnx::TensorProto> initializers;
  for (const ::onnx::TensorProto &initializer : graph->initializer())
    if (needed.count(initializer.name()))
      *initializers.Add() = initializer;
  graph->mutable_initializer()->Swap(&initializers);
  google::protobuf::RepeatedPtrField<::onnx::ValueInfoProto> inputs;
  for (const ::onnx::ValueInfoProto &input : graph->input())
    if (needed.count(input.name()))
      *inputs.Add() = input;
  graph->mutable_input()->Swap(&inputs);
}

OnnxModel::OnnxModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OnnxModel::OnnxModel(const OnnxModel &other) : impl_(std::make_unique<Impl>(*other.impl_)) {}
OnnxModel &OnnxModel::operator=(const OnnxModel &other) {
  if (this != &other)
    impl_ = std::make_unique<Impl>(*other.impl_);
  return *this;
}
OnnxModel::OnnxModel(OnnxModel &&other) noexcept = default;
OnnxModel &OnnxModel::operator=(OnnxModel &&other) noexcept = default;
OnnxModel::~OnnxModel() = default;

Expected<OnnxModel> OnnxModel::load(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return makeError(path, ": cannot open: ", std::strerror(errno));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  auto impl = std::make_unique<Impl>();
  if (!impl->model.ParseFromString(bytes.str()) || !impl->model.has_graph())
    return makeError(path, ": not a valid ONNX model (protobuf parse failed)");
  for (const ::onnx::TensorProto &initializer : impl->model.graph().initializer())
    if (initializer.data_location() == ::onnx::TensorProto::EXTERNAL)
      return makeError(path, ": initializer '", initializer.name(),
                       "' has external data, which the editor does not carry over");
  Status inferred = impl->inferTypes();
  if (!inferred)
    return inferred.takeError().withContext(path);
  // Outputs keep their declared element types; inference restores their shapes where it can.
  for (::onnx::ValueInfoProto &output : *impl->model.mutable_graph()->mutable_output())
    if (const ::onnx::TypeProto *type = impl->typeOf(output.name()))
      *output.mutable_type() = *type;
  return OnnxModel(std::move(impl));
}

Status OnnxModel::save(const std::string &path) const {
  std::string bytes;
  if (!impl_->model.SerializeToString(&bytes))
    return makeError(path, ": cannot serialize the model");
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  out.close();
  if (!out)
    return makeError(path, ": write failed: ", std::strerror(errno));
  return Status::ok();
}

size_t OnnxModel::numNodes() const { return size_t(impl_->model.graph().node_size()); }

std::vector<std::string> OnnxModel::nodeOutputs(size_t node) const {
  std::vector<std::string> names;
  for (const std::string &output : impl_->model.graph().node(int(node)).output())
    if (!output.empty())
      names.push_back(output);
  return names;
}

size_t OnnxModel::numNodeInputs(size_t node) const {
  return size_t(impl_->model.graph().node(int(node)).input_size());
}

std::string OnnxModel::describeNode(size_t index) const {
  const ::onnx::NodeProto &node = impl_->model.graph().node(int(index));
  std::string name = node.name().empty() && node.output_size() ? node.output(0) : node.name();
  return strCat("node '", name, "' (", node.op_type(), ")");
}

std::vector<std::string> OnnxModel::outputs() const {
  std::vector<std::string> names;
  for (const ::onnx::ValueInfoProto &output : impl_->model.graph().output())
    names.push_back(output.name());
  return names;
}

std::map<std::string, std::string> OnnxModel::nodesByOutput() const {
  std::map<std::string, std::string> nodes;
  for (size_t i = 0; i < numNodes(); ++i)
    for (const std::string &output : nodeOutputs(i))
      nodes[output] = describeNode(i);
  return nodes;
}

Status OnnxModel::setOutputs(const std::vector<std::string> &names) {
  ::onnx::GraphProto *graph = impl_->model.mutable_graph();
  google::protobuf::RepeatedPtrField<::onnx::ValueInfoProto> outputs;
  for (const std::string &name : names) {
    const ::onnx::TypeProto *type = impl_->typeOf(name);
    if (!type || !type->has_tensor_type() || type->tensor_type().elem_type() == 0)
      return makeError("value '", name, "' has no inferred type");
    ::onnx::ValueInfoProto *output = outputs.Add();
    output->set_name(name);
    *output->mutable_type() = *type;
  }
  graph->mutable_output()->Swap(&outputs);
  impl_->prune();
  return Status::ok();
}

Status OnnxModel::makeInputs(const std::vector<std::string> &names) {
  ::onnx::GraphProto *graph = impl_->model.mutable_graph();
  std::set<std::string> wanted(names.begin(), names.end());
  for (const std::string &name : names) {
    const ::onnx::TypeProto *type = impl_->typeOf(name);
    if (!type || !hasTypeAndShape(*type))
      return makeError("value '", name, "' has no inferred type and shape");
  }
  // The producers' outputs become inputs: drop those outputs from their nodes (a node with no
  // output left is removed by pruning; one with others keeps computing them).
  for (::onnx::NodeProto &node : *graph->mutable_node())
    for (int o = 0; o < node.output_size(); ++o)
      if (wanted.count(node.output(o)))
        node.set_output(o, "");
  for (const std::string &name : names) {
    ::onnx::ValueInfoProto *input = graph->add_input();
    input->set_name(name);
    *input->mutable_type() = *impl_->typeOf(name);
  }
  impl_->prune();
  // Nodes left with only omitted outputs are gone; trailing empty outputs are legal ONNX.
  return Status::ok();
}

Status OnnxModel::bypassNode(size_t index, size_t input) {
  ::onnx::GraphProto *graph = impl_->model.mutable_graph();
  const ::onnx::NodeProto &node = graph->node(int(index));
  if (input >= size_t(node.input_size()) || node.input(int(input)).empty() ||
      node.output_size() < 1)
    return makeError(describeNode(index), ": no input ", input);
  std::string from = node.output(0), to = node.input(int(input));
  const ::onnx::TypeProto *a = impl_->typeOf(from), *b = impl_->typeOf(to);
  if (!a || !b || !hasTypeAndShape(*a) || a->SerializeAsString() != b->SerializeAsString())
    return makeError(describeNode(index), ": its output and input ", input, " differ in type");
  for (::onnx::NodeProto &other : *graph->mutable_node())
    for (int i = 0; i < other.input_size(); ++i)
      if (other.input(i) == from)
        other.set_input(i, to);
  for (::onnx::ValueInfoProto &output : *graph->mutable_output())
    if (output.name() == from)
      output.set_name(to);
  graph->mutable_node()->DeleteSubrange(int(index), 1);
  impl_->prune();
  return Status::ok();
}

std::vector<std::pair<std::string, std::vector<int64_t>>> OnnxModel::inputShapes() const {
  std::set<std::string> initializers;
  for (const ::onnx::TensorProto &initializer : impl_->model.graph().initializer())
    initializers.insert(initializer.name());
  std::vector<std::pair<std::string, std::vector<int64_t>>> shapes;
  for (const ::onnx::ValueInfoProto &input : impl_->model.graph().input()) {
    if (initializers.count(input.name()))
      continue;
    std::vector<int64_t> dims;
    if (input.type().has_tensor_type())
      for (const ::onnx::TensorShapeProto_Dimension &dim : input.type().tensor_type().shape().dim())
        dims.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
    shapes.emplace_back(input.name(), dims);
  }
  return shapes;
}

Status OnnxModel::setInputDim(const std::string &name, size_t dim, int64_t size) {
  ::onnx::GraphProto *graph = impl_->model.mutable_graph();
  for (::onnx::ValueInfoProto &input : *graph->mutable_input()) {
    if (input.name() != name)
      continue;
    ::onnx::TensorShapeProto *shape = input.mutable_type()->mutable_tensor_type()->mutable_shape();
    if (dim >= size_t(shape->dim_size()))
      return makeError("input '", name, "' has no dim ", dim);
    shape->mutable_dim(int(dim))->set_dim_value(size);
    TC_RETURN_IF_ERROR(impl_->inferTypes());
    for (::onnx::ValueInfoProto &output : *graph->mutable_output()) {
      const ::onnx::TypeProto *type = impl_->typeOf(output.name());
      if (!type || !hasTypeAndShape(*type))
        return makeError("output '", output.name(), "' has no inferred shape after the change");
      *output.mutable_type() = *type;
    }
    return Status::ok();
  }
  return makeError("no input '", name, "'");
}

} // namespace tensorc::onnx
