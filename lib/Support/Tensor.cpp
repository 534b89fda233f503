// Tensor storage, element access by dtype, and comparison.
#include "tensorc/Support/Tensor.h"

#include "tensorc/Support/DTypeDispatch.h"
#include "tensorc/Support/Limits.h"
#include "tensorc/Support/StrCat.h"

#include <cstdlib>
#include <cstring>

namespace tensorc {

namespace {
constexpr size_t kAlignment = 64;

struct AlignedFree {
  void operator()(const void *p) const { std::free(const_cast<void *>(p)); }
};
} // namespace

Expected<int64_t> checkedNumel(const std::vector<int64_t> &shape, const std::string &what) {
  int64_t total = 1;
  for (int64_t dim : shape) {
    if (dim < 0)
      return makeError(what, ": negative dimension ", dim);
    if (dim != 0 && total > INT64_MAX / dim)
      return makeError(what, ": element count overflows 64 bits");
    total *= dim;
  }
  return total;
}

Expected<Tensor> Tensor::zeros(DType dtype, std::vector<int64_t> shape) {
  TC_ASSIGN_OR_RETURN(Tensor tensor, uninitialized(dtype, std::move(shape)));
  std::memset(tensor.mutableData(), 0,
              (tensor.nbytes() + kAlignment - 1) / kAlignment * kAlignment);
  return tensor;
}

Expected<Tensor> Tensor::uninitialized(DType dtype, std::vector<int64_t> shape) {
  TC_ASSIGN_OR_RETURN(int64_t count,
                      checkedNumelLazily(shape, [&] { return describeShape(dtype, shape); }));
  if (uint64_t(count) > (uint64_t(1) << 46) / dtypeSize(dtype))
    return makeError("tensor ", describeShape(dtype, shape), " is too large to allocate");
  size_t bytes = size_t(count) * dtypeSize(dtype);
  size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void *memory = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (!memory)
    return makeError("out of memory allocating ", bytes, " bytes for ",
                     describeShape(dtype, shape));
  Tensor tensor;
  tensor.dtype_ = dtype;
  tensor.shape_ = std::move(shape);
  tensor.owner_ = std::shared_ptr<const void>(memory, AlignedFree());
  tensor.data_ = memory;
  return tensor;
}

Tensor Tensor::zerosUnchecked(DType dtype, std::vector<int64_t> shape) {
  Expected<Tensor> tensor = zeros(dtype, std::move(shape));
  if (!tensor.hasValue())
    std::abort(); // callers promise small, valid shapes
  return std::move(tensor).value();
}

Tensor Tensor::view(DType dtype, std::vector<int64_t> shape, std::shared_ptr<const void> owner,
                    const void *data) {
  Tensor tensor;
  tensor.dtype_ = dtype;
  tensor.shape_ = std::move(shape);
  tensor.owner_ = std::move(owner);
  tensor.data_ = data;
  return tensor;
}

int64_t Tensor::numel() const {
  int64_t total = 1;
  for (int64_t dim : shape_)
    total *= dim;
  return total;
}

std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> result(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    result[i] = stride;
    stride *= shape[i];
  }
  return result;
}

double Tensor::getDouble(int64_t i) const {
  return visitElem(dtype_, [&](auto tag) {
    constexpr DType D = decltype(tag)::value;
    return loadAs<double, D>(dataAs<Storage<D>>()[i]);
  });
}

int64_t Tensor::getInt(int64_t i) const {
  // u64 is the bit-cast: values above INT64_MAX come out negative.
  return visitElem(dtype_, [&](auto tag) {
    constexpr DType D = decltype(tag)::value;
    return loadAs<int64_t, D>(dataAs<Storage<D>>()[i]);
  });
}

void Tensor::setDouble(int64_t i, double value) {
  // Out-of-range and NaN conversions to integers saturate (NaN is 0) rather than being undefined;
  // u64 takes [2^63, 2^64) directly.
  visitElem(dtype_, [&](auto tag) {
    constexpr DType D = decltype(tag)::value;
    mutableDataAs<Storage<D>>()[i] = storeAs<D>(value);
  });
}

void Tensor::setInt(int64_t i, int64_t value) {
  if (isFloating(dtype_))
    return setDouble(i, double(value));
  // Integers wrap; u64 is the bit-cast, the inverse of getInt.
  visitElem(dtype_, [&](auto tag) {
    constexpr DType D = decltype(tag)::value;
    mutableDataAs<Storage<D>>()[i] = storeAs<D>(value);
  });
}

bool Tensor::equals(const Tensor &other) const {
  if (dtype_ != other.dtype_ || shape_ != other.shape_)
    return false;
  return nbytes() == 0 || std::memcmp(data_, other.data_, nbytes()) == 0;
}

Tensor Tensor::clone() const {
  Tensor copy = zerosUnchecked(dtype_, shape_);
  if (nbytes() != 0)
    std::memcpy(copy.mutableData(), data_, nbytes());
  return copy;
}

Tensor Tensor::reshaped(std::vector<int64_t> shape) const {
  Tensor result = *this;
  result.shape_ = std::move(shape);
  return result;
}

std::string describeShape(DType dtype, const std::vector<int64_t> &shape) {
  return strCat(dtypeName(dtype), "[", join(shape, ", "), "]");
}

} // namespace tensorc
