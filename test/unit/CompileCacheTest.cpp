// The compile cache (hits, misses on changed weights and options, corrupt entries), bundles that
// do not depend on -j (CPU, and CUDA with its kernels split over NVRTC programs), and the hashes
// behind them (SHA-256 against FIPS 180 vectors, ContentHash).
#include "tensorc/Bundle/Manifest.h"
#include "tensorc/Ops/Registry.h"
#include "tensorc/Pipeline/Compile.h"
#include "tensorc/Support/CacheLimit.h"
#include "tensorc/Support/ContentHash.h"
#include "tensorc/Support/Parallel.h"
#include "tensorc/Support/Sha256.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tensorc {
namespace {

namespace fs = std::filesystem;

TEST(Sha256, FipsVectors) {
  EXPECT_EQ(sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // Many whole blocks at once: the path that uses the CPU's SHA extensions where it has them.
  EXPECT_EQ(sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, WholeAndBytewiseAgree) {
  std::mt19937 random(7);
  for (size_t size : {63u, 64u, 65u, 1000u, 4096u, 100003u}) {
    std::string data(size, '\0');
    for (char &c : data)
      c = char(random());
    Sha256 bytewise; // one byte at a time: the portable rounds only
    for (char c : data)
      bytewise.update(&c, 1);
    EXPECT_EQ(sha256Hex(data), bytewise.hexDigest()) << size << " bytes";
  }
}

TEST(ContentHash, SplitInvariantAndContentSensitive) {
  std::mt19937 random(11);
  std::string data(10007, '\0');
  for (char &c : data)
    c = char(random());
  std::string whole = contentHashHex(data);
  for (size_t cut : {0u, 1u, 63u, 64u, 65u, 5000u}) {
    ContentHash split;
    split.update(std::string_view(data).substr(0, cut));
    split.update(std::string_view(data).substr(cut));
    EXPECT_EQ(split.hex(), whole) << "cut at " << cut;
  }
  std::set<std::string> digests = {whole};
  for (size_t at : {0u, 100u, 10006u}) {
    std::string changed = data;
    changed[at] ^= 1;
    digests.insert(contentHashHex(changed));
  }
  digests.insert(contentHashHex(data.substr(0, 10006)));
  digests.insert(contentHashHex(data + '\0'));
  EXPECT_EQ(digests.size(), 6u);
}

TEST(Parallel, EveryTaskRunsOnce) {
  for (unsigned jobs : {1u, 2u, 5u}) {
    std::vector<std::atomic<int>> runs(100);
    parallelFor(runs.size(), jobs, [&](size_t i) { ++runs[i]; });
    for (const std::atomic<int> &count : runs)
      EXPECT_EQ(count.load(), 1);
  }
}

/// Every file of a bundle directory, by relative path.
std::map<std::string, std::string> readBundle(const fs::path &dir) {
  std::map<std::string, std::string> files;
  for (const auto &entry : fs::recursive_directory_iterator(dir))
    if (entry.is_regular_file()) {
      std::ifstream in(entry.path(), std::ios::binary);
      std::ostringstream bytes;
      bytes << in.rdbuf();
      files[fs::relative(entry.path(), dir).string()] = bytes.str();
    }
  return files;
}

/// Compiles copies of models/mlp.fx (and its weights) into bundles with a private cache.
class CompileCache : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tensorc-cache-test-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "model");
    for (const char *file : {"mlp.fx", "mlp.safetensors", "convnet.fx", "convnet.safetensors"})
      fs::copy_file(fs::path(TENSORC_SOURCE_DIR "/models") / file, dir_ / "model" / file);
    Expected<OpRegistry> built = ops::buildCoreRegistry();
    ASSERT_TRUE(built.hasValue());
    registry_ = std::make_unique<OpRegistry>(std::move(*built));
  }
  void TearDown() override { fs::remove_all(dir_); }

  CompileOptions options(const std::string &out) const {
    CompileOptions result;
    result.outDir = (dir_ / out).string();
    result.cacheDir = (dir_ / "cache").string();
    result.quiet = true;
    return result;
  }
  Expected<CompileSummary> compile(const CompileOptions &options,
                                   const std::string &model = "mlp.fx") {
    return compileModel((dir_ / "model" / model).string(), *registry_, options);
  }
  /// The cache's entries (one directory per key).
  size_t entries() const {
    size_t count = 0;
    if (fs::exists(dir_ / "cache" / "bundles"))
      for (const auto &entry : fs::directory_iterator(dir_ / "cache" / "bundles"))
        count += entry.path().filename().string()[0] != '.';
    return count;
  }

