// ONNX importer: reads a ModelProto, checks it, and converts its nodes through the converter table.
#include "tensorc/Frontend/ONNX/OnnxImporter.h"

#include "ConvertContext.h"
#include "OnnxTensor.h"
#include "tensorc/IR/Verifier.h"
#include "tensorc/Interp/Interpreter.h"
#include "tensorc/Support/Log.h"
#include "tensorc/Support/StrCat.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <sys/stat.h>

namespace tensorc::onnx {

/// Import-time state shared by the converters of one model.
class ImportState {
public:
  ImportState(const OpRegistry &registry, std::string modelDir)
      : registry(registry), modelDir(std::move(modelDir)) {}

  const OpRegistry &registry;
  std::string modelDir;
  Graph graph;
  /// ONNX value name -> graph value (bound lazily for symbolic vectors).
  std::map<std::string, Value *> values;
  /// ONNX value name -> integer vector known at import time (shape arithmetic).
  std::map<std::string, SymVector> symbolic;
  /// Graph values whose data is known at import time.
  std::map<const Value *, Tensor> constants;
  /// Values already renamed after an ONNX output.
  std::set<const Value *> named;
  size_t freshSymbols = 0;
  int64_t opset = 0;
};

Status convertNodes(const ::onnx::GraphProto &graph, ImportState &state);

namespace {

/// Results larger than this are left to run time rather than folded during import.
constexpr int64_t kFoldLimit = 1 << 16;

bool hasSymbolicInts(const AttrMap &attrs) {
  for (const auto &[name, value] : attrs)
    if (value.isInts())
      for (const SymInt &entry : value.asInts())
        if (!entry.isConstant())
          return true;
  return false;
}

Tensor tensorFromSymVector(const SymVector &vector) {
  std::vector<int64_t> shape;
  if (!vector.scalar)
    shape.push_back(int64_t(vector.elements.size()));
  Tensor tensor = Tensor::zerosUnchecked(DType::I64, shape);
  for (size_t i = 0; i < vector.elements.size(); ++i)
    tensor.setInt(int64_t(i), *vector.elements[i].constant());
  return tensor;
}

bool allConstant(const SymVector &vector) {
  for (const SymInt &element : vector.elements)
    if (!element.isConstant())
      return false;
  return true;
}

} // namespace

// ---- ConvertContext ------------------------------------------------------------------------

std::string ConvertContext::describe() const {
  std::string name = node_.name().empty() && node_.output_size() ? node_.output(0) : node_.name();
  return strCat("node '", name, "' (", node_.op_type(), ")");
}

Error ConvertContext::error(const std::string &message) const {
  return makeError(describe(), ": ", message);
}

bool ConvertContext::hasInput(size_t i) const {
  return i < numInputs() && !node_.input(int(i)).empty();
}

Expected<Value *> ConvertContext::input(size_t i) {
  if (!hasInput(i))
    return error(strCat("input ", i, " is missing"));
  const std::string &name = node_.input(int(i));
  if (auto it = state_.values.find(name); it != state_.values.end())
    return it->second;
  auto symbolic = state_.symbolic.find(name);
  if (symbolic == state_.symbolic.end())
    return error(strCat("input '", name, "' is not defined before use"));
  if (!allConstant(symbolic->second))
    return error(strCat("input '", name, "' is a symbolic shape value [",
                        join(symbolic->second.elements, ", "),
                        "] used as tensor data, which is not supported"));
  TC_ASSIGN_OR_RETURN(Value * value, constant(tensorFromSymVector(symbolic->second)));
  state_.values[name] = value;
  return value;
}

Expected<TensorType> ConvertContext::inputType(size_t i) {
  if (!hasInput(i))
    return error(strCat("input ", i, " is missing"));
  const std::string &name = node_.input(int(i));
  if (auto it = state_.values.find(name); it != state_.values.end())
    return it->second->type();
  if (auto it = state_.symbolic.find(name); it != state_.symbolic.end())
    return it->second.scalar ? TensorType(DType::I64, {})
                             : TensorType(DType::I64, {SymInt(int64_t(it->second.elements.size()))});
  return error(strCat("input '", name, "' is not defined before use"));
}

std::optional<Tensor> ConvertContext::constantInput(size_t i) {
  if (!hasInput(i))
    return std::nullopt;
  const std::string &name = node_.input(int(i));
  if (auto it = state_.values.find(name); it != state_.values.end()) {
    auto found = state_.constants.find(it->second);
    if (found != state_.constants.end())
      return found->second;
    return std::nullopt;
  }
  if (auto it = state_.symbolic.find(name); it != state_.symbolic.end() && allConstant(it->second))
    return tensorFromSymVector(it->second);
  return std::nullopt;
}

std::optional<SymVector> ConvertContext::symbolicInput(size_t i) {
  if (!hasInput(i))
    return std::nullopt;
  if (auto it = state_.symbolic.find(node_.input(int(i))); it != state_.symbolic.end())
    return it->second;
  std::optional<Tensor> tensor = constantInput(i);
  if (!tensor || !isIntegral(tensor->dtype()) || tensor->rank() > 1)
    return std::nullopt;
  SymVector vector;
  vector.scalar = tensor->rank() == 0;
  for (int64_t k = 0; k < tensor->numel(); ++k)
    vector.elements.emplace_back(tensor->getInt(k));
  return vector;
}

Expected<std::vector<int64_t>> ConvertContext::constantInts(size_t i, const std::string &what) {
  std::optional<Tensor> tensor = constantInput(i);
  if (!tensor)
    return error(strCat(what, " (input ", i, ") must be a constant known at import time"));
  if (!isIntegral(tensor->dtype()))
    return error(strCat(what, " must hold integers, not ", dtypeName(tensor->dtype())));
  std::vector<int64_t> values;
  for (int64_t k = 0; k < tensor->numel(); ++k)
    values.push_back(tensor->getInt(k));
  return values;
}

Expected<std::vector<double>> ConvertContext::constantFloats(size_t i, const std::string &what) {
  std::optional<Tensor> tensor = constantInput(i);
  if (!tensor)
    return error(strCat(what, " (input ", i, ") must be a constant known at import time"));
  std::vector<double> values;
  for (int64_t k = 0; k < tensor->numel(); ++k)
    values.push_back(tensor->getDouble(k));
  return values;
}

const ::onnx::AttributeProto *ConvertContext::findAttr(const std::string &name) const {
  for (const auto &attr : node_.attribute())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

bool ConvertContext::hasAttr(const std::string &name) const { return findAttr(name) != nullptr; }

int64_t ConvertContext::intAttr(const std::string &name, int64_t defaultValue) const {
  const auto *attr = findAttr(name);
  return attr ? attr->i() : defaultValue;
}

double ConvertContext::floatAttr(const std::string &name, double defaultValue) const {
  const auto *attr = findAttr(name);
  return attr ? double(attr->f()) : defaultValue;
}

std::string ConvertContext::stringAttr(const std::string &name,
                                       const std::string &defaultValue) const {
  const auto *attr = findAttr(name);
  return attr ? attr->s() : defaultValue;
}

std::vector<int64_t> ConvertContext::intsAttr(const std::string &name,
                                              const std::vector<int64_t> &defaultValue) const {
  const auto *attr = findAttr(name);
  return attr ? std::vector<int64_t>(attr->ints().begin(), attr->ints().end()) : defaultValue;
}

std::vector<double> ConvertContext::floatsAttr(const std::string &name) const {
  const auto *attr = findAttr(name);
  return attr ? std::vector<double>(attr->floats().begin(), attr->floats().end())
              : std::vector<double>{};
}

Expected<Tensor> ConvertContext::tensorAttr(const std::string &name) const {
  const auto *attr = findAttr(name);
  if (!attr || !attr->has_t())
    return error(strCat("missing tensor attribute '", name, "'"));
  Expected<Tensor> tensor = tensorFromProto(attr->t(), state_.modelDir, "attribute " + name);
  if (!tensor)
    return error(tensor.error().message());
  return tensor;
}

Status ConvertContext::checkAttrs(std::initializer_list<const char *> known) const {
  for (const auto &attr : node_.attribute()) {
    bool found = false;
    for (const char *name : known)
      found = found || attr.name() == name;
    if (!found)
      return error(strCat("attribute '", attr.name(), "' is not supported"));
  }
  return Status::ok();
}

std::string ConvertContext::valueHint(std::string_view op) const {
  // "<first output>_<op>": readable, and leaves the ONNX output's own name for setOutput.
  std::string base = node_.output_size() && !node_.output(0).empty() ? node_.output(0)
                                                                     : node_.op_type();
  size_t dot = op.rfind('.');
  return strCat(base, "_", dot == std::string_view::npos ? op : op.substr(dot + 1));
}

Expected<std::vector<Value *>> ConvertContext::emitMulti(std::string_view op,
                                                         std::vector<Value *> inputs,
                                                         AttrMap attrs) {
  const OpDef *def = state_.registry.lookup(op);
  if (!def)
    return error(strCat("internal: no registry op ", op));
  std::string hint = valueHint(op);

  // Fold when every operand is known and the results are small.
  bool foldable = !hasSymbolicInts(attrs);
  std::vector<const Tensor *> operands;
  for (Value *input : inputs) {
    auto it = input ? state_.constants.find(input) : state_.constants.end();
    if (input && it == state_.constants.end()) {
      foldable = false;
      break;
    }
    operands.push_back(input ? &it->second : nullptr);
  }
  if (foldable) {
    Expected<std::vector<Tensor>> results = interp::evaluateOp(*def, operands, attrs);
    if (!results)
      return error(results.error().message());
    bool small = true;
    for (const Tensor &result : *results)
      small = small && result.numel() <= kFoldLimit;
    if (small) {
      std::vector<Value *> values;
      for (Tensor &result : *results) {
        TC_ASSIGN_OR_RETURN(Value * value, constant(std::move(result)));
        values.push_back(value);
      }
      return values;
    }
  }
  Expected<Node *> node = state_.graph.addNode(*def, std::move(inputs), std::move(attrs), hint);
  if (!node)
    return error(node.error().message());
  return (*node)->outputs();
}

Expected<Value *> ConvertContext::emit(std::string_view op, std::vector<Value *> inputs,
                                       AttrMap attrs) {
  TC_ASSIGN_OR_RETURN(std::vector<Value *> results,
                      emitMulti(op, std::move(inputs), std::move(attrs)));
  return results.front();
}

Expected<Value *> ConvertContext::constant(Tensor tensor) {
  const OpDef *def = state_.registry.get(OpId::Constant);
  std::string hint = valueHint("constant");
  AttrMap attrs;
  attrs.emplace("value", Attribute(tensor));
  Expected<Node *> node = state_.graph.addNode(*def, {}, std::move(attrs), hint);
  if (!node)
    return error(node.error().message());
  state_.constants[(*node)->output()] = std::move(tensor);
  return (*node)->output();
}

Expected<Value *> ConvertContext::scalar(double value, DType dtype) {
  Tensor tensor = Tensor::zerosUnchecked(dtype, {});
  tensor.setDouble(0, value);
  return constant(std::move(tensor));
}

Expected<Value *> ConvertContext::cast(Value *value, DType dtype) {
  if (value->type().dtype == dtype)
    return value;
  AttrMap attrs;
  attrs.emplace("dtype", Attribute(dtype));
  return emit("prims.convert_element_type", {value}, std::move(attrs));
}

bool ConvertContext::hasOutput(size_t i) const {
  return i < numOutputs() && !node_.output(int(i)).empty();
}

Status ConvertContext::setOutput(size_t i, Value *value) {
  if (!hasOutput(i))
    return Status::ok(); // an omitted optional output
  const std::string &name = node_.output(int(i));
  state_.values[name] = value;
  if (!value->isGraphInput() && !state_.named.count(value)) {
    std::string wanted = state_.graph.uniqueName(name);
    if (state_.graph.renameValue(value, wanted).isOk())
      state_.named.insert(value);
  }
  return Status::ok();
}

Status ConvertContext::setSymbolicOutput(size_t i, SymVector vector) {
  if (!hasOutput(i))
    return Status::ok();
  state_.symbolic[node_.output(int(i))] = std::move(vector);
  return Status::ok();
}

Expected<const ::onnx::GraphProto *> ConvertContext::graphAttr(const std::string &name) const {
  const auto *attr = findAttr(name);
  if (!attr || !attr->has_g())
    return error(strCat("missing graph attribute '", name, "'"));
  return &attr->g();
}

Expected<std::vector<Value *>> ConvertContext::inlineGraph(const ::onnx::GraphProto &body,
                                                           const std::vector<Value *> &inputs) {
  if (size_t(body.input_size()) != inputs.size())
    return error(strCat("the subgraph takes ", body.input_size(), " inputs, given ",
                        inputs.size()));
  // The names the body defines shadow outer ones while it is converted; restore them after.
  std::vector<std::string> defined;
  for (const auto &info : body.input())
    defined.push_back(info.name());
  for (const auto &proto : body.initializer())
    defined.push_back(proto.name());
  for (const auto &node : body.node())
    for (const std::string &output : node.output())
      if (!output.empty())
        defined.push_back(output);
  std::map<std::string, Value *> savedValues;
  std::map<std::string, SymVector> savedSymbolic;
  for (const std::string &name : defined) {
    if (auto it = state_.values.find(name); it != state_.values.end()) {
      savedValues.emplace(name, it->second);
      state_.values.erase(it);
    }
    if (auto it = state_.symbolic.find(name); it != state_.symbolic.end()) {
      savedSymbolic.emplace(name, it->second);
      state_.symbolic.erase(it);
    }
  }
  auto restore = [&] {
    for (const std::string &name : defined) {
      state_.values.erase(name);
      state_.symbolic.erase(name);
    }
    for (auto &[name, value] : savedValues)
      state_.values[name] = value;
    for (auto &[name, vector] : savedSymbolic)
      state_.symbolic[name] = vector;
  };

  for (size_t i = 0; i < inputs.size(); ++i)
    state_.values[body.input(int(i)).name()] = inputs[i];
  for (const auto &proto : body.initializer()) {
    Expected<Tensor> tensor = tensorFromProto(proto, state_.modelDir,
                                              "subgraph initializer '" + proto.name() + "'");
    if (!tensor) {
      restore();
      return error(tensor.error().message());
    }
    Expected<Value *> value = constant(std::move(*tensor));
    if (!value) {
      restore();
      return value.takeError();
    }
    state_.values[proto.name()] = *value;
  }
  Status converted = convertNodes(body, state_);
  std::vector<Value *> outputs;
  for (int i = 0; converted && i < body.output_size(); ++i) {
    const std::string &name = body.output(i).name();
    if (auto it = state_.values.find(name); it != state_.values.end()) {
      outputs.push_back(it->second);
      continue;
    }
    auto symbolic = state_.symbolic.find(name);
    if (symbolic == state_.symbolic.end() || !allConstant(symbolic->second)) {
      converted = error(strCat("subgraph output '", name, "' has no tensor value"));
      break;
    }
    Expected<Value *> value = constant(tensorFromSymVector(symbolic->second));
    if (!value) {
      converted = value.takeError();
      break;
    }
    outputs.push_back(*value);
  }
  restore();
  if (!converted)
    return converted.takeError().withContext(describe() + ": in its subgraph");
  return outputs;
}

const ConverterTable &converterTable() {
  static const ConverterTable table = [] {
    ConverterTable t;
    addElementwiseConverters(t);
    addReductionConverters(t);
    addNNConverters(t);
    addShapeConverters(t);
    addMiscConverters(t);
    return t;
  }();
  return table;
}

// ---- The importer --------------------------------------------------------------------------

namespace {

constexpr uint64_t kMaxModelBytes = uint64_t(2) << 30; // protobuf's own limit

Expected<std::string> readFile(const std::string &path) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0)
    return makeError(path, ": cannot open: ", std::strerror(errno));
  if (!S_ISREG(info.st_mode))
    return makeError(path, ": not a regular file");
  if (uint64_t(info.st_size) >= kMaxModelBytes)
    return makeError(path, ": larger than 2 GiB (use external data for the weights)");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream contents;
  contents << in.rdbuf();
  if (!in && !in.eof())
    return makeError(path, ": read failed");
  return contents.str();
}

std::string directoryOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

bool isDefaultDomain(const std::string &domain) { return domain.empty() || domain == "ai.onnx"; }

/// A valid identifier for a dim_param ("batch size" -> "batch_size").
std::string symbolName(const std::string &param) {
  std::string name;
  for (char c : param)
    name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])))
    name = "s_" + name;
  return name;
}

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
  return TensorType(*dtype, std::move(shape));
}

