// Weight sources: a safetensors file mapping, safetensors bytes in memory, or none.
#include "WeightSource.h"

#include "tensorc/Support/Json.h"
#include "tensorc/Support/Safetensors.h"

#include <cstring>

namespace tensorc::rt {

namespace {

class TensorMapSource final : public WeightSource {
public:
  TensorMapSource(std::map<std::string, Tensor> tensors, std::string origin)
      : tensors_(std::move(tensors)), origin_(std::move(origin)) {}
  const std::map<std::string, Tensor> &tensors() const override { return tensors_; }
  const std::string &origin() const override { return origin_; }

private:
  std::map<std::string, Tensor> tensors_;
  std::string origin_;
};

/// One header entry over the data section [data, data + dataSize).
// Support's readSafetensors parses files only; this is its in-memory twin with the same checks.
Expected<Tensor> viewEntry(const std::string &name, const Json &entry, const char *data,
                           uint64_t dataSize) {
  const Json *dtypeJson = entry.find("dtype");
  const Json *shapeJson = entry.find("shape");
  const Json *offsetsJson = entry.find("data_offsets");
  if (!entry.isObject() || !dtypeJson || !dtypeJson->isString() || !shapeJson ||
      !shapeJson->isArray() || !offsetsJson || !offsetsJson->isArray() ||
      offsetsJson->items().size() != 2)
    return makeError("tensor '", name, "': needs dtype, shape and data_offsets [begin, end]");
  std::optional<DType> dtype = parseSafetensorsDType(dtypeJson->asString());
  if (!dtype)
    return makeError("tensor '", name, "': unsupported dtype '", dtypeJson->asString(), "'");
  std::vector<int64_t> shape;
  for (const Json &dim : shapeJson->items()) {
    if (!dim.isInt() || dim.asInt() < 0)
      return makeError("tensor '", name, "': shape entries must be non-negative integers");
    shape.push_back(dim.asInt());
  }
  TC_ASSIGN_OR_RETURN(int64_t count, checkedNumel(shape, strCat("tensor '", name, "'")));
  const Json &begin = offsetsJson->items()[0], &end = offsetsJson->items()[1];
  if (!begin.isInt() || !end.isInt() || begin.asInt() < 0 || end.asInt() < begin.asInt() ||
      uint64_t(end.asInt()) > dataSize)
    return makeError("tensor '", name, "': bad data_offsets for a data section of ", dataSize,
                     " bytes");
  uint64_t bytes = uint64_t(end.asInt() - begin.asInt());
  if (uint64_t(count) > UINT64_MAX / dtypeSize(*dtype) ||
      uint64_t(count) * dtypeSize(*dtype) != bytes)
    return makeError("tensor '", name, "': ", bytes, " bytes of data for ",
                     describeShape(*dtype, shape));
  return Tensor::view(*dtype, std::move(shape), nullptr, data + begin.asInt());
}

} // namespace

Expected<std::unique_ptr<WeightSource>> viewWeightBytes(const void *data, size_t size,
                                                        std::string origin) {
  const char *bytes = static_cast<const char *>(data);
  uint64_t headerBytes = 0;
  if (size >= 8)
    std::memcpy(&headerBytes, bytes, 8); // little-endian hosts only, as the file reader
  if (size < 8 || headerBytes > size - 8)
    return makeError(origin, ": truncated safetensors header");
  Expected<Json> header = Json::parse(std::string_view(bytes + 8, size_t(headerBytes)));
  if (!header)
    return header.takeError().withContext(origin);
  if (!header->isObject())
    return makeError(origin, ": safetensors header is not a JSON object");
  std::map<std::string, Tensor> tensors;
  for (const auto &[name, entry] : header->members()) {
    if (name == "__metadata__")
      continue;
    Expected<Tensor> tensor =
        viewEntry(name, entry, bytes + 8 + headerBytes, size - 8 - headerBytes);
    if (!tensor)
      return tensor.takeError().withContext(origin);
    tensors.emplace(name, std::move(tensor).value());
  }
  return std::unique_ptr<WeightSource>(new TensorMapSource(std::move(tensors), origin));
}

Expected<std::unique_ptr<WeightSource>> openWeightFile(const std::string &path) {
  TC_ASSIGN_OR_RETURN(auto tensors, readSafetensors(path));
  return std::unique_ptr<WeightSource>(new TensorMapSource(std::move(tensors), path));
}

std::unique_ptr<WeightSource> emptyWeights() {
  return std::make_unique<TensorMapSource>(std::map<std::string, Tensor>{}, "<no weights>");
}

} // namespace tensorc::rt
