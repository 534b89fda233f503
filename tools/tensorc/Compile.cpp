// `tensorc compile`: a model to a bundle directory or a model library (--emit=so).
#include "Driver.h"

#include "tensorc/Pipeline/Compile.h"
#include "tensorc/Runtime/Model.h"
#include "tensorc/Runtime/Tune.h"
#include "tensorc/Support/StrCat.h"

#include "tensorc/Support/Printable.h"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>

#include <unistd.h>

namespace tensorc::driver {

namespace {

struct CompileCommand {
  std::string model;
  CompileOptions options;
  TrainFlags train;
  AttentionFlags attention;
  LimitFlags limits;
  std::string cpuArchs = "x86_64";
  std::string cudaArchs = "sm_90";
  std::string emit = "bundle";
  std::string mode = "default";
  bool noTune = false; // -O max-autotune without tuning now
  std::string matmulPrecision = "highest";
  std::string convAlgorithm = "auto";
  std::string fallback; // empty: error with --target cuda, allow for cpu alone
  bool noCache = false;
};

/// One line on a terminal saying what a compile is doing, drawn once the compile has run for a
/// second (short compiles stay silent) and erased at the end; nothing when stderr is no terminal.
class ProgressLine {
public:
  explicit ProgressLine(bool quiet)
      : active_(!quiet && ::isatty(STDERR_FILENO)), start_(std::chrono::steady_clock::now()) {}
  ~ProgressLine() { clear(); }
  bool active() const { return active_; }
  void update(const std::string &what) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!active_ || std::chrono::steady_clock::now() - start_ < std::chrono::seconds(1))
      return;
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    char elapsed[32];
    std::snprintf(elapsed, sizeof elapsed, "%.1f s", seconds);
    std::string line = "tensorc: compiling [" + std::string(elapsed) + "] " + printable(what);
    if (line.size() > 100)
      line.resize(100);
    std::cerr << "\r\033[K" << line << std::flush;
    drawn_ = true;
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (drawn_)
      std::cerr << "\r\033[K" << std::flush;
    drawn_ = false;
  }

private:
  bool active_;
  std::chrono::steady_clock::time_point start_;
  bool drawn_ = false;
  std::mutex mutex_; // code generation reports from its worker threads
};

/// -O max-autotune: with a GPU here, tunes the new bundle's GEMMs at once (`tensorc tune`);
/// without one, says how to later. Returns the exit status.
int tuneCompiled(const CompileCommand &command, bool noCuda) {
  if (command.mode != "max-autotune" || noCuda || command.noTune)
    return 0;
  if (command.options.emit == CompileOptions::Emit::SharedObject) {
    if (!command.options.quiet)
      std::cerr << "tensorc: -O max-autotune: a model .so is not tuned (compile to a directory "
                   "and run `tensorc tune` there)\n";
    return 0;
  }
  Expected<int> devices = rt::cudaDeviceCount();
  if (!devices || *devices == 0) {
    if (!command.options.quiet)
      std::cerr << "tensorc: -O max-autotune: no GPU here ("
                << (devices ? std::string("no device") : devices.error().message())
                << "); GEMMs keep their generated kernels"
                << (command.options.tuningCache.empty() ? ""
                                                        : " where the tuning cache has no choice")
                << " until `tensorc tune " << command.options.outDir
                << "` runs on the GPU machine\n";
    return 0;
  }
  rt::TuneOptions tune;
  tune.bundle = command.options.outDir;
  tune.cache = command.options.tuningCache;
  std::ostringstream report;
  Status tuned = rt::tuneBundle(tune, command.options.quiet ? report : std::cerr);
  if (!tuned)
    return fail(strCat("-O max-autotune: ", tuned.message(), " (the bundle is written, untuned)"));
  return 0;
}

int runCompile(CompileCommand &command, const OpRegistry &registry) {
  command.options.cpuArchs = splitList(command.cpuArchs);
  command.options.cudaArchs = splitList(command.cudaArchs);
  // max-autotune replays graphs too (as torch.compile's mode does) and gives GEMMs library calls.
  command.options.cudaGraphs = command.mode != "default";
  command.options.gemmCalls = command.mode == "max-autotune";
  command.options.tf32 = command.matmulPrecision == "high";
  command.options.winograd = command.convAlgorithm == "auto";
  command.options.fuseAttention = command.attention.value();
  command.options.limits = command.limits.resolve();
  command.options.emit =
      command.emit == "so" ? CompileOptions::Emit::SharedObject : CompileOptions::Emit::Bundle;
  Expected<std::optional<autodiff::TrainOptions>> train = command.train.resolve();
  if (!train)
    return fail(train.error().message());
  command.options.train = *train;
  if (!command.fallback.empty()) {
    Expected<loop::FallbackPolicy> fallback = loop::parseFallbackPolicy(command.fallback);
    if (!fallback)
      return fail(fallback.error().message());
    command.options.fallback = *fallback;
  }
  if (command.noCache)
    command.options.cacheDir = "-";
  ProgressLine progress(command.options.quiet);
  if (progress.active())
    command.options.progress = [&progress](const std::string &what) { progress.update(what); };
  Expected<CompileSummary> summary = compileModel(command.model, registry, command.options);
  progress.clear();
  if (!summary)
    return fail(summary.error().message());
  int tuned = tuneCompiled(command, summary->cudaArchs.empty());
  if (command.options.quiet || tuned != 0)
    return tuned;
  std::cerr << "tensorc: wrote " << command.options.outDir << " (" << summary->kernels
            << " kernels, " << summary->fallbacks << " fallback op types, arena peak "
            << summary->peakBytes << " bytes at example sizes; CPU: "
            << (summary->variants.empty() ? "none" : join(summary->variants, ", "));
  if (!summary->cudaArchs.empty())
    std::cerr << "; CUDA: " << join(summary->cudaArchs, ", ") << " + PTX";
  std::cerr << (summary->fromCache ? "; from the compile cache" : "") << ")\n";
  return 0;
}

} // namespace

