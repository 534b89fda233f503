// Kernel lookup through the dynamic loader.
#include "KernelLibrary.h"

#include <cerrno>
#include <cstring>
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

namespace tensorc::rt {

namespace {

class DlKernelLibrary final : public KernelLibrary {
public:
  /// `fd`: the memory file the library was loaded from, or -1.
  DlKernelLibrary(void *handle, std::string name, int fd = -1)
      : handle_(handle), name_(std::move(name)), fd_(fd) {}
  ~DlKernelLibrary() override {
    dlclose(handle_);
    if (fd_ >= 0)
      ::close(fd_);
  }

  Expected<std::string_view> lookupString(const std::string &symbol) const override {
    dlerror();
    const char *address = static_cast<const char *>(dlsym(handle_, symbol.c_str()));
    if (!address)
      return makeError(name_, ": no symbol '", symbol, "' (not built by this tensorc?)");
    return std::string_view(address);
  }

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
  int fd_;
};

std::string lastDlError() {
  const char *message = dlerror();
  return message ? message : "unknown dynamic loader error";
}

/// ELF e_machine values of the architectures tensorc generates code for.
constexpr uint16_t kMachineX86_64 = 62, kMachineAArch64 = 183;

std::string machineName(uint16_t machine) {
  switch (machine) {
  case kMachineX86_64:
    return "x86_64";
  case kMachineAArch64:
    return "aarch64";
  default:
    return "ELF machine " + std::to_string(machine);
  }
}

} // namespace

Status checkKernelObject(const void *bytes, size_t size, const std::string &name) {
#if defined(__x86_64__)
  constexpr uint16_t host = kMachineX86_64;
#elif defined(__aarch64__)
  constexpr uint16_t host = kMachineAArch64;
#else
  constexpr uint16_t host = 0;
#endif
  const unsigned char *e = static_cast<const unsigned char *>(bytes);
  // e_ident: magic, class (2 = 64-bit), data (1 = little-endian); e_type at 16, e_machine at 18.
  if (size < 64 || std::memcmp(e,
                               "\x7f"
                               "ELF",
                               4) != 0)
    return makeError(name, ": not an ELF shared object");
  uint16_t type = uint16_t(e[16] | e[17] << 8), machine = uint16_t(e[18] | e[19] << 8);
  if (e[5] != 1)
    return makeError(name, ": a big-endian ELF object, this machine is ", machineName(host));
  if (machine != host || e[4] != 2)
    return makeError(name, ": built for ", machineName(machine), e[4] == 2 ? "" : " (32-bit)",
                     ", but this machine is ", machineName(host));
  if (type != 3) // ET_DYN
    return makeError(name, ": an ELF object of type ", type, ", not a shared object");
  return Status::ok();
}

Expected<std::unique_ptr<KernelLibrary>> openKernelFile(const std::string &path) {
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return makeError("cannot load kernels: ", lastDlError());
  return std::unique_ptr<KernelLibrary>(new DlKernelLibrary(handle, path));
}

Expected<std::unique_ptr<KernelLibrary>> openKernelBytes(const void *bytes, size_t size,
                                                         const std::string &name) {
  TC_RETURN_IF_ERROR(checkKernelObject(bytes, size, name));
  int fd = ::memfd_create("tensorc-kernels", MFD_CLOEXEC);
  if (fd < 0)
    return makeError(name, ": cannot create a memory file for the kernels: ", std::strerror(errno));
  const char *next = static_cast<const char *>(bytes);
  for (size_t left = size; left > 0;) {
    ssize_t written = ::write(fd, next, left);
    if (written < 0 && errno == EINTR)
      continue;
    if (written <= 0) {
      std::string reason = std::strerror(errno);
      ::close(fd);
      return makeError(name, ": cannot write the kernels to a memory file: ", reason);
    }
    next += written;
    left -= size_t(written);
  }
  // The fd stays open until dlclose: the loader recognizes loaded objects by path first, so a
  // later memory file reusing this fd number would otherwise be mistaken for this library.
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    std::string error = lastDlError();
    ::close(fd);
    return makeError(name, ": cannot load the kernels from memory: ", error);
  }
  return std::unique_ptr<KernelLibrary>(new DlKernelLibrary(handle, name, fd));
}

} // namespace tensorc::rt
