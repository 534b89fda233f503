// Tensor: a dense, contiguous, row-major block of elements with a dtype and a concrete shape.
#pragma once

#include "tensorc/Support/DType.h"
#include "tensorc/Support/Status.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tensorc {

/// The strides, in elements, of a contiguous row-major block of `shape`.
std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &shape);

/// Shared ownership of the bytes: either our own 64-byte aligned allocation or a read-only
/// region of a mapped file (weights). Copies of a Tensor share the bytes.
class Tensor {
public:
  Tensor() = default;

  /// Zero-filled tensor. Errors only if the byte size overflows or the allocation fails.
  static Expected<Tensor> zeros(DType dtype, std::vector<int64_t> shape);
  /// zeros() without the zeroing: for memory whose every element is written before it is read
  /// (a model's outputs, which its launches write whole).
  static Expected<Tensor> uninitialized(DType dtype, std::vector<int64_t> shape);
  /// Like zeros() for shapes already known to be small and valid (tests, literals).
  static Tensor zerosUnchecked(DType dtype, std::vector<int64_t> shape);
  /// Wraps bytes owned by `owner` (e.g. a mapped file); `data` must stay valid while it lives.
  static Tensor view(DType dtype, std::vector<int64_t> shape, std::shared_ptr<const void> owner,
                     const void *data);

  bool defined() const { return data_ != nullptr || numel() == 0; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  int64_t dim(size_t axis) const { return shape_[axis]; }
  size_t rank() const { return shape_.size(); }
  int64_t numel() const;
  size_t nbytes() const { return size_t(numel()) * dtypeSize(dtype_); }
  /// Row-major strides in elements.
  std::vector<int64_t> strides() const { return rowMajorStrides(shape_); }

  const void *data() const { return data_; }
  /// Writable bytes. Never called on weight views (they map read-only files).
  void *mutableData() { return const_cast<void *>(data_); }
  template <typename T> const T *dataAs() const { return static_cast<const T *>(data_); }
  template <typename T> T *mutableDataAs() { return static_cast<T *>(mutableData()); }

  /// Element `flatIndex` converted to double / int64 (any dtype; f16/bf16 decoded). getInt of a
  /// u64 above INT64_MAX is the bit-cast (negative) value, which setInt stores back unchanged.
  double getDouble(int64_t flatIndex) const;
  int64_t getInt(int64_t flatIndex) const;
  /// Stores `value` converted to this tensor's dtype (ints truncate, bool is value != 0).
  void setDouble(int64_t flatIndex, double value);
  void setInt(int64_t flatIndex, int64_t value);

  /// Same dtype, shape and bytes.
  bool equals(const Tensor &other) const;
  /// A deep copy with its own storage.
  Tensor clone() const;
  /// Same bytes, new shape with the same element count.
  Tensor reshaped(std::vector<int64_t> shape) const;

private:
  DType dtype_ = DType::F32;
  std::vector<int64_t> shape_;
  std::shared_ptr<const void> owner_;
  const void *data_ = nullptr;
};

/// "f32[2, 3]" for messages.
std::string describeShape(DType dtype, const std::vector<int64_t> &shape);

/// Product of dims, or an error naming `what` if any dim is negative or the product overflows.
Expected<int64_t> checkedNumel(const std::vector<int64_t> &shape, const std::string &what);

} // namespace tensorc
