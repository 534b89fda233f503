// Profiling bundle runs: timed launch events (CPU: one per thread chunk of a kernel; GPU: CUDA
// events around each launch), written as a Chrome/Perfetto trace and summarized per kernel with
// the bundle's static costs (costs.json) against the machine's peaks.
#pragma once

#include "tensorc/Bundle/LaunchCosts.h"
#include "tensorc/Bundle/Manifest.h"
#include "tensorc/Support/Status.h"

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace tensorc::rt {

/// One timed piece of a launch. On the CPU a kernel launch gives one event per chunk of its
/// parallel range (each on the thread that ran it); extern and copy launches, and every launch on
/// a GPU, give one event.
struct ProfileEvent {
  int64_t run = 0;   // which profiled run()
  size_t launch = 0; // index into the manifest's launches
  int thread = 0;    // CPU: the participant that ran it (0: the first seen, usually the caller)
  int64_t begin = 0; // the chunk [begin, end) of the launch's range; [0, range) for a whole launch
  int64_t end = 0;
  double startUs = 0; // since the profiler was created
  double durationUs = 0;
};

/// Collects events from every run of a model it is attached to (Model::setProfiler).
/// Thread-safe: chunks report from the pool's threads.
class Profiler {
public:
  Profiler();

  /// Microseconds since construction (steady clock).
  double nowUs() const;
  /// A dense index of the calling thread, in order of first use.
  int threadIndex();
  void add(const ProfileEvent &event);

  /// Starts run `runs().size()` with its symbol bindings; returns its id.
  int64_t beginRun(const std::map<std::string, int64_t> &bindings);
  void endRun(int64_t run);
  /// "cpu (x86_64-avx512, 4 threads)" or the GPU; set by the model.
  void setDevice(std::string device) { device_ = std::move(device); }

  struct Run {
    std::map<std::string, int64_t> bindings;
    double startUs = 0, durationUs = 0;
  };
  /// The events ordered by run, launch, then begin (deterministic whatever the threads did).
  std::vector<ProfileEvent> events() const;
  std::vector<Run> runs() const;
  const std::string &device() const { return device_; }
  int numThreads() const;

private:
  std::chrono::steady_clock::time_point origin_;
  mutable std::mutex mutex_;
  std::vector<ProfileEvent> events_;
  std::vector<Run> runs_;
  std::map<std::thread::id, int> threads_;
  std::string device_;
};

/// What the machine can do at most: the roofline's two ceilings.
struct MachinePeaks {
  double bytesPerSecond = 0;
  double flopsPerSecond = 0;
  std::string source; // how they were obtained, for the report
};

/// Measures the host: memory bandwidth (a parallel copy through buffers far larger than the
/// caches, reads plus writes, best of a few passes) and f32 FMA throughput (independent vector
/// FMA chains at the widest width the CPU has: AVX-512, AVX2+FMA, or NEON), on `threads` threads.
/// About a quarter of a second.
MachinePeaks measureCpuPeaks(int threads);

/// Writes the Chrome trace-event JSON (`traceEvents` of complete "X" events, microseconds,
/// one per ProfileEvent, plus process/thread names) that chrome://tracing and Perfetto load.
Status writeChromeTrace(const std::string &path, const bundle::Manifest &manifest,
                        const Profiler &profiler);

/// costs.json of the bundle in `bundleDir`, validated against `manifest`.
Expected<bundle::LaunchCosts> readLaunchCosts(const std::string &bundleDir,
                                              const bundle::Manifest &manifest);

/// The per-kernel table: time per run (a launch's span, first chunk start to last chunk end),
/// share of the total, bytes and operations (from `costs`, evaluated at each run's bindings; "-"
/// without costs), achieved GB/s and GFLOP/s, and the percent of the roofline (attainable
/// throughput min(peak FLOP/s, intensity x peak bandwidth)) they reach.
std::string profileTable(const bundle::Manifest &manifest,
                         const std::optional<bundle::LaunchCosts> &costs, const Profiler &profiler,
                         const MachinePeaks &peaks);

} // namespace tensorc::rt

namespace tensorc::rt {

class Model;

/// What `--profile` asks of `tensorc run` and `tensorc-run`.
struct ProfileReportOptions {
  std::string tracePath;
  /// Roofline ceilings from the command line (GB/s, GFLOP/s); 0 = Model::peaks() for that one.
  double peakGbps = 0, peakGflops = 0;
};

/// After profiled runs of `model` (loaded from `bundleDir`): writes the trace and returns the
/// per-kernel table (with costs.json when the bundle has one) and a line naming the trace.
Expected<std::string> finishProfile(Model &model, const Profiler &profiler,
                                    const std::string &bundleDir,
                                    const ProfileReportOptions &options);

} // namespace tensorc::rt
