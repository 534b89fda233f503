// A persistent pool of worker threads that splits a [0, range) loop into chunks (the CPU runtime).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace tensorc::rt {

/// A non-owning reference to a callable `void(int64_t begin, int64_t end)`, so handing a lambda
/// to the pool allocates nothing.
class RangeFn {
public:
  template <typename Fn, typename = std::enable_if_t<!std::is_same_v<std::decay_t<Fn>, RangeFn>>>
  RangeFn(Fn &fn) // NOLINT: implicit by design, like llvm::function_ref
      : object_(static_cast<void *>(&fn)), call_([](void *object, int64_t begin, int64_t end) {
          (*static_cast<Fn *>(object))(begin, end);
        }) {}
  void operator()(int64_t begin, int64_t end) const { call_(object_, begin, end); }

private:
  void *object_;
  void (*call_)(void *, int64_t, int64_t);
};

class ThreadPool {
public:
  /// How long an idle worker polls for the next job before it sleeps: a model's kernels follow
  /// each other within microseconds, and a futex wake-up costs tens of them.
  static constexpr int64_t kDefaultSpinMicros = 200;

  /// `threads` participants in all (the caller included); 0 means one per hardware thread.
  /// `spinMicros` < 0 takes kDefaultSpinMicros, or $TENSORC_SPIN_US when set.
  explicit ThreadPool(int threads, int64_t spinMicros = -1);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  int numThreads() const { return int(workers_.size()) + 1; }

  /// Calls fn(begin, end) over disjoint chunks covering [0, range), each at least `grain` long
  /// (or the whole range) and differing in length by at most one, on the workers and the calling
  /// thread; returns when all are done. Calls from several threads are serialized; `fn` must not
  /// call parallelFor itself.
  void parallelFor(int64_t range, int64_t grain, RangeFn fn);

private:
  void workerLoop();
  /// Claims and runs chunks of the current job until none is left; returns how many it ran.
  int64_t runChunks();
  /// Waits for a job newer than `seen`; false when the pool is stopping.
  bool waitForJob(uint64_t seen);

  std::vector<std::thread> workers_;
  int64_t spinMicros_;
  std::mutex callMutex_; // one parallelFor at a time

  // The job: generation in the high 32 bits, the next unclaimed chunk in the low 32. One word, so
  // a worker sees the generation and whether it is still open in one load, and a claim can only
  // land in the job it read. A finished job is closed by setting the chunk index to kClosed.
  static constexpr uint64_t kClosed = uint64_t(1) << 31;
  std::atomic<uint64_t> state_{kClosed};
  // Workers between reading state_ and leaving the job; the caller rewrites the job's fields only
  // when none is inside, so a worker that read an open state reads the fields of that job.
  std::atomic<int> inJob_{0};
  std::atomic<int64_t> doneChunks_{0};
  RangeFn *fn_ = nullptr;
  int64_t chunk_ = 1, longer_ = 0, numChunks_ = 0; // the first longer_ chunks are chunk_ + 1 long

  // Sleeping workers, woken by the caller only when some are asleep.
  std::mutex sleepMutex_;
  std::condition_variable wake_;
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stopping_{false};
};

} // namespace tensorc::rt
