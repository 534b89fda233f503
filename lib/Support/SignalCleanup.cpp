// Signal-time cleanup: fixed tables of paths and child pids, read by an async-signal-safe handler.
#include "tensorc/Support/SignalCleanup.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace tensorc::cleanup {

namespace {

constexpr int kSlots = 32;
constexpr size_t kMaxPath = 4096;
// Bundles are a few levels deep (cpu/, src/, cuda/); deeper trees are left partly in place
// rather than risking the signal handler's stack.
constexpr int kMaxDepth = 16;

enum SlotState : int { Free = 0, Claimed = 1, Active = 2 };

struct PathSlot {
  std::atomic<int> state{Free};
  char path[kMaxPath];
};
PathSlot gPaths[kSlots];
std::atomic<pid_t> gChildren[kSlots];

const int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

/// Removes the entries of directory `dirFd` (recursively), then nothing else.
bool removeEntries(int dirFd, int depth) {
  if (depth > kMaxDepth)
    return false;
  bool ok = true;
  alignas(8) char buffer[4096];
  // Entries are removed while listing: restart the listing until a pass removes nothing more.
  for (int pass = 0; pass < 64; ++pass) {
    bool removedAny = false;
    if (::lseek(dirFd, 0, SEEK_SET) < 0)
      return false;
    while (true) {
      long got = ::syscall(SYS_getdents64, dirFd, buffer, sizeof buffer);
      if (got <= 0)
        break;
      for (long offset = 0; offset < got;) {
        struct Entry {
          uint64_t ino;
          int64_t off;
          unsigned short reclen;
          unsigned char type;
          char name[1];
        };
        const Entry *entry = reinterpret_cast<const Entry *>(buffer + offset);
        offset += entry->reclen;
        const char *name = entry->name;
        if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0')))
          continue;
        if (::unlinkat(dirFd, name, 0) == 0) {
          removedAny = true;
          continue;
        }
        if (errno != EISDIR && errno != EPERM)
          continue;
        int child = ::openat(dirFd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (child < 0) {
          ok = false;
          continue;
        }
        ok = removeEntries(child, depth + 1) && ok;
        ::close(child);
        if (::unlinkat(dirFd, name, AT_REMOVEDIR) == 0)
          removedAny = true;
        else
          ok = false;
      }
    }
    if (!removedAny)
      break;
  }
  return ok;
}

void handleSignal(int signal) {
  int savedErrno = errno;
  for (std::atomic<pid_t> &child : gChildren) {
    pid_t pid = child.load();
    if (pid > 0)
      ::kill(pid, SIGKILL);
  }
  for (PathSlot &slot : gPaths)
    if (slot.state.load() == Active)
      removeTree(slot.path);
  // Die of the same signal, so the parent (a shell, a test runner) sees how the process ended.
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = SIG_DFL;
  sigemptyset(&action.sa_mask);
  ::sigaction(signal, &action, nullptr);
  errno = savedErrno;
  ::raise(signal);
}

} // namespace

bool removeTree(const char *path) {
  if (::unlink(path) == 0 || errno == ENOENT)
    return true;
  if (errno != EISDIR && errno != EPERM)
    return false;
  int dirFd = ::open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dirFd < 0)
    return false;
  bool ok = removeEntries(dirFd, 0);
  ::close(dirFd);
  return ::rmdir(path) == 0 && ok;
}

void installSignalHandlers() {
  static std::atomic<bool> installed{false};
  if (installed.exchange(true))
    return;
  for (int signal : kSignals) {
    struct sigaction previous;
    if (::sigaction(signal, nullptr, &previous) == 0 && previous.sa_handler == SIG_IGN)
      continue; // started with the signal ignored (nohup): keep it ignored
    struct sigaction action;
    std::memset(&action, 0, sizeof action);
    action.sa_handler = handleSignal;
    sigemptyset(&action.sa_mask);
    for (int other : kSignals)
      sigaddset(&action.sa_mask, other); // one cleanup at a time
    ::sigaction(signal, &action, nullptr);
  }
}

ScopedPath::ScopedPath(const std::string &path) {
  if (path.size() >= kMaxPath)
    return;
  for (int i = 0; i < kSlots; ++i) {
    int expected = Free;
    if (!gPaths[i].state.compare_exchange_strong(expected, Claimed))
      continue;
    std::memcpy(gPaths[i].path, path.c_str(), path.size() + 1);
    gPaths[i].state.store(Active);
    slot_ = i;
    return;
  }
}

ScopedPath::~ScopedPath() {
  if (slot_ >= 0)
    gPaths[slot_].state.store(Free);
}

ScopedChild::ScopedChild(pid_t pid) {
  for (int i = 0; i < kSlots; ++i) {
    pid_t expected = 0;
    if (gChildren[i].compare_exchange_strong(expected, pid)) {
      slot_ = i;
      return;
    }
  }
}

ScopedChild::~ScopedChild() {
  if (slot_ >= 0)
    gChildren[slot_].store(0);
}

} // namespace tensorc::cleanup
