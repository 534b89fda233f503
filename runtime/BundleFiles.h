// Files of a bundle: resolved inside its directory (symlinks may not leave it), mapped
// read-only, verified against the manifest's SHA-256 digests; the manifest itself; files embedded
// in a model library (`--emit=so`).
#pragma once

#include "tensorc/Bundle/EmbeddedBundle.h"
#include "tensorc/Bundle/Manifest.h"
#include "tensorc/Support/Status.h"

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tensorc::rt {

/// A bundle file mapped read-only (or read into private memory: loadBundleFile); unmapped when
/// the last holder lets go.
struct MappedFile {
  const void *data = nullptr;
  size_t size = 0;
  size_t mappedBytes = 0; // the mapping's length (at least size)
  MappedFile() = default;
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
  ~MappedFile();
};

/// `bundleDir`/`relative` with every symlink resolved, which must still lie inside the bundle
/// (a symlinked variant could otherwise load any file of the machine) and be a regular file.
Expected<std::string> resolveInBundle(const std::string &bundleDir, const std::string &relative);
Expected<std::shared_ptr<MappedFile>> mapBundleFile(const std::string &bundleDir,
                                                    const std::string &relative);
/// A transparent huge page on the targets the runtime runs on (x86-64, aarch64 with 4 KiB base
/// pages): what loadBundleFile and the CPU arena align and round to.
constexpr size_t kHugePageBytes = size_t(2) << 20;
/// The same file read into private anonymous memory that the kernel may back with transparent
/// huge pages (MADV_HUGEPAGE): a CPU model's weights, which kernels stream at batch 1, then take
/// one TLB entry per 2 MiB instead of per 4 KiB.
Expected<std::shared_ptr<MappedFile>> loadBundleFile(const std::string &bundleDir,
                                                     const std::string &relative);
/// Checks `bytes` against the digest the manifest lists for `relative`; `where` names them.
Status verifyBundleFile(const bundle::Manifest &manifest, const std::string &relative,
                        const void *bytes, size_t size, const std::string &where);
/// A bundle file's bytes, resolved inside the bundle and verified against the manifest.
Expected<std::string> readBundleFile(const std::string &bundleDir, const bundle::Manifest &manifest,
                                     const std::string &relative);
Expected<std::string> readFile(const std::string &path);
Expected<bundle::Manifest> parseManifest(std::string_view text, const std::string &path);
Expected<bundle::Manifest> readManifest(const std::string &bundleDir);
/// The model library holding the embedded bundle, for messages: "/path/model.so".
std::string embeddedLibraryName();
const bundle::EmbeddedFile *findEmbeddedFile(const bundle::EmbeddedBundle &embedded,
                                             const std::string &name);
/// "launches[i] (kernel NAME)", for messages.
std::string launchLabel(const bundle::Manifest &manifest, size_t index);
/// "[s0, 128]": a manifest shape's dims.
std::string shapeText(const std::vector<bundle::SizeExpr> &shape);

} // namespace tensorc::rt
