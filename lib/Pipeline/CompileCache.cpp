// The compile cache: <dir>/bundles/<key>/ holds index.json (each file's path, size and hash, and
// the compile's summary) and the files' bytes as f0, f1, ...; entries appear by renaming a
// complete temporary directory, so readers never see half an entry.
#include "tensorc/Pipeline/CompileCache.h"

#include "tensorc/Bundle/BundleWriter.h"
#include "tensorc/Support/CacheLimit.h"
#include "tensorc/Support/ContentHash.h"
#include "tensorc/Support/Json.h"
#include "tensorc/Support/Limits.h"
#include "tensorc/Support/Log.h"
#include "tensorc/Support/MappedFile.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>
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

/// This build of tensorc: the running executable's bytes (the compiler is linked into it), so
/// that builds of different sources with one version number never share entries.
std::string buildIdentity() {
  static const std::string identity = [] {
    Expected<std::unique_ptr<MappedFile>> self = MappedFile::open("/proc/self/exe");
    return self ? contentHashHex((*self)->bytes()) : std::string();
  }();
  return identity;
}

std::string joinList(const std::vector<std::string> &items) { return join(items, ","); }

/// Every option that changes what compile writes, one line each.
std::string describeOptions(const CompileOptions &options) {
  std::ostringstream out;
  out << "emit " << int(options.emit) << "\ntarget " << options.target << "\ncuda-arch "
      << joinList(options.cudaArchs) << "\ncuda-graphs " << options.cudaGraphs
      << "\nmatmul-precision " << (options.tf32 ? "high" : "highest") << "\ngemm-calls "
      << options.gemmCalls << "\nfuse-attention "
      << (options.fuseAttention ? int(*options.fuseAttention) : -1) << "\ncpu-arch "
      << joinList(options.cpuArchs) << "\nvariants " << joinList(options.variants) << "\nlinker "
      << options.linker << "\nfallback " << (options.fallback ? int(*options.fallback) : -1)
      << "\nconv-algorithm " << (options.winograd ? "auto" : "direct") << "\n";
  if (options.cudaProgramCost > 0)
    out << "cuda-program-cost " << options.cudaProgramCost << "\n";
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

/// Copies `from` to `to` (in the kernel where it can). Not a hard link: a bundle changed in
/// place (tools that patch a file) must not change the cache, nor the cache a bundle.
Status copyFile(const fs::path &from, const fs::path &to) {
  std::error_code error;
  fs::create_directories(to.parent_path(), error);
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, error);
  if (error)
    return makeError("cannot copy ", from.string(), " to ", to.string(), ": ", error.message());
  return Status::ok();
}

std::vector<std::string> stringList(const Json *json) {
  std::vector<std::string> items;
  if (json && json->isArray())
    for (const Json &item : json->items())
      if (item.isString())
        items.push_back(item.asString());
  return items;
}

/// A checked entry: its files (bundle-relative path, file in the entry) and the summary.
struct Entry {
  std::vector<std::pair<std::string, fs::path>> files;
  CompileSummary summary;
};

/// Reads and checks the entry in `dir`: every file there, of the size and hash its index says.
Expected<Entry> readEntry(const fs::path &dir, const std::string &key) {
  TC_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> indexFile,
                      MappedFile::open((dir / "index.json").string()));
  TC_ASSIGN_OR_RETURN(Json index, Json::parse(indexFile->bytes()));
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
    fs::path stored = dir / strCat("f", i);
    TC_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> bytes, MappedFile::open(stored.string()));
    if (int64_t(bytes->bytes().size()) != size->asInt() ||
        contentHashHex(bytes->bytes()) != hash->asString())
      return makeError(relative, " does not match its checksum");
    entry.files.emplace_back(relative, stored);
  }
  auto integer = [&](const char *name) -> int64_t {
    const Json *value = summary->find(name);
    return value && value->isInt() ? value->asInt() : 0;
  };
  entry.summary.kernels = size_t(integer("kernels"));
  entry.summary.generatedKernels = size_t(integer("generated_kernels"));
  entry.summary.fallbacks = size_t(integer("fallbacks"));
  entry.summary.peakBytes = integer("peak_bytes");
  entry.summary.fallbackOps = stringList(summary->find("fallback_ops"));
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

