// Running an external tool (the linker, the C++ compiler driver): its temporary files and a run
// with its output in a log file.
#pragma once

#include "tensorc/Support/Status.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tensorc::cpu {

/// Temporary files for a tool run, named `<prefix>-XXXXXXXX<suffix>` in `dir` (empty: the
/// system's temporary directory), removed when this goes away, whether the run succeeded or not.
class TempFiles {
public:
  TempFiles(std::string dir, std::string prefix)
      : dir_(std::move(dir)), prefix_(std::move(prefix)) {}
  ~TempFiles();
  TempFiles(const TempFiles &) = delete;
  TempFiles &operator=(const TempFiles &) = delete;
  /// A new empty file's path; `suffix` includes its dot.
  Expected<std::string> create(const std::string &suffix);

private:
  std::string dir_, prefix_;
  std::vector<std::string> paths_;
};

/// Writes `bytes` to the file at `path`.
Status writeFile(const std::string &path, std::string_view bytes);

/// Runs `program` with `args` (args[0] names the program) and `environment` (none: this process's),
/// its stdout and stderr to `logPath`; an interrupt of this process kills it first. When it cannot
/// start or exits non-zero, the error reads "<what> with <program> failed (exit N)", then why it
/// could not start and the log, when there are.
Status runTool(const std::string &program, const std::vector<std::string> &args,
               const std::optional<std::vector<std::string>> &environment,
               const std::string &logPath, const std::string &what);

} // namespace tensorc::cpu
