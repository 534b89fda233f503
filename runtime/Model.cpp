// Loading a bundle and running its launch list on the CPU.
#include "tensorc/Runtime/Model.h"

#include "BundleFiles.h"
#include "CpuTarget.h"
#include "CudaExecutor.h"
#include "KernelLibrary.h"
#include "ThreadPool.h"
#include "WeightSource.h"

#include "tensorc/Bundle/EmbeddedBundle.h"
#include "tensorc/Frontend/FX/FxParser.h"
#include "tensorc/Interp/Interpreter.h"
#include "tensorc/Ops/Registry.h"
#include "tensorc/Support/Limits.h"
#include "tensorc/Support/Sha256.h"

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string_view>
#include <sys/mman.h>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

namespace tensorc::rt {

using bundle::BufferDesc;
using bundle::BufferKind;
using bundle::Launch;
using bundle::LaunchKind;
using bundle::Manifest;

namespace {

constexpr size_t kArenaAlignment = 64;

struct FreeDeleter {
  void operator()(void *memory) const { std::free(memory); }
};

} // namespace

struct Model::Impl {
  Manifest manifest;
  std::string bundleDir; // the directory, or the model library for an embedded bundle
  const bundle::EmbeddedBundle *embedded = nullptr; // set: the files are in this image
  std::string variant;
  std::shared_ptr<MappedFile> weightFile; // the mapped weights.safetensors the weights view
  std::unique_ptr<WeightSource> weights;
  std::unique_ptr<KernelLibrary> kernels;
  std::unique_ptr<CudaExecutor> cuda; // set when running on a GPU
  std::string cudaGraphs;             // on a GPU: "on", or "off (why)"
  std::unique_ptr<ThreadPool> pool;
  int64_t maxTensorBytes = kDefaultMaxTensorBytes;

  // Per buffer: the weight bytes (Weight buffers only).
  std::vector<const void *> weightData;
  std::vector<bool> usedBuffers; // per buffer id: an argument of some launch
  // Per launch: the resolved kernel (Kernel) or the parsed one-node graph (Extern).
  std::vector<bundle::TensorcKernelFn> kernelFns;
  std::unique_ptr<OpRegistry> registry; // outlives the graphs, which point into it
  std::vector<std::unique_ptr<Graph>> externGraphs;
  // Launch i's argument pointers are argPointers[argOffsets[i] ...].
  std::vector<size_t> argOffsets;

  // Reused across runs so the steady state allocates only the outputs.
  std::mutex runMutex;
  std::unique_ptr<void, FreeDeleter> arena;
  size_t arenaCapacity = 0;
  std::map<std::string, int64_t> bindings;
  std::vector<int64_t> symbolValues;
  std::vector<std::vector<int64_t>> bufferShapes;
  std::vector<void *> bufferPointers;
  std::vector<void *> argPointers;

  Profiler *profiler = nullptr;
  int64_t profileRun = 0;
  LaunchObserver *observer = nullptr;

  /// Checks the options and starts the thread pool.
  static Expected<std::unique_ptr<Impl>> create(const LoadOptions &options);

  /// `privateCopy`: read weights.safetensors into private memory on huge pages (loadBundleFile;
  /// models whose kernels run on the CPU) instead of mapping the file.
  Status loadWeights(bool privateCopy);
  Status loadKernels(const std::string &forcedVariant);
  Status loadExterns();
  /// Everything after the manifest: weights, kernels, externs and the per-run tables.
  static Expected<std::unique_ptr<Model>> finishLoad(std::unique_ptr<Impl> impl,
                                                     const LoadOptions &options);