Subcommand addCompileCommand(CLI::App &app) {
  auto compile = std::make_shared<CompileCommand>();
  CLI::App *command =
      app.add_subcommand("compile", "Compile a model into a bundle directory or a model .so");
  command->add_option("model", compile->model, "Model file (.fx or .onnx)")->required();
  command
      ->add_option("-o,--output", compile->options.outDir,
                   "Bundle directory (or, with --emit=so, shared object) to write")
      ->required();
  command
      ->add_option("--emit", compile->emit,
                   "bundle: a bundle directory; so: one shared object with kernels, weights and "
                   "runtime inside, exporting the C ABI (tensorc.h)")
      ->check(CLI::IsMember({"bundle", "so"}))
      ->capture_default_str();
  command
      ->add_option("--target", compile->options.target,
                   "Comma-separated backends: cpu, cuda (kernels via NVRTC), or cpu,cuda")
      ->capture_default_str();
  command
      ->add_option("--cuda-arch", compile->cudaArchs,
                   "Comma-separated CUDA archs to emit cubins for (PTX for the lowest), e.g. "
                   "sm_80,sm_90")
      ->capture_default_str();
  addAttentionFlags(*command, compile->attention);
  command
      ->add_option("-O", compile->mode,
                   "default; reduce-overhead (CUDA: replay the launch list as a CUDA graph); "
                   "max-autotune (reduce-overhead, and GEMMs that `tensorc tune` may give to "
                   "cuBLASLt where it is faster; tuned at once when a GPU is present)")
      ->check(CLI::IsMember({"default", "reduce-overhead", "max-autotune"}))
      ->capture_default_str();
  command->add_option("--tuning-cache", compile->options.tuningCache,
                      "-O max-autotune: take GEMM choices from this tuning cache (made by "
                      "`tensorc tune --cache`) for the newest --cuda-arch, without a GPU");
  command->add_flag("--no-tune", compile->noTune,
                    "-O max-autotune: do not tune now, even with a GPU present (run `tensorc "
                    "tune OUT` later)");
  addMatmulPrecisionFlag(*command, compile->matmulPrecision);
  command
      ->add_option("--conv-algorithm", compile->convAlgorithm,
                   "--target cpu: auto (3x3 stride-1 convolutions with 14x14 outputs or more, "
                   "channels multiples of 16, run as Winograd F(2x2,3x3): 16 multiplies per input "
                   "channel instead of 36, results within f32 rounding of the direct kernel's) or "
                   "direct (every convolution on the direct kernel)")
      ->check(CLI::IsMember({"auto", "direct"}))
      ->capture_default_str();
  command
      ->add_option("--cpu-arch", compile->cpuArchs,
                   "Comma-separated CPU architectures: x86_64 (AVX2 + AVX-512), aarch64 (NEON)")
      ->capture_default_str();
  command
      ->add_option("--fallback", compile->fallback,
                   "allow: ops without a generated kernel run on their reference kernels in the "
                   "runtime (on the host); error: such an op is an error naming it and its node. "
                   "Default: error when --target includes cuda (a GPU bundle runs every op on "
                   "the GPU), allow for cpu alone")
      ->check(CLI::IsMember({"allow", "error"}));
  command
      ->add_option("-j,--jobs", compile->options.jobs,
                   "Threads generating code (LLVM modules, NVRTC programs) at once; 0: every "
                   "core. The output is the same whatever it is")
      ->capture_default_str();
  command->add_flag("--no-cache", compile->noCache,
                    "Neither read nor write the compile cache ($TENSORC_CACHE_DIR, else "
                    "~/.cache/tensorc): compiled bundles and NVRTC outputs");
  command->add_flag("-q,--quiet", compile->options.quiet,
                    "No progress line or messages; errors only");
  addTrainOptions(command, compile->train);
  addLimitFlags(*command, compile->limits);
  return {command,
          [compile](const OpRegistry &registry) { return runCompile(*compile, registry); }};
}

} // namespace tensorc::driver
