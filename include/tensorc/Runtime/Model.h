// The CPU runtime's C++ API: load a compiled bundle (DESIGN §6) and run it on tensors.
#pragma once

#include "tensorc/Bundle/Manifest.h"
#include "tensorc/Runtime/LaunchObserver.h"
#include "tensorc/Runtime/Profile.h"
#include "tensorc/Support/Status.h"
#include "tensorc/Support/Tensor.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tensorc::rt {

/// CUDA devices present: 0, or an error saying why none can be used (no driver, cuInit failing).
Expected<int> cudaDeviceCount();

/// The most threads a model may run kernels on (LoadOptions::threads): more is an error, not a
/// few hundred thousand threads the system refuses to start.
constexpr int kMaxThreads = 1024;

struct LoadOptions {
  int threads = 0;     // threads running kernels, the caller's included; 0 = one per core
  std::string variant; // force a CPU variant ("x86_64" to skip AVX-512); empty = best supported
  /// "cpu", or "cuda": the bundle's CUDA kernels on GPU `cudaDevice` (inputs and outputs stay host
  /// tensors; they are copied to and from the device around each run).
  std::string device = "cpu";
  int cudaDevice = 0;
  /// CUDA-graph replay: -1 = as the bundle was compiled (-O reduce-overhead), 0 = off, 1 = on.
  int cudaGraphs = -1;
  /// GEMM libraries (cuBLASLt) where the bundle's tuning chose them; false runs every GEMM on its
  /// generated kernel (tuning compares against that).
  bool gemmLibraries = true;
  /// The most bytes any one input, output or intermediate buffer of a run may take, checked
  /// before anything is allocated; 0 = TENSORC_MAX_TENSOR_BYTES or kDefaultMaxTensorBytes.
  int64_t maxTensorBytes = 0;
};

/// A dense, row-major tensor in the memory of a model's GPU (`address` is a CUdeviceptr). `owner`
/// keeps the memory alive: outputs of runOnDevice hold their allocation (the last reference frees
/// it); inputs are the caller's, who keeps them alive during the call.
struct DeviceTensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  uint64_t address = 0;
  std::shared_ptr<void> owner;
};

/// A loaded bundle: manifest, mapped weights, kernels and a thread pool. `run` may be called from
/// several threads; calls on one Model take turns (they share the scratch arena).
class Model {
public:
  /// Reads and validates `bundleDir`/manifest.json, maps the weights, picks and opens the CPU
  /// variant, resolves every kernel and parses every extern graph. Every file read must resolve
  /// inside the bundle (symlinks included) and match the manifest's SHA-256, and the manifest
  /// must match the signatures compiled into the kernels. Errors name the file at fault.
  static Expected<std::unique_ptr<Model>> load(const std::string &bundleDir,
                                               const LoadOptions &options = {});
  /// The bundle embedded in the running image by `tensorc compile --emit=so` (what
  /// tc_model_load(NULL, ...) loads): the same checks, with the weights used in place and the
  /// chosen CPU variant loaded from memory. An error in any other program.
  static Expected<std::unique_ptr<Model>> loadEmbedded(const LoadOptions &options = {});
  ~Model();
  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;

  /// One tensor per manifest input, in order; only read. Checks dtypes, ranks, the symbol
  /// bindings and the guards, then returns freshly allocated outputs.
  Expected<std::vector<Tensor>> run(const std::vector<Tensor> &inputs);
  /// run() with the GPU work on `cudaStream` (a CUstream; null = the model's own stream), after
  /// what is already queued there. A CPU model accepts only null.
  Expected<std::vector<Tensor>> run(const std::vector<Tensor> &inputs, void *cudaStream);
  /// Where run() puts output `index` (its dtype and shape bound from the inputs): memory for
  /// those bytes, which the kernels then write directly (nothing is zeroed first or copied after),
  /// or null for run()'s own allocation; an error stops the run before its first launch.
  using OutputMemory =
      std::function<Expected<void *>(size_t index, DType dtype, const std::vector<int64_t> &shape)>;
  /// run() with the outputs placed by `memory` (each returned Tensor views that memory).
  Expected<std::vector<Tensor>> run(const std::vector<Tensor> &inputs, void *cudaStream,
                                    const OutputMemory &memory);
  /// A model on a GPU: run() on inputs already in that GPU's memory, with no copy through the host
  /// (the kernels read the caller's buffers); the outputs are fresh device allocations. Same checks
  /// and stream rule as run(); the work is complete on return. CUDA graphs are not replayed here:
  /// a graph holds the addresses it was captured with.
  Expected<std::vector<DeviceTensor>> runOnDevice(const std::vector<DeviceTensor> &inputs,
                                                  void *cudaStream = nullptr);

