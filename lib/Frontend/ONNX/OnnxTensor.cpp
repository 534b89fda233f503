// TensorProto -> Tensor, including safe external data loading.
#include "OnnxTensor.h"

#include "tensorc/Support/StrCat.h"

#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace tensorc::onnx {

namespace fs = std::filesystem;

std::optional<DType> dtypeFromOnnx(int32_t elemType) {
  switch (elemType) {
  case ::onnx::TensorProto::FLOAT:
    return DType::F32;
  case ::onnx::TensorProto::UINT8:
    return DType::U8;
  case ::onnx::TensorProto::UINT16:
    return DType::U16;
  case ::onnx::TensorProto::UINT32:
    return DType::U32;
  case ::onnx::TensorProto::UINT64:
    return DType::U64;
  case ::onnx::TensorProto::INT8:
    return DType::I8;
  case ::onnx::TensorProto::INT16:
    return DType::I16;
  case ::onnx::TensorProto::INT32:
    return DType::I32;
  case ::onnx::TensorProto::INT64:
    return DType::I64;
  case ::onnx::TensorProto::BOOL:
    return DType::Bool;
  case ::onnx::TensorProto::FLOAT16:
    return DType::F16;
  case ::onnx::TensorProto::DOUBLE:
    return DType::F64;
  case ::onnx::TensorProto::BFLOAT16:
    return DType::BF16;
  default:
    return std::nullopt;
  }
}

std::string onnxTypeName(int32_t elemType) {
  if (::onnx::TensorProto_DataType_IsValid(elemType))
    return ::onnx::TensorProto_DataType_Name(static_cast<::onnx::TensorProto_DataType>(elemType));
  return strCat("type ", elemType);
}

namespace {

Expected<uint64_t> parseUnsigned(const std::string &text, const std::string &what) {
  if (text.empty() || text.size() > 19 || text.find_first_not_of("0123456789") != std::string::npos)
    return makeError(what, " '", text, "' is not a non-negative integer");
  return uint64_t(std::stoull(text));
}

/// Reads [offset, offset + length) of `location` under `modelDir`, refusing anything that could
/// read outside the model's directory.
Expected<std::string> readExternal(const ::onnx::TensorProto &proto, const std::string &modelDir,
                                   const std::string &what, uint64_t expectedBytes) {
  if (modelDir.empty())
    return makeError(what, ": external data is not allowed here");
  std::string location;
  std::optional<uint64_t> offset, length;
  for (const auto &entry : proto.external_data()) {
    if (entry.key() == "location") {
      location = entry.value();
    } else if (entry.key() == "offset") {
      TC_ASSIGN_OR_RETURN(uint64_t value, parseUnsigned(entry.value(), what + ": offset"));
      offset = value;
    } else if (entry.key() == "length") {
      TC_ASSIGN_OR_RETURN(uint64_t value, parseUnsigned(entry.value(), what + ": length"));
      length = value;
    }
  }
  if (location.empty())
    return makeError(what, ": external data has no location");
  if (location.find('\0') != std::string::npos)
    return makeError(what, ": external data location contains a NUL byte");
  fs::path relative(location);
  if (relative.is_absolute() || location[0] == '/' || location[0] == '\\')
    return makeError(what, ": external data location '", location, "' is an absolute path");
  for (const fs::path &part : relative.lexically_normal())
    if (part == "..")
      return makeError(what, ": external data location '", location,
                       "' escapes the model directory");
  std::error_code ec;
  fs::path base = fs::canonical(modelDir, ec);
  if (ec)
    return makeError(what, ": model directory '", modelDir, "': ", ec.message());
  fs::path resolved = fs::canonical(base / relative, ec);
  if (ec)
    return makeError(what, ": external data '", location, "': ", ec.message());
  auto [baseEnd, resolvedIt] =
      std::mismatch(base.begin(), base.end(), resolved.begin(), resolved.end());
  if (baseEnd != base.end())
    return makeError(what, ": external data location '", location,
                     "' resolves outside the model directory");

  // O_NONBLOCK: opening a FIFO must not block before fstat can refuse it.
  int fd = ::open(resolved.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0)
    return makeError(what, ": external data '", location, "': ", std::strerror(errno));
  struct stat info;
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    return makeError(what, ": external data '", location, "' is not a regular file");
  }
  if (info.st_nlink > 1) {
    ::close(fd);
    return makeError(what, ": external data '", location,
                     "' has several hard links (it may alias a file outside the model directory)");
  }
  uint64_t fileSize = uint64_t(info.st_size);
  uint64_t begin = offset.value_or(0);
  uint64_t bytes = length.value_or(begin <= fileSize ? fileSize - begin : 0);
  if (begin > fileSize || bytes > fileSize - begin) {
    ::close(fd);
    return makeError(what, ": external data [", begin, ", +", bytes, ") lies outside '", location,
                     "' (", fileSize, " bytes)");
  }
  if (bytes != expectedBytes) {
    ::close(fd);
    return makeError(what, ": external data holds ", bytes, " bytes, the tensor needs ",
                     expectedBytes);
  }
  std::string data(size_t(bytes), '\0');
  size_t done = 0;
  while (done < bytes) {
    ssize_t n = ::pread(fd, data.data() + done, size_t(bytes) - done, off_t(begin + done));
    if (n <= 0) {
      ::close(fd);
      return makeError(what, ": reading external data '", location, "' failed");
    }
    done += size_t(n);
  }
  ::close(fd);
  return data;
}

