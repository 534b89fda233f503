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
  /// `threads` participants in all (the caller included); 0 means one per hardware thread.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  int numThreads() const { return int(workers_.size()) + 1; }

  /// Calls fn(begin, end) over disjoint chunks covering [0, range), each at least `grain` long
  /// (but the last), on the workers and the calling thread; returns when all are done. Calls from
  /// several threads are serialized; `fn` must not call parallelFor itself.
  void parallelFor(int64_t range, int64_t grain, RangeFn fn);

private:
  void workerLoop();
  void runChunks();

  std::vector<std::thread> workers_;
  std::mutex callMutex_; // one parallelFor at a time

  std::mutex mutex_;
  std::condition_variable wake_, done_;
  uint64_t generation_ = 0; // bumped per job; workers run each generation once
  int busyWorkers_ = 0;
  bool stopping_ = false;

  // The current job, written under mutex_ before the generation changes.
  RangeFn *fn_ = nullptr;
  int64_t range_ = 0, chunk_ = 1;
  std::atomic<int64_t> next_{0};
};

} // namespace tensorc::rt
