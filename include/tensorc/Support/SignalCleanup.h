// Removing a command's temporary files when it is interrupted (SIGINT, SIGTERM, SIGHUP).
#pragma once

#include <string>
#include <sys/types.h>

namespace tensorc::cleanup {

/// Installs handlers for SIGINT, SIGTERM and SIGHUP that kill the registered child processes,
/// remove every registered path (recursively, without following symlinks) and then die of the
/// same signal. Idempotent; the driver calls it once. SIGKILL cannot be caught: whatever must not
/// outlive a killed process lives in a directory a later run can recognize and remove (bundles
/// are staged in `.NAME.tmp-PID` next to their destination).
void installSignalHandlers();

/// Registers `path` for removal on a signal while the object lives; the destructor only
/// unregisters (the owner removes the path itself on every normal exit). At most 32 at a time;
/// beyond that a path is not protected (and valid() says so).
class ScopedPath {
public:
  explicit ScopedPath(const std::string &path);
  ~ScopedPath();
  ScopedPath(const ScopedPath &) = delete;
  ScopedPath &operator=(const ScopedPath &) = delete;
  bool valid() const { return slot_ >= 0; }

private:
  int slot_ = -1;
};

/// Registers a child process to kill (SIGKILL) on a signal while the object lives.
class ScopedChild {
public:
  explicit ScopedChild(pid_t pid);
  ~ScopedChild();
  ScopedChild(const ScopedChild &) = delete;
  ScopedChild &operator=(const ScopedChild &) = delete;

private:
  int slot_ = -1;
};

/// Removes `path` and, if it is a directory, everything under it, without following symlinks.
/// Async-signal-safe (plain system calls); returns false when something could not be removed.
bool removeTree(const char *path);

} // namespace tensorc::cleanup
