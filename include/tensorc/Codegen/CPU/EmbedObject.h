// An object file that carries a bundle's files as data, for `tensorc compile --emit=so`.
#pragma once

#include "tensorc/Support/Status.h"

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

/// Emits an ELF relocatable object for `triple` (PIC) defining `tensorc_embedded_bundle()`, which
/// returns a bundle::EmbeddedBundle listing `files` in order. Everything else in the object is
/// internal, so a model library exports nothing from it.
Expected<std::string> emitEmbeddedBundleObject(const std::vector<EmbedFile> &files,
                                               const std::string &triple);

} // namespace tensorc::cpu
