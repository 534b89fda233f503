// MappedFile: mmap of a whole regular file, unmapped on destruction; readRegularFile.
#include "tensorc/Support/MappedFile.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tensorc {

Expected<std::unique_ptr<MappedFile>> MappedFile::open(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return makeError(path, ": cannot read: ", std::strerror(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    return makeError(path, ": not a regular file");
  }
  auto file = std::unique_ptr<MappedFile>(new MappedFile());
  file->size_ = size_t(info.st_size);
  if (file->size_) {
    void *data = ::mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data == MAP_FAILED) {
      int error = errno;
      ::close(fd);
      return makeError(path, ": cannot map: ", std::strerror(error));
    }
    file->data_ = static_cast<const char *>(data);
  }
  ::close(fd);
  return file;
}

MappedFile::~MappedFile() {
  if (data_)
    ::munmap(const_cast<char *>(data_), size_);
}

Expected<std::string> readRegularFile(const std::string &path, uint64_t maxBytes,
                                      std::string_view tooLarge) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0)
    return makeError(path, ": cannot open: ", std::strerror(errno));
  if (!S_ISREG(info.st_mode))
    return makeError(path, ": not a regular file");
  if (uint64_t(info.st_size) > maxBytes)
    return makeError(path, ": ", tooLarge);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return makeError(path, ": cannot open: ", std::strerror(errno));
  std::ostringstream contents;
  contents << in.rdbuf();
  if (!in && !in.eof())
    return makeError(path, ": read failed");
  return contents.str();
}

} // namespace tensorc
