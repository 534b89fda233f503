// The CUDA compiler: NVRTC turns rendered source into a cubin per architecture plus PTX for the
// lowest one (forward compatibility), cached on disk by a hash of source, options and NVRTC
// version. Several programs (the backend's parts of one model) compile at once, every program x
// arch a task of the -j pool. NVRTC runs on a thread with a large stack under a time limit; its
// failures become errors naming the kernel.
#include "tensorc/Codegen/CUDA/CudaCodegen.h"

#include "tensorc/Bundle/Manifest.h"

#include "tensorc/Support/CacheLimit.h"
#include "tensorc/Support/Parallel.h"
#include "tensorc/Support/StrCat.h"
#include "tensorc/Support/Timing.h"

#include <nvrtc.h>

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>

namespace tensorc::cuda {

namespace {

namespace fs = std::filesystem;

Expected<int> archNumber(const std::string &arch) {
  // sm_<major><minor>, e.g. sm_80, sm_90, sm_100
  if (arch.size() < 5 || arch.compare(0, 3, "sm_") != 0 ||
      !std::all_of(arch.begin() + 3, arch.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return makeError("CUDA arch '", arch, "' is not of the form sm_<major><minor> (e.g. sm_90)");
  return std::atoi(arch.c_str() + 3);
}

std::string hashText(const std::string &text) {
  // FNV-1a, twice with different bases: a cache key, not a security property.
  uint64_t a = 1469598103934665603ull, b = 0x9e3779b97f4a7c15ull;
  for (unsigned char c : text) {
    a = (a ^ c) * 1099511628211ull;
    b = (b ^ c) * 0x100000001b3ull + 0x7f4a7c15ull;
  }
  char out[40];
  std::snprintf(out, sizeof out, "%016llx%016llx", static_cast<unsigned long long>(a),
                static_cast<unsigned long long>(b));
  return out;
}

std::string cacheDirectory(const std::string &option) {
  if (option == "-")
    return "";
  if (!option.empty())
    return option;
  if (const char *env = std::getenv("TENSORC_CACHE_DIR"); env && *env)
    return env;
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/tensorc";
  return "";
}

bool readCached(const fs::path &path, std::string &bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream text;
  text << in.rdbuf();
  bytes = text.str();
  return !in.bad() && !bytes.empty();
}

/// Best effort: a cache that cannot be written only costs a recompile next time.
void writeCached(const fs::path &path, const std::string &bytes) {
  static std::atomic<int> counter{0};
  std::error_code error;
  fs::create_directories(path.parent_path(), error);
  fs::path temp = path;
  temp += strCat(".tmp", ::getpid(), "-", counter++);
  {
    std::ofstream out(temp, std::ios::binary);
    out.write(bytes.data(), std::streamsize(bytes.size()));
    if (!out)
      return fs::remove(temp, error), void();
  }
  fs::rename(temp, path, error);
  if (error)
    fs::remove(temp, error);
}

struct Program {
  nvrtcProgram handle = nullptr;
  ~Program() {
    if (handle)
      nvrtcDestroyProgram(&handle);
  }
};

Status nvrtcCheck(nvrtcResult result, const char *what) {
  if (result == NVRTC_SUCCESS)
    return Status::ok();
  return makeError("NVRTC ", what, ": ", nvrtcGetErrorString(result));
}

/// What one NVRTC compilation makes, and how it failed (`log`: NVRTC's, when it has one).
struct Compilation {
  std::string cubin, ptx, log;
  Status status;
};

/// One NVRTC compilation of `source` for `arch`; the PTX too when `wantPtx`.
void compileOnce(const std::string &source, const std::string &name, const std::string &arch,
                 bool wantPtx, Compilation &out) {
  Program program;
  out.status = nvrtcCheck(nvrtcCreateProgram(&program.handle, source.c_str(),
                                             (name + ".cu").c_str(), 0, nullptr, nullptr),
                          "create program");
  if (!out.status)
    return;
  std::string archOption = "--gpu-architecture=" + arch;
  const char *options[] = {archOption.c_str(), "-std=c++17", "--fmad=true"};
  nvrtcResult compiled =
      nvrtcCompileProgram(program.handle, int(sizeof options / sizeof options[0]), options);
  if (compiled != NVRTC_SUCCESS) {
    size_t logSize = 0;
    nvrtcGetProgramLogSize(program.handle, &logSize);
    out.log.assign(logSize, '\0');
    if (logSize)
      nvrtcGetProgramLog(program.handle, out.log.data());
    while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n'))
      out.log.pop_back();
    out.status = makeError(nvrtcGetErrorString(compiled));
    return;
  }
  size_t size = 0;
  out.status = nvrtcCheck(nvrtcGetCUBINSize(program.handle, &size), "cubin size");
  if (!out.status)
    return;
  out.cubin.assign(size, '\0');
  out.status = nvrtcCheck(nvrtcGetCUBIN(program.handle, out.cubin.data()), "cubin");
  if (!out.status || !wantPtx)
    return;
  out.status = nvrtcCheck(nvrtcGetPTXSize(program.handle, &size), "PTX size");
  if (!out.status)
    return;
  out.ptx.assign(size, '\0');
  out.status = nvrtcCheck(nvrtcGetPTX(program.handle, out.ptx.data()), "PTX");
  while (!out.ptx.empty() && out.ptx.back() == '\0')
    out.ptx.pop_back();
}

/// NVRTC's parser and optimizer recurse over the program; a large stack keeps deep (but legal)
/// code from overflowing the caller's 8 MiB.
constexpr size_t kNvrtcStackBytes = size_t(512) << 20;

/// One compilation on its own thread, shared with the caller until both are done: a caller that
/// stops waiting (time limit) leaves the thread its inputs and outputs.
struct Job {
  std::string source, name, arch;
  bool wantPtx = false;
  Compilation result;
  double cpuSeconds = 0; // the compiler thread's CPU time, once done
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
};

void *runJob(void *arg) {
  std::unique_ptr<std::shared_ptr<Job>> owner(static_cast<std::shared_ptr<Job> *>(arg));
  Job &job = **owner;
  compileOnce(job.source, job.name, job.arch, job.wantPtx, job.result);
  timespec used{};
  double cpu = clock_gettime(CLOCK_THREAD_CPUTIME_ID, &used) == 0
                   ? double(used.tv_sec) + double(used.tv_nsec) * 1e-9
                   : 0.0;
  std::lock_guard<std::mutex> lock(job.mutex);
  job.cpuSeconds = cpu;
  job.done = true;
  job.finished.notify_all();
  return nullptr;
}

/// Runs compileOnce on a thread with kNvrtcStackBytes of stack until it has used `timeoutSeconds`
/// of CPU time (0: no limit). False when the time ran out (the thread keeps running, detached).
Expected<bool> compileOnLargeStack(const std::shared_ptr<Job> &job, double timeoutSeconds) {
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0)
    return makeError("NVRTC: cannot create a compiler thread");
  pthread_attr_setstacksize(&attr, kNvrtcStackBytes);
  auto *arg = new std::shared_ptr<Job>(job);
  pthread_t thread;
  int created = pthread_create(&thread, &attr, runJob, arg);
  pthread_attr_destroy(&attr);
  if (created != 0) {
    delete arg;
    return makeError("NVRTC: cannot create a compiler thread with a ", kNvrtcStackBytes >> 20,
                     " MiB stack (error ", created, ")");
  }
  // The limit is on the compiler thread's CPU time, so a loaded machine does not trip it.
  clockid_t clock;
  bool haveClock = pthread_getcpuclockid(thread, &clock) == 0;
  bool done = false;
  {
    std::unique_lock<std::mutex> lock(job->mutex);
    while (!done) {
      done = job->finished.wait_for(lock, std::chrono::seconds(1), [&] { return job->done; });
      timespec used{};
      if (!done && timeoutSeconds > 0 && haveClock && clock_gettime(clock, &used) == 0 &&
          double(used.tv_sec) + double(used.tv_nsec) * 1e-9 > timeoutSeconds)
        break;
    }
  }
  if (done)
    pthread_join(thread, nullptr);
  else
    pthread_detach(thread);
  return done;
}

/// "kernel k (fused nodes a, b)" for errors.
std::string describe(const std::string &kernel, const CompileOptions &options) {
  auto note = options.kernelNotes.find(kernel);
  return note == options.kernelNotes.end() || note->second.empty()
             ? "kernel " + kernel
             : strCat("kernel ", kernel, " (", note->second, ")");
}

/// The kernels NVRTC's log points at (`name.cu(LINE): error`), in order, without repeats.
std::vector<std::string> kernelsInLog(const std::string &log, const std::string &name,
                                      const std::vector<SourceKernel> &kernels) {
  std::vector<std::string> found;
  std::string marker = name + ".cu(";
  for (size_t at = log.find(marker); at != std::string::npos; at = log.find(marker, at + 1)) {
    size_t line = std::strtoull(log.c_str() + at + marker.size(), nullptr, 10);
    for (const SourceKernel &kernel : kernels)
      if (line >= kernel.firstLine && line <= kernel.lastLine &&
          std::find(found.begin(), found.end(), kernel.name) == found.end())
        found.push_back(kernel.name);
  }
  return found;
}

/// Kernels too deeply nested for NVRTC are refused before it runs.
Status checkDepth(const std::string &source, const std::vector<SourceKernel> &kernels,
                  const CompileOptions &options) {
  for (const SourceKernel &kernel : kernels) {
    int depth = expressionDepth(source.substr(kernel.begin, kernel.end - kernel.begin));
    if (depth > kMaxExpressionDepth)
      return makeError("CUDA ", describe(kernel.name, options), ": expressions nest ", depth,
                       " levels deep, more than NVRTC compiles safely (", kMaxExpressionDepth,
                       "); this is a tensorc bug, please report it with the model");
  }
  return Status::ok();
}

/// Compiles for `arch` and turns every failure into an error naming the kernel(s) at fault.
Status compileChecked(const std::string &source, const std::string &name, const std::string &arch,
                      bool wantPtx, const std::vector<SourceKernel> &kernels,
                      const CompileOptions &options, std::string &cubin, std::string &ptx,
                      double &cpuSeconds) {
  auto job = std::make_shared<Job>();
  job->source = source;
  job->name = name;
  job->arch = arch;
  job->wantPtx = wantPtx;
  TC_ASSIGN_OR_RETURN(bool done, compileOnLargeStack(job, options.timeoutSeconds));
  if (!done) {
    const SourceKernel *largest = nullptr;
    for (const SourceKernel &kernel : kernels)
      if (!largest || kernel.end - kernel.begin > largest->end - largest->begin)
        largest = &kernel;
    return makeError("NVRTC did not finish compiling ", name, ".cu (", kernels.size(),
                     " kernels) for ", arch, " within ", options.timeoutSeconds, " s of CPU time",
                     largest ? strCat("; the largest is ", describe(largest->name, options), ", ",
                                      largest->lastLine - largest->firstLine + 1, " lines")
                             : std::string());
  }
  Compilation &result = job->result;
  if (!result.status) {
    std::vector<std::string> culprits = kernelsInLog(result.log, name, kernels);
    std::vector<std::string> described;
    for (const std::string &kernel : culprits)
      described.push_back(describe(kernel, options));
    std::string log = result.log;
    if (log.size() > 4000)
      log = log.substr(0, 4000) + "\n... (log truncated)";
    return makeError("NVRTC could not compile ",
                     described.empty() ? name + ".cu" : "CUDA " + join(described, ", "), " for ",
                     arch, ": ", result.status.message(), log.empty() ? "" : "\n", log);
  }
  cubin = std::move(result.cubin);
  ptx = std::move(result.ptx);
  cpuSeconds = job->cpuSeconds;
  return Status::ok();
}

} // namespace

Status validateArchs(const std::vector<std::string> &archs) {
  if (archs.empty())
    return makeError("no CUDA arch given (--cuda-arch sm_80,sm_90)");
  int count = 0;
  TC_RETURN_IF_ERROR(nvrtcCheck(nvrtcGetNumSupportedArchs(&count), "supported archs"));
  std::vector<int> supported(size_t(std::max(count, 0)));
  if (count > 0)
    TC_RETURN_IF_ERROR(nvrtcCheck(nvrtcGetSupportedArchs(supported.data()), "supported archs"));
  for (const std::string &arch : archs) {
    TC_ASSIGN_OR_RETURN(int number, archNumber(arch));
    if (std::find(supported.begin(), supported.end(), number) == supported.end()) {
      std::vector<std::string> names;
      for (int value : supported)
        names.push_back("sm_" + std::to_string(value));
      return makeError("CUDA arch '", arch,
                       "' is not supported by this NVRTC (supported: ", join(names, ", "), ")");
    }
    // Kernels convert bf16 with cvt.rn.bf16.f32, which needs sm_80.
    if (number < 80)
      return makeError("CUDA arch '", arch, "' is older than sm_80, the oldest tensorc targets");
  }
  return Status::ok();
}

Expected<CompiledModule> compileSource(const std::string &source, const std::string &name,
                                       const CompileOptions &options) {
  TC_ASSIGN_OR_RETURN(std::vector<CompiledModule> modules,
                      compileSources({{name, source, 0.0}}, options));
  return std::move(modules.front());
}

Expected<std::vector<CompiledModule>> compileSources(const std::vector<SourcePart> &parts,
                                                     const CompileOptions &options) {
  TC_RETURN_IF_ERROR(validateArchs(options.archs));
  std::vector<std::string> archs = options.archs;
  std::sort(archs.begin(), archs.end(), [](const std::string &a, const std::string &b) {
    return std::atoi(a.c_str() + 3) < std::atoi(b.c_str() + 3);
  });
  archs.erase(std::unique(archs.begin(), archs.end()), archs.end());
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  std::string dir = cacheDirectory(options.cacheDir);

  // Each part comes from the cache whole (PTX and every cubin) or is compiled whole.
  std::vector<CompiledModule> modules(parts.size());
  std::vector<std::string> keys(parts.size());
  std::vector<std::vector<SourceKernel>> kernels(parts.size());
  auto cached = [&](size_t part, const std::string &suffix) {
    return fs::path(dir) / (keys[part] + "." + suffix);
  };
  // Parts with Hopper forms also compile for sm_90a (an arch-specific cubin, for CC 9.0 only):
  // the last entry of `archs`, never the PTX's.
  size_t plainArchs = archs.size();
  if (std::any_of(parts.begin(), parts.end(), [](const SourcePart &p) { return p.hopper; }))
    archs.push_back(bundle::kHopperArch);
  auto partArchs = [&](size_t part) { return parts[part].hopper ? archs.size() : plainArchs; };
  struct Task {
    size_t part, arch;
  };
  std::vector<Task> tasks;
  for (size_t p = 0; p < parts.size(); ++p) {
    CompiledModule &module = modules[p];
    module.ptxArch = archs.front();
    keys[p] = hashText(strCat("nvrtc ", major, ".", minor, "\n", parts[p].source));
    if (!dir.empty()) {
      bool hit = readCached(cached(p, module.ptxArch + ".ptx"), module.ptx);
      for (size_t a = 0; a < partArchs(p); ++a)
        hit = hit && readCached(cached(p, archs[a] + ".cubin"), module.cubins[archs[a]]);
      module.fromCache = hit;
      if (hit) {
        cache::touch(cached(p, module.ptxArch + ".ptx").string());
        for (size_t a = 0; a < partArchs(p); ++a)
          cache::touch(cached(p, archs[a] + ".cubin").string());
        continue;
      }
      module.cubins.clear();
      module.ptx.clear();
    }
    kernels[p] = sourceKernels(parts[p].source);
    TC_RETURN_IF_ERROR(checkDepth(parts[p].source, kernels[p], options));
    for (size_t a = 0; a < partArchs(p); ++a)
      tasks.push_back({p, a});
  }
  // The costliest first, so that a long one does not start last; ties in part and arch order.
  std::stable_sort(tasks.begin(), tasks.end(), [&](const Task &x, const Task &y) {
    return parts[x.part].cost > parts[y.part].cost;
  });
  // Every compilation is its own NVRTC program (NVRTC is thread-safe across programs); each task
  // writes only its own slot.
  size_t count = tasks.size();
  std::vector<std::string> cubins(count), ptxs(count);
  std::vector<Status> statuses(count);
  std::vector<double> ms(count), cpu(count);
  auto started = std::chrono::steady_clock::now();
  parallelFor(count, options.jobs, [&](size_t t) {
    const Task &task = tasks[t];
    const std::string &arch = archs[task.arch];
    auto start = std::chrono::steady_clock::now();
    statuses[t] =
        compileChecked(parts[task.part].source, parts[task.part].name, arch, arch == archs.front(),
                       kernels[task.part], options, cubins[t], ptxs[t], cpu[t]);
    ms[t] = timing::msSince(start);
  });
  double wall = timing::msSince(started);

  // Reports and errors in part order, whatever order the compilations ran in.
  std::vector<size_t> order(count);
  for (size_t t = 0; t < count; ++t)
    order[t] = t;
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return std::make_pair(tasks[x].part, tasks[x].arch) <
           std::make_pair(tasks[y].part, tasks[y].arch);
  });
  double cpuTotal = 0;
  for (size_t t : order) {
    const Task &task = tasks[t];
    const std::string &arch = archs[task.arch];
    cpuTotal += cpu[t];
    timing::report(strCat("cuda: NVRTC ", parts[task.part].name, ".cu for ", arch, " (",
                          kernels[task.part].size(), " kernels, ", int64_t(cpu[t] * 1000 + 0.5),
                          " ms CPU, estimated ", int64_t(parts[task.part].cost + 0.5), ")"),
                   ms[t]);
    TC_RETURN_IF_ERROR(std::move(statuses[t]));
    CompiledModule &module = modules[task.part];
    module.cubins[arch] = std::move(cubins[t]);
    if (arch == module.ptxArch)
      module.ptx = std::move(ptxs[t]);
  }
  if (count > 1)
    timing::report(strCat("cuda: NVRTC, ", count, " programs on ",
                          std::min<size_t>(count, options.jobs ? options.jobs : defaultJobs()),
                          " threads (", int64_t(cpuTotal * 1000 + 0.5), " ms CPU)"),
                   wall);
  if (!dir.empty() && count > 0) {
    std::vector<std::string> written;
    for (size_t p = 0; p < parts.size(); ++p) {
      if (modules[p].fromCache)
        continue;
      written.push_back(cached(p, modules[p].ptxArch + ".ptx").string());
      writeCached(written.back(), modules[p].ptx);
      for (const auto &[arch, cubin] : modules[p].cubins) {
        written.push_back(cached(p, arch + ".cubin").string());
        writeCached(written.back(), cubin);
      }
    }
    cache::trimToLimit(dir, written);
  }
  return modules;
}

} // namespace tensorc::cuda
