// Temporary directories (mkdtemp), removed recursively on destruction.
#include "TempDir.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

namespace tensorc::debug {

Expected<TempDir> TempDir::create(const std::string &prefix) {
  std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (!::mkdtemp(buffer.data()))
    return makeError(pattern, ": cannot create a temporary directory: ", std::strerror(errno));
  TempDir dir;
  dir.path_ = buffer.data();
  return dir;
}

TempDir::TempDir(TempDir &&other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }

TempDir &TempDir::operator=(TempDir &&other) noexcept {
  if (this != &other) {
    TempDir old(std::move(*this));
    path_ = std::move(other.path_);
    other.path_.clear();
  }
  return *this;
}

TempDir::~TempDir() {
  if (path_.empty())
    return;
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

} // namespace tensorc::debug
