// CUDA code generation: the scheduled LoopIR of one program -> CUDA C++ (one __global__ function
// per Loop or Template kernel; the renderer) -> cubin per architecture plus PTX through NVRTC (the
// compiler, cached by source hash). CUDA headers never reach this header (STYLE 14).
#pragma once

#include "tensorc/Lowering/LoopIR.h"
#include "tensorc/Scheduler/Schedule.h"
#include "tensorc/Support/Status.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tensorc::cuda {

/// How the runtime launches one rendered kernel: `grid` blocks (an expression over the shape
/// symbols; the runtime may launch fewer, every kernel strides over its blocks' work) of `block`
/// threads. Kernel parameters are the kernel's `args` buffers as device pointers, in order, then
/// one `long long` per shape symbol (LoopProgram::symbols order).
/// A GEMM template's problem, for a library that computes the product alone (cuBLASLt under
/// -O max-autotune; bundle::GemmCall says how the runtime uses it): operands as strided views
/// (elements) of kernel arguments, and a second function, the kernel's name +
/// bundle::kGemmEpilogueSuffix, that applies the template's epilogue to a dense f32 product.
struct GemmCall {
  struct Operand {
    int64_t arg = 0; // position among the kernel's buffer arguments
    SymInt offset, ld, batchStride;
    bool kContiguous = true;
  };
  DType dtype = DType::F32;
  bool tf32 = false;
  Operand a, b;
  int64_t output = 0;  // position of the buffer the epilogue writes among the kernel's arguments
  bool direct = false; // no epilogue (and no epilogue function): the library writes the output
  /// Position of a vector of N elements (the output's dtype) the library adds to every row of
  /// the product before rounding it (a bias-only epilogue; `direct` then too), or -1.
  int64_t bias = -1;
  SymInt m, n, k, batch;
  SymInt epilogueGrid; // blocks of bundle::kGemmEpilogueBlock threads
};

/// A GEMM whose kernel also has a Hopper form (bundle::HopperGemm says how the runtime uses it):
/// in images compiled for sm_90a the function is the kernel library's wgmma kernel, its operands
/// loaded through TMA tensor maps the runtime encodes; in every other image the same function
/// (same parameters: the two maps first, ignored there) is the mma.sync kernel. Operands as
/// strided views (elements) of kernel arguments, K contiguous, 16-byte aligned.
struct HopperGemm {
  struct Map {
    int64_t arg = 0;     // position among the kernel's buffer arguments
    SymInt offset;       // where the operand starts
    SymInt rows, ld;     // M (A) or N (B); elements between rows
    SymInt batchStride;  // elements between batch entries (0: shared by all)
    int64_t boxRows = 0; // rows of one TMA box (the tile's BM or BN)
  };
  DType dtype = DType::F16;
  bool tf32 = false;
  SymInt k, batch;
  SymInt units; // work units; the runtime launches min(units, blocksPerSm x SMs) blocks
  int64_t blocksPerSm = 1; // blocks an SM holds at once (a persistent grid)
  int64_t block = 0, sharedBytes = 0;
  Map a, b;
};

struct LaunchConfig {
  SymInt grid;
  int64_t block = 0;
  /// Dynamic shared memory per block in bytes (kernel-library kernels); over 48 KB the runtime
  /// raises the function's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES first.
  int64_t sharedBytes = 0;
  /// Split-K workspaces (GEMMs and convolutions whose K is split across blocks; 0 otherwise):
  /// the kernel takes two more parameters after the shape symbols, `float *tk_partials` (this
  /// many floats of scratch, any content) and `unsigned *tk_counters` (this many, zero before the
  /// first launch; every launch leaves them zero).
  SymInt partialFloats = SymInt(0), counterCount = SymInt(0);
  /// GEMM templates rendered with RenderOptions::gemmCalls.
  std::optional<GemmCall> gemm;
  /// GEMM templates with a Hopper form (RenderOptions::hopper).
  std::optional<HopperGemm> hopper;
};

/// How f32 GEMMs and convolutions multiply (torch.set_float32_matmul_precision): Highest is
/// strict f32 (SIMT FMAs), High rounds the operands to TF32 on tensor cores.
enum class MatmulPrecision { Highest, High };

struct RenderOptions {
  MatmulPrecision matmulPrecision = MatmulPrecision::Highest;
  /// GEMM templates also get an epilogue function and a GemmCall (-O max-autotune), so that a
  /// tuned bundle may compute their products with a library.
  bool gemmCalls = false;
  /// The archs include sm_90: big f16/bf16 (and TF32) GEMMs of K-major operands get a Hopper
  /// form (HopperGemm), compiled into an extra sm_90a image of their module.
  bool hopper = false;
};

/// One rendered kernel: its text (the __global__ function, after whatever it carries before it)
/// and the shared device code it calls besides the prelude.
struct RenderedKernel {
  std::string name;
  std::string text;
  bool usesFlashAttention = false;
  bool usesKernelLibrary = false;
  bool hopper = false; // has a Hopper form (its part gets an sm_90a image)
};

