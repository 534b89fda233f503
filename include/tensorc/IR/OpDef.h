// OpDef: one op's schema, shape/dtype inference and reference kernel; OpRegistry looks them up.
#pragma once

#include "tensorc/IR/Attribute.h"
#include "tensorc/IR/Type.h"
#include "tensorc/Support/Status.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tensorc {

enum class OpId : uint16_t {
#define TENSORC_OP(id, name) id,
#include "tensorc/IR/OpList.def"
#undef TENSORC_OP
};
constexpr size_t kNumOps = 0
#define TENSORC_OP(id, name) +1
#include "tensorc/IR/OpList.def"
#undef TENSORC_OP
    ;

/// One parameter of an op, in ATen schema order: tensors and attributes interleave
/// (layer_norm(input, normalized_shape, weight, bias, eps)).
struct ParamSpec {
  enum class Kind : uint8_t { Tensor, OptionalTensor, TensorList, Attr };
  std::string name;
  Kind kind = Kind::Tensor;
  AttrKind attrKind = AttrKind::Int; // Attr only
  bool optional = false;             // Attr only: None is allowed
  std::optional<Attribute> defaultValue;
  bool kwargOnly = false; // printed as a keyword argument, like ATen's `*, approximate='none'`

  bool isTensor() const { return kind != Kind::Attr; }
};

/// Typed access to a node's attributes, shared by inference and kernels.
class AttrReader {
public:
  explicit AttrReader(const AttrMap &attrs) : attrs_(attrs) {}
  const Attribute &attr(const std::string &name) const;
  bool isNone(const std::string &name) const { return attr(name).isNone(); }
  int64_t getInt(const std::string &name) const { return attr(name).asInt(); }
  double getFloat(const std::string &name) const { return attr(name).asFloat(); }
  double getScalar(const std::string &name) const { return attr(name).asScalar(); }
  bool getBool(const std::string &name) const { return attr(name).asBool(); }
  const std::string &getString(const std::string &name) const { return attr(name).asString(); }
  const std::vector<SymInt> &getInts(const std::string &name) const { return attr(name).asInts(); }
  /// Int list whose entries must be constants (errors name the attribute otherwise).
  Expected<std::vector<int64_t>> getStaticInts(const std::string &name) const;
  const std::vector<double> &getFloats(const std::string &name) const {
    return attr(name).asFloats();
  }
  DType getDType(const std::string &name) const { return attr(name).asDType(); }
  const Tensor &getTensor(const std::string &name) const { return attr(name).asTensor(); }

private:
  const AttrMap &attrs_;
};

/// What shape/dtype inference sees: the input types (nullptr for a None optional tensor) and
/// the attributes with defaults filled in.
class InferContext : public AttrReader {
public:
  InferContext(std::vector<const TensorType *> inputs, const AttrMap &attrs)
      : AttrReader(attrs), inputs_(std::move(inputs)) {}
  size_t numInputs() const { return inputs_.size(); }
  bool hasInput(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  const TensorType &input(size_t i) const { return *inputs_[i]; }

private:
  std::vector<const TensorType *> inputs_;
};

/// What a reference kernel sees: concrete inputs (nullptr for None), attributes whose symbols are
/// already substituted, and outputs allocated (zero-filled) from the concrete inferred types.
class KernelContext : public AttrReader {
public:
  KernelContext(std::vector<const Tensor *> inputs, const AttrMap &attrs,
                std::vector<Tensor> outputs)
      : AttrReader(attrs), inputs_(std::move(inputs)), outputs_(std::move(outputs)) {}
  size_t numInputs() const { return inputs_.size(); }
  bool hasInput(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  const Tensor &input(size_t i) const { return *inputs_[i]; }
  size_t numOutputs() const { return outputs_.size(); }
  Tensor &output(size_t i) { return outputs_[i]; }
  std::vector<Tensor> takeOutputs() { return std::move(outputs_); }

private:
  std::vector<const Tensor *> inputs_;
  std::vector<Tensor> outputs_;
};

using InferFn = Expected<std::vector<TensorType>> (*)(const InferContext &);
using KernelFn = Status (*)(KernelContext &);

class RewriteContext;
class OpRegistry;
/// A decomposition rule: emits primitive ops computing the node's results through the
/// RewriteContext and returns them, or std::nullopt to keep the node (e.g. a case the rule does
/// not handle). Results must have the node's exact result types.
using DecomposeFn = Expected<std::optional<std::vector<class Value *>>> (*)(RewriteContext &,
                                                                            const OpRegistry &);

class GradContext;
/// A gradient rule: given the gradients of a node's results (GradContext::resultGrad), emits the
/// ops computing the gradient of each of its inputs (node.inputs() order) into the joint graph and
/// returns them, nullptr for an input that gets none (an index, a None optional). Each gradient
/// has its input's type.
using GradientFn = Expected<std::vector<class Value *>> (*)(GradContext &, const OpRegistry &);

/// One op, defined once: schema, inference, reference kernel; later stages fill the optional
/// rule slots (decomposition, gradient) in the same definition. Lowering rules are a higher
/// layer's: lib/Lowering keeps them in a table by OpId (LoweringRules.h), which must cover every
/// op of OpList.def with a rule or a listed fallback, so the registry (also linked by the
/// runtime) never refers to lowering.
struct OpDef {
  OpId id = OpId::Constant;
  std::string name;
  std::vector<ParamSpec> params;
  InferFn infer = nullptr;
  KernelFn kernel = nullptr;
  /// Result dims that depend on the data (nonzero, unique) are inferred as dataDependentDim();
  /// the graph names each one with a fresh symbol, and the kernel allocates such results itself
  /// (KernelContext::output(i) is undefined until it does).
  bool dataDependentShape = false;
  /// Decomposition into more primitive ops (the Decompose pass); nullptr for primitives.
  DecomposeFn decompose = nullptr;
  /// Reverse-mode derivative (lib/Autodiff); nullptr when the op has none. Ops whose results are
  /// integers or bools are not differentiated and need none.
  GradientFn gradient = nullptr;

  const ParamSpec *findParam(std::string_view paramName) const;
  size_t numTensorParams() const;
  bool hasTensorList() const;
};

/// The ops known to a compilation, by name and by id. Built once (ops::buildCoreRegistry) and
/// passed to whatever needs to resolve op names.
class OpRegistry {
public:
  /// Adds `def`; errors on a duplicate name or id, or a definition with no inference.
  Status add(OpDef def);
  /// Sets the gradient rule of a defined op (the rules live together in lib/Ops/Gradients*.cpp,
  /// as ATen's derivatives.yaml does); errors if the op is undefined or already has one.
  Status setGradient(OpId id, GradientFn rule);
  const OpDef *lookup(std::string_view name) const;
  const OpDef *get(OpId id) const;
  /// Ids in OpList.def with no definition (a complete registry returns none).
  std::vector<std::string> missingOps() const;
  const std::vector<std::unique_ptr<OpDef>> &all() const { return defs_; }

private:
  std::vector<std::unique_ptr<OpDef>> defs_;
  std::map<std::string, const OpDef *, std::less<>> byName_;
  std::map<OpId, const OpDef *> byId_;
};

/// The placeholder an inference function returns for a dim only the data decides.
SymInt dataDependentDim();
bool isDataDependentDim(const SymInt &dim);

/// The op's name in OpList.def, for every id.
std::string_view opIdName(OpId id);

} // namespace tensorc
