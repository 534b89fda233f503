// Shared setup of the libFuzzer harnesses.
#include "FuzzCommon.h"

#include "tensorc/Support/Limits.h"
#include "tensorc/Support/SignalCleanup.h"

#include <cstdio>
#include <unistd.h>

namespace tensorc::fuzz {

const OpRegistry &registry() {
  static const OpRegistry instance = [] {
    Expected<OpRegistry> built = ops::buildCoreRegistry();
    check(bool(built), built ? "" : built.error().message());
    return std::move(built).value();
  }();
  return instance;
}

const std::string &scratchDir() {
  static const std::string dir = [] {
    const char *base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/tensorc-fuzz-XXXXXX";
    check(::mkdtemp(pattern.data()) != nullptr, "cannot create a scratch directory");
    static std::string removeAtExit;
    removeAtExit = pattern;
    std::atexit([] { cleanup::removeTree(removeAtExit.c_str()); });
    return pattern;
  }();
  return dir;
}

void limitTensorBytes() { ::setenv(kMaxTensorBytesEnv, "64M", /*overwrite=*/0); }

void check(bool condition, const std::string &what) {
  if (condition)
    return;
  std::fprintf(stderr, "tensorc fuzz check failed: %s\n", what.c_str());
  std::abort();
}

} // namespace tensorc::fuzz
