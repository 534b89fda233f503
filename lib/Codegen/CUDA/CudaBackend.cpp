// The CUDA backend: the renderer's CUDA C++ (src/kernels.cu), its distinct kernels cut into parts
// by estimated compile cost, each part compiled by its own NVRTC program (at once, on the -j
// threads) into a module: a cubin per arch and PTX for the lowest (cuda/), with each kernel's
// launch shape and module.
#include "tensorc/Codegen/Backend.h"

#include "tensorc/Codegen/CUDA/CudaCodegen.h"
#include "tensorc/Support/Log.h"
#include "tensorc/Support/StrCat.h"
#include "tensorc/Support/Timing.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <string_view>

namespace tensorc::codegen {

namespace {

/// `data` as a NUL-terminated `extern "C" __device__` byte array the runtime reads back with
/// cuModuleGetGlobal.
std::string deviceConstant(const std::string &symbol, const std::string &data) {
  std::string bytes;
  for (size_t i = 0; i < data.size(); ++i)
    bytes += strCat(i % 24 == 0 ? "\n  " : "", int(static_cast<unsigned char>(data[i])), ",");
  return strCat("\n// Read back by the runtime (the kernels' signatures, checked against the "
                "manifest).\n",
                "extern \"C\" __device__ const unsigned char ", symbol, "[", data.size() + 1,
                "] = {", bytes, "\n  0};\n");
}

/// The end of the kernel whose text starts at `begin`: one past the brace closing its body
/// (comments, string and character literals skipped); npos when the braces do not balance.
size_t kernelEnd(const std::string &source, size_t begin) {
  int depth = 0;
  for (size_t i = begin; i < source.size(); ++i) {
    char c = source[i];
    if (c == '/' && i + 1 < source.size() && source[i + 1] == '/') {
      i = source.find('\n', i);
      if (i == std::string::npos)
        return i;
    } else if (c == '/' && i + 1 < source.size() && source[i + 1] == '*') {
      i = source.find("*/", i + 2);
      if (i == std::string::npos)
        return i;
      ++i;
    } else if (c == '"' || c == '\'') {
      for (++i; i < source.size() && source[i] != c; ++i)
        i += source[i] == '\\';
    } else if (c == '{') {
      ++depth;
    } else if (c == '}' && --depth == 0) {
      return i + 1;
    }
  }
  return std::string::npos;
}

/// A kernel's text with its own name replaced by one placeholder and the buffer ids in the names
/// the renderer derives from them (b<id>, in<id>) renumbered in order of appearance (literals
/// kept): kernels with equal canonical text are the same function of their arguments.
std::string canonicalKernel(std::string_view text, const std::string &name) {
  std::string out;
  std::map<std::string, std::string, std::less<>> buffers;
  auto identifierChar = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  };
  for (size_t i = 0; i < text.size();) {
    char c = text[i];
    if (c == '"' || c == '\'') {
      size_t j = i + 1;
      for (; j < text.size() && text[j] != c; ++j)
        j += text[j] == '\\';
      out.append(text.substr(i, j + 1 - i));
      i = j + 1;
    } else if (identifierChar(c) && !std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      while (j < text.size() && identifierChar(text[j]))
        ++j;
      std::string_view word = text.substr(i, j - i);
      // Names the renderer derives from buffer ids: parameters b<id>, vector loads in<id>.
      size_t digits = word.find_first_of("0123456789");
      std::string_view prefix = word.substr(0, digits == std::string_view::npos ? 0 : digits);
      bool buffer = (prefix == "b" || prefix == "in") &&
                    std::all_of(word.begin() + long(digits), word.end(),
                                [](char d) { return std::isdigit(static_cast<unsigned char>(d)); });
      if (word == name) {
        out += "@kernel";
      } else if (buffer) {
        auto [it, inserted] = buffers.emplace(word.substr(digits), "");
        if (inserted)
          it->second = strCat(buffers.size());
        out += strCat(prefix, "@", it->second);
      } else {
        out.append(word);
      }
      i = j;
    } else if (identifierChar(c)) { // a number: copied whole (1e5f, 0x1p+3f)
      size_t j = i;
      while (j < text.size() && identifierChar(text[j]))
        ++j;
      out.append(text.substr(i, j - i));
      i = j;
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

/// Keeps the first of every set of identical kernels in `source` and removes the others' text;
/// returns, for each removed kernel, the kernel whose code it runs.
std::map<std::string, std::string>
removeDuplicateKernels(std::string &source,
                       const std::map<std::string, cuda::LaunchConfig> &launched) {
  std::map<std::string, std::string> sameAs;
  std::map<std::string, std::string> firstWithText; // canonical text -> kernel name
  std::vector<std::pair<size_t, size_t>> removed;
  for (const cuda::SourceKernel &kernel : cuda::sourceKernels(source)) {
    // A kernel's helper functions (a GEMM's epilogue function) go with it: its duplicate calls
    // the original's helpers.
    if (!launched.count(kernel.name))
      continue;
    size_t end = kernelEnd(source, kernel.begin);
    if (end == std::string::npos || end > kernel.end)
      continue; // not understood: kept as it is
    std::string text = canonicalKernel(
        std::string_view(source).substr(kernel.begin, end - kernel.begin), kernel.name);
    auto [it, inserted] = firstWithText.emplace(std::move(text), kernel.name);
    if (!inserted) {
      sameAs[kernel.name] = it->second;
      removed.emplace_back(kernel.begin, end);
    }
  }
  for (auto range = removed.rbegin(); range != removed.rend(); ++range)
    source.erase(range->first, range->second - range->first);
  return sameAs;
}

/// How often `text` reads a loop index the renderer decomposed from a flat one (x<d>_<n>, declared
/// "long long x<d>_<n> = ..."): each read keeps a chain of 64-bit divisions alive.
int64_t decomposedIndexReads(std::string_view text) {
  int64_t reads = 0;
  auto identifierChar = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  };
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != 'x' || (i > 0 && identifierChar(text[i - 1])))
      continue;
    size_t j = i + 1;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j])))
      ++j;
    if (j == i + 1 || j >= text.size() || text[j] != '_')
      continue;
    size_t k = j + 1;
    while (k < text.size() && std::isdigit(static_cast<unsigned char>(text[k])))
      ++k;
    if (k == j + 1 || (k < text.size() && identifierChar(text[k])))
      continue;
    bool declared = i >= 10 && text.substr(i - 10, 10) == "long long ";
    reads += !declared;
    i = k - 1;
  }
  return reads;
}

