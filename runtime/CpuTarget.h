// The host CPU (arch and ISA features) and the choice of a bundle's CPU kernel variant.
#pragma once

#include "tensorc/Bundle/Manifest.h"

#include <functional>
#include <string>
#include <vector>

namespace tensorc::rt {

struct HostCpu {
  std::string arch; // "x86_64" | "aarch64" | another uname-like name
  /// Whether the host has a feature, by __builtin_cpu_supports name.
  std::function<bool(const std::string &)> supports;
};

/// This machine.
HostCpu hostCpu();

/// The highest-priority variant for `host` whose arch matches and whose required features the
/// host has, or the one named `forced` (which must exist and be supported). Errors say which
/// variants exist and what the host lacks.
Expected<const bundle::CpuVariant *> selectCpuVariant(const std::vector<bundle::CpuVariant> &cpu,
                                                      const HostCpu &host,
                                                      const std::string &forced);

} // namespace tensorc::rt
