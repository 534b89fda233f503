// Code generation targets behind one interface (STYLE 14): `compile` creates a backend per
// --target and hands each the scheduled program; what comes back goes into the bundle. LLVM and
// NVRTC stay behind the factories; a tensorc built without the CUDA toolkit still renders CUDA
// C++ and says so when asked to compile it.
#pragma once

#include "tensorc/Codegen/CUDA/CudaCodegen.h"
#include "tensorc/Lowering/LoopIR.h"
#include "tensorc/Scheduler/Schedule.h"
#include "tensorc/Support/Status.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tensorc::codegen {

/// A file for the bundle, by bundle-relative path ("cpu/x86_64.so", "src/kernels.cu").
struct BundleFile {
  std::string path;
  std::string bytes;
};

/// One loadable image of the kernels, as the manifest lists it.
struct KernelImage {
  enum class Kind : uint8_t {
    CpuLibrary, // a shared object for one CPU variant
    CudaCubin,  // a cubin for one CUDA arch
    CudaPtx,    // PTX the driver compiles for newer GPUs
  };
  Kind kind = Kind::CpuLibrary;
  std::string name;                   // the CPU variant ("x86_64-avx512") or CUDA arch ("sm_90")
  std::string arch;                   // CPU: the --cpu-arch it belongs to ("x86_64")
  std::string file;                   // its bundle-relative path (among the output's files)
  std::vector<std::string> requires_; // CPU: host features the runtime checks first
  int64_t priority = 0;               // CPU: the runtime prefers higher among those it can run
  int64_t module = 0; // CUDA: which of the backend's modules (NVRTC programs) this image is of
};

/// How the runtime launches a kernel on a backend with explicit launch shapes (CUDA): `grid`
/// blocks (an expression over the shape symbols) of `block` threads, with `sharedBytes` of
/// dynamic shared memory per block, and split-K workspaces (cuda::LaunchConfig's).
struct LaunchShape {
  SymInt grid;
  int64_t block = 0;
  int64_t sharedBytes = 0;
  SymInt partialFloats = SymInt(0), counterCount = SymInt(0);
  /// The function to launch when it is another kernel's (identical kernels are compiled once);
  /// empty: the kernel's own.
  std::string symbol;
  /// The module (KernelImage::module) holding the function.
  int64_t module = 0;
  /// A GEMM template's problem as a library call (CUDA, -O max-autotune).
  std::optional<cuda::GemmCall> gemm;
  /// A GEMM template's Hopper form (CUDA, sm_90 among the archs).
  std::optional<cuda::HopperGemm> hopper;
};

/// What a backend made of a scheduled program.
struct BackendOutput {
  std::vector<BundleFile> files;
  std::vector<KernelImage> images;
  std::map<std::string, LaunchShape> launches; // by kernel name; empty for the CPU
};

/// What the caller adds to a compile: where temporaries go (inside the bundle's staging area, so
/// that a failed or interrupted compile leaves none behind), and a constant every kernel image
/// exports under `dataSymbol` (the runtime reads it back: the kernels' signature table), computed
/// by `dataFor` from the launch shapes the backend chose (empty for the CPU).
struct CompileContext {
  std::string tempDir;
  std::string dataSymbol;
  std::function<Expected<std::string>(const std::map<std::string, LaunchShape> &)> dataFor;
  /// Told how far code generation is ("cpu x86_64: 3/16 modules"), from any thread. May be empty.
  std::function<void(const std::string &)> progress;
};

/// One code generation target. Kernels are generated independently of each other (Extern
/// kernels are the runtime's), so an implementation may split them into several modules or
/// programs and compile those in parallel.
class Backend {
public:
  virtual ~Backend() = default;
  /// The --target name: "cpu" or "cuda".
  virtual const char *name() const = 0;
  /// The code this backend hands its compiler, as text for people and tests (`inspect --stage
  /// cuda`, `opt --emit`): CUDA C++, or the CPU's optimized LLVM IR of its first variant.
  virtual Expected<std::string> source(const loop::LoopProgram &program,
                                       const sched::Schedule &schedule) = 0;
  /// Generates and compiles every Loop and Template kernel of `schedule`.
  virtual Expected<BackendOutput> compile(const loop::LoopProgram &program,
                                          const sched::Schedule &schedule,
                                          const CompileContext &context = {}) = 0;
};

struct CpuBackendOptions {
  /// --cpu-arch values: "x86_64" (AVX2 baseline and AVX-512), "aarch64" (NEON).
  std::vector<std::string> archs = {"x86_64"};
  /// Only these variants of those architectures; empty = all.
  std::vector<std::string> variants;
  /// ld.lld to link with; empty = the one found at build time ($TENSORC_LD_LLD overrides).
  std::string linker;
  bool quiet = false; // no progress messages
  /// Threads generating code at once (`-j`; 0: every core). The output does not depend on it.
  unsigned jobs = 0;
};
/// The CPU backend (LLVM): one shared object per variant, files cpu/<variant>.so and the
/// optimized IR as src/<variant>.ll. Errors name an unknown arch or an empty variant selection.
Expected<std::unique_ptr<Backend>> createCpuBackend(const CpuBackendOptions &options);
/// The architecture this compiler runs on ("x86_64" or "aarch64").
std::string hostCpuArch();

struct CudaBackendOptions {
  /// Archs to emit cubins for (sm_80 or newer); PTX is emitted for the lowest.
  std::vector<std::string> archs = {"sm_90"};
  /// NVRTC output cache ("" = $TENSORC_CACHE_DIR or ~/.cache/tensorc; "-" = none).
  std::string cacheDir;
  bool quiet = false;
  /// Threads running NVRTC at once (`-j`; 0: every core). The output does not depend on it.
  unsigned jobs = 0;
  /// The estimated cost (about CPU milliseconds of NVRTC) one NVRTC program gathers kernels up
  /// to; 0: the default (1000).
  double programCost = 0;
  /// Check `archs` against NVRTC now (compile needs it; rendering source does not).
  bool validate = true;
  /// f32 GEMMs and convolutions on TF32 tensor cores (--matmul-precision high), else strict f32.
  bool tf32 = false;
  /// GEMM templates also get a library-call description and an epilogue function
  /// (-O max-autotune: `tensorc tune` may then give their products to cuBLASLt).
  bool gemmCalls = false;
};
/// The CUDA backend: the renderer (CUDA C++ per kernel, src/kernels.cu) and NVRTC, one program
/// per part of the kernels (cuda/<arch>.<part>.cubin, cuda/kernels.<part>.ptx). Without the CUDA
/// toolkit, validation and compile say so.
Expected<std::unique_ptr<Backend>> createCudaBackend(const CudaBackendOptions &options);

} // namespace tensorc::codegen
