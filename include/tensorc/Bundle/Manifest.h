// The bundle manifest (manifest.json, DESIGN §6): what the compiler writes and the runtime reads.
// Sizes that depend on symbolic dims are kept as SymInt text ("64*batch + 128", "(h + 1)//2") and
// evaluated by the runtime once the inputs have bound the symbols.
#pragma once

#include "tensorc/Support/DType.h"
#include "tensorc/Support/Json.h"
#include "tensorc/Support/Status.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace tensorc::bundle {

/// 2: `files` (a sha256 per bundle file) and kernel signature tables in the kernel images.
/// 3: GEMM calls' `bias` (a runtime reading 2 would drop the bias of a library GEMM).
/// 4: Hopper GEMM forms (Launch::hopper, sm_90a images: their functions take two tensor maps
///    first, which a runtime reading 3 would not pass). Bundles without them are written as 3,
///    which older runtimes read too; this runtime reads 3 and 4.
constexpr int64_t kFormatVersion = 4;
constexpr int64_t kOldestFormatVersion = 3;

/// An integer expression over symbols in SymInt's canonical text: integers, symbol names,
/// + - *, `//` (floor division) and `%` (remainder, Python semantics) by constants, parentheses.
class SizeExpr {
public:
  SizeExpr() = default;
  /// Errors name the expression and the position of the bad token.
  static Expected<SizeExpr> parse(const std::string &text);
  static SizeExpr constant(int64_t value);
  const std::string &text() const { return text_; }
  /// Errors name the first unbound symbol; overflow is an error.
  Expected<int64_t> evaluate(const std::map<std::string, int64_t> &symbols) const;
  /// The symbol when the expression is exactly one symbol name.
  std::optional<std::string> symbolName() const;
  /// The value when the expression has no symbols (folded at parse time).
  std::optional<int64_t> constantValue() const;
  /// Adds every symbol the expression mentions (the manifest checks they are declared).
  void collectSymbols(std::set<std::string> &symbols) const;
  struct Node;

private:
  std::string text_;
  std::shared_ptr<const Node> root_;
};

/// A tensor crossing the bundle boundary or living in it.
struct TensorDesc {
  std::string name;
  DType dtype = DType::F32;
  std::vector<SizeExpr> shape;
};

/// Where a buffer's memory comes from.
enum class BufferKind {
  Input,  // user input `index` (caller's memory, read-only)
  Output, // user output `index` (allocated by the runtime per call, returned to the caller)
  Weight, // tensor `weight` of weights.safetensors (read-only)
  Arena,  // planned scratch: bytes [offset, offset + bytes) of the arena
};

struct BufferDesc {
  int64_t id = 0;
  std::string name; // the graph value it holds, for messages and `inspect`
  BufferKind kind = BufferKind::Arena;
  DType dtype = DType::F32;
  std::vector<SizeExpr> shape;
  int64_t index = 0;  // Input/Output
  std::string weight; // Weight
  SizeExpr offset;    // Arena: byte offset, 64-byte aligned
};

