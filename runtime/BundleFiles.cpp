// Files of a bundle: resolved inside its directory, mapped read-only, verified against the
// manifest's digests; the manifest itself; files embedded in a model library.
#include "BundleFiles.h"

#include "tensorc/Support/Json.h"
#include "tensorc/Support/Sha256.h"
#include "tensorc/Support/StrCat.h"

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tensorc::rt {

using bundle::Launch;
using bundle::Manifest;

MappedFile::~MappedFile() {
  if (data && mappedBytes)
    ::munmap(const_cast<void *>(data), mappedBytes);
}

Expected<std::string> resolveInBundle(const std::string &bundleDir, const std::string &relative) {
  std::string path = bundleDir + "/" + relative;
  char rootBuffer[PATH_MAX], fileBuffer[PATH_MAX];
  if (!::realpath(bundleDir.c_str(), rootBuffer))
    return makeError("cannot open ", path, ": ", std::strerror(errno));
  if (!::realpath(path.c_str(), fileBuffer))
    return makeError("cannot open ", path, ": ", std::strerror(errno));
  std::string root = rootBuffer, file = fileBuffer;
  if (file.compare(0, root.size() + 1, root + "/") != 0)
    return makeError(path, ": resolves to ", file,
                     ", outside the bundle (symlinks must stay inside it)");
  struct stat info;
  if (::stat(file.c_str(), &info) != 0 || !S_ISREG(info.st_mode))
    return makeError(path, ": not a regular file");
  return file;
}

namespace {

/// A bundle file open for reading (resolved inside the bundle), its size and the path messages
/// name it by; closed when this goes.
struct OpenFile {
  int fd = -1;
  size_t size = 0;
  std::string path;
  OpenFile() = default;
  OpenFile(const OpenFile &) = delete;
  OpenFile &operator=(const OpenFile &) = delete;
  ~OpenFile() {
    if (fd >= 0)
      ::close(fd);
  }
};

Status openBundleFile(const std::string &bundleDir, const std::string &relative, OpenFile &file) {
  TC_ASSIGN_OR_RETURN(std::string resolved, resolveInBundle(bundleDir, relative));
  file.path = bundleDir + "/" + relative;
  file.fd = ::open(resolved.c_str(), O_RDONLY | O_CLOEXEC);
  if (file.fd < 0)
    return makeError("cannot read ", file.path, ": ", std::strerror(errno));
  struct stat info;
  if (::fstat(file.fd, &info) != 0 || !S_ISREG(info.st_mode))
    return makeError(file.path, ": not a regular file");
  file.size = size_t(info.st_size);
  return Status::ok();
}

} // namespace

Expected<std::shared_ptr<MappedFile>> mapBundleFile(const std::string &bundleDir,
                                                    const std::string &relative) {
  OpenFile file;
  TC_RETURN_IF_ERROR(openBundleFile(bundleDir, relative, file));
  auto mapped = std::make_shared<MappedFile>();
  mapped->size = file.size;
  if (mapped->size > 0) {
    void *data = ::mmap(nullptr, mapped->size, PROT_READ, MAP_PRIVATE, file.fd, 0);
    if (data == MAP_FAILED)
      return makeError("cannot map ", file.path, ": ", std::strerror(errno));
    mapped->data = data;
    mapped->mappedBytes = mapped->size;
  }
  return mapped;
}

Expected<std::shared_ptr<MappedFile>> loadBundleFile(const std::string &bundleDir,
                                                     const std::string &relative) {
  OpenFile file;
  TC_RETURN_IF_ERROR(openBundleFile(bundleDir, relative, file));
  auto loaded = std::make_shared<MappedFile>();
  loaded->size = file.size;
  if (loaded->size == 0)
    return loaded;
  // Whole 2 MiB pages: the last one would otherwise stay on small pages.
  size_t bytes = (loaded->size + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  // Mapped with 2 MiB of slack and trimmed to a 2 MiB boundary: huge pages need aligned ranges,
  // which not every kernel gives anonymous mappings by itself.
  void *mapping = ::mmap(nullptr, bytes + kHugePageBytes, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED)
    return makeError("cannot allocate ", bytes, " bytes for ", file.path, ": ",
                     std::strerror(errno));
  auto start = reinterpret_cast<uintptr_t>(mapping);
  uintptr_t aligned = (start + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  if (aligned > start)
    ::munmap(mapping, aligned - start);
  if (start + kHugePageBytes > aligned)
    ::munmap(reinterpret_cast<void *>(aligned + bytes), start + kHugePageBytes - aligned);
  void *data = reinterpret_cast<void *>(aligned);
  loaded->data = data;
  loaded->mappedBytes = bytes;
  // Advice only: without transparent huge pages (or with them off) this is plain memory.
  ::madvise(data, bytes, MADV_HUGEPAGE);
  size_t done = 0;
  while (done < loaded->size) {
    ssize_t got =
        ::pread(file.fd, static_cast<char *>(data) + done, loaded->size - done, off_t(done));
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return makeError("cannot read ", file.path, ": ",
                       got < 0 ? std::strerror(errno) : "the file shrank while it was read");
    done += size_t(got);
  }
  ::mprotect(data, bytes, PROT_READ);
  return loaded;
}

Status verifyBundleFile(const Manifest &manifest, const std::string &relative, const void *bytes,
                        size_t size, const std::string &where) {
  const bundle::BundleFile *listed = manifest.findFile(relative);
  if (!listed)
    return makeError(where, ": the manifest lists no sha256 for it");
  if (sha256Hex(bytes, size) != listed->sha256)
    return makeError(where, ": corrupt (its SHA-256 does not match the manifest's)");
  return Status::ok();
}

Expected<std::string> readBundleFile(const std::string &bundleDir, const Manifest &manifest,
                                     const std::string &relative) {
  TC_ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> mapped, mapBundleFile(bundleDir, relative));
  TC_RETURN_IF_ERROR(
      verifyBundleFile(manifest, relative, mapped->data, mapped->size, bundleDir + "/" + relative));
  return std::string(static_cast<const char *>(mapped->data), mapped->size);
}

Expected<std::string> readFile(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return makeError("cannot read ", path, ": ", std::strerror(errno));
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad())
    return makeError("cannot read ", path, ": ", std::strerror(errno));
  return text.str();
}

Expected<Manifest> parseManifest(std::string_view text, const std::string &path) {
  Expected<Json> json = Json::parse(text);
  if (!json)
    return json.takeError().withContext(path);
  Expected<Manifest> manifest = Manifest::fromJson(*json);
  if (!manifest)
    return manifest.takeError().withContext(path);
  return manifest;
}

Expected<Manifest> readManifest(const std::string &bundleDir) {
  std::string path = bundleDir + "/manifest.json";
  TC_ASSIGN_OR_RETURN(std::string resolved, resolveInBundle(bundleDir, "manifest.json"));
  TC_ASSIGN_OR_RETURN(std::string text, readFile(resolved));
  return parseManifest(text, path);
}

std::string embeddedLibraryName() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void *>(&tensorc_embedded_bundle), &info) && info.dli_fname)
    return info.dli_fname;
  return "<model library>";
}

const bundle::EmbeddedFile *findEmbeddedFile(const bundle::EmbeddedBundle &embedded,
                                             const std::string &name) {
  for (uint32_t i = 0; i < embedded.numFiles; ++i)
    if (name == embedded.files[i].name)
      return &embedded.files[i];
  return nullptr;
}

std::string launchLabel(const Manifest &manifest, size_t index) {
  const Launch &launch = manifest.launches[index];
  return strCat("launches[", index, "] (", bundle::launchKindName(launch.kind), " ", launch.name,
                ")");
}

std::string shapeText(const std::vector<bundle::SizeExpr> &shape) {
  std::vector<std::string> dims;
  for (const bundle::SizeExpr &dim : shape)
    dims.push_back(dim.text());
  return "[" + join(dims, ", ") + "]";
}

} // namespace tensorc::rt
