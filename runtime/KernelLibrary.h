// Where a model's generated kernels live: a variant file of a bundle directory, or a variant's
// bytes embedded in a model library.
#pragma once

#include "tensorc/Bundle/Manifest.h"

#include <memory>
#include <string>
#include <string_view>

namespace tensorc::rt {

/// Resolves kernel symbols. A bundle directory opens its cpu/<variant>.so; an `--emit=so` model
/// library carries each variant's .so as bytes and loads the chosen one from memory.
class KernelLibrary {
public:
  virtual ~KernelLibrary() = default;
  /// Errors name the library and the symbol.
  virtual Expected<bundle::TensorcKernelFn> lookup(const std::string &symbol) const = 0;
  /// A NUL-terminated string the library exports as data (its kernel signature table), or an
  /// error naming the library and the symbol.
  virtual Expected<std::string_view> lookupString(const std::string &symbol) const = 0;
};

/// Checks that `bytes` are an ELF shared object this machine can load: 64-bit, little-endian,
/// for the host's architecture. Errors name `name` and what the file is instead, so that a
/// variant built for another machine is not reported as a missing file.
Status checkKernelObject(const void *bytes, size_t size, const std::string &name);

/// dlopen(path, RTLD_NOW | RTLD_LOCAL): unresolved references fail here, not mid-run. The file
/// must not be rewritten in place while open (the compiler renames bundles into place).
Expected<std::unique_ptr<KernelLibrary>> openKernelFile(const std::string &path);

/// Loads a kernel .so from `bytes` without writing it to disk: an anonymous memory file
/// (memfd_create) dlopen'ed through /proc/self/fd, held open until the library is closed. Each
/// call loads a separate copy, so two models with equally named kernels never share one. `name`
/// is for messages.
Expected<std::unique_ptr<KernelLibrary>> openKernelBytes(const void *bytes, size_t size,
                                                         const std::string &name);

} // namespace tensorc::rt
