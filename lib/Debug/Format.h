// Number formatting shared by the debugging tools' reports.
#pragma once

#include <string>

namespace tensorc::debug {

/// "5.00 MiB", "812 B".
std::string formatBytes(double bytes);
/// "2.15 GFLOP" for (2.15e9, "FLOP").
std::string formatCount(double count, const std::string &unit);
/// `value` with `digits` decimals.
std::string formatFixed(double value, int digits);
/// A value as %.6g ("0.123457", "1e-05").
std::string formatShort(double value);

} // namespace tensorc::debug