/// Declared output types must agree with inference (constant dims and dtype; symbols are free).
Status checkDeclaredOutput(const ::onnx::ValueInfoProto &info, const Value &value) {
  if (!info.has_type() || !info.type().has_tensor_type())
    return Status::ok();
  const auto &tensorType = info.type().tensor_type();
  std::optional<DType> dtype = dtypeFromOnnx(tensorType.elem_type());
  if (tensorType.elem_type() != 0 && dtype && *dtype != value.type().dtype)
    return makeError("output '", info.name(), "' is declared ", dtypeName(*dtype),
                     " but computes ", value.type().str());
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

/// Op types with no converter, in `graph` and the subgraphs of its attributes.
void collectUnsupported(const ::onnx::GraphProto &graph, std::map<std::string, int> &unsupported) {
  const ConverterTable &table = converterTable();
  for (const auto &node : graph.node()) {
    std::string key = isDefaultDomain(node.domain()) ? node.op_type()
                                                     : node.domain() + "::" + node.op_type();
    if (!isDefaultDomain(node.domain()) || !table.count(node.op_type()))
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
  const ConverterTable &table = converterTable();
  for (const auto &node : graph.node()) {
    ConvertContext context(state, node, state.opset);
    for (const std::string &input : node.input())
      if (!input.empty() && !state.values.count(input) && !state.symbolic.count(input))
        return context.error(strCat("input '", input,
                                    "' is not defined before use (nodes must be in topological "
                                    "order)"));
    auto converter = table.find(node.op_type());
    if (converter == table.end() || !isDefaultDomain(node.domain()))
      return context.error("unsupported op");
    Status converted = converter->second(context);
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
      TC_ASSIGN_OR_RETURN(Node * node, state.graph.addNode(*def, {}, std::move(attrs), info.name()));
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
    TC_ASSIGN_OR_RETURN(Value * value,
                        state.graph.addInput(state.graph.uniqueName(name),
                                             TensorType::fromStatic(tensor.dtype(), tensor.shape())));
    state.graph.weights()[value->name()] = tensor;
    state.constants[value] = tensor;
    state.values[name] = value;
  }

  state.opset = opset;
  TC_RETURN_IF_ERROR(convertNodes(graph, state));

  std::vector<Value *> outputs;
  for (const auto &info : graph.output()) {
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
      TC_ASSIGN_OR_RETURN(Node * node, state.graph.addNode(*def, {}, std::move(attrs), info.name()));
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
  ::onnx::ModelProto model;
  if (!model.ParseFromString(bytes))
    return makeError(path, ": not a valid ONNX model (protobuf parse failed; truncated or "
                           "corrupt file?)");
  if (!model.has_graph())
    return makeError(path, ": the model has no graph");
  ImportState state(registry, directoryOf(path));
  Status imported = importGraph(model, options, state);
  if (!imported)
    return imported.takeError().withContext(path);
  return std::move(state.graph);
}

Expected<std::vector<std::string>> listOnnxInputs(const std::string &path) {
  TC_ASSIGN_OR_RETURN(std::string bytes, readFile(path));
  ::onnx::ModelProto model;
  if (!model.ParseFromString(bytes))
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
  if (!proto.ParseFromString(bytes))
    return makeError(path, ": not a valid TensorProto");
  return tensorFromProto(proto, "", path);
}

} // namespace tensorc::onnx
