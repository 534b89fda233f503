// Wall-clock timing of compile stages and steps (`--log timing`): one line per step on stderr.
#pragma once

#include <chrono>
#include <string>

namespace tensorc::timing {

/// The log category timing lines go to ("timing"; "time" is accepted too).
bool enabled();

/// Milliseconds since `start`.
double msSince(std::chrono::steady_clock::time_point start);

/// "[timing] <label>: <ms> ms", when timing is enabled. Call from one thread at a time (worker
/// threads collect their figures; the thread that started them reports).
void report(const std::string &label, double ms);

/// Reports the wall time from construction to destruction (or to stop()) under `label`.
class Scope {
public:
  explicit Scope(std::string label);
  ~Scope();
  Scope(const Scope &) = delete;
  Scope &operator=(const Scope &) = delete;
  /// Reports now (once); returns the milliseconds measured.
  double stop();

private:
  std::string label_;
  std::chrono::steady_clock::time_point start_;
  bool stopped_ = false;
};

} // namespace tensorc::timing
