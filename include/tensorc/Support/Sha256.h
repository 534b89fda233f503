// SHA-256 (FIPS 180-4), for the integrity of bundle files: no library dependency, so the runtime
// can verify bundles without linking OpenSSL.
#pragma once

#include "tensorc/Support/Status.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tensorc {

/// Incremental hashing: update() any number of times, then hexDigest() once.
class Sha256 {
public:
  Sha256();
  void update(const void *data, size_t size);
  /// The 64 lowercase hex digits of the digest; the object is spent afterwards.
  std::string hexDigest();

private:
  void compress(const uint8_t *block);
  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t length_ = 0; // bytes hashed so far
};

/// The hex digest of `bytes`.
std::string sha256Hex(const void *data, size_t size);
inline std::string sha256Hex(std::string_view bytes) {
  return sha256Hex(bytes.data(), bytes.size());
}

/// The hex digest of the file at `path`, read in chunks; errors name the file.
Expected<std::string> sha256File(const std::string &path);

} // namespace tensorc
