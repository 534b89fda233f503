// The compile cache: <dir>/bundles/<key>/ holds index.json (each file's path, size and hash, and
// the compile's summary) and the files' bytes as f0, f1, ...; entries appear by renaming a
// complete temporary directory, so readers never see half an entry.
#include "tensorc/Pipeline/CompileCache.h"

#include "tensorc/Bundle/BundleWriter.h"
#include "tensorc/Support/ContentHash.h"
#include "tensorc/Support/Json.h"
#include "tensorc/Support/Log.h"
#include "tensorc/Support/StrCat.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef TENSORC_VERSION
#define TENSORC_VERSION "0.0.0"
#endif

namespace tensorc {

namespace {

namespace fs = std::filesystem;

constexpr int kEntryFormat = 1;

/// A read-only mapping of a whole file (empty files map to nothing).
class MappedFile {
public:
  static Expected<std::unique_ptr<MappedFile>> open(const std::string &path) {
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
        ::close(fd);
        return makeError(path, ": cannot map: ", std::strerror(errno));
      }
      file->data_ = static_cast<const char *>(data);
    }
    ::close(fd);
    return file;
  }
  ~MappedFile() {
    if (data_)
      ::munmap(const_cast<char *>(data_), size_);
  }
  std::string_view bytes() const { return {data_ ? data_ : "", size_}; }

private:
  MappedFile() = default;
  const char *data_ = nullptr;
  size_t size_ = 0;
};

/// The external data files an ONNX model names: the values of its StringStringEntryProto
/// entries {key: "location", value: FILE}, found in the serialized bytes without parsing the
/// model (either field order). A name that is no regular file next to the model is skipped;
/// the importer reports it when the model is compiled.
std::set<std::string> onnxExternalFiles(std::string_view bytes) {
  std::set<std::string> files;
  auto readString = [&](size_t at, std::string &out) -> bool {
    // varint length, then the bytes
    uint64_t length = 0;
    for (int shift = 0; at < bytes.size() && shift < 64; shift += 7) {
      uint8_t byte = uint8_t(bytes[at++]);
      length |= uint64_t(byte & 0x7f) << shift;
      if (!(byte & 0x80)) {
        if (length > 4096 || at + length > bytes.size())
          return false;
        out.assign(bytes.substr(at, length));
        return true;
      }
    }
    return false;
  };
  const std::string_view key("\x0a\x08location", 10);
  for (size_t at = bytes.find(key); at != std::string_view::npos; at = bytes.find(key, at + 1)) {
    std::string value;
    // key first: value follows as field 2
    if (at + key.size() < bytes.size() && bytes[at + key.size()] == '\x12' &&
        readString(at + key.size() + 1, value))
      files.insert(value);
    // value first: field 2 ends right where the key starts; try each plausible length
    for (size_t length = 1; length < 128 && length + 2 <= at; ++length) {
      size_t start = at - length;
      if (bytes[start - 2] == '\x12' && uint8_t(bytes[start - 1]) == length) {
        files.insert(std::string(bytes.substr(start, length)));
        break;
      }
    }
  }
  return files;
}

std::string joinList(const std::vector<std::string> &items) { return join(items, ","); }

/// Every option that changes what compile writes, one line each.
std::string describeOptions(const CompileOptions &options) {
  std::ostringstream out;
  out << "emit " << int(options.emit) << "\ntarget " << options.target << "\ncuda-arch "
      << joinList(options.cudaArchs) << "\ncuda-graphs " << options.cudaGraphs
      << "\nfuse-attention " << (options.fuseAttention ? int(*options.fuseAttention) : -1)
      << "\ncpu-arch " << joinList(options.cpuArchs) << "\nvariants " << joinList(options.variants)
      << "\nlinker " << options.linker << "\nfallback "
      << (options.fallback ? int(*options.fallback) : -1) << "\n";
  if (const std::optional<autodiff::TrainOptions> &train = options.train) {
    out.precision(17);
    out << "train " << train->loss << " " << train->label << " " << train->optimizer << " "
        << train->lr << " " << train->momentum << " " << train->beta1 << " " << train->beta2 << " "
        << train->eps << " " << train->weightDecay << " " << int(train->partition) << " "
        << joinList(train->params) << "\n";
  }
  std::vector<std::string> passes(options.limits.disabledPasses.begin(),
                                  options.limits.disabledPasses.end());
  std::vector<std::string> fusions(options.limits.disabledFusions.begin(),
                                   options.limits.disabledFusions.end());
  out << "limits " << joinList(passes) << " " << joinList(fusions) << " "
      << options.limits.maxFusions << "\n";
  for (const char *name : {"TENSORC_LD_LLD", "TENSORC_CXX"}) {
    const char *value = std::getenv(name);
    out << name << "=" << (value ? value : "") << "\n";
  }
  return out.str();
}