/// A guess at the CPU milliseconds NVRTC takes for `kernel` (ptxas takes most), fitted on the zoo
/// models' kernels: a kernel-library GEMM or convolution, 0.2 to 2 s, grows with the index
/// arithmetic its epilogue (unrolled over the thread's tile) keeps; a loop kernel takes tens of
/// milliseconds, growing with its text. Partitioning depends on nothing else, so the parts are
/// the same on every machine and for every -j.
double compileCost(const cuda::RenderedKernel &kernel) {
  if (kernel.usesKernelLibrary)
    return 250 + 100 * double(decomposedIndexReads(kernel.text));
  return (kernel.usesFlashAttention ? 500 : 40) + double(kernel.text.size()) / 100;
}

/// The estimated cost one NVRTC program (part) gathers by default before the next kernel starts
/// another: about a second of CPU, so that parts balance over a few cores and the NVRTC work
/// repeated per program (the prelude, about 20 ms) stays small.
constexpr double kPartBudget = 1000;

/// `kernels` in source order, cut into consecutive parts of at most `budget` estimated cost (a
/// costlier kernel alone); at least one part, which may be empty.
std::vector<std::vector<const cuda::RenderedKernel *>>
partitionKernels(const std::vector<const cuda::RenderedKernel *> &kernels, double budget) {
  std::vector<std::vector<const cuda::RenderedKernel *>> parts(1);
  double cost = 0;
  for (const cuda::RenderedKernel *kernel : kernels) {
    double next = compileCost(*kernel);
    if (!parts.back().empty() && cost + next > budget) {
      parts.emplace_back();
      cost = 0;
    }
    parts.back().push_back(kernel);
    cost += next;
  }
  return parts;
}

class CudaBackend final : public Backend {
public:
  explicit CudaBackend(const CudaBackendOptions &options) : options_(options) {}

  const char *name() const override { return "cuda"; }

  Expected<std::string> source(const loop::LoopProgram &program,
                               const sched::Schedule &schedule) override {
    TC_ASSIGN_OR_RETURN(cuda::RenderedKernels rendered,
                        cuda::renderKernels(program, schedule, renderOptions()));
    return std::move(rendered.source);
  }