  fs::path dir_;
  std::unique_ptr<OpRegistry> registry_;
};

TEST_F(CompileCache, RepeatedCompileIsAHitWithTheSameBundle) {
  Expected<CompileSummary> first = compile(options("a"));
  ASSERT_TRUE(first.hasValue()) << first.error().message();
  EXPECT_FALSE(first->fromCache);
  EXPECT_EQ(entries(), 1u);
  Expected<CompileSummary> second = compile(options("b"));
  ASSERT_TRUE(second.hasValue()) << second.error().message();
  EXPECT_TRUE(second->fromCache);
  EXPECT_EQ(second->kernels, first->kernels);
  EXPECT_EQ(second->variants, first->variants);
  EXPECT_EQ(readBundle(dir_ / "b"), readBundle(dir_ / "a"));
  // The manifest names no machine path and no time.
  std::string manifest = readBundle(dir_ / "a").at("manifest.json");
  EXPECT_EQ(manifest.find(dir_.string()), std::string::npos);
  EXPECT_EQ(manifest.find("/tmp"), std::string::npos);
}

TEST_F(CompileCache, ChangedWeightsOrOptionsMiss) {
  ASSERT_TRUE(compile(options("a")).hasValue());
  // The same model file with other weights.
  {
    std::fstream weights(dir_ / "model" / "mlp.safetensors",
                         std::ios::in | std::ios::out | std::ios::binary);
    weights.seekg(0, std::ios::end);
    weights.seekp(int64_t(weights.tellg()) - 1);
    weights.put('\x7f');
  }
  Expected<CompileSummary> reweighted = compile(options("b"));
  ASSERT_TRUE(reweighted.hasValue()) << reweighted.error().message();
  EXPECT_FALSE(reweighted->fromCache);
  EXPECT_NE(readBundle(dir_ / "b").at("weights.safetensors"),
            readBundle(dir_ / "a").at("weights.safetensors"));
  // Options that change the bundle.
  CompileOptions oneVariant = options("c");
  oneVariant.variants = {"x86_64"};
  Expected<CompileSummary> narrowed = compile(oneVariant);
  ASSERT_TRUE(narrowed.hasValue()) << narrowed.error().message();
  EXPECT_FALSE(narrowed->fromCache);
  EXPECT_EQ(narrowed->variants, std::vector<std::string>{"x86_64"});
  CompileOptions unfused = options("d");
  unfused.limits.maxFusions = 0;
  Expected<CompileSummary> split = compile(unfused);
  ASSERT_TRUE(split.hasValue()) << split.error().message();
  EXPECT_FALSE(split->fromCache);
  EXPECT_EQ(entries(), 4u);
  // Options that do not: -j and the output path.
  CompileOptions serial = options("e");
  serial.jobs = 1;
  serial.limits.maxFusions = 0;
  Expected<CompileSummary> again = compile(serial);
  ASSERT_TRUE(again.hasValue()) << again.error().message();
  EXPECT_TRUE(again->fromCache);
  EXPECT_EQ(readBundle(dir_ / "e"), readBundle(dir_ / "d"));
}

