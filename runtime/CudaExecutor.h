// Running a bundle's launch list on a CUDA device: module image choice (cubin for the device's
// arch, else PTX JIT; the same for each of the bundle's modules), device memory for weights,
// inputs, outputs and the planned arena, kernel launches on one stream, extern fallbacks through
// the host, and optional CUDA-graph replay.
#pragma once

#include "CublasLt.h"
#include "CudaDriver.h"

#include "tensorc/Bundle/Manifest.h"
#include "tensorc/IR/Graph.h"
#include "tensorc/Runtime/LaunchObserver.h"
#include "tensorc/Runtime/Model.h"
#include "tensorc/Runtime/Profile.h"
#include "tensorc/Support/Tensor.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tensorc::rt {

/// cuTensorMapEncodeTiled's arguments for one operand of a Hopper GEMM (bundle::HopperGemm) whose
/// buffer is at device address `buffer`, at `bindings`: rank 3, box {128 bytes of K, the tile's
/// rows, 1}. Errors when TMA cannot take it (unaligned, strides not multiples of 16 bytes).
struct HopperMapArgs {
  int dataType = 0; // CUtensorMapDataType: f16 6, bf16 9, tf32 11
  uint64_t address = 0;
  unsigned long long dims[3] = {}, strides[2] = {};
  unsigned box[3] = {};
};
Expected<HopperMapArgs> hopperMapArgs(const bundle::HopperGemm &form,
                                      const bundle::HopperGemm::Map &map, uint64_t buffer,
                                      const std::map<std::string, int64_t> &bindings);

class CudaExecutor {
public:
  struct Options {
    int device = 0;
    /// Capture the launch list in a CUDA graph per distinct symbol binding and replay it.
    bool graphs = false;
    /// Honour the bundle's GEMM library choices (LoadOptions::gemmLibraries).
    bool gemmLibraries = true;
  };

  /// Reads a bundle file (relative path, e.g. "cuda/sm_90.cubin") whole.
  using FileReader = std::function<Expected<std::string>(const std::string &file)>;

  /// Picks the image of each module for the device, loads them (read through `readFile`),
  /// resolves every kernel in its module and uploads the weights (`weights[id]`: host bytes of
  /// Weight buffer `id`, null when unused).
  static Expected<std::unique_ptr<CudaExecutor>>
  create(const bundle::Manifest &manifest, const FileReader &readFile,
         const std::vector<const void *> &weights, const std::vector<bool> &usedBuffers,
         const std::vector<std::unique_ptr<Graph>> &externGraphs, const Options &options);
  ~CudaExecutor();
  CudaExecutor(const CudaExecutor &) = delete;
  CudaExecutor &operator=(const CudaExecutor &) = delete;

  /// Runs the launch list: copies `inputs` to the device, launches, and copies the results into
  /// `outputs` (allocated by the caller with the bound shapes). `symbols` are the bound values
  /// in manifest order, `shapes[id]` each used buffer's shape. `stream`: the caller's stream to
  /// queue on (null: the executor's own).
  Status run(const std::map<std::string, int64_t> &bindings, const std::vector<int64_t> &symbols,
             const std::vector<std::vector<int64_t>> &shapes, const std::vector<Tensor> &inputs,
             std::vector<Tensor> &outputs, cu::Stream stream = nullptr);

  /// run() on device memory the caller owns: `inputs[i]` and `outputs[i]` are the addresses of
  /// manifest input and output i (outputs sized for the bound shapes). Nothing is copied to or from
  /// the host, and the launch list is enqueued as it is (a CUDA graph holds the addresses it was
  /// captured with). Complete on return.
  Status runOnDevice(const std::map<std::string, int64_t> &bindings,
                     const std::vector<int64_t> &symbols,
                     const std::vector<std::vector<int64_t>> &shapes,
                     const std::vector<cu::DevicePtr> &inputs,
                     const std::vector<cu::DevicePtr> &outputs, cu::Stream stream = nullptr);
  /// `bytes` of device memory (at `*address`; none for 0 bytes), freed when the returned owner's
  /// last reference goes, which may outlive the executor: the owner holds the device's context.
  Expected<std::shared_ptr<void>> allocate(size_t bytes, cu::DevicePtr *address,
                                           const std::string &what);
  /// The executor's own stream.
  cu::Stream ownStream() const { return ownStream_; }

  /// Times `iterations` executions of the launch list (or graph replays) on the buffers of the
  /// last run(), which must have had the same binding: device work only, no host copies. Returns
  /// each iteration's milliseconds (launch to stream completion). `replay` false launches one by
  /// one even where graphs are on (a profiled last run captured none).
  Expected<std::vector<double>> timeLaunches(const std::map<std::string, int64_t> &bindings,
                                             const std::vector<int64_t> &symbols,
                                             const std::vector<std::vector<int64_t>> &shapes,
                                             int64_t iterations, bool replay = true);

