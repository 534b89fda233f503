// Helpers shared by the op definitions.
#include "OpHelpers.h"

#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <cstring>

namespace tensorc::ops {

ParamSpec tensorParam(std::string name) {
  ParamSpec spec;
  spec.name = std::move(name);
  spec.kind = ParamSpec::Kind::Tensor;
  return spec;
}

ParamSpec optionalTensorParam(std::string name) {
  ParamSpec spec = tensorParam(std::move(name));
  spec.kind = ParamSpec::Kind::OptionalTensor;
  return spec;
}

ParamSpec tensorListParam(std::string name) {
  ParamSpec spec = tensorParam(std::move(name));
  spec.kind = ParamSpec::Kind::TensorList;
  return spec;
}

ParamSpec attrParam(std::string name, AttrKind kind) {
  ParamSpec spec;
  spec.name = std::move(name);
  spec.kind = ParamSpec::Kind::Attr;
  spec.attrKind = kind;
  return spec;
}

ParamSpec attrParam(std::string name, AttrKind kind, Attribute defaultValue, bool kwargOnly) {
  ParamSpec spec = attrParam(std::move(name), kind);
  spec.defaultValue = std::move(defaultValue);
  spec.kwargOnly = kwargOnly;
  return spec;
}

ParamSpec optionalAttrParam(std::string name, AttrKind kind, bool kwargOnly) {
  ParamSpec spec = attrParam(std::move(name), kind, Attribute(), kwargOnly);
  spec.optional = true;
  return spec;
}

OpDef makeOp(OpId id, std::vector<ParamSpec> params, InferFn infer, KernelFn kernel) {
  OpDef def;
  def.id = id;
  def.name = std::string(opIdName(id));
  def.params = std::move(params);
  def.infer = infer;
  def.kernel = kernel;
  return def;
}

Expected<size_t> normalizeDim(int64_t dim, size_t rank) {
  int64_t r = int64_t(rank);
  // A 0-d tensor accepts dim 0 and -1, as in torch.
  int64_t bound = std::max<int64_t>(r, 1);
  if (dim < -bound || dim >= bound)
    return makeError("dim ", dim, " out of range for rank ", rank);
  return size_t(dim < 0 ? dim + bound : dim);
}

Expected<size_t> normalizeShapeDim(int64_t dim, size_t rank) {
  if (rank == 0)
    return makeError("dim ", dim, " out of range for a 0-d tensor");
  return normalizeDim(dim, rank);
}

Expected<std::vector<size_t>> normalizeDims(const std::vector<int64_t> &dims, size_t rank,
                                            bool emptyMeansAll) {
  std::vector<size_t> result;
  if (dims.empty() && emptyMeansAll) {
    for (size_t i = 0; i < rank; ++i)
      result.push_back(i);
    return result;
  }
  for (int64_t dim : dims) {
    TC_ASSIGN_OR_RETURN(size_t d, normalizeDim(dim, rank));
    if (std::find(result.begin(), result.end(), d) != result.end())
      return makeError("dim ", dim, " appears more than once");
    result.push_back(d);
  }
  std::sort(result.begin(), result.end());
  return result;
}

Expected<Shape> broadcastShapes(const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape result(rank);
  for (size_t i = 0; i < rank; ++i) {
    SymInt da = i < rank - a.size() ? SymInt(1) : a[i - (rank - a.size())];
    SymInt db = i < rank - b.size() ? SymInt(1) : b[i - (rank - b.size())];
    if (da == db || db == SymInt(1)) {
      result[i] = da;
    } else if (da == SymInt(1)) {
      result[i] = db;
    } else if (da.isConstant() && db.isConstant()) {
      return makeError("shapes [", join(a, ", "), "] and [", join(b, ", "),
                       "] do not broadcast (dim ", i, ": ", da, " vs ", db, ")");
    } else {
      // A symbolic dim meeting a different dim: it must equal it at run time (checked by the
      // interpreter and runtime on concrete shapes); keep the constant one if there is one.
      result[i] = da.isConstant() ? da : db.isConstant() ? db : da;
    }
  }
  return result;
}

DType resultType(const std::vector<const TensorType *> &operands) {
  std::optional<DType> dimensioned, zeroDim;
  for (const TensorType *type : operands) {
    if (!type)
      continue;
    std::optional<DType> &slot = type->rank() == 0 ? zeroDim : dimensioned;
    slot = slot ? promoteTypes(*slot, type->dtype) : type->dtype;
  }
  if (!dimensioned)
    return zeroDim.value_or(DType::F32);
  if (!zeroDim)
    return *dimensioned;
  auto category = [](DType d) { return d == DType::Bool ? 0 : isFloating(d) ? 2 : 1; };
  // A 0-d operand only matters when it is of a higher category.
  if (category(*zeroDim) > category(*dimensioned))
    return *zeroDim;
  return *dimensioned;
}

BroadcastIndexer::BroadcastIndexer(const std::vector<int64_t> &inputShape,
                                   const std::vector<int64_t> &outputShape)
    : outputShape_(outputShape), inputStrides_(outputShape.size(), 0) {
  identity_ = inputShape == outputShape;
  size_t offset = outputShape.size() - inputShape.size();
  int64_t stride = 1;
  for (size_t i = inputShape.size(); i-- > 0;) {
    inputStrides_[i + offset] = inputShape[i] == 1 ? 0 : stride;
    stride *= inputShape[i];
  }
}

int64_t BroadcastIndexer::operator()(int64_t outputIndex) const {
  if (identity_)
    return outputIndex;
  int64_t inputIndex = 0;
  for (size_t i = outputShape_.size(); i-- > 0;) {
    int64_t coordinate = outputIndex % outputShape_[i];
    outputIndex /= outputShape_[i];
    inputIndex += coordinate * inputStrides_[i];
  }
  return inputIndex;
}

AxisSplit splitAtAxis(const std::vector<int64_t> &shape, size_t axis) {
  AxisSplit split;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i < axis)
      split.outer *= shape[i];
    else if (i == axis)
      split.size = shape[i];
    else
      split.inner *= shape[i];
  }
  return split;
}

bool mayBeEqual(const SymInt &a, const SymInt &b) {
  return a == b || !a.isConstant() || !b.isConstant();
}

Status copyKernel(KernelContext &ctx) {
  const Tensor &input = ctx.input(0);
  Tensor &output = ctx.output(0);
  if (output.nbytes() != input.nbytes())
    return makeError("internal: result holds ", output.nbytes(), " bytes, input ", input.nbytes());
  if (input.nbytes() != 0)
    std::memcpy(output.mutableData(), input.data(), input.nbytes());
  return Status::ok();
}

std::string listStr(const std::vector<SymInt> &values) { return "[" + join(values, ", ") + "]"; }

Status checkFloating(const TensorType &type, const char *what) {
  if (!isFloating(type.dtype))
    return makeError(what, " must be floating point, got ", type.str());
  return Status::ok();
}

Status checkIndexDType(DType dtype, const char *what) {
  if (dtype != DType::I64 && dtype != DType::I32)
    return makeError(what, " must be i64 or i32, got ", dtypeName(dtype));
  return Status::ok();
}

int64_t product(const std::vector<int64_t> &dims, size_t begin, size_t end) {
  int64_t result = 1;
  for (size_t i = begin; i < std::min(end, dims.size()); ++i)
    result *= dims[i];
  return result;
}

} // namespace tensorc::ops
