// The profiler's event store, the Chrome trace writer, the per-kernel roofline table and the
// host peak micro-benchmarks.
#include "tensorc/Runtime/Profile.h"

#include "tensorc/Support/Json.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace tensorc::rt {

Profiler::Profiler() : origin_(std::chrono::steady_clock::now()) {}

double Profiler::nowUs() const {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - origin_)
      .count();
}

int Profiler::threadIndex() {
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, inserted] = threads_.emplace(std::this_thread::get_id(), int(threads_.size()));
  return it->second;
}

void Profiler::add(const ProfileEvent &event) {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.push_back(event);
}

int64_t Profiler::beginRun(const std::map<std::string, int64_t> &bindings) {
  std::lock_guard<std::mutex> lock(mutex_);
  runs_.push_back({bindings, 0, 0});
  runs_.back().startUs =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - origin_).count();
  return int64_t(runs_.size()) - 1;
}

void Profiler::endRun(int64_t run) {
  double now = nowUs();
  std::lock_guard<std::mutex> lock(mutex_);
  runs_[size_t(run)].durationUs = now - runs_[size_t(run)].startUs;
}

std::vector<ProfileEvent> Profiler::events() const {
  std::vector<ProfileEvent> sorted;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    sorted = events_;
  }
  std::stable_sort(sorted.begin(), sorted.end(), [](const ProfileEvent &a, const ProfileEvent &b) {
    if (a.run != b.run)
      return a.run < b.run;
    if (a.launch != b.launch)
      return a.launch < b.launch;
    return a.begin < b.begin;
  });
  return sorted;
}

std::vector<Profiler::Run> Profiler::runs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return runs_;
}

int Profiler::numThreads() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return int(threads_.size());
}

namespace {

/// Runs fn(i) for i in [0, threads) on that many threads; returns the wall seconds.
template <typename Fn> double timedOnThreads(int threads, Fn fn) {
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (int i = 1; i < threads; ++i)
    workers.emplace_back([&fn, i] { fn(i); });
  fn(0);
  for (std::thread &worker : workers)
    worker.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

constexpr int kChains = 10; // independent FMA chains: enough to cover FMA latency x ports
volatile float fmaSink;

#if defined(__x86_64__)
__attribute__((target("avx512f"))) double fmaLoopAvx512(int64_t iterations) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c)
    acc[c] = _mm512_set1_ps(float(c));
  const __m512 scale = _mm512_set1_ps(0.999999f), add = _mm512_set1_ps(1e-7f);
  for (int64_t i = 0; i < iterations; ++i)
    for (int c = 0; c < kChains; ++c)
      acc[c] = _mm512_fmadd_ps(acc[c], scale, add);
  alignas(64) float lanes[16];
  float sum = 0;
  for (int c = 0; c < kChains; ++c) {
    _mm512_store_ps(lanes, acc[c]);
    for (float lane : lanes)
      sum += lane;
  }
  fmaSink = sum;
  return double(iterations) * kChains * 16 * 2;
}

__attribute__((target("avx2,fma"))) double fmaLoopAvx2(int64_t iterations) {
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c)
    acc[c] = _mm256_set1_ps(float(c));
  const __m256 scale = _mm256_set1_ps(0.999999f), add = _mm256_set1_ps(1e-7f);
  for (int64_t i = 0; i < iterations; ++i)
    for (int c = 0; c < kChains; ++c)
      acc[c] = _mm256_fmadd_ps(acc[c], scale, add);
  alignas(32) float lanes[8];
  float sum = 0;
  for (int c = 0; c < kChains; ++c) {
    _mm256_store_ps(lanes, acc[c]);
    for (float lane : lanes)
      sum += lane;
  }
  fmaSink = sum;
  return double(iterations) * kChains * 8 * 2;
}

/// SSE2 multiply and add (no FMA): the x86-64 baseline.
double fmaLoopSse(int64_t iterations) {
  __m128 acc[kChains];
  for (int c = 0; c < kChains; ++c)
    acc[c] = _mm_set1_ps(float(c));
  const __m128 scale = _mm_set1_ps(0.999999f), add = _mm_set1_ps(1e-7f);
  for (int64_t i = 0; i < iterations; ++i)
    for (int c = 0; c < kChains; ++c)
      acc[c] = _mm_add_ps(_mm_mul_ps(acc[c], scale), add);
  alignas(16) float lanes[4];
  float sum = 0;
  for (int c = 0; c < kChains; ++c) {
    _mm_store_ps(lanes, acc[c]);
    for (float lane : lanes)
      sum += lane;
  }
  fmaSink = sum;
  return double(iterations) * kChains * 4 * 2;
}