  /// Profiles the next run() as run `run` of `profiler` (null: stop): a pair of CUDA events
  /// around each launch, read after the run completes; graph replay is skipped while profiling.
  void profileRuns(Profiler *profiler, int64_t run) {
    profiler_ = profiler;
    profileRun_ = run;
  }
  /// Calls `observer` around every launch (null: stop): the stream is synchronized after each
  /// launch and buffers are copied to and from the host on request; graphs are skipped.
  void setLaunchObserver(LaunchObserver *observer) { observer_ = observer; }
  /// The device's DRAM bandwidth (memory clock x bus width x 2) and f32 CUDA-core peak (SMs x
  /// f32 lanes per SM x 2 x clock) from its attributes.
  Expected<MachinePeaks> peaks() const;

  /// "NVIDIA H100 80GB HBM3 (sm_90, cubin sm_90)": the device and the image loaded.
  const std::string &description() const { return description_; }
  /// Why `manifest`'s launch list cannot be replayed as a CUDA graph, "" when it can: a
  /// reference-kernel fallback (an Extern launch) runs on the host between kernels.
  static std::string graphBlocker(const bundle::Manifest &manifest);
  /// Graph replays so far (runs that did not capture); for tests and benchmarks.
  int64_t graphReplays() const { return replays_; }
  /// Which GEMMs run on a library: "none", "cuBLASLt for N GEMMs (file)", or why the bundle's
  /// choice could not be honoured ("generated kernels: cannot load cuBLASLt (...)").
  const std::string &gemmLibrary() const { return gemmLibrary_; }
  /// The device's arch, "sm_90".
  const std::string &arch() const { return arch_; }

  using GemmTiming = Model::GemmTiming;
  /// Times every launch with a GEMM call (Launch::gemm) at the last run's binding, on the
  /// operands the launches before it produce (run again in order up to each GEMM): its kernel,
  /// then up to `algorithms` cuBLASLt algorithms each followed by the epilogue function, each
  /// call alone after evicting the L2 cache (the median of `iterations` calls). The library wins
  /// when it is faster by more than `margin` (0.03: 3%; -1: always) and its output matches the
  /// kernel's (relative to the output's largest magnitude: 1e-4 for strict f32, 2e-2 for
  /// f16/bf16/TF32). Leaves buffers' contents undefined: run again before reading outputs. Errors
  /// when cuBLASLt cannot be loaded. `wanted` (null: every one) picks the launches to time.
  Expected<std::vector<GemmTiming>> tuneGemms(const std::map<std::string, int64_t> &bindings,
                                              const std::vector<int64_t> &symbols,
                                              const std::vector<std::vector<int64_t>> &shapes,
                                              int64_t iterations, int64_t algorithms, double margin,
                                              const std::function<bool(size_t)> &wanted = nullptr);

private:
  CudaExecutor() = default;
  /// Device memory for the bound shapes: the arena, the split-K workspaces, and (with
  /// `ownInputsOutputs`) the executor's input and output buffers; `bytes[id]` receives each
  /// buffer's size.
  Status placeBuffers(const std::map<std::string, int64_t> &bindings,
                      const std::vector<std::vector<int64_t>> &shapes, bool ownInputsOutputs,
                      std::vector<size_t> &bytes);
  Status ensure(cu::DevicePtr &pointer, size_t &capacity, size_t bytes, const std::string &what);
  Status enqueue(const std::map<std::string, int64_t> &bindings,
                 const std::vector<int64_t> &symbols,
                 const std::vector<std::vector<int64_t>> &shapes);
  /// Enqueues launch `index` alone (a kernel, its library GEMM, an extern or a copy).
  Status runLaunch(size_t index, const std::map<std::string, int64_t> &bindings,
                   const std::vector<int64_t> &symbols,
                   const std::vector<std::vector<int64_t>> &shapes);
  /// Reads the profiled run's event times into the profiler (after the stream completed).
  Status collectProfile(double hostStartUs);
  class DeviceBuffers;
  Status runExtern(size_t index, const std::map<std::string, int64_t> &bindings,
                   const std::vector<std::vector<int64_t>> &shapes);
  /// Launches kernel launch `index` (`function`: its own or its GEMM epilogue function, which
  /// takes `extra` after the symbols instead of split-K workspaces).
  Status launchKernel(size_t index, cu::Function function, int64_t grid,
                      const std::map<std::string, int64_t> &bindings,
                      const std::vector<int64_t> &symbols, const cu::DevicePtr *extra);
  /// A library GEMM's device addresses: its operands, its result (the product scratch, or a
  /// direct call's output) and its bias (0: none).
  struct GemmAddresses {
    cu::DevicePtr a = 0, b = 0, c = 0, bias = 0;
  };
  /// The cuBLASLt plan of GEMM launch `index` at this binding (and its operands' alignment),
  /// made on first use, and the addresses it runs on.
  /// Errors when an operand view leaves its buffer (`shapes[id]`: the bound shapes).
  Expected<const blaslt::Plan *> gemmPlan(size_t index,
                                          const std::map<std::string, int64_t> &bindings,
                                          const std::vector<int64_t> &symbols,
                                          const std::vector<std::vector<int64_t>> &shapes,
                                          GemmAddresses &at, std::string *problem = nullptr);
  /// Grows the product scratch to the largest product of the GEMM launches that run on the
  /// library (`all`: every GEMM launch) at this binding, and the library's workspace.
  Status placeProducts(const std::map<std::string, int64_t> &bindings, bool all);
  /// Enqueues GEMM launch `index` as cuBLASLt's product (algorithm `algo`) and its epilogue
  /// function (none for a direct call); with `fallBack`, its own kernel where the library cannot
  /// take the call (else an error).
  Status runLibraryGemm(size_t index, const std::map<std::string, int64_t> &bindings,
                        const std::vector<int64_t> &symbols,
                        const std::vector<std::vector<int64_t>> &shapes, size_t algo,
                        bool fallBack = true);
  /// Loads cuBLASLt and creates its handle (once).
  Status openLibrary();

