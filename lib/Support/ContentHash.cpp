// ContentHash: eight independent multiply-rotate lanes over 64-byte stripes, folded at the end.
#include "tensorc/Support/ContentHash.h"

#include "tensorc/Support/StrCat.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

namespace tensorc {

namespace {

constexpr uint64_t kPrime1 = 0x9e3779b185ebca87ull;
constexpr uint64_t kPrime2 = 0xc2b2ae3d27d4eb4full;
constexpr uint64_t kPrime3 = 0x165667b19e3779f9ull;

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

uint64_t load64(const uint8_t *p) {
  uint64_t v;
  std::memcpy(&v, p, 8); // little-endian hosts only hash the same; the cache is per machine
  return v;
}

uint64_t round(uint64_t acc, uint64_t input) { return rotl(acc + input * kPrime2, 31) * kPrime1; }

uint64_t avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= kPrime2;
  h ^= h >> 29;
  h *= kPrime3;
  h ^= h >> 32;
  return h;
}

} // namespace

ContentHash::ContentHash() {
  for (int i = 0; i < 8; ++i)
    lanes_[i] = kPrime1 * uint64_t(i + 1) + kPrime3;
}

void ContentHash::stripe(const uint8_t *data) {
  for (int i = 0; i < 8; ++i)
    lanes_[i] = round(lanes_[i], load64(data + 8 * i));
}

void ContentHash::update(const void *data, size_t size) {
  const uint8_t *bytes = static_cast<const uint8_t *>(data);
  length_ += size;
  if (buffered_) {
    size_t take = std::min(size, sizeof buffer_ - buffered_);
    std::memcpy(buffer_ + buffered_, bytes, take);
    buffered_ += take, bytes += take, size -= take;
    if (buffered_ < sizeof buffer_)
      return;
    stripe(buffer_);
    buffered_ = 0;
  }
  for (; size >= 64; bytes += 64, size -= 64)
    stripe(bytes);
  std::memcpy(buffer_, bytes, size);
  buffered_ = size;
}

void ContentHash::field(std::string_view text) {
  uint64_t size = text.size();
  update(&size, sizeof size);
  update(text);
}

std::string ContentHash::hex() const {
  // The tail (zero-padded) and the length go through one more stripe of a copy.
  uint64_t lanes[8];
  std::memcpy(lanes, lanes_, sizeof lanes);
  uint8_t tail[64] = {};
  std::memcpy(tail, buffer_, buffered_);
  for (int i = 0; i < 8; ++i)
    lanes[i] = round(lanes[i], load64(tail + 8 * i) ^ (length_ * kPrime3 + uint64_t(i)));
  uint64_t a = length_ * kPrime1, b = length_ ^ kPrime2;
  for (int i = 0; i < 8; ++i) {
    a = rotl(a ^ round(0, lanes[i]), 27) * kPrime1 + kPrime3;
    b = rotl(b + round(kPrime3, lanes[7 - i]), 29) * kPrime2 ^ kPrime1;
  }
  char text[40];
  std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(avalanche(a)),
                static_cast<unsigned long long>(avalanche(b ^ a)));
  return text;
}

std::string contentHashHex(std::string_view bytes) {
  ContentHash hash;
  hash.update(bytes);
  return hash.hex();
}

Expected<std::string> contentHashFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return makeError(path, ": cannot read");
  ContentHash hash;
  std::vector<char> chunk(size_t(1) << 20);
  while (in.read(chunk.data(), std::streamsize(chunk.size())) || in.gcount() > 0) {
    hash.update(chunk.data(), size_t(in.gcount()));
    if (!in)
      break;
  }
  if (in.bad())
    return makeError(path, ": read failed");
  return hash.hex();
}

} // namespace tensorc
