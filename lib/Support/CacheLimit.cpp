// The caches' size limit: listing what tensorc owns in a cache directory and removing the least
// recently used of it.
#include "tensorc/Support/CacheLimit.h"

#include "tensorc/Support/Limits.h"
#include "tensorc/Support/Log.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tensorc::cache {

namespace {

namespace fs = std::filesystem;

int64_t modifiedNs(const struct stat &info) {
  return int64_t(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec;
}

bool isHex(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f');
  });
}

/// Whether `name` starts with a 32-hex-digit hash and a dot, as NVRTC's cached files do.
bool hasHashPrefix(std::string_view name) {
  return name.size() > 32 && name[32] == '.' && isHex(name.substr(0, 32));
}

/// NVRTC's cached outputs: "<hash>.<arch>.ptx" or ".cubin"; the hash, else "".
std::string nvrtcProgram(std::string_view name) {
  bool output = hasHashPrefix(name) && name.find('.', 33) != std::string_view::npos &&
                (name.ends_with(".ptx") || name.ends_with(".cubin")) &&
                name.find(".tmp") == std::string_view::npos;
  return output ? std::string(name.substr(0, 32)) : "";
}

/// A store's temporary file or directory (NVRTC "<name>.tmp<pid>-<n>", the compile cache's
/// ".tmp-", ".old-" and ".evict-" directories).
bool isTemporary(std::string_view name, bool inBundles) {
  if (inBundles)
    return name.starts_with(".tmp-") || name.starts_with(".old-") || name.starts_with(".evict-");
  return hasHashPrefix(name) && name.find(".tmp", 32) != std::string_view::npos;
}

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

constexpr int64_t kStaleTemporaryNs = int64_t(3600) * 1000000000;

bool isStale(const struct stat &info) { return nowNs() - modifiedNs(info) >= kStaleTemporaryNs; }

/// An entry's bytes (its regular files) and when it was last used (its index.json's modification
/// time: a hit touches it; the directory's own when it has none).
void measureEntry(const fs::path &dir, const struct stat &dirInfo, Item &item) {
  std::error_code error;
  item.lastUsedNs = modifiedNs(dirInfo);
  struct stat info {};
  if (::stat((dir / "index.json").c_str(), &info) == 0)
    item.lastUsedNs = modifiedNs(info);
  for (fs::recursive_directory_iterator it(dir, error), end; !error && it != end;
       it.increment(error))
    if (::lstat(it->path().c_str(), &info) == 0 && S_ISREG(info.st_mode))
      item.bytes += int64_t(info.st_size);
}

/// The items under `dir`, and (when `stale` is given) the temporaries of stores that died.
std::vector<Item> scan(const std::string &dir, std::vector<fs::path> *stale) {
  std::vector<Item> items;
  std::map<std::string, Item> programs;
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    std::string name = it->path().filename().string();
    struct stat info {};
    if (::lstat(it->path().c_str(), &info) != 0)
      continue;
    if (S_ISREG(info.st_mode)) {
      if (isTemporary(name, false)) {
        if (stale && isStale(info))
          stale->push_back(it->path());
        continue;
      }
      std::string program = nvrtcProgram(name);
      if (program.empty())
        continue;
      Item &item = programs[program];
      item.paths.push_back(it->path().string());
      item.bytes += int64_t(info.st_size);
      item.lastUsedNs = std::max(item.lastUsedNs, modifiedNs(info));
    }
  }
  for (auto &[program, item] : programs) {
    std::sort(item.paths.begin(), item.paths.end());
    items.push_back(std::move(item));
  }
  fs::path bundles = fs::path(dir) / "bundles";
  for (fs::directory_iterator it(bundles, error), end; !error && it != end; it.increment(error)) {
    std::string name = it->path().filename().string();
    struct stat info {};
    if (::lstat(it->path().c_str(), &info) != 0 || !S_ISDIR(info.st_mode))
      continue;
    if (isTemporary(name, true)) {
      if (stale && isStale(info))
        stale->push_back(it->path());
      continue;
    }
    if (!isHex(name))
      continue;
    Item item;
    item.paths.push_back(it->path().string());
    measureEntry(it->path(), info, item);
    items.push_back(std::move(item));
  }
  return items;
}

} // namespace

Expected<int64_t> maxBytesFromEnv() { return byteSizeFromEnv(kMaxSizeEnv, kDefaultMaxBytes); }

void touch(const std::string &path) { ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0); }

std::vector<Item> listItems(const std::string &dir) { return scan(dir, nullptr); }

TrimResult trim(const std::string &dir, int64_t maxBytes, const std::vector<std::string> &keep) {
  TrimResult result;
  std::vector<fs::path> stale;
  std::vector<Item> items = scan(dir, &stale);
  for (const fs::path &path : stale) {
    std::error_code error;
    fs::remove_all(path, error);
  }
  for (const Item &item : items)
    result.bytesBefore += item.bytes;
  result.bytesAfter = result.bytesBefore;
  if (maxBytes <= 0 || result.bytesBefore <= maxBytes)
    return result;
  std::set<std::string> kept;
  for (const std::string &path : keep)
    kept.insert(fs::path(path).lexically_normal().string());
  // Oldest first; ties by path, so that the order does not depend on the directory's.
  std::sort(items.begin(), items.end(), [](const Item &a, const Item &b) {
    return std::tie(a.lastUsedNs, a.paths) < std::tie(b.lastUsedNs, b.paths);
  });
  static std::atomic<int> counter{0};
  for (const Item &item : items) {
    if (result.bytesAfter <= maxBytes)
      break;
    if (std::any_of(item.paths.begin(), item.paths.end(), [&](const std::string &path) {
          return kept.count(fs::path(path).lexically_normal().string()) > 0;
        }))
      continue;
    std::error_code error;
    for (const std::string &path : item.paths) {
      fs::path target(path);
      if (fs::is_directory(target, error)) {
        // Out of the way first (a reader then sees a miss, not half an entry), then removed.
        fs::path doomed = target.parent_path() / strCat(".evict-", target.filename().string(), "-",
                                                        ::getpid(), "-", counter++);
        fs::rename(target, doomed, error);
        if (error)
          continue;
        fs::remove_all(doomed, error);
      } else {
        fs::remove(target, error);
      }
    }
    result.bytesAfter -= item.bytes;
    ++result.removed;
  }
  return result;
}

TrimResult trimToLimit(const std::string &dir, const std::vector<std::string> &keep) {
  Expected<int64_t> limit = maxBytesFromEnv();
  if (!limit) {
    static std::once_flag warned;
    std::string message = limit.error().message();
    std::call_once(warned, [&] {
      log::warn(strCat(message, "; the cache limit stays at ", formatBytes(kDefaultMaxBytes)));
    });
  }
  TrimResult result = trim(dir, limit ? *limit : kDefaultMaxBytes, keep);
  if (result.removed)
    log::debug("cache", strCat("cache ", dir, ": removed ", result.removed,
                               " least recently used items (", formatBytes(result.bytesBefore),
                               " -> ", formatBytes(result.bytesAfter), ")"));
  return result;
}

} // namespace tensorc::cache