/// A tensor of `dtype` and `shape` holding the `count` values of typed field `field` (named
/// `fieldName` in errors), each stored with `store(tensor, i, value)`. The count is checked before
/// anything is allocated: a tiny model must not be able to force a huge allocation.
template <typename Field, typename Store>
Expected<Tensor> fromTypedField(const Field &field, const char *fieldName, DType dtype,
                                const std::vector<int64_t> &shape, int64_t count,
                                const std::string &what, Store &&store) {
  if (int64_t(field.size()) != count)
    return makeError(what, ": ", fieldName, " holds ", field.size(), " values, the shape needs ",
                     count);
  TC_ASSIGN_OR_RETURN(Tensor tensor, Tensor::zeros(dtype, shape));
  for (int64_t i = 0; i < count; ++i)
    store(tensor, i, field.Get(int(i)));
  return tensor;
}

} // namespace

Expected<Tensor> tensorFromProto(const ::onnx::TensorProto &proto, const std::string &modelDir,
                                 const std::string &what) {
  std::optional<DType> dtype = dtypeFromOnnx(proto.data_type());
  if (!dtype)
    return makeError(what, ": unsupported element type ", onnxTypeName(proto.data_type()));
  std::vector<int64_t> shape(proto.dims().begin(), proto.dims().end());
  TC_ASSIGN_OR_RETURN(int64_t count, checkedNumel(shape, what));
  if (uint64_t(count) > (uint64_t(1) << 40) / dtypeSize(*dtype))
    return makeError(what, ": ", describeShape(*dtype, shape), " is too large");
  uint64_t bytes = uint64_t(count) * dtypeSize(*dtype);

  // The data's size is checked before anything is allocated: a tiny model must not be able to
  // force a huge allocation.
  if (proto.data_location() == ::onnx::TensorProto::EXTERNAL) {
    TC_ASSIGN_OR_RETURN(std::string data, readExternal(proto, modelDir, what, bytes));
    TC_ASSIGN_OR_RETURN(Tensor tensor, Tensor::zeros(*dtype, shape));
    if (bytes)
      std::memcpy(tensor.mutableData(), data.data(), data.size());
    return tensor;
  }
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != bytes)
      return makeError(what, ": raw_data holds ", proto.raw_data().size(), " bytes, ",
                       describeShape(*dtype, shape), " needs ", bytes);
    TC_ASSIGN_OR_RETURN(Tensor tensor, Tensor::zeros(*dtype, shape));
    if (bytes)
      std::memcpy(tensor.mutableData(), proto.raw_data().data(), size_t(bytes));
    return tensor;
  }
  switch (*dtype) {
  case DType::F32:
    return fromTypedField(proto.float_data(), "float_data", *dtype, shape, count, what,
                          [](Tensor &t, int64_t i, float v) { t.mutableDataAs<float>()[i] = v; });
  case DType::F64:
    return fromTypedField(proto.double_data(), "double_data", *dtype, shape, count, what,
                          [](Tensor &t, int64_t i, double v) { t.mutableDataAs<double>()[i] = v; });
  case DType::I64:
    return fromTypedField(proto.int64_data(), "int64_data", *dtype, shape, count, what,
                          [](Tensor &t, int64_t i, int64_t v) { t.setInt(i, v); });
  case DType::F16:
  case DType::BF16: // stored as raw 16-bit patterns in int32_data
    return fromTypedField(
        proto.int32_data(), "int32_data", *dtype, shape, count, what,
        [](Tensor &t, int64_t i, int32_t v) { t.mutableDataAs<uint16_t>()[i] = uint16_t(v); });
  case DType::I32:
  case DType::I16:
  case DType::I8:
  case DType::U8:
  case DType::U16:
  case DType::Bool:
    return fromTypedField(proto.int32_data(), "int32_data", *dtype, shape, count, what,
                          [](Tensor &t, int64_t i, int32_t v) { t.setInt(i, v); });
  case DType::U32:
  case DType::U64: // ONNX keeps uint32 and uint64 in uint64_data
    return fromTypedField(proto.uint64_data(), "uint64_data", *dtype, shape, count, what,
                          [](Tensor &t, int64_t i, uint64_t v) { t.setInt(i, int64_t(v)); });
  }
  return makeError(what, ": unsupported element type ", onnxTypeName(proto.data_type()));
}

} // namespace tensorc::onnx