/// A GEMM kernel's problem as a library call (bundles compiled with -O max-autotune): the product
/// of strided views of two of the launch's arguments, computed by a GEMM library into an f32
/// scratch of batch x M x N, then the function `<symbol>` + kGemmEpilogueSuffix (same module,
/// the launch's arguments and symbols, then that scratch) applies the kernel's fused epilogue.
/// A kernel without an epilogue (`direct`) has no such function: the library writes the dense
/// [batch][M][N] output argument itself, in its dtype. `tensorc tune` times both ways and records
/// the winner in `library`.
struct GemmCall {
  struct Operand {
    int64_t arg = 0; // position in Launch::args
    /// Elements: where the view starts, between its lines, between batch entries (0: shared).
    SizeExpr offset, ld, batchStride;
    /// K is the unit-stride dim (A row-major, B column-major); otherwise M (A) or N (B) is.
    bool kContiguous = true;
  };
  DType dtype = DType::F32; // A's and B's
  bool tf32 = false;        // f32 operands multiply as TF32 (--matmul-precision high)
  Operand a, b;             // A is M x K, B is K x N, per batch entry
  int64_t output = 0;       // the argument (position in Launch::args) the epilogue writes
  bool direct = false;      // no epilogue function: the library writes `output` (dense,
                            // f32/f16/bf16)
  /// The argument (position in Launch::args) holding a vector of N elements of the output's dtype
  /// that the library adds to every row of the f32 product before rounding it to `output`
  /// (cuBLASLt's bias epilogue; only with `direct`), or -1.
  int64_t bias = -1;
  SizeExpr m, n, k, batch;
  SizeExpr epilogueGrid; // blocks of kGemmEpilogueBlock threads for the epilogue function
  /// Chosen by tuning (not part of the compiled kernel's signature): "" runs the generated
  /// kernel, "cublaslt" the library (loaded with dlopen; the generated kernel where it is
  /// missing), with `algo` the index in cuBLASLt's heuristic list for the problem.
  std::string library;
  int64_t algo = 0;
};
inline constexpr const char *kGemmEpilogueSuffix = "_product_epilogue";
inline constexpr int64_t kGemmEpilogueBlock = 256;
/// The GEMM libraries a bundle may choose.
inline constexpr const char *kCublasLt = "cublaslt";

/// A GEMM kernel's Hopper form ("cuda_sm90a"): in the sm_90a image of its module (CudaImage
/// arch "sm_90a", loaded on CC 9.0 devices) the launch's function is the wgmma kernel, `block`
/// threads, `sharedBytes` of dynamic shared memory, min(units, blocksPerSm x the device's SMs)
/// blocks (a persistent
/// grid), its operands loaded through TMA tensor maps. In every image the function takes the two
/// maps (128 bytes each, by value) before the usual parameters; other images ignore them.
/// Each map is rank 3 over an operand's buffer (Launch::args[arg], from element `offset`):
/// dims {k, rows, batch entries}, byte strides {ld, batchStride (0: ld * rows)} x the element
/// size, box {128 bytes of K, boxRows, 1}, 128-byte swizzle, zero fill out of bounds.
struct HopperGemm {
  struct Map {
    int64_t arg = 0;
    SizeExpr offset, rows, ld, batchStride;
    int64_t boxRows = 0;
  };
  DType dtype = DType::F16;
  bool tf32 = false; // f32 operands loaded as TF32
  SizeExpr k, batch, units;
  int64_t blocksPerSm = 1, block = 0, sharedBytes = 0;
  Map a, b;
};
/// The arch name of the images holding Hopper forms.
inline constexpr const char *kHopperArch = "sm_90a";

/// One step of the launch list, run in order.
enum class LaunchKind {
  Kernel, // a generated CPU kernel `name` in the target's .so, called as TensorcKernelFn
  Extern, // the reference kernel of one op, run by the runtime (a fallback; see `graph`)
  Copy,   // copy args[0] into args[1] (same dtype and number of elements)
};

struct Launch {
  LaunchKind kind = LaunchKind::Kernel;
  std::string name; // kernel symbol, or the op name for Extern
  std::vector<int64_t>
      args;          // buffer ids, in the kernel's argument order (Extern: inputs, then outputs)
  SizeExpr range;    // Kernel: the parallel outer loop runs [0, range)
  int64_t grain = 1; // Kernel: fewest iterations worth one task
  std::string graph; // Extern: FX-text of a graph with exactly this one node, whose
                     // placeholders are the inputs in order and outputs the outputs
  /// Kernel, in bundles with CUDA images: `cudaGrid` blocks of `cudaBlock` threads (the runtime
  /// may launch fewer blocks: kernels stride over their work). 0 threads: no CUDA kernel.
  SizeExpr cudaGrid;
  int64_t cudaBlock = 0;
  /// Dynamic shared memory per block in bytes ("cuda_smem", absent when 0).
  int64_t cudaSharedBytes = 0;
  /// Split-K workspaces ("cuda_partials", "cuda_counters"; absent, empty text, without split-K):
  /// the kernel takes two more parameters after the symbols, a float scratch of cudaPartials
  /// floats (any content) and cudaCounters unsigned ints that are zero before the first launch
  /// (each launch leaves them zero). Launches run in order on one stream, so every split kernel
  /// can share one scratch and one counter buffer of the largest sizes.
  SizeExpr cudaPartials, cudaCounters;
  bool splitK() const { return !cudaCounters.text().empty(); }
  /// Kernel, CUDA: the function to launch when it is another kernel's (identical kernels are
  /// compiled once); empty: `name`.
  std::string cudaSymbol;
  /// Kernel, CUDA: the module (CudaImage::module) whose image holds that function.
  int64_t cudaModule = 0;
  /// Kernel, CUDA: a GEMM that a library may compute instead (-O max-autotune).
  std::optional<GemmCall> gemm;
  /// Kernel, CUDA: the kernel's Hopper form (see HopperGemm).
  std::optional<HopperGemm> hopper;
};