  Status bindSymbols(const std::vector<Tensor> &inputs);
  /// Evaluates every buffer's shape and (with `hostMemory`) address for the bound symbols;
  /// allocates the outputs, or places them where `outputMemory` says (or, without
  /// `allocateOutputs`, gives them their shapes only).
  Status planBuffers(const std::vector<Tensor> &inputs, std::vector<Tensor> &outputs,
                     bool hostMemory = true, bool allocateOutputs = true,
                     const Model::OutputMemory *outputMemory = nullptr);
  Status ensureArena(size_t bytes);
  Status runLaunch(size_t index);
  /// runLaunch with the observer around it.
  Status observeLaunch(size_t index);
  Status runExtern(size_t index);
};

Status Model::Impl::loadWeights(bool privateCopy) {
  bool listed = manifest.findFile("weights.safetensors") != nullptr;
  if (embedded) {
    const bundle::EmbeddedFile *file = findEmbeddedFile(*embedded, "weights.safetensors");
    if (!file && listed)
      return makeError(bundleDir, ": the embedded bundle has no weights.safetensors");
    if (!file) {
      weights = emptyWeights();
    } else {
      std::string where = bundleDir + "[weights.safetensors]";
      TC_RETURN_IF_ERROR(
          verifyBundleFile(manifest, "weights.safetensors", file->data, size_t(file->size), where));
      TC_ASSIGN_OR_RETURN(weights, viewWeightBytes(file->data, size_t(file->size), where));
    }
  } else if (!listed) {
    weights = emptyWeights(); // the manifest's validation ensures nothing reads weights
  } else {
    std::string where = bundleDir + "/weights.safetensors";
    if (privateCopy) {
      TC_ASSIGN_OR_RETURN(weightFile, loadBundleFile(bundleDir, "weights.safetensors"));
    } else {
      TC_ASSIGN_OR_RETURN(weightFile, mapBundleFile(bundleDir, "weights.safetensors"));
    }
    TC_RETURN_IF_ERROR(verifyBundleFile(manifest, "weights.safetensors", weightFile->data,
                                        weightFile->size, where));
    TC_ASSIGN_OR_RETURN(weights, viewWeightBytes(weightFile->data, weightFile->size, where));
  }
  usedBuffers.assign(manifest.buffers.size(), false);
  for (const bundle::Launch &launch : manifest.launches)
    for (int64_t arg : launch.args)
      usedBuffers[size_t(arg)] = true;
  weightData.assign(manifest.buffers.size(), nullptr);
  for (const BufferDesc &buffer : manifest.buffers) {
    if (buffer.kind != BufferKind::Weight || !usedBuffers[size_t(buffer.id)])
      continue;
    std::string what = strCat("buffers[", buffer.id, "] '", buffer.name, "'");
    auto it = weights->tensors().find(buffer.weight);
    if (it == weights->tensors().end())
      return makeError(weights->origin(), ": no tensor '", buffer.weight, "' for ", what);
    const Tensor &tensor = it->second;
    std::vector<int64_t> shape;
    for (const bundle::SizeExpr &dim : buffer.shape) {
      std::optional<int64_t> value = dim.constantValue();
      if (!value)
        return makeError(what, ": weight dim '", dim.text(), "' is not a constant");
      shape.push_back(*value);
    }
    if (tensor.dtype() != buffer.dtype || tensor.shape() != shape)
      return makeError(weights->origin(), ": tensor '", buffer.weight, "' is ",
                       describeShape(tensor.dtype(), tensor.shape()), ", but ", what, " is ",
                       describeShape(buffer.dtype, shape));
    weightData[size_t(buffer.id)] = tensor.data();
  }
  return Status::ok();
}

Status Model::Impl::loadKernels(const std::string &forcedVariant) {
  kernelFns.assign(manifest.launches.size(), nullptr);
  bool anyKernel = false;
  for (const Launch &launch : manifest.launches)
    anyKernel |= launch.kind == LaunchKind::Kernel;
  if (!anyKernel)
    return Status::ok();
  TC_ASSIGN_OR_RETURN(const bundle::CpuVariant *chosen,
                      selectCpuVariant(manifest.cpu, hostCpu(), forcedVariant));
  variant = chosen->name;
  // The verified bytes are what gets loaded (from memory): nothing can swap the file between
  // the check and dlopen.
  std::string origin;
  if (embedded) {
    origin = bundleDir + "[" + chosen->file + "]";
    const bundle::EmbeddedFile *file = findEmbeddedFile(*embedded, chosen->file);
    if (!file)
      return makeError(bundleDir, ": the embedded bundle has no ", chosen->file);
    TC_RETURN_IF_ERROR(
        verifyBundleFile(manifest, chosen->file, file->data, size_t(file->size), origin));
    TC_ASSIGN_OR_RETURN(kernels, openKernelBytes(file->data, size_t(file->size), origin));
  } else {
    origin = bundleDir + "/" + chosen->file;
    TC_ASSIGN_OR_RETURN(std::string bytes, readBundleFile(bundleDir, manifest, chosen->file));
    TC_ASSIGN_OR_RETURN(kernels, openKernelBytes(bytes.data(), bytes.size(), origin));
  }
  // The manifest must describe the plan these kernels were compiled for: argument counts,
  // buffer dtypes and shapes, ranges.
  TC_ASSIGN_OR_RETURN(std::string_view table,
                      kernels->lookupString(bundle::kKernelSignatureSymbol));
  TC_RETURN_IF_ERROR(bundle::checkKernelSignatures(manifest, table, origin, /*cuda=*/false));
  // Resolve every symbol now: a bundle missing one fails at load, not halfway through a run.
  for (size_t i = 0; i < manifest.launches.size(); ++i) {
    if (manifest.launches[i].kind != LaunchKind::Kernel)
      continue;
    Expected<bundle::TensorcKernelFn> fn = kernels->lookup(manifest.launches[i].name);
    if (!fn)
      return fn.takeError().withContext(launchLabel(manifest, i));
    kernelFns[i] = *fn;
  }
  return Status::ok();
}

Status Model::Impl::loadExterns() {
  externGraphs.resize(manifest.launches.size());
  for (size_t i = 0; i < manifest.launches.size(); ++i) {
    const Launch &launch = manifest.launches[i];
    if (launch.kind != LaunchKind::Extern)
      continue;
    if (!registry) {
      TC_ASSIGN_OR_RETURN(OpRegistry built, ops::buildCoreRegistry());
      registry = std::make_unique<OpRegistry>(std::move(built));
    }
    std::string label = launchLabel(manifest, i);
    Expected<Graph> graph = fx::parseFx(launch.graph, *registry, label + " graph");
    if (!graph)
      return graph.takeError();
    std::vector<Value *> inputs = graph->userInputs();
    size_t arity = inputs.size() + graph->outputs().size();
    if (arity != launch.args.size())
      return makeError(label, ": its graph has ", inputs.size(), " inputs and ",
                       graph->outputs().size(), " outputs, but the launch passes ",
                       launch.args.size(), " buffers");
    for (size_t a = 0; a < launch.args.size(); ++a) {
      const Value *value = a < inputs.size() ? inputs[a] : graph->outputs()[a - inputs.size()];
      const BufferDesc &buffer = manifest.buffers[size_t(launch.args[a])];
      if (value->type().dtype != buffer.dtype || value->type().shape.size() != buffer.shape.size())
        return makeError(label, ": graph value %", value->name(), " is ", value->type().str(),
                         ", but buffer '", buffer.name, "' is ", dtypeName(buffer.dtype),
                         shapeText(buffer.shape));
    }
    externGraphs[i] = std::make_unique<Graph>(std::move(graph).value());
  }
  return Status::ok();
}

Expected<std::unique_ptr<Model::Impl>> Model::Impl::create(const LoadOptions &options) {
  if (options.threads < 0 || options.threads > kMaxThreads)
    return makeError("threads must be 0 (one per core) or 1 to ", kMaxThreads, ", got ",
                     options.threads);
  auto impl = std::make_unique<Impl>();
  TC_ASSIGN_OR_RETURN(impl->maxTensorBytes, resolveMaxTensorBytes(options.maxTensorBytes));
  try {
    impl->pool = std::make_unique<ThreadPool>(options.threads);
  } catch (const std::system_error &error) {
    return makeError("cannot start ", options.threads, " threads: ", error.what());
  }
  return impl;
}

Expected<std::unique_ptr<Model>> Model::load(const std::string &bundleDir,
                                             const LoadOptions &options) {
  TC_ASSIGN_OR_RETURN(std::unique_ptr<Impl> impl, Impl::create(options));
  TC_ASSIGN_OR_RETURN(Manifest manifest, readManifest(bundleDir));
  impl->manifest = std::move(manifest);
  impl->bundleDir = bundleDir;
  return Impl::finishLoad(std::move(impl), options);
}

Expected<std::unique_ptr<Model>> Model::loadEmbedded(const LoadOptions &options) {
  TC_ASSIGN_OR_RETURN(std::unique_ptr<Impl> impl, Impl::create(options));
  // Weak: null unless this runtime was linked into a model library by `--emit=so`.
  if (!tensorc_embedded_bundle)
    return makeError("this program embeds no model (only libraries built by `tensorc compile "
                     "--emit=so` do); pass a bundle directory");
  const bundle::EmbeddedBundle *embedded = tensorc_embedded_bundle();
  std::string library = embeddedLibraryName();
  if (!embedded || embedded->version != bundle::kEmbeddedBundleVersion)
    return makeError(library, ": embedded bundle format ", embedded ? embedded->version : 0,
                     " is not the runtime's ", bundle::kEmbeddedBundleVersion);
  const bundle::EmbeddedFile *manifestFile = findEmbeddedFile(*embedded, "manifest.json");
  if (!manifestFile)
    return makeError(library, ": the embedded bundle has no manifest.json");
  TC_ASSIGN_OR_RETURN(Manifest manifest,
                      parseManifest(std::string_view(static_cast<const char *>(manifestFile->data),
                                                     size_t(manifestFile->size)),
                                    library + "[manifest.json]"));
  impl->manifest = std::move(manifest);
  impl->bundleDir = library;
  impl->embedded = embedded;
  return Impl::finishLoad(std::move(impl), options);
}

Expected<std::unique_ptr<Model>> Model::Impl::finishLoad(std::unique_ptr<Impl> impl,
                                                         const LoadOptions &options) {
  // CPU kernels stream the weights (at batch 1 most of their bytes): on huge pages, unless
  // TENSORC_WEIGHTS=mmap asks for the shared file mapping (processes running one bundle then
  // share one copy in the page cache).
  const char *weightsMode = std::getenv("TENSORC_WEIGHTS");
  bool mapWeights = weightsMode && std::string_view(weightsMode) == "mmap";
  TC_RETURN_IF_ERROR(impl->loadWeights(options.device != "cuda" && !mapWeights));
  if (options.device == "cuda") {
    if (impl->embedded)
      return makeError(impl->bundleDir, ": model libraries hold CPU kernels only; run a bundle "
                                        "directory on the GPU");
    TC_RETURN_IF_ERROR(impl->loadExterns());
    CudaExecutor::Options cudaOptions;
    cudaOptions.gemmLibraries = options.gemmLibraries;
    cudaOptions.device = options.cudaDevice;
    cudaOptions.graphs =
        options.cudaGraphs < 0 ? impl->manifest.cudaGraphs : options.cudaGraphs != 0;
    std::string blocker = CudaExecutor::graphBlocker(impl->manifest);
    impl->cudaGraphs = !cudaOptions.graphs
                           ? (options.cudaGraphs == 0 ? "off (--cuda-graphs off)"
                                                      : "off (compiled without -O reduce-overhead; "
                                                        "--cuda-graphs on replays one anyway)")
                       : !blocker.empty()
                           ? "off (" + blocker + ")"
                           : "on (the launch list is captured once per shape, then replayed)";
    std::string dir = impl->bundleDir;
    const Manifest &manifest = impl->manifest;
    auto readImage = [dir, &manifest](const std::string &file) {
      return readBundleFile(dir, manifest, file);
    };
    Expected<std::unique_ptr<CudaExecutor>> executor =
        CudaExecutor::create(impl->manifest, readImage, impl->weightData, impl->usedBuffers,
                             impl->externGraphs, cudaOptions);
    if (!executor)
      return executor.takeError().withContext(impl->bundleDir);
    impl->cuda = std::move(*executor);
  } else if (options.device == "cpu") {
    TC_RETURN_IF_ERROR(impl->loadKernels(options.variant));
    TC_RETURN_IF_ERROR(impl->loadExterns());
  } else {
    return makeError("unknown device '", options.device, "' (expected cpu or cuda)");
  }

  const Manifest &m = impl->manifest;
  size_t totalArgs = 0;
  for (const Launch &launch : m.launches) {
    impl->argOffsets.push_back(totalArgs);
    totalArgs += launch.args.size();
  }
  impl->argPointers.assign(totalArgs, nullptr);
  impl->bufferShapes.resize(m.buffers.size());
  impl->bufferPointers.assign(m.buffers.size(), nullptr);
  impl->symbolValues.assign(m.symbols.size(), 0);
  return std::unique_ptr<Model>(new Model(std::move(impl)));
}

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::~Model() = default;

Expected<std::vector<double>> Model::time(const std::vector<Tensor> &inputs, int64_t iterations) {
  Impl &impl = *impl_;
  if (impl.cuda) {
    TC_RETURN_IF_ERROR(run(inputs).status()); // uploads the inputs the timed launches reuse
    std::lock_guard<std::mutex> lock(impl.runMutex);
    // A profiled run captures no graph (it times each launch), so profiled timing launches one
    // by one too.
    return impl.cuda->timeLaunches(impl.bindings, impl.symbolValues, impl.bufferShapes, iterations,
                                   /*replay=*/!impl.profiler);
  }
  std::vector<double> times;
  for (int64_t i = 0; i < iterations; ++i) {
    auto start = std::chrono::steady_clock::now();
    TC_RETURN_IF_ERROR(run(inputs).status());
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  return times;
}

Expected<int> cudaDeviceCount() {
  TC_ASSIGN_OR_RETURN(const cu::Driver *driver, cu::driver());
  int count = 0;
  TC_RETURN_IF_ERROR(driver->check(driver->deviceGetCount(&count), "cuDeviceGetCount"));
  return count;
}

Expected<std::vector<Model::GemmTiming>>
Model::tuneGemms(const std::vector<Tensor> &inputs, int64_t iterations, int64_t algorithms,
                 double margin, const std::function<bool(size_t)> &wanted) {
  Impl &impl = *impl_;
  if (!impl.cuda)
    return makeError("tuning GEMMs needs the model on a GPU (--device cuda)");
  TC_RETURN_IF_ERROR(run(inputs).status()); // binds the shapes and places the buffers
  std::lock_guard<std::mutex> lock(impl.runMutex);
  return impl.cuda->tuneGemms(impl.bindings, impl.symbolValues, impl.bufferShapes, iterations,
                              algorithms, margin, wanted);
}

std::string Model::cudaArch() const { return impl_->cuda ? impl_->cuda->arch() : std::string(); }
const std::map<std::string, int64_t> &Model::symbolBindings() const { return impl_->bindings; }

std::string Model::gemmLibrary() const {
  return impl_->cuda ? impl_->cuda->gemmLibrary() : std::string();
}

Expected<Tensor> Model::weight(const std::string &name) const {
  auto it = impl_->weights->tensors().find(name);
  if (it == impl_->weights->tensors().end())
    return makeError(impl_->weights->origin(), ": no tensor '", name, "'");
  return it->second;
}

const Manifest &Model::manifest() const { return impl_->manifest; }
const std::string &Model::variant() const { return impl_->variant; }
std::string Model::deviceDescription() const {
  return impl_->cuda ? impl_->cuda->description() : "cpu";
}
const std::string &Model::cudaGraphs() const { return impl_->cudaGraphs; }
void *Model::cudaStream() const { return impl_->cuda ? impl_->cuda->ownStream() : nullptr; }
int Model::numThreads() const { return impl_->pool->numThreads(); }
size_t Model::arenaCapacity() const { return impl_->arenaCapacity; }

Status Model::Impl::bindSymbols(const std::vector<Tensor> &inputs) {
  const Manifest &m = manifest;
  if (inputs.size() != m.inputs.size())
    return makeError("expected ", m.inputs.size(), " inputs, got ", inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const bundle::TensorDesc &desc = m.inputs[i];
    const Tensor &input = inputs[i];
    if (input.dtype() != desc.dtype || input.rank() != desc.shape.size())
      return makeError("input '", desc.name, "' is ", describeShape(input.dtype(), input.shape()),
                       ", expected ", dtypeName(desc.dtype), shapeText(desc.shape));
    if (!input.defined())
      return makeError("input '", desc.name, "' has no data");
  }

  // Plain-symbol dims bind; the first input to bind a symbol is the one messages blame.
  bindings.clear();
  std::map<std::string, std::string> boundBy;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const bundle::TensorDesc &desc = m.inputs[i];
    for (size_t d = 0; d < desc.shape.size(); ++d) {
      std::optional<std::string> symbol = desc.shape[d].symbolName();
      if (!symbol)
        continue;
      int64_t size = inputs[i].dim(d);
      auto [it, inserted] = bindings.emplace(*symbol, size);
      if (inserted) {
        boundBy[*symbol] = desc.name;
      } else if (it->second != size) {
        return makeError("input '", desc.name, "' dim ", d, " is ", size, ", but ", *symbol,
                         " is already ", it->second, " from input '", boundBy[*symbol], "'");
      }
    }
  }
  for (size_t s = 0; s < m.symbols.size(); ++s) {
    auto it = bindings.find(m.symbols[s]);
    if (it == bindings.end())
      return makeError("symbol '", m.symbols[s], "' is not the size of any input dim");
    symbolValues[s] = it->second;
  }

  // Every dim, symbolic or not, must now equal its expression.
  for (size_t i = 0; i < inputs.size(); ++i) {
    const bundle::TensorDesc &desc = m.inputs[i];
    for (size_t d = 0; d < desc.shape.size(); ++d) {
      Expected<int64_t> expected = desc.shape[d].evaluate(bindings);
      if (!expected)
        return expected.takeError().withContext(strCat("input '", desc.name, "' dim ", d));
      if (inputs[i].dim(d) != *expected) {
        std::string what = desc.shape[d].constantValue()
                               ? std::to_string(*expected)
                               : strCat(desc.shape[d].text(), " = ", *expected);
        return makeError("input '", desc.name, "' dim ", d, " is ", inputs[i].dim(d), ", expected ",
                         what);
      }
    }
  }
  for (const Manifest::Guard &guard : m.guards) {
    TC_ASSIGN_OR_RETURN(int64_t lhs, guard.lhs.evaluate(bindings));
    TC_ASSIGN_OR_RETURN(int64_t rhs, guard.rhs.evaluate(bindings));
    if (lhs != rhs)
      return makeError(guard.message, " (", guard.lhs.text(), " is ", lhs, ", expected ", rhs, ")");
  }
  return Status::ok();
}

Status Model::Impl::planBuffers(const std::vector<Tensor> &inputs, std::vector<Tensor> &outputs,
                                bool hostMemory, bool allocateOutputs,
                                const Model::OutputMemory *outputMemory) {
  const Manifest &m = manifest;
  // Every size first, each within the tensor size limit: nothing is allocated for a run that
  // would ask for more (a 150-byte model can declare a pad of 2^31 elements).
  std::vector<std::vector<int64_t>> outputShapes(m.outputs.size());
  // Messages name what they are about only when there is one to give: every run comes here.
  auto bufferName = [](const BufferDesc &buffer) {
    return strCat("buffers[", buffer.id, "] '", buffer.name, "'");
  };
  for (size_t o = 0; o < m.outputs.size(); ++o) {
    auto what = [&] { return "output '" + m.outputs[o].name + "'"; };
    for (const bundle::SizeExpr &dim : m.outputs[o].shape) {
      Expected<int64_t> value = dim.evaluate(bindings);
      if (!value)
        return value.takeError().withContext(what());
      outputShapes[o].push_back(*value);
    }
    TC_RETURN_IF_ERROR(
        checkTensorBytesLazily(m.outputs[o].dtype, outputShapes[o], maxTensorBytes, what));
  }
  for (const BufferDesc &buffer : m.buffers) {
    // A buffer no launch touches (a GEMM result its epilogue replaced) gets no memory.
    if (!usedBuffers[size_t(buffer.id)])
      continue;
    auto what = [&] { return bufferName(buffer); };
    std::vector<int64_t> &shape = bufferShapes[size_t(buffer.id)];
    shape.resize(buffer.shape.size());
    for (size_t d = 0; d < buffer.shape.size(); ++d) {
      Expected<int64_t> value = buffer.shape[d].evaluate(bindings);
      if (!value)
        return value.takeError().withContext(what());
      shape[d] = *value;
    }
    TC_RETURN_IF_ERROR(checkTensorBytesLazily(buffer.dtype, shape, maxTensorBytes, what));
  }
  TC_ASSIGN_OR_RETURN(int64_t arenaBytes, m.arenaBytes.evaluate(bindings));
  if (arenaBytes < 0)
    return makeError("arena_bytes '", m.arenaBytes.text(), "' is ", arenaBytes);
  if (hostMemory)
    TC_RETURN_IF_ERROR(ensureArena(size_t(arenaBytes)));
  char *arenaBase = static_cast<char *>(arena.get());

  outputs.clear();
  outputs.resize(m.outputs.size());
  for (size_t o = 0; o < m.outputs.size(); ++o) {
    if (!allocateOutputs) {
      outputs[o] = Tensor::view(m.outputs[o].dtype, std::move(outputShapes[o]), nullptr, nullptr);
      continue;
    }
    if (outputMemory) {
      TC_ASSIGN_OR_RETURN(void *memory, (*outputMemory)(o, m.outputs[o].dtype, outputShapes[o]));
      if (memory) {
        outputs[o] = Tensor::view(m.outputs[o].dtype, std::move(outputShapes[o]), nullptr, memory);
        continue;
      }
    }
    // Not zeroed: the launches write every element (a memset of a 25 MB logits output took the
    // calling thread milliseconds while the kernels' threads waited).
    Expected<Tensor> tensor = Tensor::uninitialized(m.outputs[o].dtype, outputShapes[o]);
    if (!tensor)
      return tensor.takeError().withContext("output '" + m.outputs[o].name + "'");
    outputs[o] = std::move(tensor).value();
  }

  for (const BufferDesc &buffer : m.buffers) {
    if (!usedBuffers[size_t(buffer.id)])
      continue;
    auto what = [&] { return bufferName(buffer); };
    const std::vector<int64_t> &shape = bufferShapes[size_t(buffer.id)];
    TC_ASSIGN_OR_RETURN(int64_t numel, checkedNumelLazily(shape, what));
    const Tensor *user = buffer.kind == BufferKind::Input    ? &inputs[size_t(buffer.index)]
                         : buffer.kind == BufferKind::Output ? &outputs[size_t(buffer.index)]
                                                             : nullptr;
    if (user && user->numel() != numel)
      return makeError(what(), ": ", describeShape(buffer.dtype, shape), " does not match ",
                       bundle::bufferKindName(buffer.kind), " ",
                       describeShape(user->dtype(), user->shape()));
    if (!hostMemory)
      continue;
    void *&pointer = bufferPointers[size_t(buffer.id)];
    switch (buffer.kind) {
    case BufferKind::Input:
      // Kernels take void*, but the plan never writes an input buffer.
      pointer = const_cast<void *>(user->data());
      break;
    case BufferKind::Output:
      pointer = outputs[size_t(buffer.index)].mutableData();
      break;
    case BufferKind::Weight:
      pointer = const_cast<void *>(weightData[size_t(buffer.id)]);
      break;
    case BufferKind::Arena: {
      TC_ASSIGN_OR_RETURN(int64_t offset, buffer.offset.evaluate(bindings));
      int64_t bytes = 0, end = 0;
      if (__builtin_mul_overflow(numel, int64_t(dtypeSize(buffer.dtype)), &bytes) ||
          __builtin_add_overflow(offset, bytes, &end))
        return makeError(what(), ": byte size overflows");
      if (offset < 0 || end > arenaBytes || offset % int64_t(dtypeSize(buffer.dtype)) != 0)
        return makeError(what(), ": bytes [", offset, ", ", end, ") do not fit an arena of ",
                         arenaBytes, " bytes aligned for ", dtypeName(buffer.dtype));
      pointer = arenaBase + offset;
      break;
    }
    }
  }
  return Status::ok();
}

Status Model::Impl::ensureArena(size_t bytes) {
  if (bytes <= arenaCapacity)
    return Status::ok();
  // Grow only: a smaller run reuses the larger arena without reallocating.
  // An arena of 2 MiB or more in whole huge pages, advised as such: a convolution's output of a
  // few MiB is then written through a few TLB entries, not hundreds (ResNet-50's 7x7 stem, 3.2 MB
  // of NHWC output, ran 5% faster so on a 2-core VM).
  size_t alignment = bytes >= kHugePageBytes ? kHugePageBytes : kArenaAlignment;
  size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  void *memory = std::aligned_alloc(alignment, rounded);
  if (!memory)
    return makeError("cannot allocate a scratch arena of ", rounded, " bytes");
  if (alignment == kHugePageBytes)
    ::madvise(memory, rounded, MADV_HUGEPAGE); // advice: plain memory where it is not taken
  arena.reset(memory);
  arenaCapacity = rounded;
  return Status::ok();
}

Status Model::Impl::runExtern(size_t index) {
  const Launch &launch = manifest.launches[index];
  const Graph &graph = *externGraphs[index];
  size_t numInputs = graph.userInputs().size();
  std::vector<Tensor> inputs;
  inputs.reserve(numInputs);
  for (size_t a = 0; a < numInputs; ++a) {
    size_t id = size_t(launch.args[a]);
    inputs.push_back(
        Tensor::view(manifest.buffers[id].dtype, bufferShapes[id], nullptr, bufferPointers[id]));
  }
  Expected<std::vector<Tensor>> results =
      interp::interpret(graph, inputs, bindings, maxTensorBytes);
  if (!results)
    return results.takeError().withContext(launchLabel(manifest, index));
  for (size_t r = 0; r < results->size(); ++r) {
    size_t id = size_t(launch.args[numInputs + r]);
    const Tensor &result = (*results)[r];
    const BufferDesc &buffer = manifest.buffers[id];
    if (result.dtype() != buffer.dtype || result.shape() != bufferShapes[id])
      return makeError(launchLabel(manifest, index), ": result ", r, " is ",
                       describeShape(result.dtype(), result.shape()), ", but buffer '", buffer.name,
                       "' is ", describeShape(buffer.dtype, bufferShapes[id]));
    // memmove: a result may be a view of an input that shares the output's bytes.
    if (result.nbytes() != 0)
      std::memmove(bufferPointers[id], result.data(), result.nbytes());
  }
  return Status::ok();
}

Status Model::Impl::runLaunch(size_t index) {
  const Launch &launch = manifest.launches[index];
  if (profiler && launch.kind != LaunchKind::Kernel) {
    // Externs and copies run on the calling thread: one event each.
    Profiler *p = profiler;
    double start = p->nowUs();
    profiler = nullptr;
    Status status = runLaunch(index);
    profiler = p;
    p->add({profileRun, index, p->threadIndex(), 0, 1, start, p->nowUs() - start});
    return status;
  }
  switch (launch.kind) {
  case LaunchKind::Kernel: {
    Expected<int64_t> range = launch.range.evaluate(bindings);
    if (!range)
      return range.takeError().withContext(launchLabel(manifest, index) + " range");
    if (*range < 0)
      return makeError(launchLabel(manifest, index), ": range '", launch.range.text(), "' is ",
                       *range);
    void *const *args = argPointers.data() + argOffsets[index];
    const int64_t *syms = symbolValues.data();
    bundle::TensorcKernelFn fn = kernelFns[index];
    if (profiler) {
      Profiler *p = profiler;
      int64_t run = profileRun;
      auto timed = [fn, args, syms, p, run, index](int64_t begin, int64_t end) {
        double start = p->nowUs();
        fn(args, syms, begin, end);
        p->add({run, index, p->threadIndex(), begin, end, start, p->nowUs() - start});
      };
      pool->parallelFor(*range, launch.grain, timed);
      return Status::ok();
    }
    auto body = [fn, args, syms](int64_t begin, int64_t end) { fn(args, syms, begin, end); };
    pool->parallelFor(*range, launch.grain, body);
    return Status::ok();
  }
  case LaunchKind::Extern:
    return runExtern(index);
  case LaunchKind::Copy: {
    size_t from = size_t(launch.args[0]), to = size_t(launch.args[1]);
    TC_ASSIGN_OR_RETURN(int64_t fromElements, checkedNumel(bufferShapes[from], "copy source"));
    TC_ASSIGN_OR_RETURN(int64_t toElements, checkedNumel(bufferShapes[to], "copy target"));
    if (fromElements != toElements)
      return makeError(launchLabel(manifest, index), ": copies ", fromElements,
                       " elements into a buffer of ", toElements);
    size_t bytes = size_t(fromElements) * dtypeSize(manifest.buffers[from].dtype);
    if (bytes != 0)
      std::memmove(bufferPointers[to], bufferPointers[from], bytes);
    return Status::ok();
  }
  }
  return Status::ok();
}

namespace {

/// The CPU's buffers: host memory planned for this run.
class HostBuffers : public BufferAccess {
public:
  HostBuffers(const Manifest &manifest, const std::vector<std::vector<int64_t>> &shapes,
              const std::vector<void *> &pointers)
      : manifest_(manifest), shapes_(shapes), pointers_(pointers) {}

