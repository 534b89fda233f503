// Timing shared by the kernel microbenchmarks: best and median wall time of repeated runs, the
// median of the calling thread's CPU time, and an optional cache eviction before each run.
#pragma once

#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <string>
#include <vector>

namespace tensorc::bench {

inline double threadSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

struct Timing {
  double best = 0, median = 0, cpuMedian = 0;
};

/// `--cold MIB`: bytes written before each timed run so that none of a kernel's operands is left
/// in any cache (a compiled model at batch 1 meets its weights so, each layer's once per run).
class CacheEvictor {
public:
  /// Takes `--cold`'s value (MiB, more than the last-level cache); false when it is no size.
  bool setMegabytes(const std::string &text) {
    long megabytes = std::atol(text.c_str());
    if (megabytes <= 0)
      return false;
    buffer.assign(size_t(megabytes) << 20, 0);
    return true;
  }
  bool enabled() const { return !buffer.empty(); }
  void evict() {
    for (size_t i = 0; i < buffer.size(); i += 64)
      buffer[i] = char(buffer[i] + 1);
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }

private:
  std::vector<char> buffer;
};

/// One untimed run (pages, caches), then `reps` timed ones, each after `evictor` when enabled.
template <typename Run> Timing timeRuns(int reps, Run run, CacheEvictor *evictor = nullptr) {
  run();
  std::vector<double> wall, cpu;
  for (int r = 0; r < reps; ++r) {
    if (evictor && evictor->enabled())
      evictor->evict();
    double cpu0 = threadSeconds();
    auto start = std::chrono::steady_clock::now();
    run();
    wall.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    cpu.push_back(threadSeconds() - cpu0);
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  return {wall.front(), wall[wall.size() / 2], cpu[cpu.size() / 2]};
}

} // namespace tensorc::bench
