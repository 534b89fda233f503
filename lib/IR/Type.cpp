// TensorType helpers: static shapes, element counts, printing.
#include "tensorc/IR/Type.h"

#include "tensorc/Support/StrCat.h"

namespace tensorc {

TensorType TensorType::fromStatic(DType dtype, const std::vector<int64_t> &dims) {
  Shape shape;
  shape.reserve(dims.size());
  for (int64_t dim : dims)
    shape.emplace_back(dim);
  return TensorType(dtype, std::move(shape));
}

bool TensorType::isStatic() const {
  for (const SymInt &dim : shape)
    if (!dim.isConstant())
      return false;
  return true;
}

std::optional<std::vector<int64_t>> TensorType::staticShape() const {
  std::vector<int64_t> dims;
  dims.reserve(shape.size());
  for (const SymInt &dim : shape) {
    std::optional<int64_t> value = dim.constant();
    if (!value)
      return std::nullopt;
    dims.push_back(*value);
  }
  return dims;
}

SymInt numel(const Shape &shape) {
  SymInt total(1);
  for (const SymInt &dim : shape)
    total = total * dim;
  return total;
}

SymInt TensorType::numel() const { return tensorc::numel(shape); }

std::string shapeStr(const Shape &shape) { return strCat("[", join(shape, ", "), "]"); }

std::string TensorType::str() const { return strCat(dtypeName(dtype), shapeStr(shape)); }

} // namespace tensorc
