// Per-kernel dispatch overhead of the runtime's thread pool: back-to-back parallelFor calls with
// empty and small chunks, and calls after an idle gap (a sleeping pool's wake-up), per thread
// count.
//
//   build/bench/cpu/tensorc-bench-dispatch [--threads 1,2] [--calls N]
#include "ThreadPool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

/// Busy work of about `ns` nanoseconds that the compiler cannot remove.
void spinFor(int64_t ns) {
  auto end = Clock::now() + std::chrono::nanoseconds(ns);
  while (Clock::now() < end) {
  }
}

/// Median microseconds of one parallelFor over `calls` back-to-back calls (per call, so the calls
/// a busy machine preempts do not move it).
double perCall(tensorc::rt::ThreadPool &pool, int64_t range, int64_t chunkNs, int calls,
               std::chrono::microseconds gap) {
  std::atomic<int64_t> sum{0};
  auto fn = [&](int64_t begin, int64_t end) {
    if (chunkNs)
      spinFor(chunkNs * (end - begin));
    sum.fetch_add(end - begin, std::memory_order_relaxed);
  };
  std::vector<double> samples;
  for (int c = 0; c < calls; ++c) {
    if (gap.count())
      std::this_thread::sleep_for(gap);
    auto start = Clock::now();
    pool.parallelFor(range, 1, fn);
    samples.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  if (sum.load() != int64_t(calls) * range) {
    std::fprintf(stderr, "dispatch: lost work items\n");
    std::exit(1);
  }
  return median(samples);
}

} // namespace

int main(int argc, char **argv) {
  std::vector<int> threadCounts = {1, int(std::max(1u, std::thread::hardware_concurrency()))};
  int calls = 2000;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) {
      threadCounts.clear();
      std::stringstream list(argv[++i]);
      for (std::string item; std::getline(list, item, ',');)
        threadCounts.push_back(std::atoi(item.c_str()));
    } else if (!std::strcmp(argv[i], "--calls") && i + 1 < argc) {
      calls = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--threads 1,2] [--calls N]\n", argv[0]);
      return 1;
    }
  }
  std::printf("median microseconds per parallelFor call\n%-8s %14s %18s %18s %18s\n", "threads",
              "empty", "8 x 2 us/thread", "(ideal)", "after 1 ms idle");
  for (int threads : threadCounts) {
    tensorc::rt::ThreadPool pool(threads);
    int64_t range = 4 * int64_t(threads);
    double empty = perCall(pool, range, 0, calls, std::chrono::microseconds(0));
    // 8 items of 2 us per thread: the kind of small kernel a batch-1 model runs hundreds of.
    double small = perCall(pool, 8 * int64_t(threads), 2000, calls, std::chrono::microseconds(0));
    double woken = perCall(pool, range, 0, 500, std::chrono::microseconds(1000));
    std::printf("%-8d %14.2f %18.2f %18.2f %18.2f\n", threads, empty, small, 16.0, woken);
  }
  return 0;
}
