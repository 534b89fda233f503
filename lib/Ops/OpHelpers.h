// Helpers shared by the op definitions: dim normalization, broadcasting, promotion, dispatch.
#pragma once

#include "tensorc/IR/OpDef.h"
#include "tensorc/Support/Tensor.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tensorc::ops {

// ---- Schema building -------------------------------------------------------------------------

ParamSpec tensorParam(std::string name);
ParamSpec optionalTensorParam(std::string name);
ParamSpec tensorListParam(std::string name);
/// A required attribute (no default).
ParamSpec attrParam(std::string name, AttrKind kind);
/// An attribute with a default; `kwargOnly` prints it as a keyword argument.
ParamSpec attrParam(std::string name, AttrKind kind, Attribute defaultValue,
                    bool kwargOnly = false);
/// An attribute that may be None (its default).
ParamSpec optionalAttrParam(std::string name, AttrKind kind, bool kwargOnly = false);

OpDef makeOp(OpId id, std::vector<ParamSpec> params, InferFn infer, KernelFn kernel);

/// Dims that may be equal: equal, or one symbolic (checked on concrete shapes at run time).
bool mayBeEqual(const SymInt &a, const SymInt &b);

// ---- Inference -------------------------------------------------------------------------------

/// Maps a possibly negative dim into [0, rank); errors say "dim 3 out of range for rank 2".
/// A 0-d tensor accepts dim 0 and -1 (as torch's sum, softmax, cumsum do), so the result may
/// not index the shape: ops that index a shape, strides or per-dim list by it use
/// normalizeShapeDim.
Expected<size_t> normalizeDim(int64_t dim, size_t rank);
/// normalizeDim for ops whose dim must exist in the shape: a 0-d tensor has none ("dim 0 out of
/// range for a 0-d tensor").
Expected<size_t> normalizeShapeDim(int64_t dim, size_t rank);
/// Normalizes a list of dims and rejects duplicates; an empty list means all dims when
/// `emptyMeansAll`.
Expected<std::vector<size_t>> normalizeDims(const std::vector<int64_t> &dims, size_t rank,
                                            bool emptyMeansAll);
/// Numpy/torch broadcasting; symbolic dims are assumed equal to the other side's non-1 dim.
Expected<Shape> broadcastShapes(const Shape &a, const Shape &b);
/// torch.result_type over tensor operands: dimensioned tensors outrank 0-d tensors of the same
/// category (so `f16 tensor * f32 0-d tensor` stays f16).
DType resultType(const std::vector<const TensorType *> &operands);

/// Errors unless `type` is floating point ("`what` must be floating point, got i64[3]").
Status checkFloating(const TensorType &type, const char *what);
/// Errors unless `dtype` is i64 or i32 (index tensors).
Status checkIndexDType(DType dtype, const char *what);

// ---- Kernels ---------------------------------------------------------------------------------

/// A tensor's storage as bytes.
inline const std::byte *bytesOf(const Tensor &tensor) {
  return static_cast<const std::byte *>(tensor.data());
}
inline std::byte *mutableBytesOf(Tensor &tensor) {
  return static_cast<std::byte *>(tensor.mutableData());
}

/// view, reshape, squeeze, unsqueeze, clone: the bytes do not move.
Status copyKernel(KernelContext &ctx);
/// "[2, s0, 4]".
std::string listStr(const std::vector<SymInt> &values);

/// The product of dims [begin, end) of `dims` (all of them by default).
int64_t product(const std::vector<int64_t> &dims, size_t begin = 0, size_t end = size_t(-1));

/// Maps an output flat index to the flat index of an input broadcast to the output's shape.
class BroadcastIndexer {
public:
  BroadcastIndexer(const std::vector<int64_t> &inputShape, const std::vector<int64_t> &outputShape);
  int64_t operator()(int64_t outputIndex) const;
  /// True when the input has the output's shape (the map is the identity).
  bool isIdentity() const { return identity_; }

private:
  std::vector<int64_t> outputShape_;
  std::vector<int64_t> inputStrides_; // 0 on broadcast dims
  bool identity_ = false;
};

/// Splits `shape` around `axis` into (outer, size, inner) extents, for kernels that walk one axis.
struct AxisSplit {
  int64_t outer = 1, size = 1, inner = 1;
};
AxisSplit splitAtAxis(const std::vector<int64_t> &shape, size_t axis);

/// Calls `fn(T{})` with T the C++ element type of `dtype` (uint16_t for f16/bf16, uint8_t for
/// bool). u16 is uint16_t too, so code that treats uint16_t as a half must check the dtype.
template <typename Fn> decltype(auto) visitDType(DType dtype, Fn &&fn) {
  switch (dtype) {
  case DType::F64:
    return fn(double{});
  case DType::F32:
    return fn(float{});
  case DType::F16:
  case DType::BF16:
    return fn(uint16_t{});
  case DType::I64:
    return fn(int64_t{});
  case DType::I32:
    return fn(int32_t{});
  case DType::I16:
    return fn(int16_t{});
  case DType::I8:
    return fn(int8_t{});
  case DType::U8:
  case DType::Bool:
    return fn(uint8_t{});
  case DType::U16:
    return fn(uint16_t{});
  case DType::U32:
    return fn(uint32_t{});
  case DType::U64:
    return fn(uint64_t{});
  }
  return fn(float{});
}

} // namespace tensorc::ops
