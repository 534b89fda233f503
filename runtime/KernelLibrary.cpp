// Kernel lookup through the dynamic loader.
#include "KernelLibrary.h"

#include <dlfcn.h>

namespace tensorc::rt {

namespace {

class DlKernelLibrary final : public KernelLibrary {
public:
  DlKernelLibrary(void *handle, std::string name) : handle_(handle), name_(std::move(name)) {}
  ~DlKernelLibrary() override { dlclose(handle_); }

  Expected<bundle::TensorcKernelFn> lookup(const std::string &symbol) const override {
    dlerror(); // clear a stale error so the one below is ours
    void *address = dlsym(handle_, symbol.c_str());
    if (!address)
      return makeError(name_, ": no kernel symbol '", symbol, "'");
    return reinterpret_cast<bundle::TensorcKernelFn>(address);
  }

private:
  void *handle_;
  std::string name_;
};

std::string lastDlError() {
  const char *message = dlerror();
  return message ? message : "unknown dynamic loader error";
}

} // namespace

Expected<std::unique_ptr<KernelLibrary>> openKernelFile(const std::string &path) {
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return makeError("cannot load kernels: ", lastDlError());
  return std::unique_ptr<KernelLibrary>(new DlKernelLibrary(handle, path));
}

Expected<std::unique_ptr<KernelLibrary>> openCurrentImage() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void *>(&openCurrentImage), &info) || !info.dli_fname)
    return makeError("cannot find the image holding the runtime: ", lastDlError());
  // RTLD_NOLOAD: take another reference to the already loaded image, never load a copy.
  void *handle = dlopen(info.dli_fname, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (!handle)
    handle = dlopen(nullptr, RTLD_NOW); // the main executable
  if (!handle)
    return makeError("cannot open the image holding the runtime: ", lastDlError());
  return std::unique_ptr<KernelLibrary>(new DlKernelLibrary(handle, info.dli_fname));
}

} // namespace tensorc::rt
