// Loading the CUDA driver API with dlopen and resolving its versioned entry points.
#include "CudaDriver.h"

#include "tensorc/Support/StrCat.h"

#include <dlfcn.h>
#include <mutex>

namespace tensorc::rt::cu {

std::string Driver::describe(Result result) const {
  const char *message = nullptr;
  if (getErrorString && getErrorString(result, &message) == kSuccess && message)
    return strCat(message, " (CUDA error ", result, ")");
  return strCat("CUDA error ", result);
}

Status Driver::check(Result result, const std::string &what) const {
  if (result == kSuccess)
    return Status::ok();
  return makeError(what, ": ", describe(result));
}

void *findSymbol(void *library, const char *name, std::string &missing) {
  void *symbol = ::dlsym(library, name);
  if (!symbol)
    missing += std::string(missing.empty() ? "" : ", ") + name;
  return symbol;
}

namespace {

Expected<const Driver *> loadDriver() {
  void *library = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library)
    return makeError("no CUDA driver: cannot load libcuda.so.1 (", ::dlerror(),
                     "); is an NVIDIA driver installed?");
  static Driver driver;
  std::string missing;
  auto resolve = [&](auto &slot, const char *name) { resolveSymbol(library, slot, name, missing); };
  // The names are the ABI versions cuda.h maps the API names to.
  resolve(driver.init, "cuInit");
  resolve(driver.deviceGetCount, "cuDeviceGetCount");
  resolve(driver.deviceGet, "cuDeviceGet");
  resolve(driver.deviceGetName, "cuDeviceGetName");
  resolve(driver.deviceGetAttribute, "cuDeviceGetAttribute");
  resolve(driver.primaryCtxRetain, "cuDevicePrimaryCtxRetain");
  resolve(driver.primaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
  resolve(driver.ctxSetCurrent, "cuCtxSetCurrent");
  resolve(driver.moduleLoadData, "cuModuleLoadData");
  resolve(driver.moduleUnload, "cuModuleUnload");
  resolve(driver.moduleGetFunction, "cuModuleGetFunction");
  resolve(driver.funcSetAttribute, "cuFuncSetAttribute");
  resolve(driver.moduleGetGlobal, "cuModuleGetGlobal_v2");
  resolve(driver.memAlloc, "cuMemAlloc_v2");
  resolve(driver.memFree, "cuMemFree_v2");
  resolve(driver.memcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  resolve(driver.memcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  resolve(driver.memcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
  resolve(driver.streamCreate, "cuStreamCreate");
  resolve(driver.streamDestroy, "cuStreamDestroy_v2");
  resolve(driver.streamSynchronize, "cuStreamSynchronize");
  resolve(driver.launchKernelEx, "cuLaunchKernelEx");
  resolve(driver.streamBeginCapture, "cuStreamBeginCapture_v2");
  resolve(driver.streamEndCapture, "cuStreamEndCapture");
  resolve(driver.graphInstantiate, "cuGraphInstantiateWithFlags");
  resolve(driver.graphLaunch, "cuGraphLaunch");
  resolve(driver.graphExecDestroy, "cuGraphExecDestroy");
  resolve(driver.graphDestroy, "cuGraphDestroy");
  resolve(driver.getErrorString, "cuGetErrorString");
  resolve(driver.eventCreate, "cuEventCreate");
  resolve(driver.eventRecord, "cuEventRecord");
  resolve(driver.eventElapsedTime, "cuEventElapsedTime");
  resolve(driver.eventDestroy, "cuEventDestroy_v2");
  // Optional: without it bundles run their GEMMs' mma.sync forms.
  driver.tensorMapEncodeTiled = reinterpret_cast<decltype(driver.tensorMapEncodeTiled)>(
      ::dlsym(library, "cuTensorMapEncodeTiled"));
  if (!missing.empty())
    return makeError("the CUDA driver (libcuda.so.1) lacks ", missing,
                     "; tensorc needs a CUDA 12 or newer driver");
  TC_RETURN_IF_ERROR(driver.check(driver.init(0), "cuInit"));
  return &driver;
}

} // namespace

Expected<const Driver *> driver() {
  // Loaded once; a failure is remembered (and reported again) rather than retried.
  static std::once_flag once;
  static const Driver *loaded = nullptr;
  static std::string error;
  std::call_once(once, [] {
    Expected<const Driver *> result = loadDriver();
    if (result)
      loaded = *result;
    else
      error = result.error().message();
  });
  if (!loaded)
    return makeError(error);
  return loaded;
}

} // namespace tensorc::rt::cu
