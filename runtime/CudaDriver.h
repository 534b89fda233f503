// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1"): the runtime builds and runs
// everywhere (CPU-only machines, aarch64) and needs a driver only when a model runs on a GPU. The
// few types and constants used are declared here with the driver's ABI values.
#pragma once

#include "tensorc/Support/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace tensorc::rt::cu {

using Result = int; // CUresult; 0 is CUDA_SUCCESS
using Device = int;
using DevicePtr = unsigned long long;
using Context = struct CUctx_st *;
using Module = struct CUmod_st *;
using Function = struct CUfunc_st *;
using Stream = struct CUstream_st *;
using Graph = struct CUgraph_st *;
using GraphExec = struct CUgraphExec_st *;
using Event = struct CUevent_st *;

constexpr Result kSuccess = 0;
constexpr Result kErrorOutOfMemory = 2;
constexpr int kAttrMultiprocessorCount = 16;
constexpr int kAttrClockRate = 13;       // kHz
constexpr int kAttrMemoryClockRate = 36; // kHz
constexpr int kAttrMemoryBusWidth = 37;  // bits
constexpr int kAttrComputeCapabilityMajor = 75;
constexpr int kAttrComputeCapabilityMinor = 76;
constexpr unsigned kStreamNonBlocking = 1;
// CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION: the launch may begin while the kernel
// before it in the stream still runs (its own griddepcontrol.wait orders its memory accesses).
constexpr int kLaunchAttributeProgrammaticStreamSerialization = 6;
constexpr int kCaptureModeThreadLocal = 1;

/// CUlaunchAttribute: an id, padding to 8 bytes, and a 64-byte union of values.
struct LaunchAttribute {
  int id;
  char pad[4];
  union {
    char bytes[64];
    int programmaticStreamSerializationAllowed;
  } value;
};
static_assert(sizeof(LaunchAttribute) == 72, "CUlaunchAttribute's layout");

/// CUlaunchConfig.
struct LaunchConfig {
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  Stream stream;
  LaunchAttribute *attrs;
  unsigned numAttrs;
};
static_assert(sizeof(LaunchConfig) == 56, "CUlaunchConfig's layout");

/// The entry points tensorc uses, resolved once per process.
struct Driver {
  Result (*init)(unsigned);
  Result (*deviceGetCount)(int *);
  Result (*deviceGet)(Device *, int);
  Result (*deviceGetName)(char *, int, Device);
  Result (*deviceGetAttribute)(int *, int, Device);
  Result (*primaryCtxRetain)(Context *, Device);
  Result (*primaryCtxRelease)(Device);
  Result (*ctxSetCurrent)(Context);
  Result (*moduleLoadData)(Module *, const void *);
  Result (*moduleUnload)(Module);
  Result (*moduleGetFunction)(Function *, Module, const char *);
  Result (*funcSetAttribute)(Function, int, int); // cuFuncSetAttribute (CUfunction_attribute)
  Result (*moduleGetGlobal)(DevicePtr *, size_t *, Module, const char *);
  Result (*memAlloc)(DevicePtr *, size_t);
  Result (*memFree)(DevicePtr);
  Result (*memcpyHtoDAsync)(DevicePtr, const void *, size_t, Stream);
  Result (*memcpyDtoHAsync)(void *, DevicePtr, size_t, Stream);
  Result (*memcpyDtoDAsync)(DevicePtr, DevicePtr, size_t, Stream);
  Result (*streamCreate)(Stream *, unsigned);
  Result (*streamDestroy)(Stream);
  Result (*streamSynchronize)(Stream);
  Result (*launchKernelEx)(const LaunchConfig *, Function, void **, void **);
  Result (*streamBeginCapture)(Stream, int);
  Result (*streamEndCapture)(Stream, Graph *);
  Result (*graphInstantiate)(GraphExec *, Graph, unsigned long long);
  Result (*graphLaunch)(GraphExec, Stream);
  Result (*graphExecDestroy)(GraphExec);
  Result (*graphDestroy)(Graph);
  Result (*getErrorString)(Result, const char **);
  Result (*eventCreate)(Event *, unsigned);
  Result (*eventRecord)(Event, Stream);
  Result (*eventElapsedTime)(float *, Event, Event);
  Result (*eventDestroy)(Event);
  /// cuTensorMapEncodeTiled (CUDA 12+ drivers; null when the driver lacks it: no Hopper forms).
  /// Arguments as in cuda.h, the enums as ints; `map` is 128 bytes, 64-byte aligned.
  Result (*tensorMapEncodeTiled)(void *map, int dataType, unsigned rank, void *address,
                                 const unsigned long long *dims, const unsigned long long *strides,
                                 const unsigned *box, const unsigned *elementStrides,
                                 int interleave, int swizzle, int l2Promotion, int oobFill);

  /// "CUDA_ERROR_OUT_OF_MEMORY: out of memory" for a result code.
  std::string describe(Result result) const;
  /// ok, or an error "<what>: <driver message>".
  Status check(Result result, const std::string &what) const;
};

/// Symbol `name` of a dlopen'ed `library`, or null after adding `name` to `missing` (a
/// comma-separated list). resolveSymbol sets a function-pointer slot with it.
void *findSymbol(void *library, const char *name, std::string &missing);
template <typename Slot>
void resolveSymbol(void *library, Slot &slot, const char *name, std::string &missing) {
  slot = reinterpret_cast<Slot>(findSymbol(library, name, missing));
}

/// The process's driver: loaded and cuInit'ed on first use. Errors say why no GPU can be used
/// (no libcuda.so.1, a missing entry point, cuInit failing, e.g. no device present).
Expected<const Driver *> driver();

} // namespace tensorc::rt::cu
