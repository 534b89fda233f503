// A fast 128-bit content hash (not cryptographic) for cache keys and source identities: large
// models are hashed at memory speed, where SHA-256 would dominate a cached compile.
#pragma once

#include "tensorc/Support/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tensorc {

/// Incremental: update() any number of times, then hex() (32 lowercase hex digits). The same
/// bytes give the same digest however they are split between update() calls.
class ContentHash {
public:
  ContentHash();
  void update(const void *data, size_t size);
  void update(std::string_view text) { update(text.data(), text.size()); }
  /// A length-prefixed field: update(a), update(b) and update(ab), update("") differ.
  void field(std::string_view text);
  std::string hex() const;

private:
  void stripe(const uint8_t *data);
  uint64_t lanes_[8];
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  uint64_t length_ = 0;
};

/// The digest of `bytes`.
std::string contentHashHex(std::string_view bytes);

/// The digest of the file at `path`, read in chunks; errors name the file.
Expected<std::string> contentHashFile(const std::string &path);

} // namespace tensorc