/// The widest FMA loop the host runs, and its name.
std::pair<double (*)(int64_t), const char *> widestFmaLoop() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f"))
    return {fmaLoopAvx512, "AVX-512 FMA"};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return {fmaLoopAvx2, "AVX2 FMA"};
  return {fmaLoopSse, "SSE mul+add"};
}
#elif defined(__aarch64__)
double fmaLoopNeon(int64_t iterations) {
  float32x4_t acc[kChains];
  for (int c = 0; c < kChains; ++c)
    acc[c] = vdupq_n_f32(float(c));
  const float32x4_t scale = vdupq_n_f32(0.999999f), add = vdupq_n_f32(1e-7f);
  for (int64_t i = 0; i < iterations; ++i)
    for (int c = 0; c < kChains; ++c)
      acc[c] = vfmaq_f32(add, acc[c], scale);
  float sum = 0;
  for (int c = 0; c < kChains; ++c)
    sum += vaddvq_f32(acc[c]);
  fmaSink = sum;
  return double(iterations) * kChains * 4 * 2;
}
std::pair<double (*)(int64_t), const char *> widestFmaLoop() { return {fmaLoopNeon, "NEON FMA"}; }
#else
double fmaLoopScalar(int64_t iterations) {
  float acc[kChains];
  for (int c = 0; c < kChains; ++c)
    acc[c] = float(c);
  for (int64_t i = 0; i < iterations; ++i)
    for (int c = 0; c < kChains; ++c)
      acc[c] = acc[c] * 0.999999f + 1e-7f;
  float sum = 0;
  for (float value : acc)
    sum += value;
  fmaSink = sum;
  return double(iterations) * kChains * 2;
}
std::pair<double (*)(int64_t), const char *> widestFmaLoop() { return {fmaLoopScalar, "scalar"}; }
#endif

std::string formatFixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

/// "1.23 GB" style with decimal prefixes (rates and sizes in the table).
std::string formatScaled(double value, const char *unit) {
  static const char *prefixes[] = {"", "K", "M", "G", "T", "P"};
  size_t prefix = 0;
  while (value >= 1000.0 && prefix + 1 < sizeof prefixes / sizeof prefixes[0]) {
    value /= 1000.0;
    ++prefix;
  }
  return formatFixed(value, prefix == 0 ? 0 : 2) + " " + prefixes[prefix] + unit;
}

} // namespace

MachinePeaks measureCpuPeaks(int threads) {
  threads = std::max(threads, 1);
  MachinePeaks peaks;
  // Bandwidth: each thread copies its slice of 64 MiB (reads + writes), best of three passes
  // after one that faults the pages in.
  constexpr size_t kBytes = size_t(64) << 20;
  std::unique_ptr<char[]> source(new char[kBytes]), target(new char[kBytes]);
  std::memset(source.get(), 1, kBytes);
  size_t slice = kBytes / size_t(threads);
  auto copy = [&](int i) {
    std::memcpy(target.get() + size_t(i) * slice, source.get() + size_t(i) * slice, slice);
  };
  timedOnThreads(threads, copy);
  double best = 1e30;
  for (int pass = 0; pass < 3; ++pass)
    best = std::min(best, timedOnThreads(threads, copy));
  peaks.bytesPerSecond = 2.0 * double(slice) * threads / best;

  auto [loop, name] = widestFmaLoop();
  constexpr int64_t kIterations = 4'000'000;
  std::vector<double> flops(size_t(threads), 0.0);
  double seconds =
      timedOnThreads(threads, [&, loop = loop](int i) { flops[size_t(i)] = loop(kIterations); });
  double total = 0;
  for (double f : flops)
    total += f;
  peaks.flopsPerSecond = total / seconds;
  peaks.source =
      strCat("measured: parallel memcpy of 64 MiB and ", name, " chains on ", threads, " threads");
  return peaks;
}

