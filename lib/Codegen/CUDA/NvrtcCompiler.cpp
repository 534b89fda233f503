// The CUDA compiler: NVRTC turns rendered source into a cubin per architecture plus PTX for the
// lowest one (forward compatibility), cached on disk by a hash of source, options and NVRTC
// version.
#include "tensorc/Codegen/CUDA/CudaCodegen.h"

#include "tensorc/Support/StrCat.h"

#include <nvrtc.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace tensorc::cuda {

namespace {

namespace fs = std::filesystem;

Expected<int> archNumber(const std::string &arch) {
  // sm_<major><minor>, e.g. sm_80, sm_90, sm_100
  if (arch.size() < 5 || arch.compare(0, 3, "sm_") != 0 ||
      !std::all_of(arch.begin() + 3, arch.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return makeError("CUDA arch '", arch, "' is not of the form sm_<major><minor> (e.g. sm_90)");
  return std::atoi(arch.c_str() + 3);
}

std::string hashText(const std::string &text) {
  // FNV-1a, twice with different bases: a cache key, not a security property.
  uint64_t a = 1469598103934665603ull, b = 0x9e3779b97f4a7c15ull;
  for (unsigned char c : text) {
    a = (a ^ c) * 1099511628211ull;
    b = (b ^ c) * 0x100000001b3ull + 0x7f4a7c15ull;
  }
  char out[40];
  std::snprintf(out, sizeof out, "%016llx%016llx", static_cast<unsigned long long>(a),
                static_cast<unsigned long long>(b));
  return out;
}

std::string cacheDirectory(const std::string &option) {
  if (option == "-")
    return "";
  if (!option.empty())
    return option;
  if (const char *env = std::getenv("TENSORC_CACHE_DIR"); env && *env)
    return env;
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/tensorc";
  return "";
}

bool readCached(const fs::path &path, std::string &bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream text;
  text << in.rdbuf();
  bytes = text.str();
  return !in.bad() && !bytes.empty();
}

/// Best effort: a cache that cannot be written only costs a recompile next time.
void writeCached(const fs::path &path, const std::string &bytes) {
  static std::atomic<int> counter{0};
  std::error_code error;
  fs::create_directories(path.parent_path(), error);
  fs::path temp = path;
  temp += strCat(".tmp", ::getpid(), "-", counter++);
  {
    std::ofstream out(temp, std::ios::binary);
    out.write(bytes.data(), std::streamsize(bytes.size()));
    if (!out)
      return fs::remove(temp, error), void();
  }
  fs::rename(temp, path, error);
  if (error)
    fs::remove(temp, error);
}

struct Program {
  nvrtcProgram handle = nullptr;
  ~Program() {
    if (handle)
      nvrtcDestroyProgram(&handle);
  }
};

Status nvrtcCheck(nvrtcResult result, const char *what) {
  if (result == NVRTC_SUCCESS)
    return Status::ok();
  return makeError("NVRTC ", what, ": ", nvrtcGetErrorString(result));
}

/// One NVRTC compilation for `arch`; fills the cubin and, when `ptx` is set, the PTX.
Status compileOnce(const std::string &source, const std::string &name, const std::string &arch,
                   std::string &cubin, std::string *ptx) {
  Program program;
  TC_RETURN_IF_ERROR(nvrtcCheck(nvrtcCreateProgram(&program.handle, source.c_str(),
                                                   (name + ".cu").c_str(), 0, nullptr, nullptr),
                                "create program"));
  std::string archOption = "--gpu-architecture=" + arch;
  const char *options[] = {archOption.c_str(), "-std=c++17", "--fmad=true"};
  nvrtcResult compiled =
      nvrtcCompileProgram(program.handle, int(sizeof options / sizeof options[0]), options);
  if (compiled != NVRTC_SUCCESS) {
    size_t logSize = 0;
    nvrtcGetProgramLogSize(program.handle, &logSize);
    std::string log(logSize, '\0');
    if (logSize)
      nvrtcGetProgramLog(program.handle, log.data());
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n'))
      log.pop_back();
    if (log.size() > 4000)
      log = log.substr(0, 4000) + "\n... (log truncated)";
    return makeError("NVRTC could not compile ", name, ".cu for ", arch, ": ",
                     nvrtcGetErrorString(compiled), "\n", log);
  }
  size_t size = 0;
  TC_RETURN_IF_ERROR(nvrtcCheck(nvrtcGetCUBINSize(program.handle, &size), "cubin size"));
  cubin.assign(size, '\0');
  TC_RETURN_IF_ERROR(nvrtcCheck(nvrtcGetCUBIN(program.handle, cubin.data()), "cubin"));
  if (ptx) {
    TC_RETURN_IF_ERROR(nvrtcCheck(nvrtcGetPTXSize(program.handle, &size), "PTX size"));
    ptx->assign(size, '\0');
    TC_RETURN_IF_ERROR(nvrtcCheck(nvrtcGetPTX(program.handle, ptx->data()), "PTX"));
    while (!ptx->empty() && ptx->back() == '\0')
      ptx->pop_back();
  }
  return Status::ok();
}

} // namespace

Status validateArchs(const std::vector<std::string> &archs) {
  if (archs.empty())
    return makeError("no CUDA arch given (--cuda-arch sm_80,sm_90)");
  int count = 0;
  TC_RETURN_IF_ERROR(nvrtcCheck(nvrtcGetNumSupportedArchs(&count), "supported archs"));
  std::vector<int> supported(size_t(std::max(count, 0)));
  if (count > 0)
    TC_RETURN_IF_ERROR(nvrtcCheck(nvrtcGetSupportedArchs(supported.data()), "supported archs"));
  for (const std::string &arch : archs) {
    TC_ASSIGN_OR_RETURN(int number, archNumber(arch));
    if (std::find(supported.begin(), supported.end(), number) == supported.end()) {
      std::vector<std::string> names;
      for (int value : supported)
        names.push_back("sm_" + std::to_string(value));
      return makeError("CUDA arch '", arch,
                       "' is not supported by this NVRTC (supported: ", join(names, ", "), ")");
    }
    // Kernels convert bf16 with cvt.rn.bf16.f32, which needs sm_80.
    if (number < 80)
      return makeError("CUDA arch '", arch, "' is older than sm_80, the oldest tensorc targets");
  }
  return Status::ok();
}

Expected<CompiledModule> compileSource(const std::string &source, const std::string &name,
                                       const CompileOptions &options) {
  TC_RETURN_IF_ERROR(validateArchs(options.archs));
  std::vector<std::string> archs = options.archs;
  std::sort(archs.begin(), archs.end(), [](const std::string &a, const std::string &b) {
    return std::atoi(a.c_str() + 3) < std::atoi(b.c_str() + 3);
  });
  archs.erase(std::unique(archs.begin(), archs.end()), archs.end());
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);

  CompiledModule module;
  module.ptxArch = archs.front();
  std::string dir = cacheDirectory(options.cacheDir);
  std::string key = hashText(strCat("nvrtc ", major, ".", minor, "\n", source));
  auto cached = [&](const std::string &suffix) { return fs::path(dir) / (key + "." + suffix); };
  if (!dir.empty()) {
    bool hit = readCached(cached(module.ptxArch + ".ptx"), module.ptx);
    for (const std::string &arch : archs)
      hit = hit && readCached(cached(arch + ".cubin"), module.cubins[arch]);
    if (hit) {
      module.fromCache = true;
      return module;
    }
    module.cubins.clear();
    module.ptx.clear();
  }
  for (const std::string &arch : archs) {
    std::string cubin;
    TC_RETURN_IF_ERROR(
        compileOnce(source, name, arch, cubin, arch == module.ptxArch ? &module.ptx : nullptr));
    module.cubins[arch] = std::move(cubin);
  }
  if (!dir.empty()) {
    writeCached(cached(module.ptxArch + ".ptx"), module.ptx);
    for (const auto &[arch, cubin] : module.cubins)
      writeCached(cached(arch + ".cubin"), cubin);
  }
  return module;
}

} // namespace tensorc::cuda
