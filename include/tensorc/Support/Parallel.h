// A small fork-join helper for the compiler's parallel steps (code generation: `-j N`).
#pragma once

#include <cstddef>
#include <functional>

namespace tensorc {

/// The number of workers `-j 0` means: the cores this process may run on (at least 1).
unsigned defaultJobs();

/// Runs `task(i)` for every i in [0, count) on up to `jobs` threads (0: defaultJobs()), the
/// calling thread among them, and returns when all are done. Tasks are handed out in index order;
/// which thread runs which task varies, so each task writes only its own results (index i).
void parallelFor(size_t count, unsigned jobs, const std::function<void(size_t)> &task);

} // namespace tensorc