TEST_F(CompileCache, CorruptEntryIsIgnoredWithAWarningAndReplaced) {
  ASSERT_TRUE(compile(options("a")).hasValue());
  ASSERT_EQ(entries(), 1u);
  // Break one stored file of the entry (a copy: the bundle may share its bytes).
  fs::path entry = *fs::directory_iterator(dir_ / "cache" / "bundles");
  fs::path stored = entry / "f0";
  std::string bytes = readBundle(entry).at("f0");
  bytes[bytes.size() / 2] ^= 0x55;
  fs::remove(stored);
  std::ofstream(stored, std::ios::binary) << bytes;
  ::testing::internal::CaptureStderr();
  Expected<CompileSummary> recompiled = compile(options("b"));
  std::string warnings = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(recompiled.hasValue()) << recompiled.error().message();
  EXPECT_FALSE(recompiled->fromCache);
  EXPECT_NE(warnings.find("is unusable"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("does not match its checksum"), std::string::npos) << warnings;
  EXPECT_EQ(readBundle(dir_ / "b"), readBundle(dir_ / "a"));
  // The compile stored a good entry in its place.
  Expected<CompileSummary> hit = compile(options("c"));
  ASSERT_TRUE(hit.hasValue()) << hit.error().message();
  EXPECT_TRUE(hit->fromCache);
  EXPECT_EQ(readBundle(dir_ / "c"), readBundle(dir_ / "a"));
  // An index that is not JSON: a miss too.
  std::ofstream(entry / "index.json", std::ios::trunc) << "{not json";
  ::testing::internal::CaptureStderr();
  Expected<CompileSummary> again = compile(options("d"));
  warnings = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(again.hasValue()) << again.error().message();
  EXPECT_FALSE(again->fromCache);
  EXPECT_NE(warnings.find("is unusable"), std::string::npos) << warnings;
}

TEST_F(CompileCache, BundleDoesNotDependOnJobs) {
  CompileOptions serial = options("j1"), parallel = options("j3");
  serial.cacheDir = parallel.cacheDir = "-";
  serial.jobs = 1;
  parallel.jobs = 3;
  // One kernel per node: several distinct kernels, so several LLVM modules.
  serial.limits.maxFusions = parallel.limits.maxFusions = 0;
  Expected<CompileSummary> one = compile(serial);
  ASSERT_TRUE(one.hasValue()) << one.error().message();
  Expected<CompileSummary> three = compile(parallel);
  ASSERT_TRUE(three.hasValue()) << three.error().message();
  EXPECT_FALSE(three->fromCache);
  EXPECT_EQ(entries(), 0u);
  std::map<std::string, std::string> a = readBundle(dir_ / "j1"), b = readBundle(dir_ / "j3");
  EXPECT_EQ(a, b);
  EXPECT_TRUE(a.count("cpu/x86_64.so") && a.count("cpu/x86_64-avx512.so"));
}

/// The functions (.entry) a PTX file defines.
std::set<std::string> ptxEntries(const std::string &ptx) {
  std::set<std::string> names;
  for (size_t at = ptx.find(".entry "); at != std::string::npos; at = ptx.find(".entry ", at + 1)) {
    size_t begin = at + 7, end = ptx.find_first_of("( \n", begin);
    names.insert(ptx.substr(begin, end - begin));
  }
  return names;
}

TEST_F(CompileCache, CudaBundleDoesNotDependOnJobs) {
  CompileOptions serial = options("cuda-j1"), parallel = options("cuda-j3");
  for (CompileOptions *each : {&serial, &parallel}) {
    each->cacheDir = "-";
    each->target = "cuda";
    each->cudaArchs = {"sm_80", "sm_90"};
    each->cudaProgramCost = 1; // a program per kernel
  }
  serial.jobs = 1;
  parallel.jobs = 3;
  Expected<CompileSummary> one = compile(serial, "convnet.fx");
  if (!one && one.error().message().find("without the CUDA toolkit") != std::string::npos)
    GTEST_SKIP() << "built without NVRTC";
  ASSERT_TRUE(one.hasValue()) << one.error().message();
  Expected<CompileSummary> three = compile(parallel, "convnet.fx");
  ASSERT_TRUE(three.hasValue()) << three.error().message();
  std::map<std::string, std::string> a = readBundle(dir_ / "cuda-j1");
  EXPECT_EQ(a, readBundle(dir_ / "cuda-j3"));

  // The kernels are split over several NVRTC programs, each a module of the bundle: every launch's
  // function is in its own module's code and in no other's, and module 0 holds the signature table.
  Expected<Json> json = Json::parse(a.at("manifest.json"));
  ASSERT_TRUE(json) << json.error().message();
  Expected<bundle::Manifest> manifest = bundle::Manifest::fromJson(*json);
  ASSERT_TRUE(manifest) << manifest.error().message();
  std::map<int64_t, std::set<std::string>> entries;
  std::map<int64_t, std::string> ptx;
  for (const bundle::CudaImage &image : manifest->cuda) {
    ASSERT_TRUE(a.count(image.file)) << image.file;
    if (image.ptx) {
      EXPECT_EQ(image.arch, "sm_80");
      entries[image.module] = ptxEntries(a.at(image.file));
      ptx[image.module] = a.at(image.file);
    }
  }
  ASSERT_GE(entries.size(), 2u);
  EXPECT_EQ(manifest->cuda.size(), 3 * entries.size()); // sm_80 and sm_90 cubins, PTX
  size_t kernels = 0;
  for (const bundle::Launch &launch : manifest->launches) {
    if (launch.kind != bundle::LaunchKind::Kernel)
      continue;
    ++kernels;
    std::string symbol = launch.cudaSymbol.empty() ? launch.name : launch.cudaSymbol;
    for (const auto &[module, names] : entries)
      EXPECT_EQ(names.count(symbol), module == launch.cudaModule ? 1u : 0u)
          << symbol << " in module " << module << " (manifest: " << launch.cudaModule << ")";
  }
  EXPECT_GT(kernels, 0u);
  for (const auto &[module, text] : ptx)
    EXPECT_EQ(text.find(bundle::kKernelSignatureSymbol) != std::string::npos, module == 0)
        << "module " << module;
}

/// Sets an environment variable for one scope.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const std::string &value) : name_(name) {
    if (const char *old = std::getenv(name))
      old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

private:
  const char *name_;
  std::optional<std::string> old_;
};

