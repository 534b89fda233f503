// Safetensors reader (memory-mapped, validated) and atomic writer.
#include "tensorc/Support/Safetensors.h"

#include "tensorc/Support/Json.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tensorc {

namespace {

constexpr uint64_t kMaxHeaderBytes = 100 << 20;

/// Owns one read-only mapping of a whole file.
struct Mapping {
  void *address = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (address && size)
      munmap(address, size);
  }
};

Expected<std::shared_ptr<Mapping>> mapFile(const std::string &path) {
  // O_NONBLOCK: opening a FIFO must not block before fstat can refuse it.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return makeError(path, ": cannot open: ", std::strerror(errno));
  struct stat info;
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    return makeError(path, ": not a regular file");
  }
  auto mapping = std::make_shared<Mapping>();
  mapping->size = size_t(info.st_size);
  if (mapping->size > 0) {
    void *address = mmap(nullptr, mapping->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (address == MAP_FAILED) {
      ::close(fd);
      return makeError(path, ": cannot map: ", std::strerror(errno));
    }
    mapping->address = address;
  }
  ::close(fd);
  return mapping;
}

/// One header entry, viewing [dataStart + begin, dataStart + end) of `bytes`.
Expected<Tensor> parseEntry(const std::string &name, const Json &entry, const char *bytes,
                            uint64_t dataSize, const std::shared_ptr<const void> &owner) {
  if (!entry.isObject())
    return makeError("tensor '", name, "': header entry is not an object");
  const Json *dtypeJson = entry.find("dtype");
  const Json *shapeJson = entry.find("shape");
  const Json *offsetsJson = entry.find("data_offsets");
  if (!dtypeJson || !dtypeJson->isString() || !shapeJson || !shapeJson->isArray() ||
      !offsetsJson || !offsetsJson->isArray() || offsetsJson->items().size() != 2)
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
  const Json &beginJson = offsetsJson->items()[0], &endJson = offsetsJson->items()[1];
  if (!beginJson.isInt() || !endJson.isInt() || beginJson.asInt() < 0 ||
      endJson.asInt() < beginJson.asInt())
    return makeError("tensor '", name, "': bad data_offsets");
  uint64_t begin = uint64_t(beginJson.asInt()), end = uint64_t(endJson.asInt());
  if (end > dataSize)
    return makeError("tensor '", name, "': data_offsets [", begin, ", ", end,
                     "] leave the data section of ", dataSize, " bytes");
  if (uint64_t(count) > UINT64_MAX / dtypeSize(*dtype) ||
      uint64_t(count) * dtypeSize(*dtype) != end - begin)
    return makeError("tensor '", name, "': ", end - begin, " bytes of data for ",
                     describeShape(*dtype, shape));
  const char *start = bytes + begin;
  if (count == 0 || reinterpret_cast<uintptr_t>(start) % dtypeSize(*dtype) == 0)
    return Tensor::view(*dtype, std::move(shape), owner, start);
  // Writers that do not pad the header (the format allows any JSON length) can leave a tensor
  // misaligned for its element type: copy it into our own aligned storage.
  TC_ASSIGN_OR_RETURN(Tensor copy, Tensor::zeros(*dtype, std::move(shape)));
  std::memcpy(copy.mutableData(), start, size_t(end - begin));
  return copy;
}

} // namespace

Expected<std::map<std::string, Tensor>> parseSafetensors(const void *data, size_t size,
                                                         const std::shared_ptr<const void> &owner) {
  const char *bytes = static_cast<const char *>(data);
  if (size < 8)
    return makeError("truncated: no header length");
  uint64_t headerBytes = 0;
  std::memcpy(&headerBytes, bytes, 8); // little-endian hosts only (x86-64, aarch64)
  if (headerBytes > kMaxHeaderBytes || headerBytes > size - 8)
    return makeError("header length ", headerBytes, " exceeds the file");
  Expected<Json> header = Json::parse(std::string_view(bytes + 8, size_t(headerBytes)));
  if (!header)
    return header.takeError();
  if (!header->isObject())
    return makeError("header is not a JSON object");
  std::map<std::string, Tensor> tensors;
  for (const auto &[name, entry] : header->members()) {
    if (name == "__metadata__")
      continue;
    TC_ASSIGN_OR_RETURN(Tensor tensor, parseEntry(name, entry, bytes + 8 + headerBytes,
                                                  size - 8 - headerBytes, owner));
    tensors.emplace(name, std::move(tensor));
  }
  return tensors;
}

Expected<std::map<std::string, Tensor>> readSafetensors(const std::string &path) {
  TC_ASSIGN_OR_RETURN(std::shared_ptr<Mapping> mapping, mapFile(path));
  Expected<std::map<std::string, Tensor>> tensors =
      parseSafetensors(mapping->address, mapping->size, mapping);
  if (!tensors)
    return tensors.takeError().withContext(path);
  return tensors;
}

Status writeSafetensors(const std::string &path,
                        const std::vector<std::pair<std::string, Tensor>> &given) {
  // Larger element sizes first: with a 64-byte aligned data section every tensor then starts at
  // a multiple of its element size, so readers can use the mapping in place.
  std::vector<std::pair<std::string, Tensor>> tensors = given;
  std::stable_sort(tensors.begin(), tensors.end(), [](const auto &a, const auto &b) {
    return dtypeSize(a.second.dtype()) > dtypeSize(b.second.dtype());
  });
  Json header = Json::object();
  uint64_t offset = 0;
  for (const auto &[name, tensor] : tensors) {
    if (header.find(name))
      return makeError(path, ": tensor '", name, "' appears twice");
    Json entry = Json::object();
    entry["dtype"] = Json(std::string(dtypeSafetensorsName(tensor.dtype())));
    Json shape = Json::array();
    for (int64_t dim : tensor.shape())
      shape.push(Json(dim));
    entry["shape"] = std::move(shape);
    Json offsets = Json::array();
    offsets.push(Json(offset));
    offset += tensor.nbytes();
    offsets.push(Json(offset));
    entry["data_offsets"] = std::move(offsets);
    header[name] = std::move(entry);
  }
  std::string headerText = header.dump();
  // Pad with spaces (allowed by the format) so the data section starts 64-byte aligned.
  while ((8 + headerText.size()) % 64 != 0)
    headerText += ' ';

  std::string temporary = strCat(path, ".tmp.", ::getpid());
  FILE *file = std::fopen(temporary.c_str(), "wb");
  if (!file)
    return makeError(path, ": cannot write: ", std::strerror(errno));
  uint64_t headerBytes = headerText.size();
  bool ok = std::fwrite(&headerBytes, 8, 1, file) == 1 &&
            std::fwrite(headerText.data(), 1, headerText.size(), file) == headerText.size();
  for (const auto &entry : tensors) {
    const Tensor &tensor = entry.second;
    if (ok && tensor.nbytes() > 0)
      ok = std::fwrite(tensor.data(), 1, tensor.nbytes(), file) == tensor.nbytes();
  }
  ok = std::fclose(file) == 0 && ok;
  if (!ok || std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    return makeError(path, ": write failed: ", std::strerror(errno));
  }
  return Status::ok();
}

} // namespace tensorc
