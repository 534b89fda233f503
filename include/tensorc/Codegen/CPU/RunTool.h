// Running an external tool (the linker, the C++ compiler driver) with its output in a log file.
#pragma once

#include "tensorc/Support/Status.h"

#include <optional>
#include <string>
#include <vector>

namespace tensorc::cpu {

/// Runs `program` with `args` (args[0] names the program) and `environment` (none: this process's),
/// its stdout and stderr to `logPath`; an interrupt of this process kills it first. When it cannot
/// start or exits non-zero, the error reads "<what> with <program> failed (exit N)", then why it
/// could not start and the log, when there are.
Status runTool(const std::string &program, const std::vector<std::string> &args,
               const std::optional<std::vector<std::string>> &environment,
               const std::string &logPath, const std::string &what);

} // namespace tensorc::cpu