/// One CUDA module image: a cubin for one architecture, or PTX the driver compiles for newer ones.
/// A bundle's kernels may be split over several modules (0, 1, ...; compiled apart): each has the
/// same set of images (archs and kinds), and the runtime loads the same choice of every one.
/// More CUDA modules than any compile makes (kernels are grouped by compile cost).
constexpr int64_t kMaxCudaModules = 4096;

struct CudaImage {
  std::string arch; // "sm_90"
  std::string file; // relative to the bundle: "cuda/sm_90.0.cubin", "cuda/kernels.0.ptx"
  bool ptx = false;
  int64_t module = 0;
};

/// One shared object of CPU kernels.
struct CpuVariant {
  std::string name;                   // "x86_64", "x86_64-avx512", "aarch64"
  std::string arch;                   // "x86_64" | "aarch64"
  std::string file;                   // relative to the bundle: "cpu/x86_64.so"
  std::vector<std::string> requires_; // host CPU features, as __builtin_cpu_supports names
  int64_t priority = 0;               // the runtime prefers the highest supported priority
};

/// A training bundle (`tensorc compile --train`): one call runs forward, backward and the
/// optimizer update; `state` is carried from each call's outputs into the next call's inputs.
struct TrainingInfo {
  std::string optimizer;         // "sgd", "adamw", or "none" (the outputs are gradients)
  std::string loss;              // the loss output (a 0-d f32)
  std::vector<std::string> data; // the inputs a caller passes every step, in manifest order
  struct State {
    std::string input;
    std::string output; // "" = not updated by a step (--optimizer none)
    /// The tensor of weights.safetensors it starts from (a parameter's value), "" for zeros.
    std::string init;
  };
  std::vector<State> state;
};

/// A file of the bundle and its SHA-256, checked when the runtime reads it.
struct BundleFile {
  std::string path;   // relative to the bundle: "weights.safetensors", "cpu/x86_64.so"
  std::string sha256; // 64 lowercase hex digits
};

struct Manifest {
  /// kOldestFormatVersion unless the bundle has Hopper forms (the compiler then writes 4).
  int64_t formatVersion = kOldestFormatVersion;
  std::string tensorcVersion;
  std::string sourceHash;           // hex digest of the model file the bundle was compiled from
  std::string model;                // the model's file name, for messages
  std::vector<std::string> symbols; // the symbolic dims, bound from the inputs' shapes
  std::vector<TensorDesc> inputs;   // user inputs in signature order
  std::vector<TensorDesc> outputs;
  std::vector<BufferDesc> buffers; // indexed by id (buffers[i].id == i)
  SizeExpr arenaBytes;             // total planned scratch
  int64_t peakBytes = 0;           // the plan's peak, at the symbols' example sizes (report)
  std::vector<Launch> launches;
  std::vector<CpuVariant> cpu;
  std::vector<CudaImage> cuda; // empty: the bundle has no CUDA kernels
  /// `-O reduce-overhead`: the CUDA runtime captures the launch list in a CUDA graph per shape.
  bool cudaGraphs = false;
  /// CUDA bundles: how f32 GEMMs and convolutions multiply (--matmul-precision: "highest",
  /// strict f32; "high", TF32 tensor cores). Empty without CUDA images.
  std::string matmulPrecision;
  /// Shape checks beyond binding plain-symbol dims: `lhs == rhs` must hold once the symbols are
  /// bound, else the run fails with `message` (which names the input and dim).
  struct Guard {
    SizeExpr lhs, rhs;
    std::string message;
  };
  std::vector<Guard> guards;
  std::optional<TrainingInfo> training;
  /// Every file the runtime may read besides manifest.json (weights, CPU variants, CUDA images),
  /// with its digest. A bundle is native code: this is integrity (corruption, a mixed-up file),
  /// not a sandbox; whoever can rewrite the files can rewrite these digests.
  std::vector<BundleFile> files;