Status writeChromeTrace(const std::string &path, const bundle::Manifest &manifest,
                        const Profiler &profiler) {
  Json events = Json::array();
  auto metadata = [&](const char *name, int64_t tid, const std::string &value) {
    Json event = Json::object();
    event["name"] = name;
    event["ph"] = "M";
    event["pid"] = int64_t(1);
    event["tid"] = tid;
    Json args = Json::object();
    args["name"] = value;
    event["args"] = std::move(args);
    events.push(std::move(event));
  };
  metadata("process_name", 0,
           strCat("tensorc ", manifest.model.empty() ? std::string("model") : manifest.model,
                  " on ", profiler.device()));
  bool gpu = profiler.device().rfind("cpu", 0) != 0;
  for (int t = 0; t < std::max(profiler.numThreads(), 1); ++t)
    metadata("thread_name", t, gpu ? std::string("CUDA stream") : strCat("thread ", t));
  for (const ProfileEvent &profiled : profiler.events()) {
    const bundle::Launch &launch = manifest.launches[profiled.launch];
    Json event = Json::object();
    event["name"] = launch.name;
    event["cat"] = bundle::launchKindName(launch.kind);
    event["ph"] = "X";
    event["ts"] = profiled.startUs;
    event["dur"] = profiled.durationUs;
    event["pid"] = int64_t(1);
    event["tid"] = int64_t(profiled.thread);
    Json args = Json::object();
    args["run"] = profiled.run;
    args["launch"] = int64_t(profiled.launch);
    args["begin"] = profiled.begin;
    args["end"] = profiled.end;
    event["args"] = std::move(args);
    events.push(std::move(event));
  }
  Json trace = Json::object();
  trace["traceEvents"] = std::move(events);
  trace["displayTimeUnit"] = "ms";
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return makeError(path, ": cannot write: ", std::strerror(errno));
  out << trace.dump() << "\n";
  out.close();
  if (!out)
    return makeError(path, ": write failed");
  return Status::ok();
}

Expected<bundle::LaunchCosts> readLaunchCosts(const std::string &bundleDir,
                                              const bundle::Manifest &manifest) {
  std::string path = bundleDir + "/" + bundle::kLaunchCostsFile;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return makeError(path, ": cannot read: ", std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  Expected<Json> json = Json::parse(text.str());
  if (!json)
    return json.takeError().withContext(path);
  Expected<bundle::LaunchCosts> costs = bundle::LaunchCosts::fromJson(*json, manifest);
  if (!costs)
    return costs.takeError().withContext(bundleDir);
  return costs;
}

std::string profileTable(const bundle::Manifest &manifest,
                         const std::optional<bundle::LaunchCosts> &costs, const Profiler &profiler,
                         const MachinePeaks &peaks) {
  std::vector<Profiler::Run> runs = profiler.runs();
  std::vector<ProfileEvent> events = profiler.events();
  size_t numLaunches = manifest.launches.size();
  // Per launch: summed span over runs, events, bytes and operations.
  struct Row {
    double spanUs = 0;
    int64_t events = 0;
    double bytes = 0, flops = 0;
    bool known = false; // costs evaluated
  };
  std::vector<Row> rows(numLaunches);
  std::map<std::pair<int64_t, size_t>, std::pair<double, double>> spans; // (run, launch) -> [s, e]
  for (const ProfileEvent &event : events) {
    auto [it, inserted] = spans.emplace(std::make_pair(event.run, event.launch),
                                        std::make_pair(event.startUs, event.startUs));
    it->second.first = std::min(it->second.first, event.startUs);
    it->second.second = std::max(it->second.second, event.startUs + event.durationUs);
    ++rows[event.launch].events;
  }
  for (const auto &[key, span] : spans) {
    Row &row = rows[key.second];
    row.spanUs += span.second - span.first;
    if (!costs)
      continue;
    const bundle::LaunchCost &cost = costs->launches[key.second];
    Expected<int64_t> bytes = cost.bytes.evaluate(runs[size_t(key.first)].bindings);
    Expected<int64_t> flops = cost.flops.evaluate(runs[size_t(key.first)].bindings);
    if (bytes && flops) {
      row.bytes += double(*bytes);
      row.flops += double(*flops);
      row.known = true;
    }
  }
  double total = 0;
  for (const Row &row : rows)
    total += row.spanUs;
  double perRun = runs.empty() ? 1.0 : double(runs.size());

  bool aboveRoof = false;
  std::vector<size_t> order(numLaunches);
  for (size_t i = 0; i < numLaunches; ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return rows[a].spanUs > rows[b].spanUs; });

  size_t nameWidth = 6;
  for (const bundle::Launch &launch : manifest.launches)
    nameWidth = std::max(nameWidth, launch.name.size());
  std::ostringstream out;
  char line[512];
  std::snprintf(line, sizeof line, "%-*s %6s %10s %6s %10s %10s %9s %10s %7s %6s\n", int(nameWidth),
                "kernel", "events", "ms/run", "share", "bytes", "FLOPs", "GB/s", "GFLOP/s", "roof%",
                "bound");
  out << line;
  for (size_t i : order) {
    const Row &row = rows[i];
    if (row.events == 0)
      continue;
    double seconds = row.spanUs * 1e-6;
    std::string bytes = "-", flops = "-", gbps = "-", gflops = "-", roof = "-", bound = "-";
    if (row.known) {
      bytes = formatScaled(row.bytes / perRun, "B");
      flops = formatScaled(row.flops / perRun, "");
      if (seconds > 0) {
        gbps = formatFixed(row.bytes / seconds * 1e-9, 2);
        gflops = formatFixed(row.flops / seconds * 1e-9, 2);
      }
      if (seconds > 0 && peaks.bytesPerSecond > 0 && peaks.flopsPerSecond > 0) {
        // Roofline: attainable FLOP/s = min(peak, intensity x bandwidth); a kernel without
        // operations is judged by bandwidth alone.
        double intensity = row.bytes > 0 ? row.flops / row.bytes : 0.0;
        bool memoryBound = intensity * peaks.bytesPerSecond < peaks.flopsPerSecond;
        double fraction = row.flops > 0
                              ? (row.flops / seconds) /
                                    std::min(peaks.flopsPerSecond, intensity * peaks.bytesPerSecond)
                              : (row.bytes / seconds) / peaks.bytesPerSecond;
        roof = formatFixed(100.0 * fraction, 1);
        aboveRoof |= fraction > 1.0;
        bound = memoryBound ? "memory" : "compute";
      }
    }
    std::snprintf(line, sizeof line, "%-*s %6lld %10.4f %5.1f%% %10s %10s %9s %10s %7s %6s\n",
                  int(nameWidth), manifest.launches[i].name.c_str(),
                  static_cast<long long>(row.events), row.spanUs / perRun * 1e-3,
                  total > 0 ? 100.0 * row.spanUs / total : 0.0, bytes.c_str(), flops.c_str(),
                  gbps.c_str(), gflops.c_str(), roof.c_str(), bound.c_str());
    out << line;
  }
  double runUs = 0;
  for (const Profiler::Run &run : runs)
    runUs += run.durationUs;
  out << strCat("# ", runs.size(), " run(s) on ", profiler.device(), ": ", events.size(),
                " events for ", spans.size(), " launches; launches ",
                formatFixed(total / perRun * 1e-3, 4), " ms per run of ",
                formatFixed(runUs / perRun * 1e-3, 4), " ms\n");
  if (aboveRoof)
    out << "# roof% above 100: that kernel's data stayed in cache (the ceiling is DRAM bandwidth) "
           "or the peaks were measured low\n";
  if (!costs)
    out << "# no costs.json in the bundle: bytes, FLOPs and the roofline are not shown\n";
  if (peaks.bytesPerSecond > 0 && peaks.flopsPerSecond > 0)
    out << strCat("# roofline peaks: ", formatFixed(peaks.bytesPerSecond * 1e-9, 1), " GB/s, ",
                  formatFixed(peaks.flopsPerSecond * 1e-9, 1), " GFLOP/s (", peaks.source, ")\n");
  return out.str();
}

} // namespace tensorc::rt