Expected<std::string> readWhole(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return makeError(path, ": cannot read");
  std::string bytes;
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  in.seekg(0, std::ios::beg);
  if (size < 0)
    return makeError(path, ": cannot read");
  bytes.resize(size_t(size));
  in.read(bytes.data(), size);
  if (!in || in.gcount() != size)
    return makeError(path, ": short read");
  return bytes;
}

/// A checked entry: its files' bytes and the summary, or an error saying what is wrong with it.
struct Entry {
  std::vector<codegen::BundleFile> files;
  CompileSummary summary;
};

std::vector<std::string> stringList(const Json *json) {
  std::vector<std::string> items;
  if (json && json->isArray())
    for (const Json &item : json->items())
      if (item.isString())
        items.push_back(item.asString());
  return items;
}

Expected<Entry> readEntry(const fs::path &dir, const std::string &key) {
  TC_ASSIGN_OR_RETURN(std::string indexText, readWhole((dir / "index.json").string()));
  TC_ASSIGN_OR_RETURN(Json index, Json::parse(indexText));
  const Json *format = index.find("format"), *entryKey = index.find("key"),
             *files = index.find("files"), *summary = index.find("summary");
  if (!format || !format->isInt() || format->asInt() != kEntryFormat || !entryKey ||
      !entryKey->isString() || entryKey->asString() != key || !files || !files->isArray() ||
      !summary || !summary->isObject())
    return makeError("index.json is not a format ", kEntryFormat, " entry for this key");
  Entry entry;
  for (size_t i = 0; i < files->items().size(); ++i) {
    const Json &file = files->items()[i];
    const Json *path = file.find("path"), *size = file.find("size"), *hash = file.find("hash");
    if (!path || !path->isString() || !size || !size->isInt() || !hash || !hash->isString())
      return makeError("index.json: files[", i, "] is malformed");
    const std::string &relative = path->asString();
    if (relative.empty() || relative[0] == '/' || relative.find("..") != std::string::npos)
      return makeError("index.json: files[", i, "] has a bad path");
    TC_ASSIGN_OR_RETURN(std::string bytes, readWhole((dir / strCat("f", i)).string()));
    if (int64_t(bytes.size()) != size->asInt() || contentHashHex(bytes) != hash->asString())
      return makeError(relative, " does not match its checksum");
    entry.files.push_back({relative, std::move(bytes)});
  }
  auto integer = [&](const char *name) -> int64_t {
    const Json *value = summary->find(name);
    return value && value->isInt() ? value->asInt() : 0;
  };
  entry.summary.kernels = size_t(integer("kernels"));
  entry.summary.generatedKernels = size_t(integer("generated_kernels"));
  entry.summary.fallbacks = size_t(integer("fallbacks"));
  entry.summary.peakBytes = integer("peak_bytes");
  entry.summary.variants = stringList(summary->find("variants"));
  entry.summary.cudaArchs = stringList(summary->find("cuda_archs"));
  entry.summary.fromCache = true;
  return entry;
}

Status writeBytes(const fs::path &path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  out.close();
  if (!out)
    return makeError(path.string(), ": cannot write");
  return Status::ok();
}

} // namespace

std::string compileCacheDir(const CompileOptions &options) {
  if (options.cacheDir == "-")
    return "";
  if (!options.cacheDir.empty())
    return options.cacheDir;
  if (const char *env = std::getenv("TENSORC_CACHE_DIR"); env && *env)
    return env;
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/tensorc";
  return "";
}

Expected<CompileCacheKey> compileCacheKey(const std::string &modelPath,
                                          const CompileOptions &options) {
  TC_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> model, MappedFile::open(modelPath));
  CompileCacheKey result;
  result.modelHash = contentHashHex(model->bytes());
  fs::path path(modelPath);
  ContentHash key;
  key.field(strCat("tensorc ", TENSORC_VERSION, " compile cache ", kEntryFormat));
  key.field(path.filename().string());
  key.field(result.modelHash);
  // The files the model's weights come from, by name and content.
  std::set<std::string> weightFiles;
  if (path.extension() == ".fx")
    weightFiles.insert(path.stem().string() + ".safetensors");
  else if (path.extension() == ".onnx")
    weightFiles = onnxExternalFiles(model->bytes());
  for (const std::string &name : weightFiles) {
    fs::path weights = path.parent_path() / name;
    std::error_code error;
    if (!fs::is_regular_file(weights, error))
      continue;
    TC_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> file, MappedFile::open(weights.string()));
    key.field(name);
    key.field(contentHashHex(file->bytes()));
  }
  key.field(describeOptions(options));
  result.key = key.hex();
  return result;
}