  /// The entry of `files` for `path`, or nullptr.
  const BundleFile *findFile(const std::string &path) const;

  Json toJson() const;
  /// Validates everything the runtime relies on: buffer ids in range and dense, launch args
  /// referring to existing buffers, expressions parsing, variants' files relative and inside the
  /// bundle. Errors name the manifest field ("launches[3].args[1]: no buffer 17").
  static Expected<Manifest> fromJson(const Json &json);
};

/// The signatures of the kernels a manifest launches, as compiled: per kernel its argument
/// buffers' dtypes and shapes, its range and CUDA block size, and the symbol order of `syms`.
/// The compiler stores this text in each kernel image (the data symbol
/// kKernelSignatureSymbol of a CPU variant, the same-named __device__ array of CUDA module 0), so
/// that the runtime can check a manifest against the code it is about to run.
std::string kernelSignatureTable(const Manifest &manifest);

/// Checks every Kernel launch of `manifest` against `table` (kernelSignatureTable text from the
/// kernel image `origin`): same symbols in the same order, a signature for the kernel, the same
/// number of arguments, each argument buffer of the compiled dtype and shape, the same range
/// (and, with `cuda`, block size). A kernel run against another plan could read or write past its
/// buffers; errors name the launch, argument and both shapes.
Status checkKernelSignatures(const Manifest &manifest, std::string_view table,
                             const std::string &origin, bool cuda);

/// The CUDA images to load on a device of compute capability `major`.`minor`, one per module
/// (index = module): every module's cubin of the newest arch the device runs (its own major, an
/// equal or older minor), else every module's PTX when the device is at least its arch. Errors
/// list what the bundle was built for and name the device (`device`, e.g. "device 0 (NVIDIA
/// H100)"). The manifest must be valid (fromJson checks that every module has the same images).
Expected<std::vector<const CudaImage *>> chooseCudaImages(const Manifest &manifest, int major,
                                                          int minor, const std::string &device);
/// Per module, its sm_90a cubin (kHopperArch: modules with Hopper forms) when the device is CC
/// 9.0, else null; a device loads it instead of chooseCudaImages' choice for that module.
std::vector<const CudaImage *> chooseHopperImages(const Manifest &manifest, int major, int minor);

/// The name of the signature table in kernel images (module 0's, for CUDA).
inline constexpr const char *kKernelSignatureSymbol = "tensorc_kernel_signatures";
/// A CUDA module that defines this __device__ int (images for sm_90 and newer) has kernels that
/// begin with griddepcontrol.wait: they may be launched as programmatic dependents of the kernel
/// before them, so that their launch overlaps that kernel's end.
inline constexpr const char *kGridDependencySymbol = "tensorc_grid_dependency_wait";

/// Names used in manifest.json for the enums ("arena", "kernel").
const char *bufferKindName(BufferKind kind);
const char *launchKindName(LaunchKind kind);

/// The generated CPU kernel calling convention (every Launch of kind Kernel):
///   args:  pointers to the launch's buffers, in `Launch::args` order
///   syms:  the values of Manifest::symbols, in order
///   [begin, end): the slice of the parallel outer loop [0, range) this call runs
extern "C" {
typedef void (*TensorcKernelFn)(void *const *args, const int64_t *syms, int64_t begin, int64_t end);
}

} // namespace tensorc::bundle