  /// Times `iterations` runs and returns each one's milliseconds. On the CPU each is a whole
  /// run(); on a GPU one untimed run() uploads the inputs, and the timed runs reuse its device
  /// buffers (no host copies), so they measure the kernels (or the CUDA graph) alone.
  Expected<std::vector<double>> time(const std::vector<Tensor> &inputs, int64_t iterations);

  /// One GEMM launch of a GPU bundle compiled with -O max-autotune, timed as its generated kernel
  /// and as cuBLASLt's product plus the kernel's epilogue (tuneGemms).
  struct GemmTiming {
    size_t launch = 0;   // index in manifest().launches
    std::string problem; // "f32 197x768x3072 (A k-major, B n-major)"
    double generatedUs = 0;
    double libraryUs = -1; // -1: cuBLASLt had no algorithm for it (see `note`)
    int64_t algo = 0;      // the fastest algorithm's index in cuBLASLt's heuristic list
    int64_t algorithms = 0;
    double maxError = 0; // |cuBLASLt - kernel| over the output, relative to its largest value
    bool useLibrary = false;
    std::string note;
  };
  /// On a GPU: runs `inputs` once, then times every GEMM launch that has a library call both
  /// ways (each call alone after evicting the L2 cache, the median of `iterations`; up to
  /// `algorithms` of cuBLASLt's candidates; `wanted`, when given, picks the launches); cuBLASLt
  /// wins where it is faster by more than `margin` and agrees with the kernel (1e-4 of the output's
  /// largest magnitude in strict f32, 2e-2 otherwise). The outputs of later runs are unaffected
  /// (nothing of the bundle changes). Errors on the CPU, and when cuBLASLt cannot be loaded.
  Expected<std::vector<GemmTiming>> tuneGemms(const std::vector<Tensor> &inputs, int64_t iterations,
                                              int64_t algorithms, double margin,
                                              const std::function<bool(size_t)> &wanted = nullptr);
  /// On a GPU, its arch ("sm_90"); empty on the CPU.
  std::string cudaArch() const;
  /// The symbol values the last run bound (empty before the first, and without symbols).
  const std::map<std::string, int64_t> &symbolBindings() const;
  /// On a GPU, which GEMMs run on a library ("none", "cuBLASLt for N GEMMs (file)", or why the
  /// bundle's choice is not honoured); empty on the CPU.
  std::string gemmLibrary() const;

  /// Tensor `name` of the bundle's weights.safetensors, viewing the mapped bytes (valid while the
  /// model lives); training bundles start their state from these.
  Expected<Tensor> weight(const std::string &name) const;

  /// Records every later run() into `profiler` (null: stop): on the CPU one event per thread
  /// chunk of each kernel launch, on a GPU CUDA events around each launch (graph replay is
  /// skipped while profiling). The profiler must outlive the runs.
  void setProfiler(Profiler *profiler);
  /// Calls `observer` before and after every launch of later runs (null: stop), with access to
  /// the buffers; on a GPU each launch is then followed by a stream synchronization and graph
  /// replay is skipped. The observer must outlive the runs.
  void setLaunchObserver(LaunchObserver *observer);
  /// The roofline's ceilings for this model's device: measured on the CPU (measureCpuPeaks with
  /// the model's threads), from the device attributes on a GPU.
  Expected<MachinePeaks> peaks() const;

  const bundle::Manifest &manifest() const;
  /// The chosen CPU variant; empty when the bundle has no kernel launches or runs on a GPU.
  const std::string &variant() const;
  /// Where the kernels run: "cpu", or the GPU and module image ("NVIDIA H100 ... (sm_90, cubin
  /// sm_90)").
  std::string deviceDescription() const;
  /// On a GPU, whether runs replay a CUDA graph, and why not when they do not: "on", or "off
  /// (...)". Empty on the CPU.
  const std::string &cudaGraphs() const;
  /// The model's own CUDA stream (a CUstream; where runs queue when given none), null on the CPU.
  void *cudaStream() const;
  int numThreads() const;
  /// Bytes of scratch held between runs (grows to the largest run so far).
  size_t arenaCapacity() const;

private:
  struct Impl;
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace tensorc::rt
