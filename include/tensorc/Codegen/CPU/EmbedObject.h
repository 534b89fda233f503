// An object file that carries a bundle's files as data, for `tensorc compile --emit=so`.
#pragma once

#include "tensorc/Support/Status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tensorc::cpu {

/// One file to embed: its bundle-relative name and its bytes (not copied until emission).
struct EmbedFile {
  std::string name;
  std::string_view bytes;
  unsigned alignment = 1; // a power of two; 64 for weights, so tensors are used in place
};

/// The table an embedded-data object defines: `symbol` (hidden, a function taking nothing)
/// returns a pointer to {u32 version, u32 file count, pointer to files}, each file being
/// {pointer to a NUL-terminated name, pointer to its bytes, u64 size}. The caller owns this
/// layout (bundle::EmbeddedBundle pins it with static_asserts); codegen only lays it out.
struct EmbedTable {
  std::string symbol;
  uint32_t version = 0;
};

/// Emits an ELF relocatable object for `triple` (PIC) defining `table.symbol`, whose table lists
/// `files` in order. Everything else in the object is internal, so a model library exports
/// nothing from it.
Expected<std::string> emitEmbeddedBundleObject(const std::vector<EmbedFile> &files,
                                               const std::string &triple, const EmbedTable &table);

} // namespace tensorc::cpu
