// Atomic bundle output: a staging directory next to the destination, renamed into place.
#include "tensorc/Bundle/BundleWriter.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace tensorc::bundle {

namespace fs = std::filesystem;

namespace {

/// Removes `.BASE.tmp-PID` and `.BASE.old-PID` entries of `parent` left by processes that no
/// longer exist (a SIGKILLed compile); live processes' ones are theirs.
void removeStaleStaging(const fs::path &parent, const std::string &base) {
  std::error_code ec;
  for (const fs::directory_entry &entry : fs::directory_iterator(parent, ec)) {
    std::string name = entry.path().filename().string();
    for (const char *tag : {".tmp-", ".old-"}) {
      std::string prefix = "." + base + tag;
      if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0)
        continue;
      std::string digits = name.substr(prefix.size());
      if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9)
        continue;
      pid_t pid = pid_t(std::stol(digits));
      if (pid > 0 && pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH)
        cleanup::removeTree(entry.path().c_str());
    }
  }
}

} // namespace

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

Status replaceFile(const std::string &path, const std::string &bytes) {
  fs::path target(path);
  std::string temp = (target.parent_path() /
                      ("." + target.filename().string() + ".tmp-" + std::to_string(::getpid())))
                         .string();
  cleanup::ScopedPath guard(temp);
  Status written = writeFile(temp, bytes);
  std::error_code ec;
  if (written) {
    fs::rename(temp, path, ec);
    if (ec)
      written = makeError(path, ": cannot replace: ", ec.message());
  }
  if (!written)
    fs::remove(temp, ec);
  return written;
}

StagingArea::StagingArea(std::string destination, std::string dir, Kind kind)
    : destination_(std::move(destination)), dir_(std::move(dir)), kind_(kind),
      onSignal_(std::make_unique<cleanup::ScopedPath>(dir_)) {}

Expected<std::unique_ptr<StagingArea>> StagingArea::create(const std::string &destination,
                                                           Kind kind) {
  fs::path out = fs::absolute(fs::path(destination)).lexically_normal();
  if (out.filename().empty())
    out = out.parent_path();
  std::error_code ec;
  fs::file_status status = fs::symlink_status(out, ec);
  if (fs::exists(status)) {
    if (kind == Kind::File && fs::is_directory(status))
      return makeError(destination, ": is a directory; --emit=so writes a file");
    if (kind == Kind::Directory) {
      bool isBundle = fs::is_directory(status) && fs::exists(out / "manifest.json", ec);
      bool isEmpty = fs::is_directory(status) && fs::is_empty(out, ec);
      if (!(isBundle || isEmpty))
        return makeError(destination,
                         ": exists and is not a tensorc bundle; refusing to replace it");
    }
  }
  fs::create_directories(out.parent_path(), ec);
  if (ec)
    return makeError(out.parent_path().string(), ": cannot create: ", ec.message());
  std::string base = out.filename().string();
  removeStaleStaging(out.parent_path(), base);
  fs::path dir = out.parent_path() / ("." + base + ".tmp-" + std::to_string(::getpid()));
  cleanup::removeTree(dir.c_str()); // ours from an earlier compile in this process
  if (!fs::create_directory(dir, ec) || ec)
    return makeError(dir.string(),
                     ": cannot create: ", ec ? ec.message() : std::string("it exists"));
  return std::unique_ptr<StagingArea>(new StagingArea(out.string(), dir.string(), kind));
}

StagingArea::~StagingArea() {
  if (!committed_)
    cleanup::removeTree(dir_.c_str());
}

Expected<std::string> StagingArea::scratchDir() {
  std::string scratch = dir_ + "/.scratch";
  std::error_code ec;
  fs::create_directories(scratch, ec);
  if (ec)
    return makeError(scratch, ": cannot create: ", ec.message());
  return scratch;
}

Status StagingArea::commit(const std::string &file) {
  cleanup::removeTree((dir_ + "/.scratch").c_str());
  fs::path out(destination_);
  std::error_code ec;
  if (kind_ == Kind::File) {
    // A process that has the old library loaded keeps its (unlinked) file.
    fs::rename(fs::path(dir_) / file, out, ec);
    if (ec)
      return makeError(destination_, ": cannot rename the new file into place: ", ec.message());
    committed_ = true;
    cleanup::removeTree(dir_.c_str());
    return Status::ok();
  }
  bool replaced = fs::exists(fs::symlink_status(out, ec));
  // Swap the new bundle and the old one in one step where the file system can: at no moment is
  // there no bundle at the destination. The staging directory then holds the old one.
  if (replaced &&
      ::renameat2(AT_FDCWD, dir_.c_str(), AT_FDCWD, destination_.c_str(), RENAME_EXCHANGE) == 0) {
    committed_ = true;
    cleanup::removeTree(dir_.c_str());
    return Status::ok();
  }
  fs::path old =
      out.parent_path() / ("." + out.filename().string() + ".old-" + std::to_string(::getpid()));
  if (replaced) {
    cleanup::removeTree(old.c_str());
    fs::rename(out, old, ec);
    if (ec)
      return makeError(destination_, ": cannot move the old bundle away: ", ec.message());
  }
  fs::rename(dir_, out, ec);
  if (ec) {
    std::error_code ignored;
    if (replaced)
      fs::rename(old, out, ignored);
    return makeError(destination_, ": cannot rename the new bundle into place: ", ec.message());
  }
  committed_ = true;
  if (replaced)
    cleanup::removeTree(old.c_str());
  return Status::ok();
}

Status writeBundleDirectory(const std::string &outDir,
                            const std::function<Status(const std::string &tempDir)> &fill) {
  TC_ASSIGN_OR_RETURN(std::unique_ptr<StagingArea> staging,
                      StagingArea::create(outDir, StagingArea::Kind::Directory));
  TC_RETURN_IF_ERROR(fill(staging->dir()));
  return staging->commit();
}

} // namespace tensorc::bundle
