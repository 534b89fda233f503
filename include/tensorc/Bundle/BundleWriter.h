// Atomic bundle output: every file of a compile, temporaries included, is written inside a
// temporary sibling of the destination, which is renamed into place at the end.
#pragma once

#include "tensorc/Support/SignalCleanup.h"
#include "tensorc/Support/Status.h"

#include <functional>
#include <memory>
#include <string>

namespace tensorc::bundle {

/// Where a bundle directory (or a `--emit=so` model library) is built: `.NAME.tmp-PID` next to
/// the destination NAME. It holds every file the compile writes, temporaries (objects, link
/// logs) included, and disappears on every way out: renamed into place by commit(), removed by
/// the destructor on failure and by the signal handlers (cleanup::installSignalHandlers) on
/// SIGINT, SIGTERM or SIGHUP. A SIGKILL cannot be caught: the next compile into the same
/// destination removes staging directories whose process no longer exists.
class StagingArea {
public:
  enum class Kind { Directory, File };
  /// Checks that `destination` may be replaced (a Directory destination only if it is a bundle,
  /// with a manifest.json, or empty; a File destination must not be a directory), removes stale
  /// staging directories of dead compiles and creates this one.
  static Expected<std::unique_ptr<StagingArea>> create(const std::string &destination, Kind kind);
  ~StagingArea();
  StagingArea(const StagingArea &) = delete;
  StagingArea &operator=(const StagingArea &) = delete;

  /// The staging directory: a bundle's files go here, at their bundle-relative paths.
  const std::string &dir() const { return dir_; }
  /// A directory for temporaries inside dir(), created on first use and removed by commit().
  Expected<std::string> scratchDir();
  /// Directory: renames dir() to the destination, replacing an old bundle. File: renames
  /// dir()/`file` to the destination and removes dir(). Either way nothing is left behind.
  Status commit(const std::string &file = "");

private:
  StagingArea(std::string destination, std::string dir, Kind kind);
  std::string destination_; // absolute, normalized
  std::string dir_;
  Kind kind_;
  bool committed_ = false;
  std::unique_ptr<cleanup::ScopedPath> onSignal_;
};

/// Stages a bundle directory, lets `fill` write the bundle's files into it and commits it.
Status writeBundleDirectory(const std::string &outDir,
                            const std::function<Status(const std::string &tempDir)> &fill);

/// Writes `bytes` to `path` (creating parent directories), with a clear error naming the file.
Status writeFile(const std::string &path, const std::string &bytes);

/// Replaces `path` whole with `bytes`: written to a temporary file beside it (removed on a
/// failure or a signal) and renamed over it, so a reader or a crash sees the old file or the new
/// one, never a mix.
Status replaceFile(const std::string &path, const std::string &bytes);

} // namespace tensorc::bundle
