// parallelFor: workers pull task indices from one counter.
#include "tensorc/Support/Parallel.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include <sched.h>

namespace tensorc {

unsigned defaultJobs() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return unsigned(CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

void parallelFor(size_t count, unsigned jobs, const std::function<void(size_t)> &task) {
  if (jobs == 0)
    jobs = defaultJobs();
  size_t workers = std::min<size_t>(jobs, count);
  if (workers <= 1) {
    for (size_t i = 0; i < count; ++i)
      task(i);
    return;
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < count; i = next++)
      task(i);
  };
  std::vector<std::thread> threads;
  for (size_t t = 1; t < workers; ++t)
    threads.emplace_back(work);
  work();
  for (std::thread &thread : threads)
    thread.join();
}

} // namespace tensorc
