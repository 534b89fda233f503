// Wall-clock timing lines under the `timing` log category.
#include "tensorc/Support/Timing.h"

#include "tensorc/Support/Log.h"

#include <cstdio>

namespace tensorc::timing {

bool enabled() { return log::enabled("timing") || log::enabled("time"); }

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

void report(const std::string &label, double ms) {
  if (!enabled())
    return;
  char figure[32];
  std::snprintf(figure, sizeof figure, "%.1f ms", ms);
  log::debug(log::enabled("timing") ? "timing" : "time", label + ": " + figure);
}

Scope::Scope(std::string label)
    : label_(std::move(label)), start_(std::chrono::steady_clock::now()) {}

Scope::~Scope() { stop(); }

double Scope::stop() {
  double ms = msSince(start_);
  if (!stopped_)
    report(label_, ms);
  stopped_ = true;
  return ms;
}

} // namespace tensorc::timing