  Expected<Tensor> read(int64_t id) override {
    TC_RETURN_IF_ERROR(check(id));
    TC_ASSIGN_OR_RETURN(Tensor copy,
                        Tensor::zeros(manifest_.buffers[size_t(id)].dtype, shapes_[size_t(id)]));
    if (copy.nbytes())
      std::memcpy(copy.mutableData(), pointers_[size_t(id)], copy.nbytes());
    return copy;
  }

  Status write(int64_t id, const Tensor &value) override {
    TC_RETURN_IF_ERROR(check(id));
    const BufferDesc &buffer = manifest_.buffers[size_t(id)];
    if (buffer.kind == BufferKind::Input || buffer.kind == BufferKind::Weight)
      return makeError("buffers[", id, "] '", buffer.name, "' is read-only");
    TC_ASSIGN_OR_RETURN(int64_t numel, checkedNumel(shapes_[size_t(id)], buffer.name));
    if (value.dtype() != buffer.dtype || value.numel() != numel)
      return makeError("buffers[", id, "] '", buffer.name, "' is ",
                       describeShape(buffer.dtype, shapes_[size_t(id)]), ", not ",
                       describeShape(value.dtype(), value.shape()));
    if (value.nbytes())
      std::memcpy(pointers_[size_t(id)], value.data(), value.nbytes());
    return Status::ok();
  }

private:
  Status check(int64_t id) const {
    if (id < 0 || size_t(id) >= manifest_.buffers.size())
      return makeError("no buffer ", id);
    // An empty buffer may have no memory at all.
    bool empty = false;
    for (int64_t dim : shapes_[size_t(id)])
      empty |= dim == 0;
    if (!pointers_[size_t(id)] && !empty)
      return makeError("buffer ", id, " has no memory in this run");
    return Status::ok();
  }
  const Manifest &manifest_;
  const std::vector<std::vector<int64_t>> &shapes_;
  const std::vector<void *> &pointers_;
};

} // namespace

Status Model::Impl::observeLaunch(size_t index) {
  if (!observer)
    return runLaunch(index);
  HostBuffers buffers(manifest, bufferShapes, bufferPointers);
  TC_RETURN_IF_ERROR(observer->beforeLaunch(index, buffers));
  TC_RETURN_IF_ERROR(runLaunch(index));
  return observer->afterLaunch(index, buffers);
}

void Model::setLaunchObserver(LaunchObserver *observer) {
  std::lock_guard<std::mutex> lock(impl_->runMutex);
  impl_->observer = observer;
  if (impl_->cuda)
    impl_->cuda->setLaunchObserver(observer);
}

Expected<std::vector<Tensor>> Model::run(const std::vector<Tensor> &inputs) {
  return run(inputs, nullptr);
}

Expected<std::vector<Tensor>> Model::run(const std::vector<Tensor> &inputs, void *cudaStream) {
  return run(inputs, cudaStream, OutputMemory());
}

Expected<std::vector<Tensor>> Model::run(const std::vector<Tensor> &inputs, void *cudaStream,
                                         const OutputMemory &memory) {
  Impl &impl = *impl_;
  if (cudaStream && !impl.cuda)
    return makeError("a CUDA stream was given, but the model runs on the CPU");
  std::lock_guard<std::mutex> lock(impl.runMutex);
  const OutputMemory *outputMemory = memory ? &memory : nullptr;
  TC_RETURN_IF_ERROR(impl.bindSymbols(inputs));
  std::vector<Tensor> outputs;
  if (impl.profiler)
    impl.profileRun = impl.profiler->beginRun(impl.bindings);
  if (impl.cuda) {
    TC_RETURN_IF_ERROR(impl.planBuffers(inputs, outputs, /*hostMemory=*/false,
                                        /*allocateOutputs=*/true, outputMemory));
    impl.cuda->profileRuns(impl.profiler, impl.profileRun);
    Status ran = impl.cuda->run(impl.bindings, impl.symbolValues, impl.bufferShapes, inputs,
                                outputs, static_cast<cu::Stream>(cudaStream));
    impl.cuda->profileRuns(nullptr, 0); // Model::time's device-only launches are not profiled
    TC_RETURN_IF_ERROR(ran);
    if (impl.profiler)
      impl.profiler->endRun(impl.profileRun);
    return outputs;
  }
  TC_RETURN_IF_ERROR(impl.planBuffers(inputs, outputs, /*hostMemory=*/true,
                                      /*allocateOutputs=*/true, outputMemory));
  for (size_t i = 0; i < impl.manifest.launches.size(); ++i) {
    const Launch &launch = impl.manifest.launches[i];
    for (size_t a = 0; a < launch.args.size(); ++a)
      impl.argPointers[impl.argOffsets[i] + a] = impl.bufferPointers[size_t(launch.args[a])];
  }
  if (impl.profiler)
    impl.profiler->threadIndex(); // the calling thread is thread 0 of the trace
  for (size_t i = 0; i < impl.manifest.launches.size(); ++i)
    TC_RETURN_IF_ERROR(impl.observeLaunch(i));
  if (impl.profiler)
    impl.profiler->endRun(impl.profileRun);
  return outputs;
}

void Model::setProfiler(Profiler *profiler) {
  std::lock_guard<std::mutex> lock(impl_->runMutex);
  impl_->profiler = profiler;
  if (profiler)
    profiler->setDevice(impl_->cuda ? impl_->cuda->description()
                                    : strCat("cpu (",
                                             impl_->variant.empty() ? "no kernels" : impl_->variant,
                                             ", ", impl_->pool->numThreads(), " threads)"));
}

Expected<MachinePeaks> Model::peaks() const {
  if (impl_->cuda)
    return impl_->cuda->peaks();
  return measureCpuPeaks(impl_->pool->numThreads());
}

Expected<std::vector<DeviceTensor>> Model::runOnDevice(const std::vector<DeviceTensor> &inputs,
                                                       void *cudaStream) {
  Impl &impl = *impl_;
  if (!impl.cuda)
    return makeError("the model runs on the CPU: device-resident inputs need a model loaded on a "
                     "CUDA device");
  // The checks read dtypes and shapes only: views whose data is the device address.
  std::vector<Tensor> views;
  std::vector<cu::DevicePtr> addresses;
  for (const DeviceTensor &input : inputs) {
    views.push_back(Tensor::view(input.dtype, input.shape, nullptr,
                                 reinterpret_cast<const void *>(uintptr_t(input.address))));
    addresses.push_back(input.address);
  }
  std::lock_guard<std::mutex> lock(impl.runMutex);
  TC_RETURN_IF_ERROR(impl.bindSymbols(views));
  std::vector<Tensor> shapes;
  TC_RETURN_IF_ERROR(
      impl.planBuffers(views, shapes, /*hostMemory=*/false, /*allocateOutputs=*/false));
  std::vector<DeviceTensor> outputs(shapes.size());
  std::vector<cu::DevicePtr> outputAddresses(shapes.size(), 0);
  for (size_t o = 0; o < shapes.size(); ++o) {
    outputs[o].dtype = shapes[o].dtype();
    outputs[o].shape = shapes[o].shape();
    TC_ASSIGN_OR_RETURN(outputs[o].owner,
                        impl.cuda->allocate(shapes[o].nbytes(), &outputAddresses[o],
                                            "output '" + impl.manifest.outputs[o].name + "'"));
    outputs[o].address = outputAddresses[o];
  }
  TC_RETURN_IF_ERROR(impl.cuda->runOnDevice(impl.bindings, impl.symbolValues, impl.bufferShapes,
                                            addresses, outputAddresses,
                                            static_cast<cu::Stream>(cudaStream)));
  return outputs;
}

} // namespace tensorc::rt
