// The runtime's thread pool: workers sleep on a condition variable and claim chunks atomically.
#include "ThreadPool.h"

#include <algorithm>

namespace tensorc::rt {

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0)
    threads = int(std::max(1u, std::thread::hardware_concurrency()));
  workers_.reserve(size_t(threads - 1));
  for (int i = 1; i < threads; ++i)
    workers_.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread &worker : workers_)
    worker.join();
}

void ThreadPool::runChunks() {
  // Dynamic chunk claiming balances uneven kernels (a tail, a slow core) without a scheduler.
  while (true) {
    int64_t begin = next_.fetch_add(chunk_, std::memory_order_relaxed);
    if (begin >= range_)
      return;
    (*fn_)(begin, std::min(range_, begin + chunk_));
  }
}

void ThreadPool::workerLoop() {
  uint64_t seen = 0;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_)
        return;
      seen = generation_;
    }
    runChunks();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--busyWorkers_ == 0)
        done_.notify_one();
    }
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
  // About four chunks per participant: enough to balance, few enough to keep overhead low.
  int64_t participants = numThreads();
  int64_t chunk = std::max(grain, (range + participants * 4 - 1) / (participants * 4));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    fn_ = &fn;
    range_ = range;
    chunk_ = chunk;
    next_.store(0, std::memory_order_relaxed);
    busyWorkers_ = int(workers_.size());
    ++generation_;
  }
  wake_.notify_all();
  runChunks();
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return busyWorkers_ == 0; });
  fn_ = nullptr;
}

} // namespace tensorc::rt