struct RenderedKernels {
  std::string source;                          // one translation unit, self-contained
  std::map<std::string, LaunchConfig> configs; // by kernel name (Loop and Template kernels)
  /// `source`'s kernels in source order: assembleSource(all of them) is `source`.
  std::vector<RenderedKernel> kernels;
};

/// A self-contained translation unit of `kernels` (in this order): the prelude, the flash
/// attention and kernel libraries when one of them uses it, then their texts.
std::string assembleSource(const std::vector<const RenderedKernel *> &kernels);

/// Renders every Loop and Template kernel of `schedule` (Extern kernels stay the runtime's).
/// Pure pointwise kernels run four elements per thread (dense operands as 4-wide vectors);
/// kernels with reductions or inner loops run one row per block (warp-shuffle reductions, stages
/// separated by block barriers); GEMM and convolution templates run the kernel library's kernels
/// (tensor cores for f16/bf16, f32 as `options` say; split-K for small problems) with the
/// pointwise epilogue applied to the accumulators before the store; attention templates run on the
/// flash kernel (f16/bf16 on tensor cores) or one warp per query row, with an online softmax.
Expected<RenderedKernels> renderKernels(const loop::LoopProgram &program,
                                        const sched::Schedule &schedule,
                                        const RenderOptions &options = {});

struct CompileOptions {
  std::vector<std::string> archs = {"sm_90"}; // cubins, e.g. sm_80, sm_90
  /// Directory caching compiled outputs by content hash; empty = $TENSORC_CACHE_DIR, else
  /// ~/.cache/tensorc; "-" disables the cache.
  std::string cacheDir;
  /// CPU seconds one NVRTC compilation may use before compileSource gives up with an error
  /// naming the largest kernel (NVRTC cannot be interrupted: its thread is left to the process's
  /// exit). 0: no limit.
  double timeoutSeconds = 900;
  /// What each kernel computes ("fused nodes a, b, c"), by kernel name: errors about a kernel
  /// name it with this.
  std::map<std::string, std::string> kernelNotes;
  /// NVRTC programs (parts x archs) compiled at once (0: every core).
  unsigned jobs = 0;
};

/// The deepest nesting of parentheses and brackets in `source` (comments and literals skipped):
/// what NVRTC's recursive descent follows. Rendered kernels keep it far below
/// kMaxExpressionDepth.
int expressionDepth(const std::string &source);

/// Sources nested deeper than this are refused before NVRTC sees them: NVRTC recurses once per
/// level and overflows its stack on expressions thousands deep.
constexpr int kMaxExpressionDepth = 200;

/// The kernels of a rendered source, in source order: name, first and last line (1-based), and
/// their text's bytes [begin, end).
struct SourceKernel {
  std::string name;
  size_t firstLine = 0, lastLine = 0;
  size_t begin = 0, end = 0;
};
std::vector<SourceKernel> sourceKernels(const std::string &source);

/// One NVRTC program: a self-contained source and its name (NVRTC's file name without ".cu").
struct SourcePart {
  std::string name;
  std::string source;
  /// The estimated compile cost (any unit): only the order compilations start in, never what
  /// they make.
  double cost = 0;
  /// The part has kernels with a Hopper form (rendered only with sm_90 among the archs): it also
  /// gets an sm_90a cubin (CompiledModule::cubins["sm_90a"]).
  bool hopper = false;
};

struct CompiledModule {
  std::map<std::string, std::string> cubins; // by arch ("sm_90") -> cubin bytes
  std::string ptx;                           // PTX for the lowest requested arch
  std::string ptxArch;                       // that arch ("sm_80")
  bool fromCache = false;
};

/// Compiles `source` with NVRTC (no GPU needed) on a thread with a large stack. Errors name the
/// kernel at fault (the one NVRTC's log points at, or the one too deeply nested; the largest on
/// a timeout) and carry NVRTC's log; NVRTC's failures never crash the caller. Archs must be
/// sm_<major><minor> names NVRTC supports.
Expected<CompiledModule> compileSource(const std::string &source, const std::string &name,
                                       const CompileOptions &options);

/// compileSource for several programs at once: every (part, arch) compilation is a task of one
/// pool of `options.jobs` threads, the costliest parts first (SourcePart::cost). Each part is
/// cached on its own. Returns a module per part, in order; the first failing part's error (in
/// part order, whatever finished first). `--log timing` reports each compilation's wall and CPU
/// time.
Expected<std::vector<CompiledModule>> compileSources(const std::vector<SourcePart> &parts,
                                                     const CompileOptions &options);

/// Checks an --cuda-arch list ("sm_80", "sm_90") against what this NVRTC supports.
Status validateArchs(const std::vector<std::string> &archs);

} // namespace tensorc::cuda
