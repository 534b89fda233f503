// ONNX importer: reads a ModelProto, checks it, and converts its nodes through the converter table.
#include "tensorc/Frontend/ONNX/OnnxImporter.h"

#include "ImportState.h"
#include "OnnxConverters.h"
#include "OnnxTensor.h"
#include "tensorc/IR/Verifier.h"
#include "tensorc/Interp/Interpreter.h"
#include "tensorc/Support/Identifier.h"
#include "tensorc/Support/Limits.h"
#include "tensorc/Support/Log.h"
#include "tensorc/Support/MappedFile.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <sys/stat.h>

#include <google/protobuf/io/coded_stream.h>

namespace tensorc::onnx {

// ---- The importer --------------------------------------------------------------------------

namespace {

constexpr uint64_t kMaxModelBytes = uint64_t(2) << 30; // protobuf's own limit
/// Protobuf's default message nesting limit (100) fails models with more than ~30 levels of
/// subgraphs as "corrupt"; parse deeper ones, so that the importer can say they nest too deeply.
constexpr int kProtobufRecursionLimit = 512;

/// Parses `bytes` as a `Message`, allowing kProtobufRecursionLimit levels of nesting.
template <typename Message> bool parseMessage(const std::string &bytes, Message &message) {
  google::protobuf::io::CodedInputStream stream(reinterpret_cast<const uint8_t *>(bytes.data()),
                                                int(bytes.size()));
  stream.SetRecursionLimit(kProtobufRecursionLimit);
  return message.ParseFromCodedStream(&stream) && stream.ConsumedEntireMessage();
}

Expected<std::string> readFile(const std::string &path) {
  return readRegularFile(path, kMaxModelBytes - 1,
                         "larger than 2 GiB (use external data for the weights)");
}

std::string directoryOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

bool isDefaultDomain(const std::string &domain) { return domain.empty() || domain == "ai.onnx"; }

/// A valid identifier for a dim_param ("batch size" -> "batch_size").
std::string symbolName(const std::string &param) { return toIdentifier(param, "s_"); }

Expected<TensorType> typeFromValueInfo(const ::onnx::ValueInfoProto &info, ImportState &state,
                                       const std::string &what) {
  if (!info.has_type() || !info.type().has_tensor_type())
    return makeError(what, " '", info.name(), "' has no tensor type");
  const auto &tensorType = info.type().tensor_type();
  std::optional<DType> dtype = dtypeFromOnnx(tensorType.elem_type());
  if (!dtype)
    return makeError(what, " '", info.name(), "': unsupported element type ",
                     onnxTypeName(tensorType.elem_type()));
  if (!tensorType.has_shape())
    return makeError(what, " '", info.name(), "' has no shape (its rank is unknown)");
  Shape shape;
  for (const auto &dim : tensorType.shape().dim()) {
    if (dim.has_dim_value()) {
      if (dim.dim_value() < 0)
        return makeError(what, " '", info.name(), "' has negative dim ", dim.dim_value());
      shape.emplace_back(dim.dim_value());
    } else if (dim.has_dim_param() && !dim.dim_param().empty()) {
      shape.push_back(SymInt::symbol(symbolName(dim.dim_param())));
    } else {
      shape.push_back(SymInt::symbol(strCat("unk", state.freshSymbols++)));
    }
  }
  TensorType type(*dtype, std::move(shape));
  TC_RETURN_IF_ERROR(checkStaticSize(type, strCat(what, " '", info.name(), "'")));
  return type;
}

/// Declared output types must agree with inference (constant dims and dtype; symbols are free).
Status checkDeclaredOutput(const ::onnx::ValueInfoProto &info, const Value &value) {
  if (!info.has_type() || !info.type().has_tensor_type())
    return Status::ok();
  const auto &tensorType = info.type().tensor_type();
  std::optional<DType> dtype = dtypeFromOnnx(tensorType.elem_type());
  if (tensorType.elem_type() != 0 && dtype && *dtype != value.type().dtype)
    return makeError("output '", info.name(), "' is declared ", dtypeName(*dtype), " but computes ",
                     value.type().str());
  if (!tensorType.has_shape())
    return Status::ok();
  const auto &dims = tensorType.shape().dim();
  if (size_t(dims.size()) != value.type().rank())
    return makeError("output '", info.name(), "' is declared with rank ", dims.size(),
                     " but computes ", value.type().str());
  for (int i = 0; i < dims.size(); ++i) {
    std::optional<int64_t> inferred = value.type().shape[size_t(i)].constant();
    if (dims[i].has_dim_value() && inferred && *inferred != dims[i].dim_value())
      return makeError("output '", info.name(), "' is declared with dim ", i, " = ",
                       dims[i].dim_value(), " but computes ", value.type().str());
  }
  return Status::ok();
}

/// The deepest nesting of subgraphs under `graph` (0: none), counted up to kMaxSubgraphDepth + 1.
int subgraphDepth(const ::onnx::GraphProto &graph, int depth = 0) {
  if (depth > kMaxSubgraphDepth)
    return depth;
  int deepest = depth;
  for (const auto &node : graph.node())
    for (const auto &attr : node.attribute()) {
      if (attr.has_g())
        deepest = std::max(deepest, subgraphDepth(attr.g(), depth + 1));
      for (const auto &subgraph : attr.graphs())
        deepest = std::max(deepest, subgraphDepth(subgraph, depth + 1));
    }
  return deepest;
}

/// Op types with no converter, in `graph` and the subgraphs of its attributes.
void collectUnsupported(const ::onnx::GraphProto &graph, std::map<std::string, int> &unsupported) {
  for (const auto &node : graph.node()) {
    std::string key =
        isDefaultDomain(node.domain()) ? node.op_type() : node.domain() + "::" + node.op_type();
    if (!isDefaultDomain(node.domain()) || !findConverter(node.op_type()))
      ++unsupported[key];
    for (const auto &attr : node.attribute()) {
      if (attr.has_g())
        collectUnsupported(attr.g(), unsupported);
      for (const auto &subgraph : attr.graphs())
        collectUnsupported(subgraph, unsupported);
    }
  }
}

} // namespace

/// Converts the nodes of `graph` in order (the top graph or an inlined subgraph).
Status convertNodes(const ::onnx::GraphProto &graph, ImportState &state) {
  for (const auto &node : graph.node()) {
    ConvertContext context(state, node, state.opset);
    for (const std::string &input : node.input())
      if (!input.empty() && !state.values.count(input) && !state.symbolic.count(input))
        return context.error(strCat("input '", input,
                                    "' is not defined before use (nodes must be in topological "
                                    "order)"));
    // ONNX values are assigned once: a second writer would silently rename or shadow the first.
    std::set<std::string> outputs;
    for (const std::string &output : node.output()) {
      if (output.empty())
        continue;
      if (!outputs.insert(output).second)
        return context.error(strCat("output '", output, "' is listed twice"));
      if (state.values.count(output) || state.symbolic.count(output))
        return context.error(strCat("output '", output,
                                    "' is already defined by an earlier node, a graph input or "
                                    "an initializer (ONNX values are assigned once)"));
    }
    ConvertFn convert = findConverter(node.op_type());
    if (!convert || !isDefaultDomain(node.domain()))
      return context.error("unsupported op");
    Status converted = convert(context);
    // A mistyped attribute read as its default may have misled the converter: report the cause.
    if (context.attrTypeError())
      return context.error(*context.attrTypeError());
    if (!converted)
      return converted;
    for (int i = 0; i < node.output_size(); ++i)
      if (!node.output(i).empty() && !state.values.count(node.output(i)) &&
          !state.symbolic.count(node.output(i)))
        return context.error(strCat("internal: output '", node.output(i), "' was not produced"));
    log::debug("import", strCat("converted ", context.describe()));
  }
  return Status::ok();
}

namespace {

Status importGraph(const ::onnx::ModelProto &model, const ImportOptions &options,
                   ImportState &state) {
  const ::onnx::GraphProto &graph = model.graph();
  int64_t opset = -1;
  for (const auto &entry : model.opset_import())
    if (isDefaultDomain(entry.domain()))
      opset = entry.version();
  if (opset < 0)
    opset = model.ir_version() < 3 ? 1 : -1;
  if (opset < 0)
    return makeError("the model imports no opset of the default ONNX domain");
  if (opset > 23)
    return makeError("opset ", opset, " is newer than tensorc supports (up to 23)");

  if (subgraphDepth(graph) > kMaxSubgraphDepth)
    return makeError("subgraphs (If branches, Loop and Scan bodies) are nested more than ",
                     kMaxSubgraphDepth, " levels deep, tensorc's limit");

  // Every op type must be known before anything is converted: report them all at once.
  std::map<std::string, int> unsupported;
  collectUnsupported(graph, unsupported);
  if (!unsupported.empty()) {
    std::vector<std::string> items;
    for (const auto &[op, count] : unsupported)
      items.push_back(strCat(op, " (", count, ")"));
    return makeError("unsupported op type", unsupported.size() > 1 ? "s" : "", ": ",
                     join(items, ", "));
  }

  // Initializers are constants: placeholders with weights.
  std::set<std::string> initializerNames;
  std::vector<std::pair<std::string, Tensor>> initializers;
  for (const auto &proto : graph.initializer()) {
    if (proto.name().empty())
      return makeError("an initializer has no name");
    if (!initializerNames.insert(proto.name()).second)
      return makeError("initializer '", proto.name(), "' is defined twice");
    TC_ASSIGN_OR_RETURN(Tensor tensor, tensorFromProto(proto, state.modelDir,
                                                       "initializer '" + proto.name() + "'"));
    initializers.emplace_back(proto.name(), std::move(tensor));
  }
  if (graph.sparse_initializer_size() > 0)
    return makeError("sparse initializers are not supported");

  for (const auto &info : graph.input()) {
    if (initializerNames.count(info.name()))
      continue;
    if (state.values.count(info.name()))
      return makeError("graph input '", info.name(), "' is listed twice");
    TC_ASSIGN_OR_RETURN(TensorType type, typeFromValueInfo(info, state, "graph input"));
    if (auto it = options.specializedInputs.find(info.name());
        it != options.specializedInputs.end()) {
      const Tensor &tensor = it->second;
      bool fits = tensor.dtype() == type.dtype && tensor.rank() == type.rank();
      for (size_t i = 0; fits && i < type.rank(); ++i) {
        std::optional<int64_t> dim = type.shape[i].constant();
        fits = !dim || *dim == tensor.dim(i);
      }
      if (!fits)
        return makeError("specialized input '", info.name(), "' is ",
                         describeShape(tensor.dtype(), tensor.shape()), " but the model declares ",
                         type.str());
      const OpDef *def = state.registry.get(OpId::Constant);
      AttrMap attrs;
      attrs.emplace("value", Attribute(tensor));
      TC_ASSIGN_OR_RETURN(Node * node,
                          state.graph.addNode(*def, {}, std::move(attrs), info.name()));
      state.constants[node->output()] = tensor;
      state.values[info.name()] = node->output();
      continue;
    }
    TC_ASSIGN_OR_RETURN(Value * value,
                        state.graph.addInput(state.graph.uniqueName(info.name()), std::move(type)));
    state.values[info.name()] = value;
  }
  for (const auto &[name, tensor] : options.specializedInputs)
    if (!state.values.count(name))
      return makeError("specialized input '", name, "' is not an input of the model");
  for (auto &[name, tensor] : initializers) {
    TC_ASSIGN_OR_RETURN(Value * value, state.graph.addInput(
                                           state.graph.uniqueName(name),
                                           TensorType::fromStatic(tensor.dtype(), tensor.shape())));
    state.graph.weights()[value->name()] = tensor;
    state.constants[value] = tensor;
    state.values[name] = value;
  }

  state.opset = opset;
  TC_RETURN_IF_ERROR(convertNodes(graph, state));

  std::vector<Value *> outputs;
  std::set<std::string> outputNames;
  for (const auto &info : graph.output()) {
    // Bundles, --outputs files and the runtime's API find outputs by name.
    if (!outputNames.insert(info.name()).second)
      return makeError("graph output '", info.name(), "' is listed twice");
    if (!state.values.count(info.name()) && !state.symbolic.count(info.name()))
      return makeError("graph output '", info.name(), "' is not computed by any node");
    if (!state.values.count(info.name())) {
      const SymVector &vector = state.symbolic.at(info.name());
      if (!allConstant(vector))
        return makeError("graph output '", info.name(), "' is a symbolic shape [",
                         join(vector.elements, ", "), "]; tensorc cannot return it");
      const OpDef *def = state.registry.get(OpId::Constant);
      AttrMap attrs;
      attrs.emplace("value", Attribute(tensorFromSymVector(vector)));
      TC_ASSIGN_OR_RETURN(Node * node,
                          state.graph.addNode(*def, {}, std::move(attrs), info.name()));
      state.values[info.name()] = node->output();
    }
    Value *value = state.values.at(info.name());
    TC_RETURN_IF_ERROR(checkDeclaredOutput(info, *value));
    outputs.push_back(value);
  }
  if (outputs.empty())
    return makeError("the graph has no outputs");
  state.graph.setOutputs(std::move(outputs));
  return verifyGraph(state.graph);
}

} // namespace

Expected<Graph> importOnnxFile(const std::string &path, const OpRegistry &registry,
                               const ImportOptions &options) {
  TC_ASSIGN_OR_RETURN(std::string bytes, readFile(path));
  Expected<Graph> graph = importOnnxBytes(bytes, directoryOf(path), registry, options);
  if (!graph)
    return graph.takeError().withContext(path);
  return graph;
}

Expected<Graph> importOnnxBytes(const std::string &bytes, const std::string &modelDir,
                                const OpRegistry &registry, const ImportOptions &options) {
  ::onnx::ModelProto model;
  if (!parseMessage(bytes, model))
    return makeError("not a valid ONNX model (protobuf parse failed: a truncated or corrupt "
                     "file, or messages nested more than ",
                     kProtobufRecursionLimit, " deep)");
  if (!model.has_graph())
    return makeError("the model has no graph");
  ImportState state(registry, modelDir);
  TC_ASSIGN_OR_RETURN(state.maxTensorBytes, resolveMaxTensorBytes(options.maxTensorBytes));
  TC_RETURN_IF_ERROR(importGraph(model, options, state));
  return std::move(state.graph);
}

Expected<std::vector<std::string>> listOnnxInputs(const std::string &path) {
  TC_ASSIGN_OR_RETURN(std::string bytes, readFile(path));
  ::onnx::ModelProto model;
  if (!parseMessage(bytes, model))
    return makeError(path, ": not a valid ONNX model");
  std::set<std::string> initializers;
  for (const auto &proto : model.graph().initializer())
    initializers.insert(proto.name());
  std::vector<std::string> names;
  for (const auto &info : model.graph().input())
    if (!initializers.count(info.name()))
      names.push_back(info.name());
  return names;
}

Expected<Tensor> readTensorProtoFile(const std::string &path) {
  TC_ASSIGN_OR_RETURN(std::string bytes, readFile(path));
  ::onnx::TensorProto proto;
  if (!parseMessage(bytes, proto))
    return makeError(path, ": not a valid TensorProto");
  return tensorFromProto(proto, "", path);
}

} // namespace tensorc::onnx
