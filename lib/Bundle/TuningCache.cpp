// The GEMM tuning cache: a JSON file of {"format": 1, "entries": {key: {library, algo,
// kernel_us, library_us}}}.
#include "tensorc/Bundle/TuningCache.h"

#include "ManifestJson.h"
#include "tensorc/Bundle/BundleWriter.h"
#include "tensorc/Support/MappedFile.h"

#include <cctype>
#include <filesystem>

namespace tensorc::bundle {

namespace {

constexpr int64_t kCacheFormat = 1;
constexpr uint64_t kMaxCacheBytes = uint64_t(64) << 20;

/// The kernel's name without its trailing index: "tem_mm_add_mul_erf_6" -> "tem_mm_add_mul_erf".
std::string nameStem(const std::string &name) {
  size_t end = name.size();
  while (end > 0 && std::isdigit(static_cast<unsigned char>(name[end - 1])))
    --end;
  if (end < name.size() && end > 0 && name[end - 1] == '_')
    --end;
  return name.substr(0, end);
}

} // namespace

Expected<TuningCache> TuningCache::load(const std::string &path) {
  TuningCache cache;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return cache;
  // A directory or a FIFO is refused, not read (a FIFO would block).
  TC_ASSIGN_OR_RETURN(std::string text,
                      readRegularFile(path, kMaxCacheBytes, "a tuning cache over 64 MiB"));
  Expected<Json> json = Json::parse(text);
  if (!json)
    return makeError(path, ": ", json.error().message());
  auto context = [&](Error error) { return std::move(error).withContext(path); };
  Expected<ObjectReader> reader = ObjectReader::open(*json, "");
  if (!reader)
    return context(reader.takeError());
  Expected<int64_t> format = reader->integer("format");
  if (!format)
    return context(format.takeError());
  if (*format != kCacheFormat)
    return makeError(path, ": tuning cache format ", *format, ", this tensorc reads ",
                     kCacheFormat);
  Expected<const Json *> entries = reader->get("entries", Json::Kind::Object);
  if (!entries)
    return context(entries.takeError());
  for (const auto &[key, value] : (*entries)->members()) {
    Expected<ObjectReader> item = ObjectReader::open(value, "entries." + key);
    if (!item)
      return context(item.takeError());
    TuningEntry entry;
    Expected<std::string> library = item->string("library", false);
    Expected<int64_t> algo = item->integer("algo", false, 0);
    if (!library)
      return context(library.takeError());
    if (!algo)
      return context(algo.takeError());
    if (!library->empty() && *library != kCublasLt)
      return makeError(path, ": entries.", key, ".library: unknown GEMM library '", *library, "'");
    if (*algo < 0 || *algo > 1000)
      return makeError(path, ": entries.", key, ".algo: must be 0 to 1000, got ", *algo);
    entry.library = *library;
    entry.algo = *algo;
    for (auto [field, slot] :
         {std::pair{"kernel_us", &entry.kernelUs}, std::pair{"library_us", &entry.libraryUs}})
      if (const Json *number = value.find(field); number && number->isNumber())
        *slot = number->asNumber();
    cache.entries_[key] = std::move(entry);
  }
  return cache;
}

Status TuningCache::save(const std::string &path) const {
  Json json = Json::object();
  json["format"] = kCacheFormat;
  Json entries = Json::object();
  for (const auto &[key, entry] : entries_) {
    Json item = Json::object();
    item["library"] = entry.library;
    item["algo"] = entry.algo;
    item["kernel_us"] = entry.kernelUs;
    item["library_us"] = entry.libraryUs;
    entries[key] = std::move(item);
  }
  json["entries"] = std::move(entries);
  return replaceFile(path, json.dump(1) + "\n");
}

std::optional<std::string> TuningCache::key(const Manifest &manifest, const Launch &launch,
                                            const std::map<std::string, int64_t> &bindings,
                                            const std::string &arch) {
  if (!launch.gemm)
    return std::nullopt;
  const GemmCall &g = *launch.gemm;
  std::vector<int64_t> values;
  for (const SizeExpr *expr : {&g.batch, &g.m, &g.n, &g.k, &g.a.ld, &g.a.batchStride, &g.a.offset,
                               &g.b.ld, &g.b.batchStride, &g.b.offset}) {
    Expected<int64_t> value = expr->evaluate(bindings);
    if (!value)
      return std::nullopt;
    values.push_back(*value);
  }
  size_t bytes = dtypeSize(g.dtype);
  auto layout = [&](bool kContiguous, int64_t ld, int64_t batchStride, int64_t offset) {
    return strCat(kContiguous ? "k" : "mn", ",ld", ld, ",bs", batchStride,
                  (uint64_t(offset) * bytes) % 16 == 0 ? ",a16" : ",a");
  };
  DType out = manifest.buffers[size_t(launch.args[size_t(g.output)])].dtype;
  return strCat(arch, "|", dtypeName(g.dtype), g.tf32 ? "+tf32" : "", "->", dtypeName(out), "|",
                values[0], "x", values[1], "x", values[2], "x", values[3],
                "|A:", layout(g.a.kContiguous, values[4], values[5], values[6]),
                "|B:", layout(g.b.kContiguous, values[7], values[8], values[9]), "|",
                g.bias >= 0 ? "bias"
                : g.direct  ? "direct"
                            : "epilogue",
                "|", nameStem(launch.name));
}

const TuningEntry *TuningCache::find(const std::string &key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

int64_t TuningCache::apply(Manifest &manifest, const std::string &arch,
                           const std::map<std::string, int64_t> &bindings) const {
  int64_t found = 0;
  for (Launch &launch : manifest.launches) {
    std::optional<std::string> k = key(manifest, launch, bindings, arch);
    const TuningEntry *entry = k ? find(*k) : nullptr;
    if (!entry)
      continue;
    launch.gemm->library = entry->library;
    launch.gemm->algo = entry->library.empty() ? 0 : entry->algo;
    ++found;
  }
  return found;
}

} // namespace tensorc::bundle
