// Atomic bundle directories: a temporary sibling filled and renamed into place.
#include "tensorc/Bundle/BundleWriter.h"

#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace tensorc::bundle {

namespace fs = std::filesystem;

Status writeFile(const std::string &path, const std::string &bytes) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec)
    return makeError(fs::path(path).parent_path().string(), ": cannot create: ", ec.message());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  out.close();
  if (!out)
    return makeError(path, ": write failed");
  return Status::ok();
}

Status writeBundleDirectory(const std::string &outDir,
                            const std::function<Status(const std::string &tempDir)> &fill) {
  fs::path out = fs::absolute(fs::path(outDir)).lexically_normal();
  if (out.filename().empty())
    out = out.parent_path();
  std::error_code ec;
  if (fs::exists(fs::symlink_status(out, ec))) {
    bool isBundle = fs::is_directory(out, ec) && fs::exists(out / "manifest.json", ec);
    bool isEmpty = fs::is_directory(out, ec) && fs::is_empty(out, ec);
    if (fs::is_symlink(fs::symlink_status(out, ec)) || !(isBundle || isEmpty))
      return makeError(outDir, ": exists and is not a tensorc bundle; refusing to replace it");
  }
  fs::create_directories(out.parent_path(), ec);
  if (ec)
    return makeError(out.parent_path().string(), ": cannot create: ", ec.message());
  std::string base = out.filename().string();
  fs::path temp = out.parent_path() / ("." + base + ".tmp-" + std::to_string(::getpid()));
  fs::remove_all(temp, ec);
  if (!fs::create_directory(temp, ec) || ec)
    return makeError(temp.string(), ": cannot create: ", ec.message());
  auto discard = [&](Status status) {
    std::error_code ignored;
    fs::remove_all(temp, ignored);
    return status;
  };
  if (Status status = fill(temp.string()); !status)
    return discard(status);
  fs::path old = out.parent_path() / ("." + base + ".old-" + std::to_string(::getpid()));
  bool replaced = fs::exists(out, ec);
  if (replaced) {
    fs::rename(out, old, ec);
    if (ec)
      return discard(makeError(outDir, ": cannot move the old bundle away: ", ec.message()));
  }
  fs::rename(temp, out, ec);
  if (ec) {
    std::error_code ignored;
    if (replaced)
      fs::rename(old, out, ignored);
    return discard(makeError(outDir, ": cannot rename the new bundle into place: ", ec.message()));
  }
  if (replaced)
    fs::remove_all(old, ec);
  return Status::ok();
}

} // namespace tensorc::bundle
