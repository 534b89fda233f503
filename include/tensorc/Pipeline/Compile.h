// `tensorc compile`: the whole pipeline from a model file to a bundle directory.
#pragma once

#include "tensorc/Autodiff/Training.h"
#include "tensorc/Bundle/Manifest.h"
#include "tensorc/IR/Graph.h"
#include "tensorc/Lowering/Lower.h"
#include "tensorc/Ops/Registry.h"
#include "tensorc/Pipeline/Pipeline.h"
#include "tensorc/Support/Status.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tensorc {

struct CompileOptions {
  /// What `outDir` receives: a bundle directory (DESIGN §6), or one shared object holding the
  /// bundle and the runtime, exporting only the C ABI (x86_64 hosts; `--emit=so`).
  enum class Emit { Bundle, SharedObject };
  std::string outDir;
  Emit emit = Emit::Bundle;
  /// Comma-separated backends: "cpu", "cuda" or "cpu,cuda".
  std::string target = "cpu";
  /// CUDA architectures to emit cubins for (PTX is emitted for the lowest too).
  std::vector<std::string> cudaArchs = {"sm_90"};
  /// `-O reduce-overhead`: the runtime replays the launch list as a CUDA graph per shape.
  bool cudaGraphs = false;
  /// `--matmul-precision high`: f32 GEMMs and convolutions on TF32 tensor cores (CUDA; as
  /// torch.set_float32_matmul_precision("high")); false (`highest`): strict f32.
  bool tf32 = false;
  /// `--conv-algorithm auto` (true): CPU 3x3 stride-1 convolutions that cpu::winogradFits run as
  /// Winograd F(2x2, 3x3); `direct` (false): every convolution on the direct kernel.
  bool winograd = true;
  /// `-O max-autotune`: GEMM templates also carry a library call (their problem, and a function
  /// applying their epilogue to a product), which `tensorc tune` may choose on a GPU.
  bool gemmCalls = false;
  /// `--tuning-cache FILE` (with gemmCalls): GEMM choices from a tuning cache (TuningCache.h)
  /// for the newest of cudaArchs, applied without a GPU; "" for none.
  std::string tuningCache;
  /// Form aten.scaled_dot_product_attention from softmax(Q.K^T*s [+ mask]).V and run it as one
  /// CUDA kernel, the L x S scores never stored (--target cuda only). Unset: the heads that run
  /// on tensor cores (f16/bf16, head dims multiples of 16 up to 128) when compiling inference for
  /// CUDA alone, none otherwise; true (`--fuse-attention`): every match, the others on a scalar
  /// warp-per-row kernel (slower than the unfused kernels); false (`--no-fuse-attention`): none.
  std::optional<bool> fuseAttention;
  /// The caches' directory: compiled bundles (CompileCache.h) and NVRTC outputs ("" =
  /// $TENSORC_CACHE_DIR or ~/.cache/tensorc; "-" = none, `--no-cache`).
  std::string cacheDir;
  /// Threads generating code at once (`-j`; 0: every core). The bundle does not depend on it.
  unsigned jobs = 0;
  /// The estimated NVRTC cost (about CPU milliseconds) one CUDA program gathers kernels up to
  /// (0: the backend's default); tests lower it to split small models over several modules.
  double cudaProgramCost = 0;
  /// Told what the compile is doing ("lower", "cpu x86_64: 3/16 modules"...): the driver's
  /// progress line. Called from code generation's worker threads too. May be empty.
  std::function<void(const std::string &)> progress;
  /// CPU architectures to emit code for ("x86_64": AVX2 baseline + AVX-512; "aarch64": NEON).
  std::vector<std::string> cpuArchs = {"x86_64"};
  /// Only these variants of those architectures ("x86_64", "x86_64-avx512"); empty = all.
  std::vector<std::string> variants;
  /// No progress messages (for tools that compile many small models).
  bool quiet = false;
  /// ld.lld to link kernels with; empty = the one found at build time.
  std::string linker;
  bool timeStages = false;
  /// `--train`: compile a training step (forward, backward, optimizer) instead of inference.
  std::optional<autodiff::TrainOptions> train;
  /// Passes to skip and fusions to refuse (`tensorc bisect`, `--max-fusions`...).
  DebugLimits limits;
  /// `--fallback=error`: an op without a generated kernel is an error naming it and its node,
  /// instead of running on its reference kernel in the runtime. Unset: error when the targets
  /// include cuda (a GPU bundle runs every op on the GPU), allow for cpu alone.
  std::optional<loop::FallbackPolicy> fallback;
};

/// What a compile produced, for the driver's summary line.
struct CompileSummary {
  size_t kernels = 0;
  size_t generatedKernels = 0; // kernels with generated code (the rest are fallbacks)
  size_t fallbacks = 0;
  std::vector<std::string> fallbackOps; // the op types run on reference kernels
  int64_t peakBytes = 0;
  std::vector<std::string> variants;
  std::vector<std::string> cudaArchs; // cubins emitted (empty without the CUDA target)
  bool fromCache = false;             // the bundle was copied from the compile cache
};

/// The manifest's `training` section for a training step's signature.
bundle::TrainingInfo trainingInfo(const autodiff::TrainingSignature &signature);

/// Imports, lowers, fuses and generates code for `modelPath`, then writes the bundle (DESIGN §6)
/// or the model library (options.emit) atomically to options.outDir. Errors name the model, node or
/// file at fault. With a cache directory (CompileCache.h), a compile found there is copied out of
/// it instead, and a new one is stored.
Expected<CompileSummary> compileModel(const std::string &modelPath, const OpRegistry &registry,
                                      const CompileOptions &options);

/// The same for an imported graph: `modelName` and `sourceHash` go into the manifest.
Expected<CompileSummary> compileGraph(Graph graph, const OpRegistry &registry,
                                      const CompileOptions &options, const std::string &modelName,
                                      const std::string &sourceHash);

} // namespace tensorc
