// A temporary directory the debugging tools compile into, removed with everything in it.
#pragma once

#include "tensorc/Support/Status.h"

#include <string>

namespace tensorc::debug {

class TempDir {
public:
  TempDir() = default;
  /// A fresh directory under the system's temporary directory, named after `prefix`.
  static Expected<TempDir> create(const std::string &prefix);
  TempDir(TempDir &&other) noexcept;
  TempDir &operator=(TempDir &&other) noexcept;
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  ~TempDir();

  const std::string &path() const { return path_; }

private:
  std::string path_;
};

} // namespace tensorc::debug