/// The files of a written compile output, bundle-relative and sorted (a library: "model.so").
Expected<std::vector<std::pair<std::string, fs::path>>> outputFiles(const CompileOptions &options) {
  std::vector<std::pair<std::string, fs::path>> files;
  fs::path out(options.outDir);
  if (options.emit == CompileOptions::Emit::SharedObject) {
    files.emplace_back("model.so", out);
    return files;
  }
  std::error_code error;
  for (fs::recursive_directory_iterator it(out, error), end; !error && it != end;
       it.increment(error)) {
    if (it->is_symlink() || !it->is_regular_file())
      continue;
    files.emplace_back(fs::relative(it->path(), out).generic_string(), it->path());
  }
  if (error)
    return makeError(out.string(), ": ", error.message());
  std::sort(files.begin(), files.end());
  return files;
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
  key.field(buildIdentity());
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
  // The tuning cache the GEMM choices come from, by content.
  if (!options.tuningCache.empty()) {
    std::error_code missing;
    key.field("tuning cache");
    if (fs::is_regular_file(options.tuningCache, missing)) {
      TC_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> file, MappedFile::open(options.tuningCache));
      key.field(contentHashHex(file->bytes()));
    }
  }
  result.key = buildIdentity().empty() ? "" : key.hex();
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
  std::stable_partition(entry->files.begin(), entry->files.end(),
                        [](const auto &file) { return file.first != "manifest.json"; });
  for (const auto &[relative, stored] : entry->files)
    if (Status copied = copyFile(stored, fs::path(staging->dir()) / relative); !copied) {
      // Removed under us (another compile trimming the cache), or the output cannot be written:
      // a miss (the staging area goes with its destructor), and the compile says what it can.
      log::warn(strCat("compile cache entry ", dir.string(), " cannot be copied (",
                       copied.message(), "); compiling"));
      return std::optional<CompileSummary>();
    }
  TC_RETURN_IF_ERROR(library ? staging->commit("model.so") : staging->commit());
  cache::touch((dir / "index.json").string());
  return std::optional<CompileSummary>(std::move(entry->summary));
}

void storeInCache(const std::string &cacheDir, const std::string &key,
                  const CompileOptions &options, const CompileSummary &summary) {
  static std::atomic<int> counter{0};
  fs::path bundles = fs::path(cacheDir) / "bundles";
  fs::path temp = bundles / strCat(".tmp-", key, "-", ::getpid(), "-", counter++);
  fs::path entry = bundles / key;
  std::error_code error;
  auto fail = [&](const std::string &why) {
    log::warn(strCat("cannot store the compile in the cache ", cacheDir, ": ", why));
    fs::remove_all(temp, error);
  };
  Expected<std::vector<std::pair<std::string, fs::path>>> files = outputFiles(options);
  if (!files)
    return fail(files.error().message());
  // An output larger than the whole cache would only push everything else out, and then itself.
  if (Expected<int64_t> limit = cache::maxBytesFromEnv(); limit && *limit > 0) {
    int64_t bytes = 0;
    for (const auto &file : *files)
      if (uintmax_t size = fs::file_size(file.second, error); !error)
        bytes += int64_t(size);
    if (bytes > *limit) {
      log::debug("cache",
                 strCat("not cached: ", formatBytes(bytes), " is more than the cache limit ",
                        formatBytes(*limit), " (", cache::kMaxSizeEnv, ")"));
      return;
    }
  }
  fs::create_directories(temp, error);
  if (error)
    return fail(error.message());
  Json index = Json::object();
  index["format"] = kEntryFormat;
  index["key"] = key;
  Json list = Json::array();
  for (size_t i = 0; i < files->size(); ++i) {
    const auto &[relative, path] = (*files)[i];
    fs::path stored = temp / strCat("f", i);
    if (Status copied = copyFile(path, stored); !copied)
      return fail(copied.message());
    Expected<std::unique_ptr<MappedFile>> bytes = MappedFile::open(stored.string());
    if (!bytes)
      return fail(bytes.error().message());
    Json file = Json::object();
    file["path"] = relative;
    file["size"] = int64_t((*bytes)->bytes().size());
    file["hash"] = contentHashHex((*bytes)->bytes());
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
  Json fallbackOps = Json::array();
  for (const std::string &op : summary.fallbackOps)
    fallbackOps.push(op);
  info["fallback_ops"] = std::move(fallbackOps);
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
  cache::trimToLimit(cacheDir, {entry.string()});
}

} // namespace tensorc