/// Writes `bytes` bytes to `path` and dates it `ageSeconds` ago.
void writeAged(const fs::path &path, size_t bytes, int ageSeconds) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << std::string(bytes, 'x');
  timespec times[2];
  ::clock_gettime(CLOCK_REALTIME, &times[0]);
  times[0].tv_sec -= ageSeconds;
  times[1] = times[0];
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0) << path;
}

TEST(CacheLimit, TrimRemovesLeastRecentlyUsedTensorcItemsOnly) {
  fs::path dir = fs::temp_directory_path() / ("tensorc-trim-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  std::string hex(32, 'a');
  auto entry = [&](char c) { return dir / "bundles" / std::string(32, c); };
  // Three compile cache entries (last used 300, 200 and 100 s ago: their index.json's time) and
  // two NVRTC programs (a PTX and a cubin each; 250 and 50 s ago).
  writeAged(entry('1') / "f0", 1000, 300);
  writeAged(entry('1') / "index.json", 10, 300);
  writeAged(entry('2') / "f0", 1000, 10);
  writeAged(entry('2') / "index.json", 10, 200);
  writeAged(entry('3') / "f0", 1000, 100);
  writeAged(entry('3') / "index.json", 10, 100);
  writeAged(dir / (std::string(32, 'b') + ".sm_90.ptx"), 300, 250);
  writeAged(dir / (std::string(32, 'b') + ".sm_90.cubin"), 200, 250);
  writeAged(dir / (std::string(32, 'c') + ".sm_90.ptx"), 300, 50);
  writeAged(dir / (std::string(32, 'c') + ".sm_90.cubin"), 200, 50);
  // What is not tensorc's compile or NVRTC cache: other tools' files, however old and large.
  writeAged(dir / "models" / "resnet.onnx", 5000, 9000);
  writeAged(dir / "notes.txt", 5000, 9000);
  writeAged(dir / "bundles" / "not-a-key" / "f0", 5000, 9000);
  // A dead store's temporaries (two hours old) and a live one's (just now).
  writeAged(dir / "bundles" / ".tmp-dead" / "f0", 100, 7200);
  fs::last_write_time(dir / "bundles" / ".tmp-dead",
                      fs::file_time_type::clock::now() - std::chrono::hours(2));
  writeAged(dir / "bundles" / ".tmp-live" / "f0", 100, 0);
  writeAged(dir / (hex + ".sm_90.ptx.tmp99-0"), 100, 7200);

  std::vector<cache::Item> items = cache::listItems(dir.string());
  int64_t total = 0;
  for (const cache::Item &item : items)
    total += item.bytes;
  EXPECT_EQ(items.size(), 5u);
  EXPECT_EQ(total, 3 * 1010 + 2 * 500);
  EXPECT_TRUE(fs::exists(dir / "bundles" / ".tmp-dead")); // listing reads only

  // Under the limit: no item goes, the dead store's temporaries do.
  cache::TrimResult none = cache::trim(dir.string(), total, {});
  EXPECT_EQ(none.removed, 0u);
  EXPECT_EQ(none.bytesAfter, total);
  EXPECT_FALSE(fs::exists(dir / "bundles" / ".tmp-dead"));
  EXPECT_FALSE(fs::exists(dir / (hex + ".sm_90.ptx.tmp99-0")));
  EXPECT_TRUE(fs::exists(dir / "bundles" / ".tmp-live"));
  // 2000 bytes: entry 1 (oldest) and program b go; the kept entry 2 stays although it is the
  // next oldest, so entry 3 goes instead.
  cache::TrimResult trimmed = cache::trim(dir.string(), 2000, {entry('2').string()});
  EXPECT_EQ(trimmed.bytesBefore, total);
  EXPECT_EQ(trimmed.removed, 3u);
  EXPECT_FALSE(fs::exists(entry('1')));
  EXPECT_FALSE(fs::exists(dir / (std::string(32, 'b') + ".sm_90.ptx")));
  EXPECT_FALSE(fs::exists(dir / (std::string(32, 'b') + ".sm_90.cubin")));
  EXPECT_TRUE(fs::exists(entry('2') / "f0"));
  EXPECT_FALSE(fs::exists(entry('3')));
  EXPECT_TRUE(fs::exists(dir / (std::string(32, 'c') + ".sm_90.cubin")));
  EXPECT_EQ(trimmed.bytesAfter, 1010 + 500);
  // A touch makes an item the newest.
  cache::touch((entry('2') / "index.json").string());
  cache::TrimResult last = cache::trim(dir.string(), 1010, {});
  EXPECT_EQ(last.removed, 1u);
  EXPECT_TRUE(fs::exists(entry('2')));
  EXPECT_FALSE(fs::exists(dir / (std::string(32, 'c') + ".sm_90.ptx")));
  for (const char *other : {"models/resnet.onnx", "notes.txt", "bundles/not-a-key/f0"})
    EXPECT_TRUE(fs::exists(dir / other)) << other;
  // No limit.
  EXPECT_EQ(cache::trim(dir.string(), 0, {}).removed, 0u);
  fs::remove_all(dir);
}

TEST(CacheLimit, LimitFromTheEnvironment) {
  {
    ScopedEnv unset(cache::kMaxSizeEnv, "");
    EXPECT_EQ(*cache::maxBytesFromEnv(), cache::kDefaultMaxBytes);
  }
  {
    ScopedEnv set(cache::kMaxSizeEnv, "300M");
    EXPECT_EQ(*cache::maxBytesFromEnv(), int64_t(300) << 20);
  }
  ScopedEnv bad(cache::kMaxSizeEnv, "lots");
  Expected<int64_t> limit = cache::maxBytesFromEnv();
  ASSERT_FALSE(limit.hasValue());
  EXPECT_NE(limit.error().message().find(cache::kMaxSizeEnv), std::string::npos)
      << limit.error().message();
}

TEST_F(CompileCache, LimitEvictsTheLeastRecentlyUsedAndSkipsOversizedOutput) {
  auto bytesOf = [&](const std::string &model, const CompileOptions &options) {
    std::vector<cache::Item> before = cache::listItems((dir_ / "cache").string());
    Expected<CompileSummary> compiled = compile(options, model);
    EXPECT_TRUE(compiled.hasValue()) << compiled.error().message();
    std::vector<cache::Item> after = cache::listItems((dir_ / "cache").string());
    EXPECT_EQ(after.size(), before.size() + 1);
    int64_t total = 0;
    for (const cache::Item &item : after)
      total += item.bytes;
    for (const cache::Item &item : before)
      total -= item.bytes;
    return total;
  };
  auto itemBytes = [&] {
    std::multiset<int64_t> bytes;
    for (const cache::Item &item : cache::listItems((dir_ / "cache").string()))
      bytes.insert(item.bytes);
    return bytes;
  };
  // The small model's bundle, then the MLP's (96 MiB of weights), then the small one used again.
  int64_t small = bytesOf("convnet.fx", options("small"));
  int64_t mlp = bytesOf("mlp.fx", options("mlp"));
  ASSERT_GT(mlp, int64_t(fs::file_size(dir_ / "model" / "mlp.safetensors")));
  ASSERT_TRUE(compile(options("small-again"), "convnet.fx").value().fromCache);
  {
    // A limit that holds both: a third entry pushes out the least recently used (the MLP's,
    // although it was stored after the small model's).
    ScopedEnv limit(cache::kMaxSizeEnv, std::to_string(small + mlp));
    CompileOptions unfused = options("small-unfused");
    unfused.limits.maxFusions = 0;
    Expected<CompileSummary> third = compile(unfused, "convnet.fx");
    ASSERT_TRUE(third.hasValue()) << third.error().message();
    EXPECT_FALSE(third->fromCache);
    std::multiset<int64_t> left = itemBytes();
    ASSERT_EQ(left.size(), 2u);
    EXPECT_EQ(left.count(small), 1u);
    EXPECT_EQ(left.count(mlp), 0u);
    EXPECT_FALSE(compile(options("mlp-again")).value().fromCache);
  }
  // A bundle larger than the whole limit is not stored, nor does it push the others out.
  ScopedEnv tiny(cache::kMaxSizeEnv, std::to_string(mlp / 2));
  std::multiset<int64_t> before = itemBytes();
  CompileOptions big1 = options("mlp-big1"), big2 = options("mlp-big2");
  big1.variants = big2.variants = {"x86_64"};
  EXPECT_FALSE(compile(big1).value().fromCache);
  EXPECT_FALSE(compile(big2).value().fromCache);
  EXPECT_EQ(itemBytes(), before);
  EXPECT_EQ(readBundle(dir_ / "mlp-big2"), readBundle(dir_ / "mlp-big1"));
}

} // namespace
} // namespace tensorc
