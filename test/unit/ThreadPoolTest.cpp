// The runtime's thread pool: every index of every job runs exactly once, on any thread count,
// whether the workers are spinning, asleep or descheduled, and from several calling threads.
#include "ThreadPool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace tensorc::rt {
namespace {

/// Runs `jobs` parallelFor calls of growing ranges and checks each index ran exactly once and
/// every chunk was at least `grain` long (but the last).
void checkJobs(ThreadPool &pool, int jobs, int64_t grain, std::chrono::microseconds gap = {}) {
  for (int job = 0; job < jobs; ++job) {
    int64_t range = 1 + (job * 37) % 300;
    std::vector<std::atomic<int>> hits(static_cast<size_t>(range));
    std::atomic<bool> shortChunk{false};
    auto fn = [&](int64_t begin, int64_t end) {
      if (end - begin < grain && end != range)
        shortChunk = true;
      for (int64_t i = begin; i < end; ++i)
        hits[size_t(i)].fetch_add(1);
    };
    pool.parallelFor(range, grain, fn);
    for (int64_t i = 0; i < range; ++i)
      ASSERT_EQ(hits[size_t(i)].load(), 1) << "job " << job << " index " << i;
    EXPECT_FALSE(shortChunk.load()) << "job " << job;
    if (gap.count())
      std::this_thread::sleep_for(gap);
  }
}

TEST(ThreadPool, EveryIndexOnceBackToBack) {
  for (int threads : {1, 2, 3, 8}) {
    SCOPED_TRACE(threads);
    ThreadPool pool(threads);
    EXPECT_EQ(pool.numThreads(), threads);
    checkJobs(pool, 2000, 1);
    checkJobs(pool, 200, 7);
  }
}

TEST(ThreadPool, ChunksAreNearEqual) {
  // About four chunks per participant, none under the grain, lengths within one of each other:
  // a range that is not a multiple of the chunk count must not hand one thread a whole chunk more
  // than another (49 tiles on 2 threads: 8 chunks of 6 or 7, not 7 of 7).
  for (int threads : {2, 3, 8}) {
    ThreadPool pool(threads);
    for (int64_t grain : {1, 3})
      for (int64_t range : {5, 8, 49, 50, 97, 1000, 4097}) {
        SCOPED_TRACE(testing::Message()
                     << threads << " threads, grain " << grain << ", range " << range);
        std::mutex mutex;
        std::vector<int64_t> lengths;
        int64_t covered = 0;
        auto fn = [&](int64_t begin, int64_t end) {
          std::lock_guard<std::mutex> lock(mutex);
          lengths.push_back(end - begin);
          covered += end - begin;
        };
        pool.parallelFor(range, grain, fn);
        EXPECT_EQ(covered, range);
        int64_t expected = range <= grain ? 1 : std::min<int64_t>(4 * threads, range / grain);
        EXPECT_EQ(int64_t(lengths.size()), expected);
        auto [shortest, longest] = std::minmax_element(lengths.begin(), lengths.end());
        EXPECT_LE(*longest - *shortest, 1);
        if (range > grain) {
          EXPECT_GE(*shortest, grain);
        }
      }
  }
}

TEST(ThreadPool, WorkersThatSleepBetweenJobs) {
  // No spinning: every job wakes sleeping workers; with gaps, they are asleep each time.
  ThreadPool pool(4, /*spinMicros=*/0);
  checkJobs(pool, 500, 1);
  checkJobs(pool, 20, 1, std::chrono::microseconds(500));
  ThreadPool spinning(3, /*spinMicros=*/50);
  checkJobs(spinning, 20, 2, std::chrono::microseconds(300));
}

TEST(ThreadPool, CallsFromSeveralThreadsAreSerialized) {
  ThreadPool pool(3);
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] { checkJobs(pool, 300, 1); });
  for (std::thread &caller : callers)
    caller.join();
}

TEST(ThreadPool, EmptyAndTinyRanges) {
  ThreadPool pool(4);
  int calls = 0;
  auto count = [&](int64_t begin, int64_t end) { calls += int(end - begin); };
  pool.parallelFor(0, 1, count);
  pool.parallelFor(-3, 1, count);
  EXPECT_EQ(calls, 0);
  pool.parallelFor(5, 10, count); // one chunk: runs on the caller
  EXPECT_EQ(calls, 5);
}

TEST(ThreadPool, UnevenChunksAllFinishBeforeReturn) {
  // A slow chunk must be waited for: the caller may not return while a worker still runs one.
  ThreadPool pool(4);
  for (int job = 0; job < 20; ++job) {
    std::atomic<int64_t> finished{0};
    auto fn = [&](int64_t begin, int64_t end) {
      if (begin == 0)
        std::this_thread::sleep_for(std::chrono::microseconds(300));
      finished.fetch_add(end - begin);
    };
    pool.parallelFor(64, 1, fn);
    EXPECT_EQ(finished.load(), 64);
  }
}

} // namespace
} // namespace tensorc::rt