  Expected<BackendOutput> compile(const loop::LoopProgram &program, const sched::Schedule &schedule,
                                  const CompileContext &context) override {
    timing::Scope renderTime("cuda: render");
    TC_ASSIGN_OR_RETURN(cuda::RenderedKernels rendered,
                        cuda::renderKernels(program, schedule, renderOptions()));
    renderTime.stop();
    BackendOutput output;
    for (auto &[kernel, config] : rendered.configs) {
      LaunchShape &shape = output.launches[kernel];
      shape.grid = config.grid;
      shape.block = config.block;
      shape.sharedBytes = config.sharedBytes;
      shape.partialFloats = config.partialFloats;
      shape.counterCount = config.counterCount;
      shape.gemm = config.gemm;
      shape.hopper = config.hopper;
    }
    // Identical kernels (the layers of a transformer) are compiled once: the launches of the
    // others call the first one's function.
    timing::Scope dedupTime("cuda: find identical kernels");
    std::map<std::string, std::string> sameAs =
        removeDuplicateKernels(rendered.source, rendered.configs);
    for (const auto &[kernel, original] : sameAs)
      output.launches[kernel].symbol = original;
    dedupTime.stop();

    // The distinct kernels, in parts compiled as separate NVRTC programs (modules) at once; each
    // launch names the module holding its function.
    std::vector<const cuda::RenderedKernel *> distinct;
    for (const cuda::RenderedKernel &kernel : rendered.kernels)
      if (!sameAs.count(kernel.name))
        distinct.push_back(&kernel);
    std::vector<std::vector<const cuda::RenderedKernel *>> parts =
        partitionKernels(distinct, options_.programCost > 0 ? options_.programCost : kPartBudget);
    std::map<std::string, int64_t> moduleOf;
    for (size_t p = 0; p < parts.size(); ++p)
      for (const cuda::RenderedKernel *kernel : parts[p])
        moduleOf[kernel->name] = int64_t(p);
    for (auto &[kernel, shape] : output.launches)
      shape.module = moduleOf[shape.symbol.empty() ? kernel : shape.symbol];
    std::vector<cuda::SourcePart> sources(parts.size());
    for (size_t p = 0; p < parts.size(); ++p) {
      sources[p].name = strCat("kernels.", p);
      sources[p].source = cuda::assembleSource(parts[p]);
      for (const cuda::RenderedKernel *kernel : parts[p]) {
        sources[p].cost += compileCost(*kernel);
        sources[p].hopper = sources[p].hopper || kernel->hopper;
      }
    }
    // The signature table lives in module 0 (src/kernels.cu keeps all of it in one unit).
    if (!context.dataSymbol.empty() && context.dataFor) {
      TC_ASSIGN_OR_RETURN(std::string data, context.dataFor(output.launches));
      std::string table = deviceConstant(context.dataSymbol, data);
      rendered.source += table;
      sources[0].source += table;
    }
    if (!options_.quiet)
      log::info(strCat("compiling ", distinct.size(), " distinct CUDA kernels of ",
                       rendered.configs.size(), " in ", parts.size(), " NVRTC program",
                       parts.size() == 1 ? "" : "s", " for ", join(options_.archs, ", ")));
    if (context.progress)
      context.progress(strCat("cuda: NVRTC, ", distinct.size(), " distinct kernels in ",
                              parts.size(), " programs for ", join(options_.archs, ", ")));
    cuda::CompileOptions nvrtc;
    nvrtc.archs = options_.archs;
    nvrtc.cacheDir = options_.cacheDir;
    nvrtc.jobs = options_.jobs;
    // Errors about a kernel name the graph nodes fused into it.
    for (const sched::Kernel &kernel : schedule.kernels) {
      std::vector<std::string> nodes;
      for (int id : kernel.nodes)
        nodes.push_back(program.nodes[size_t(id)].name);
      if (nodes.size() > 8)
        nodes.resize(8), nodes.push_back(strCat("... ", kernel.nodes.size() - 8, " more"));
      nvrtc.kernelNotes[kernel.name] = "fused nodes " + join(nodes, ", ");
    }
    TC_ASSIGN_OR_RETURN(std::vector<cuda::CompiledModule> modules,
                        cuda::compileSources(sources, nvrtc));
    for (size_t p = 0; p < modules.size(); ++p) {
      cuda::CompiledModule &module = modules[p];
      for (auto &[arch, cubin] : module.cubins) {
        KernelImage image;
        image.kind = KernelImage::Kind::CudaCubin;
        image.name = arch;
        image.module = int64_t(p);
        image.file = strCat("cuda/", arch, ".", p, ".cubin");
        output.files.push_back({image.file, std::move(cubin)});
        output.images.push_back(std::move(image));
      }
      KernelImage ptx;
      ptx.kind = KernelImage::Kind::CudaPtx;
      ptx.name = module.ptxArch;
      ptx.module = int64_t(p);
      ptx.file = strCat("cuda/kernels.", p, ".ptx");
      output.files.push_back({ptx.file, std::move(module.ptx)});
      output.images.push_back(std::move(ptx));
    }
    output.files.push_back({"src/kernels.cu", std::move(rendered.source)});
    return output;
  }

private:
  cuda::RenderOptions renderOptions() const {
    cuda::RenderOptions render;
    render.matmulPrecision =
        options_.tf32 ? cuda::MatmulPrecision::High : cuda::MatmulPrecision::Highest;
    render.gemmCalls = options_.gemmCalls;
    render.hopper =
        std::find(options_.archs.begin(), options_.archs.end(), "sm_90") != options_.archs.end();
    return render;
  }

  CudaBackendOptions options_;
};

} // namespace

Expected<std::unique_ptr<Backend>> createCudaBackend(const CudaBackendOptions &options) {
  if (options.validate)
    TC_RETURN_IF_ERROR(cuda::validateArchs(options.archs));
  return std::unique_ptr<Backend>(new CudaBackend(options));
}

} // namespace tensorc::codegen
