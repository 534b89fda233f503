// Tensor storage, element access by dtype, and comparison.
#include "tensorc/Support/Tensor.h"

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
  TC_ASSIGN_OR_RETURN(int64_t count, checkedNumel(shape, describeShape(dtype, shape)));
  if (uint64_t(count) > (uint64_t(1) << 46) / dtypeSize(dtype))
    return makeError("tensor ", describeShape(dtype, shape), " is too large to allocate");
  size_t bytes = size_t(count) * dtypeSize(dtype);
  size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void *memory = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (!memory)
    return makeError("out of memory allocating ", bytes, " bytes for ",
                     describeShape(dtype, shape));
  std::memset(memory, 0, rounded == 0 ? kAlignment : rounded);
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

std::vector<int64_t> Tensor::strides() const {
  std::vector<int64_t> result(shape_.size());
  int64_t stride = 1;
  for (size_t i = shape_.size(); i-- > 0;) {
    result[i] = stride;
    stride *= shape_[i];
  }
  return result;
}

double Tensor::getDouble(int64_t i) const {
  switch (dtype_) {
  case DType::F64:
    return dataAs<double>()[i];
  case DType::F32:
    return dataAs<float>()[i];
  case DType::F16:
    return halfToFloat(dataAs<uint16_t>()[i]);
  case DType::BF16:
    return bf16ToFloat(dataAs<uint16_t>()[i]);
  case DType::I64:
    return double(dataAs<int64_t>()[i]);
  case DType::I32:
    return dataAs<int32_t>()[i];
  case DType::I16:
    return dataAs<int16_t>()[i];
  case DType::I8:
    return dataAs<int8_t>()[i];
  case DType::U8:
    return dataAs<uint8_t>()[i];
  case DType::U16:
    return dataAs<uint16_t>()[i];
  case DType::U32:
    return dataAs<uint32_t>()[i];
  case DType::U64:
    return double(dataAs<uint64_t>()[i]);
  case DType::Bool:
    return dataAs<uint8_t>()[i] != 0 ? 1.0 : 0.0;
  }
  return 0;
}

int64_t Tensor::getInt(int64_t i) const {
  switch (dtype_) {
  case DType::I64:
    return dataAs<int64_t>()[i];
  case DType::I32:
    return dataAs<int32_t>()[i];
  case DType::I16:
    return dataAs<int16_t>()[i];
  case DType::I8:
    return dataAs<int8_t>()[i];
  case DType::U8:
    return dataAs<uint8_t>()[i];
  case DType::U16:
    return dataAs<uint16_t>()[i];
  case DType::U32:
    return dataAs<uint32_t>()[i];
  case DType::U64:
    return int64_t(dataAs<uint64_t>()[i]); // bit-cast: values above INT64_MAX come out negative
  case DType::Bool:
    return dataAs<uint8_t>()[i] != 0;
  case DType::F64:
  case DType::F32:
  case DType::F16:
  case DType::BF16:
    return int64_t(getDouble(i));
  }
  return 0;
}

void Tensor::setDouble(int64_t i, double value) {
  switch (dtype_) {
  case DType::F64:
    mutableDataAs<double>()[i] = value;
    return;
  case DType::F32:
    mutableDataAs<float>()[i] = float(value);
    return;
  case DType::F16:
    mutableDataAs<uint16_t>()[i] = floatToHalf(float(value));
    return;
  case DType::BF16:
    mutableDataAs<uint16_t>()[i] = floatToBf16(float(value));
    return;
  case DType::Bool:
    mutableDataAs<uint8_t>()[i] = value != 0;
    return;
  case DType::I64:
  case DType::I32:
  case DType::I16:
  case DType::I8:
  case DType::U8:
  case DType::U16:
  case DType::U32:
    // Out-of-range and NaN conversions are undefined in C++; clamp through int64 first.
    setInt(i, value != value ? 0
                             : value >= 9.2e18  ? INT64_MAX
                             : value <= -9.2e18 ? INT64_MIN
                                                : int64_t(value));
    return;
  case DType::U64:
    // As above, but the range is [0, 2^64): values above INT64_MAX convert directly, larger ones
    // saturate; negative values wrap like the signed types.
    if (value >= 9.2e18)
      mutableDataAs<uint64_t>()[i] = value < 18446744073709551616.0 ? uint64_t(value) : UINT64_MAX;
    else
      setInt(i, value != value ? 0 : value <= -9.2e18 ? INT64_MIN : int64_t(value));
    return;
  }
}

void Tensor::setInt(int64_t i, int64_t value) {
  switch (dtype_) {
  case DType::I64:
    mutableDataAs<int64_t>()[i] = value;
    return;
  case DType::I32:
    mutableDataAs<int32_t>()[i] = int32_t(value);
    return;
  case DType::I16:
    mutableDataAs<int16_t>()[i] = int16_t(value);
    return;
  case DType::I8:
    mutableDataAs<int8_t>()[i] = int8_t(value);
    return;
  case DType::U8:
    mutableDataAs<uint8_t>()[i] = uint8_t(value);
    return;
  case DType::U16:
    mutableDataAs<uint16_t>()[i] = uint16_t(value);
    return;
  case DType::U32:
    mutableDataAs<uint32_t>()[i] = uint32_t(value);
    return;
  case DType::U64:
    mutableDataAs<uint64_t>()[i] = uint64_t(value); // bit-cast, the inverse of getInt
    return;
  case DType::Bool:
    mutableDataAs<uint8_t>()[i] = value != 0;
    return;
  case DType::F64:
  case DType::F32:
  case DType::F16:
  case DType::BF16:
    setDouble(i, double(value));
    return;
  }
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
