// Where a model's generated kernels live: a dlopen'ed variant file, or the image holding the
// runtime.
#pragma once

#include "tensorc/Bundle/Manifest.h"

#include <memory>
#include <string>

namespace tensorc::rt {

/// Resolves kernel symbols. A bundle directory opens its cpu/<variant>.so; a self-contained
/// `--emit=so` model links the kernels next to the runtime and looks them up in its own image.
class KernelLibrary {
public:
  virtual ~KernelLibrary() = default;
  /// Errors name the library and the symbol.
  virtual Expected<bundle::TensorcKernelFn> lookup(const std::string &symbol) const = 0;
};

/// dlopen(path, RTLD_NOW | RTLD_LOCAL): unresolved references fail here, not mid-run. The file
/// must not be rewritten in place while open (the compiler renames bundles into place).
Expected<std::unique_ptr<KernelLibrary>> openKernelFile(const std::string &path);

/// The shared object (or executable) this runtime code is linked into.
Expected<std::unique_ptr<KernelLibrary>> openCurrentImage();

} // namespace tensorc::rt
