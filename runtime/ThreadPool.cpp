// The runtime's thread pool: workers poll for the next job for a while (back-to-back kernels pay
// no wake-up), then sleep on a condition variable; chunks are claimed from one atomic word.
#include "ThreadPool.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace tensorc::rt {

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kIndexMask = 0xffffffffu;

/// Tells the core this is a spin-wait loop (frees the sibling hyperthread, saves power).
inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

int64_t spinMicrosFromEnvironment() {
  if (const char *value = std::getenv("TENSORC_SPIN_US")) {
    char *end = nullptr;
    long long micros = std::strtoll(value, &end, 10);
    if (end != value && *end == '\0' && micros >= 0)
      return micros;
  }
  return ThreadPool::kDefaultSpinMicros;
}

/// Spins until `done()` holds, yielding the core once the wait is longer than a short spin (the
/// thread it waits for may be descheduled on a busy machine).
template <typename Done> void spinUntil(Done done) {
  for (int i = 0; !done(); ++i) {
    if (i < 4096)
      cpuRelax();
    else
      std::this_thread::yield();
  }
}

} // namespace

ThreadPool::ThreadPool(int threads, int64_t spinMicros)
    : spinMicros_(spinMicros < 0 ? spinMicrosFromEnvironment() : spinMicros) {
  if (threads <= 0)
    threads = int(std::max(1u, std::thread::hardware_concurrency()));
  workers_.reserve(size_t(threads - 1));
  for (int i = 1; i < threads; ++i)
    workers_.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(sleepMutex_);
    stopping_.store(true);
  }
  wake_.notify_all();
  for (std::thread &worker : workers_)
    worker.join();
}

int64_t ThreadPool::runChunks() {
  // Dynamic claiming balances uneven kernels (a tail, a slow or descheduled core).
  int64_t ran = 0;
  while (true) {
    uint64_t index = state_.fetch_add(1, std::memory_order_relaxed) & kIndexMask;
    if (index >= uint64_t(numChunks_))
      return ran;
    // The first `longer_` chunks are one longer than the rest.
    int64_t i = int64_t(index), begin = i * chunk_ + std::min(i, longer_);
    (*fn_)(begin, begin + chunk_ + (i < longer_ ? 1 : 0));
    ++ran;
  }
}

bool ThreadPool::waitForJob(uint64_t seen) {
  auto newJob = [&] { return (state_.load(std::memory_order_acquire) >> 32) != seen; };
  if (spinMicros_ > 0) {
    Clock::time_point deadline = Clock::now() + std::chrono::microseconds(spinMicros_);
    do {
      for (int i = 0; i < 256; ++i) {
        if (newJob())
          return true;
        cpuRelax();
      }
    } while (!stopping_.load(std::memory_order_relaxed) && Clock::now() < deadline);
  }
  std::unique_lock<std::mutex> lock(sleepMutex_);
  // Registered before the last look at state_ (both seq_cst, as the caller's publish and its read
  // of sleepers_): either this look sees the new job or the caller sees a sleeper and wakes it.
  sleepers_.fetch_add(1);
  wake_.wait(lock, [&] { return stopping_.load() || (state_.load() >> 32) != seen; });
  sleepers_.fetch_sub(1);
  return !stopping_.load();
}

void ThreadPool::workerLoop() {
  uint64_t seen = 0;
  while (waitForJob(seen)) {
    inJob_.fetch_add(1);
    uint64_t state = state_.load();
    seen = state >> 32;
    // A job that closed before this worker got here needs nothing from it.
    if ((state & kIndexMask) < kClosed) {
      if (int64_t ran = runChunks())
        doneChunks_.fetch_add(ran, std::memory_order_release);
    }
    inJob_.fetch_sub(1, std::memory_order_release);
  }
}

void ThreadPool::parallelFor(int64_t range, int64_t grain, RangeFn fn) {
  if (range <= 0)
    return;
  grain = std::max<int64_t>(grain, 1);
  if (workers_.empty() || range <= grain) {
    fn(0, range);
    return;
  }
  std::lock_guard<std::mutex> call(callMutex_);
  // About four chunks per participant: enough to balance, few enough to keep overhead low; none
  // shorter than the grain; and fewer than kClosed, so a chunk index never reaches the closed
  // mark. The range is cut into that many near-equal chunks (lengths differ by at most one) rather
  // than chunks of one length and a remainder: 49 GEMM tiles on 2 threads were 7 chunks of 7, 4
  // for one thread and 3 for the other; they are 8 chunks of 6 or 7 now.
  int64_t participants = numThreads();
  int64_t chunks = std::min(participants * 4, range / grain);
  chunks = std::clamp<int64_t>(chunks, 1, int64_t(kClosed) - 1);
  // No worker is inside a job here (the previous call waited for them to leave), so the fields
  // can be rewritten; publishing the new generation makes them visible.
  fn_ = &fn;
  chunk_ = range / chunks;
  longer_ = range % chunks;
  numChunks_ = chunks;
  doneChunks_.store(0, std::memory_order_relaxed);
  uint64_t generation = ((state_.load(std::memory_order_relaxed) >> 32) + 1) & kIndexMask;
  state_.store(generation << 32);
  if (sleepers_.load() > 0) {
    std::lock_guard<std::mutex> lock(sleepMutex_);
    wake_.notify_all();
  }
  int64_t ran = runChunks();
  spinUntil([&] { return doneChunks_.load(std::memory_order_acquire) + ran >= numChunks_; });
  // Close the job, then wait for the workers still inside it (each about to find no chunk left).
  state_.store(generation << 32 | kClosed);
  spinUntil([&] { return inJob_.load() == 0; });
  fn_ = nullptr;
}

} // namespace tensorc::rt
