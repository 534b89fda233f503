// TensorType: the dtype and (possibly symbolic) shape every graph Value carries.
#pragma once

#include "tensorc/IR/SymInt.h"
#include "tensorc/Support/DType.h"

#include <optional>
#include <string>
#include <vector>

namespace tensorc {

using Shape = std::vector<SymInt>;

struct TensorType {
  DType dtype = DType::F32;
  Shape shape;

  TensorType() = default;
  TensorType(DType dtype, Shape shape) : dtype(dtype), shape(std::move(shape)) {}
  static TensorType fromStatic(DType dtype, const std::vector<int64_t> &dims);

  size_t rank() const { return shape.size(); }
  bool isStatic() const;
  /// The dims as integers when none is symbolic.
  std::optional<std::vector<int64_t>> staticShape() const;
  /// Product of the dims (symbolic when any dim is).
  SymInt numel() const;
  /// "f32[s0, 1024]"; a 0-d tensor prints "f32[]".
  std::string str() const;

  bool operator==(const TensorType &other) const {
    return dtype == other.dtype && shape == other.shape;
  }
  bool operator!=(const TensorType &other) const { return !(*this == other); }
};

std::string shapeStr(const Shape &shape);

/// The number of elements of a shape: the product of its dims (1 for a scalar).
SymInt numel(const Shape &shape);

} // namespace tensorc
