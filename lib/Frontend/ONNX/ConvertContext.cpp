// ConvertContext: what an ONNX converter sees of its node (inputs, attributes) and how it emits
// registry ops, folding them at import time when their operands are known and results small.
#include "ImportState.h"
#include "OnnxTensor.h"
#include "tensorc/Interp/Interpreter.h"
#include "tensorc/Support/StrCat.h"

namespace tensorc::onnx {

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

} // namespace

Status checkStaticSize(const TensorType &type, const std::string &what) {
  for (const SymInt &dim : type.shape)
    if (dim.constant() == 0)
      return Status::ok(); // empty, whatever its other dims
  int64_t bytes = int64_t(dtypeSize(type.dtype));
  for (const SymInt &dim : type.shape) {
    std::optional<int64_t> value = dim.constant();
    if (value && *value > 0 && __builtin_mul_overflow(bytes, *value, &bytes))
      return makeError(what, " is ", type.str(), ", whose byte size overflows 64 bits");
  }
  // No 64-bit machine addresses 2^62 bytes (x86_64 and aarch64 stop at 2^57 and 2^52); sizes
  // below this also leave room for offset arithmetic without overflow.
  if (bytes >= (int64_t(1) << 62))
    return makeError(what, " is ", type.str(), ", whose byte size ", bytes,
                     " is 2^62 or more, beyond any machine's address space");
  return Status::ok();
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

Expected<Value *> ConvertContext::optionalInput(size_t i) {
  if (!hasInput(i))
    return static_cast<Value *>(nullptr);
  return input(i);
}

Expected<TensorType> ConvertContext::inputType(size_t i) {
  if (!hasInput(i))
    return error(strCat("input ", i, " is missing"));
  const std::string &name = node_.input(int(i));
  if (auto it = state_.values.find(name); it != state_.values.end())
    return it->second->type();
  if (auto it = state_.symbolic.find(name); it != state_.symbolic.end())
    return it->second.scalar
               ? TensorType(DType::I64, {})
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

const ::onnx::AttributeProto *ConvertContext::findTypedAttr(const std::string &name,
                                                            int type) const {
  const auto *attr = findAttr(name);
  if (!attr)
    return nullptr;
  // Producers before IR version 2 leave `type` unset; then the payload field decides.
  bool untypedMatch = false;
  if (attr->type() == ::onnx::AttributeProto::UNDEFINED) {
    switch (type) {
    case ::onnx::AttributeProto::INT:
      untypedMatch = attr->has_i();
      break;
    case ::onnx::AttributeProto::FLOAT:
      untypedMatch = attr->has_f();
      break;
    case ::onnx::AttributeProto::STRING:
      untypedMatch = attr->has_s();
      break;
    case ::onnx::AttributeProto::INTS:
      untypedMatch = attr->ints_size() > 0;
      break;
    case ::onnx::AttributeProto::FLOATS:
      untypedMatch = attr->floats_size() > 0;
      break;
    default:
      break;
    }
  }
  if (attr->type() == type || untypedMatch)
    return attr;
  if (!attrTypeError_) {
    auto typeName = [](int t) {
      const std::string &known = ::onnx::AttributeProto::AttributeType_Name(
          static_cast<::onnx::AttributeProto::AttributeType>(t));
      return known.empty() ? strCat("type ", t) : known;
    };
    std::string article = type == ::onnx::AttributeProto::INT ? "an " : "a ";
    attrTypeError_ =
        strCat("attribute '", name, "' is ",
               attr->type() == ::onnx::AttributeProto::UNDEFINED ? std::string("untyped and empty")
                                                                 : "a " + typeName(attr->type()),
               ", expected ", article, typeName(type));
  }
  return nullptr;
}

bool ConvertContext::hasAttr(const std::string &name) const { return findAttr(name) != nullptr; }

int64_t ConvertContext::intAttr(const std::string &name, int64_t defaultValue) const {
  const auto *attr = findTypedAttr(name, ::onnx::AttributeProto::INT);
  return attr ? attr->i() : defaultValue;
}

double ConvertContext::floatAttr(const std::string &name, double defaultValue) const {
  const auto *attr = findTypedAttr(name, ::onnx::AttributeProto::FLOAT);
  return attr ? double(attr->f()) : defaultValue;
}

std::string ConvertContext::stringAttr(const std::string &name,
                                       const std::string &defaultValue) const {
  const auto *attr = findTypedAttr(name, ::onnx::AttributeProto::STRING);
  return attr ? attr->s() : defaultValue;
}

std::vector<int64_t> ConvertContext::intsAttr(const std::string &name,
                                              const std::vector<int64_t> &defaultValue) const {
  const auto *attr = findTypedAttr(name, ::onnx::AttributeProto::INTS);
  return attr ? std::vector<int64_t>(attr->ints().begin(), attr->ints().end()) : defaultValue;
}

std::vector<double> ConvertContext::floatsAttr(const std::string &name) const {
  const auto *attr = findTypedAttr(name, ::onnx::AttributeProto::FLOATS);
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
  std::string base =
      node_.output_size() && !node_.output(0).empty() ? node_.output(0) : node_.op_type();
  size_t dot = op.rfind('.');
  return strCat(base, "_", dot == std::string_view::npos ? op : op.substr(dot + 1));
}

Expected<std::vector<Value *>>
ConvertContext::emitMulti(std::string_view op, std::vector<Value *> inputs, AttrMap attrs) {
  const OpDef *def = state_.registry.lookup(op);
  if (!def)
    return error(strCat("internal: no registry op ", op));
  std::string hint = valueHint(op);

  // Fold when every operand is known and the results are small: decided from the inferred
  // types, before anything is computed (a 150-byte model may ask for a 16 GiB Range).
  bool foldable = !hasSymbolicInts(attrs);
  std::vector<const Tensor *> operands;
  std::vector<const TensorType *> operandTypes;
  for (Value *input : inputs) {
    auto it = input ? state_.constants.find(input) : state_.constants.end();
    if (input && it == state_.constants.end()) {
      foldable = false;
      break;
    }
    operands.push_back(input ? &it->second : nullptr);
    operandTypes.push_back(input ? &input->type() : nullptr);
  }
  if (foldable) {
    // An inference error is reported by addNode below, in its usual words.
    AttrMap inferAttrs = attrs;
    Expected<std::vector<TensorType>> types = inferTypes(*def, operandTypes, inferAttrs);
    bool small = bool(types);
    for (size_t i = 0; small && i < types->size(); ++i) {
      std::optional<std::vector<int64_t>> shape = (*types)[i].staticShape();
      if (!shape && def->dataDependentShape)
        continue; // bounded by the operands' sizes, checked below
      Expected<int64_t> elements =
          shape ? checkedNumel(*shape, (*types)[i].str()) : Expected<int64_t>(0);
      small = shape && elements && *elements <= kFoldLimit;
    }
    for (const Tensor *operand : operands)
      small = small && (!def->dataDependentShape || !operand || operand->numel() <= kFoldLimit);
    Expected<std::vector<Tensor>> results =
        small ? interp::evaluateOp(*def, operands, attrs)
              : Expected<std::vector<Tensor>>(std::vector<Tensor>());
    if (!results)
      return error(results.error().message());
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
  // Every later stage multiplies dims: a result whose size overflows 64 bits stops here.
  for (const Value *output : (*node)->outputs())
    if (Status fits = checkStaticSize(output->type(), "result %" + output->name()); !fits)
      return error(fits.message());
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

Expected<Tensor> ConvertContext::newTensor(DType dtype, std::vector<int64_t> shape,
                                           const std::string &what) {
  if (Status fits = checkTensorBytes(dtype, shape, state_.maxTensorBytes, what); !fits)
    return error(fits.message());
  Expected<Tensor> tensor = Tensor::zeros(dtype, std::move(shape));
  if (!tensor)
    return error(strCat(what, ": ", tensor.error().message()));
  return tensor;
}

Expected<int64_t> ConvertContext::dimFromDouble(double value, const std::string &what) const {
  if (!(value >= 0 && value < 0x1p62))
    return error(strCat(what, " ", value, " is not a valid dim"));
  return int64_t(value);
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
    return error(
        strCat("the subgraph takes ", body.input_size(), " inputs, given ", inputs.size()));
  // Unrolling (a Loop or Scan inlines its body per iteration, nested ones multiply) stops at a
  // graph size no real model reaches this way, rather than running out of time or memory.
  if (state_.graph.nodes().size() >= kMaxNodesWhenInlining)
    return error(strCat("inlining its subgraph would grow the graph past ", kMaxNodesWhenInlining,
                        " nodes (unrolled Loop or Scan iterations)"));
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
    Expected<Tensor> tensor =
        tensorFromProto(proto, state_.modelDir, "subgraph initializer '" + proto.name() + "'");
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

} // namespace tensorc::onnx
