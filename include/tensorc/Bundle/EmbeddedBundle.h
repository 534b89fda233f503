// The bundle a `--emit=so` model library carries inside itself: its files as byte arrays.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tensorc::bundle {

/// One bundle file, named by its path inside a bundle directory ("manifest.json",
/// "weights.safetensors", "cpu/x86_64.so").
struct EmbeddedFile {
  const char *name; // NUL-terminated
  const void *data; // weights.safetensors is 64-byte aligned, so its tensors are used in place
  uint64_t size;
};

/// What `tensorc_embedded_bundle()` returns. The compiler builds this table as LLVM constants
/// (lib/Codegen/CPU/EmbedObject.cpp), so its layout is an ABI: change it only with the version.
struct EmbeddedBundle {
  uint32_t version; // kEmbeddedBundleVersion of the compiler that built it
  uint32_t numFiles;
  const EmbeddedFile *files;
};

inline constexpr uint32_t kEmbeddedBundleVersion = 1;

/// The accessor's symbol. The runtime references it weakly: it is defined only in model
/// libraries, and is null in every other program linking the runtime.
inline constexpr const char *kEmbeddedBundleSymbol = "tensorc_embedded_bundle";

static_assert(sizeof(EmbeddedFile) == 24 && offsetof(EmbeddedFile, size) == 16);
static_assert(sizeof(EmbeddedBundle) == 16 && offsetof(EmbeddedBundle, files) == 8);

} // namespace tensorc::bundle

extern "C" {
/// Defined by the embedded-bundle object of a model library; the runtime tests it for null.
__attribute__((weak)) const tensorc::bundle::EmbeddedBundle *tensorc_embedded_bundle();
}