Expected<std::optional<CompileSummary>> restoreFromCache(const std::string &cacheDir,
                                                         const std::string &key,
                                                         const CompileOptions &options) {
  fs::path dir = fs::path(cacheDir) / "bundles" / key;
  std::error_code error;
  if (!fs::is_directory(dir, error))
    return std::optional<CompileSummary>();
  Expected<Entry> entry = readEntry(dir, key);
  if (!entry) {
    log::warn(strCat("compile cache entry ", dir.string(), " is unusable (",
                     entry.error().message(), "); compiling"));
    return std::optional<CompileSummary>();
  }
  bool library = options.emit == CompileOptions::Emit::SharedObject;
  TC_ASSIGN_OR_RETURN(
      std::unique_ptr<bundle::StagingArea> staging,
      bundle::StagingArea::create(options.outDir, library ? bundle::StagingArea::Kind::File
                                                          : bundle::StagingArea::Kind::Directory));
  // The manifest last, as compile writes it: a directory with one is complete.
  for (const codegen::BundleFile &file : entry->files)
    if (file.path != "manifest.json")
      TC_RETURN_IF_ERROR(bundle::writeFile(staging->dir() + "/" + file.path, file.bytes));
  for (const codegen::BundleFile &file : entry->files)
    if (file.path == "manifest.json")
      TC_RETURN_IF_ERROR(bundle::writeFile(staging->dir() + "/" + file.path, file.bytes));
  TC_RETURN_IF_ERROR(library ? staging->commit("model.so") : staging->commit());
  return std::optional<CompileSummary>(std::move(entry->summary));
}

void storeInCache(const std::string &cacheDir, const std::string &key,
                  const std::vector<codegen::BundleFile> &files, const CompileSummary &summary) {
  static std::atomic<int> counter{0};
  fs::path bundles = fs::path(cacheDir) / "bundles";
  fs::path temp = bundles / strCat(".tmp-", key, "-", ::getpid(), "-", counter++);
  fs::path entry = bundles / key;
  std::error_code error;
  auto fail = [&](const std::string &why) {
    log::warn(strCat("cannot store the compile in the cache ", cacheDir, ": ", why));
    fs::remove_all(temp, error);
  };
  fs::create_directories(temp, error);
  if (error)
    return fail(error.message());
  Json index = Json::object();
  index["format"] = kEntryFormat;
  index["key"] = key;
  Json list = Json::array();
  for (size_t i = 0; i < files.size(); ++i) {
    if (Status written = writeBytes(temp / strCat("f", i), files[i].bytes); !written)
      return fail(written.message());
    Json file = Json::object();
    file["path"] = files[i].path;
    file["size"] = int64_t(files[i].bytes.size());
    file["hash"] = contentHashHex(files[i].bytes);
    list.push(std::move(file));
  }
  index["files"] = std::move(list);
  Json info = Json::object();
  info["kernels"] = int64_t(summary.kernels);
  info["generated_kernels"] = int64_t(summary.generatedKernels);
  info["fallbacks"] = int64_t(summary.fallbacks);
  info["peak_bytes"] = summary.peakBytes;
  Json variants = Json::array(), archs = Json::array();
  for (const std::string &variant : summary.variants)
    variants.push(variant);
  for (const std::string &arch : summary.cudaArchs)
    archs.push(arch);
  info["variants"] = std::move(variants);
  info["cuda_archs"] = std::move(archs);
  index["summary"] = std::move(info);
  // index.json last: an entry without one is incomplete (readEntry refuses it).
  if (Status written = writeBytes(temp / "index.json", index.dump(2) + "\n"); !written)
    return fail(written.message());
  fs::rename(temp, entry, error);
  if (error) {
    // An entry is there already: a concurrent compile's (keep it) or a broken one (replace it).
    if (readEntry(entry, key)) {
      fs::remove_all(temp, error);
      return;
    }
    fs::path old = bundles / strCat(".old-", key, "-", ::getpid(), "-", counter++);
    fs::rename(entry, old, error);
    fs::remove_all(old, error);
    fs::rename(temp, entry, error);
    if (error)
      return fail(error.message());
  }
}

} // namespace tensorc
