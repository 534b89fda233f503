// Reading input files: a read-only memory mapping of a whole file (large files, a bundle's
// weights, hashed or copied without reading them into memory first), and readRegularFile.
#pragma once

#include "tensorc/Support/Status.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace tensorc {

class MappedFile {
public:
  /// Maps the regular file at `path`; errors name it.
  static Expected<std::unique_ptr<MappedFile>> open(const std::string &path);
  ~MappedFile();
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
  std::string_view bytes() const { return {data_ ? data_ : "", size_}; }

private:
  MappedFile() = default;
  const char *data_ = nullptr;
  size_t size_ = 0;
};

/// The bytes of the regular file at `path` (a FIFO or a directory is refused, not opened), or
/// an error naming it; a file over `maxBytes` is refused with "<path>: <tooLarge>".
Expected<std::string> readRegularFile(const std::string &path, uint64_t maxBytes,
                                      std::string_view tooLarge);

} // namespace tensorc