#include "tensorc/Runtime/Model.h"

namespace tensorc::rt {

Expected<std::string> finishProfile(Model &model, const Profiler &profiler,
                                    const std::string &bundleDir,
                                    const ProfileReportOptions &options) {
  TC_RETURN_IF_ERROR(writeChromeTrace(options.tracePath, model.manifest(), profiler));
  std::optional<bundle::LaunchCosts> costs;
  std::string note;
  std::string costsPath = bundleDir + "/" + bundle::kLaunchCostsFile;
  if (std::ifstream(costsPath).good()) {
    TC_ASSIGN_OR_RETURN(costs, readLaunchCosts(bundleDir, model.manifest()));
  }
  MachinePeaks peaks;
  if (options.peakGbps > 0 && options.peakGflops > 0) {
    peaks.source = "--peak-gbps and --peak-gflops";
  } else {
    TC_ASSIGN_OR_RETURN(peaks, model.peaks());
    if (options.peakGbps > 0 || options.peakGflops > 0)
      peaks.source +=
          options.peakGbps > 0 ? "; bandwidth from --peak-gbps" : "; compute from --peak-gflops";
  }
  if (options.peakGbps > 0)
    peaks.bytesPerSecond = options.peakGbps * 1e9;
  if (options.peakGflops > 0)
    peaks.flopsPerSecond = options.peakGflops * 1e9;
  return profileTable(model.manifest(), costs, profiler, peaks) +
         strCat("# trace: ", options.tracePath, " (", profiler.events().size(),
                " events; open in https://ui.perfetto.dev or chrome://tracing)\n");
}

} // namespace tensorc::rt