  const cu::Driver *driver_ = nullptr;
  const bundle::Manifest *manifest_ = nullptr;
  const std::vector<std::unique_ptr<Graph>> *externGraphs_ = nullptr;
  cu::Device device_ = 0;
  cu::Context context_ = nullptr;
  cu::Stream ownStream_ = nullptr;
  cu::Stream stream_ = nullptr;         // where the current run queues: ownStream_ or the caller's
  std::vector<cu::Module> modules_;     // per bundle CUDA module (manifest CudaImage::module)
  std::vector<cu::Function> functions_; // per launch (Kernel launches only)
  // GEMM launches (Launch::gemm): the epilogue function, and whether cuBLASLt computes the
  // product (the bundle chose it and the library loaded; TENSORC_GEMM_LIBRARY=0 turns it off).
  std::vector<cu::Function> epilogues_;
  std::vector<bool> useLibrary_;
  const blaslt::Library *blas_ = nullptr;
  blaslt::Handle blasHandle_ = nullptr;
  std::map<std::vector<int64_t>, std::unique_ptr<blaslt::Plan>> plans_; // launch, sizes, aligns
  cu::DevicePtr product_ = 0, workspace_ = 0;
  size_t productCapacity_ = 0, workspaceCapacity_ = 0;
  std::string gemmLibrary_ = "none";
  std::string arch_;
  int planAlgorithms_ = 8; // cuBLASLt candidates a plan keeps (tuneGemms' `algorithms`)
  // Per launch: its kernel waits for the one before it (bundle::kGridDependencySymbol), so it is
  // launched as a programmatic dependent. TENSORC_CUDA_PDL=0 launches every kernel plainly.
  std::vector<bool> dependentLaunch_;
  // Per launch: it runs its Hopper form (Launch::hopper, its module's sm_90a image loaded).
  std::vector<bool> hopper_;
  int smCount_ = 1; // the device's multiprocessors (Hopper forms' persistent grids)
  std::vector<cu::DevicePtr> pointers_; // per buffer
  std::vector<size_t> capacities_;      // per buffer: bytes held (inputs, outputs, weights)
  cu::DevicePtr arena_ = 0;
  size_t arenaCapacity_ = 0;
  // Split-K workspaces, shared by every split kernel (launches run in order on one stream): the
  // partials scratch, and counters that are zero between launches (zeroed when allocated).
  cu::DevicePtr partials_ = 0, counters_ = 0;
  size_t partialsCapacity_ = 0, countersCapacity_ = 0;
  bool useGraphs_ = false;
  /// Runs replay a captured graph; profiled or observed runs launch one by one (no graph).
  bool replaysGraphs() const { return useGraphs_ && !profiler_ && !observer_; }
  uint64_t generation_ = 0; // bumped by every reallocation: captured graphs hold old pointers
  struct CapturedGraph {
    cu::GraphExec exec = nullptr;
    uint64_t generation = 0;
  };
  std::map<std::vector<int64_t>, CapturedGraph> graphs_;
  int64_t replays_ = 0;
  std::string description_;
  LaunchObserver *observer_ = nullptr;
  Profiler *profiler_ = nullptr;
  int64_t profileRun_ = 0;
  cu::Event runStart_ = nullptr;
  std::vector<std::pair<cu::Event, cu::Event>> launchEvents_; // per launch, created on demand
  std::vector<bool> recorded_;                                // per launch: timed this run
  std::map<std::string, int64_t> lastBindings_;
};

} // namespace tensorc::rt
