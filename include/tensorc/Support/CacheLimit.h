// The size limit of tensorc's on-disk caches: the compile cache's entries (<dir>/bundles/<key>/)
// and NVRTC's outputs (<dir>/<hash>.<arch>.ptx|cubin) share one budget per cache directory; a
// store that takes the directory over it removes the least recently used items first.
#pragma once

#include "tensorc/Support/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tensorc::cache {

/// 5 GiB: a few dozen compiled models with their weights.
constexpr int64_t kDefaultMaxBytes = int64_t(5) << 30;

/// The environment variable naming the limit ("10G", "500M"; "0": no limit).
inline constexpr const char *kMaxSizeEnv = "TENSORC_CACHE_MAX_SIZE";

/// TENSORC_CACHE_MAX_SIZE when set (an unparsable value is an error naming it), else
/// kDefaultMaxBytes; 0 means no limit.
Expected<int64_t> maxBytesFromEnv();

/// Marks a cached file as used now (its modification time), so that trimming keeps it longer.
/// Best effort.
void touch(const std::string &path);

/// One item trimming may remove: a compile cache entry (a directory) or the files of one NVRTC
/// program (the same hash prefix), with their bytes and when they were last used.
struct Item {
  std::vector<std::string> paths;
  int64_t bytes = 0;
  int64_t lastUsedNs = 0;
};

/// The items under `dir` that tensorc's caches own (nothing else there is counted or touched:
/// other tools may keep files in the same directory). Reads only.
std::vector<Item> listItems(const std::string &dir);

/// What trim did.
struct TrimResult {
  int64_t bytesBefore = 0, bytesAfter = 0;
  size_t removed = 0;
};

/// Removes the least recently used items of `dir` until it holds at most `maxBytes` (0: no limit),
/// never one of whose paths is in `keep` (what the caller has just stored). Also removes temporary
/// directories of stores that died more than an hour ago. Best effort: an item another process
/// removed first is skipped; a reader of an entry being removed sees a miss.
TrimResult trim(const std::string &dir, int64_t maxBytes, const std::vector<std::string> &keep);

/// trim with maxBytesFromEnv(); a bad TENSORC_CACHE_MAX_SIZE is warned about once (the default
/// applies).
TrimResult trimToLimit(const std::string &dir, const std::vector<std::string> &keep);

} // namespace tensorc::cache
