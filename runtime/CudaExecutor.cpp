// The CUDA executor: module image choice, device memory, kernel launches and CUDA-graph replay.
#include "CudaExecutor.h"

#include "tensorc/Interp/Interpreter.h"
#include "tensorc/Runtime/Tune.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>

namespace tensorc::rt {

using bundle::BufferDesc;
using bundle::BufferKind;
using bundle::Launch;
using bundle::LaunchKind;
using bundle::Manifest;

namespace {

constexpr size_t kAlignment = 256;

std::string label(const Manifest &manifest, size_t index) {
  const Launch &launch = manifest.launches[index];
  return strCat("launches[", index, "] (", bundle::launchKindName(launch.kind), " ", launch.name,
                ")");
}

Expected<size_t> byteSize(const std::vector<int64_t> &shape, DType dtype, const std::string &what) {
  int64_t bytes = int64_t(dtypeSize(dtype));
  for (int64_t dim : shape)
    if (dim < 0 || __builtin_mul_overflow(bytes, dim, &bytes))
      return makeError(what, ": byte size overflows");
  return size_t(bytes);
}

} // namespace

Expected<std::unique_ptr<CudaExecutor>>
CudaExecutor::create(const Manifest &manifest, const FileReader &readFile,
                     const std::vector<const void *> &weights, const std::vector<bool> &usedBuffers,
                     const std::vector<std::unique_ptr<Graph>> &externGraphs,
                     const Options &options) {
  if (manifest.cuda.empty())
    return makeError("the bundle has no CUDA kernels (compile it with --target cuda)");
  TC_ASSIGN_OR_RETURN(const cu::Driver *driver, cu::driver());
  std::unique_ptr<CudaExecutor> self(new CudaExecutor());
  self->driver_ = driver;
  self->manifest_ = &manifest;
  self->externGraphs_ = &externGraphs;
  const cu::Driver &d = *driver;

  int count = 0;
  TC_RETURN_IF_ERROR(d.check(d.deviceGetCount(&count), "cuDeviceGetCount"));
  if (options.device < 0 || options.device >= count)
    return makeError("CUDA device ", options.device, " does not exist (", count,
                     " device(s) present)");
  TC_RETURN_IF_ERROR(d.check(d.deviceGet(&self->device_, options.device), "cuDeviceGet"));
  int major = 0, minor = 0;
  TC_RETURN_IF_ERROR(d.check(
      d.deviceGetAttribute(&major, cu::kAttrComputeCapabilityMajor, self->device_), "device arch"));
  TC_RETURN_IF_ERROR(d.check(
      d.deviceGetAttribute(&minor, cu::kAttrComputeCapabilityMinor, self->device_), "device arch"));
  char name[256] = {};
  d.deviceGetName(name, int(sizeof name) - 1, self->device_);
  int deviceArch = major * 10 + minor;
  TC_RETURN_IF_ERROR(d.check(
      d.deviceGetAttribute(&self->smCount_, cu::kAttrMultiprocessorCount, self->device_),
      "device SM count"));
  std::string deviceArchName = strCat("sm_", deviceArch);
  self->arch_ = deviceArchName;

  // The same image (cubin of one arch, or PTX) of every module the kernels are split over.
  TC_ASSIGN_OR_RETURN(std::vector<const bundle::CudaImage *> images,
                      bundle::chooseCudaImages(manifest, major, minor,
                                               strCat("device ", options.device, " (", name, ")")));
  const bundle::CudaImage *chosen = images.front();
  self->description_ =
      strCat(name, " (", deviceArchName, ", ", chosen->ptx ? "PTX " : "cubin ", chosen->arch,
             images.size() > 1 ? strCat(", ", images.size(), " modules") : std::string(), ")");

  TC_RETURN_IF_ERROR(
      d.check(d.primaryCtxRetain(&self->context_, self->device_), "cuDevicePrimaryCtxRetain"));
  TC_RETURN_IF_ERROR(d.check(d.ctxSetCurrent(self->context_), "cuCtxSetCurrent"));
  TC_RETURN_IF_ERROR(
      d.check(d.streamCreate(&self->ownStream_, cu::kStreamNonBlocking), "cuStreamCreate"));
  self->stream_ = self->ownStream_;
  // Modules with Hopper forms load their sm_90a cubin on a CC 9.0 device, unless the driver
  // cannot encode tensor maps or TENSORC_CUDA_HOPPER=0 (then every GEMM runs mma.sync).
  std::vector<bool> hopperModules(images.size(), false);
  const char *hopperEnv = std::getenv("TENSORC_CUDA_HOPPER");
  if (d.tensorMapEncodeTiled && !(hopperEnv && std::string(hopperEnv) == "0")) {
    std::vector<const bundle::CudaImage *> hopper =
        bundle::chooseHopperImages(manifest, major, minor);
    for (size_t m = 0; m < images.size() && m < hopper.size(); ++m)
      if (hopper[m]) {
        images[m] = hopper[m];
        hopperModules[m] = true;
      }
  }
  size_t hopperCount = size_t(std::count(hopperModules.begin(), hopperModules.end(), true));
  if (hopperCount)
    self->description_ +=
        strCat(", ", hopperCount, " ", bundle::kHopperArch, " module", hopperCount == 1 ? "" : "s");
  self->modules_.assign(images.size(), nullptr);
  for (size_t m = 0; m < images.size(); ++m) {
    TC_ASSIGN_OR_RETURN(std::string image, readFile(images[m]->file));
    TC_RETURN_IF_ERROR(d.check(d.moduleLoadData(&self->modules_[m], image.c_str()),
                               strCat("loading ", images[m]->file, " on ", deviceArchName)));
  }

  // Module 0's signature table (a __device__ byte array next to its kernels): the manifest must
  // describe the plan the kernels were compiled for.
  cu::DevicePtr tableAddress = 0;
  size_t tableBytes = 0;
  TC_RETURN_IF_ERROR(d.check(
      d.moduleGetGlobal(&tableAddress, &tableBytes, self->modules_[0],
                        bundle::kKernelSignatureSymbol),
      strCat(images[0]->file, ": no kernel signature table (", bundle::kKernelSignatureSymbol,
             ")")));
  std::string table(tableBytes, '\0');
  if (tableBytes)
    TC_RETURN_IF_ERROR(
        d.check(d.memcpyDtoHAsync(table.data(), tableAddress, tableBytes, self->stream_),
                "reading the kernel signature table"));
  TC_RETURN_IF_ERROR(d.check(d.streamSynchronize(self->stream_), "reading the kernel signatures"));
  table.resize(std::strlen(table.c_str()));
  TC_RETURN_IF_ERROR(
      bundle::checkKernelSignatures(manifest, table, images[0]->file, /*cuda=*/true));

  // Modules whose kernels order themselves after the previous kernel (griddepcontrol.wait).
  std::vector<bool> waits(images.size(), false);
  const char *pdl = std::getenv("TENSORC_CUDA_PDL");
  if (!(pdl && std::string(pdl) == "0"))
    for (size_t m = 0; m < images.size(); ++m) {
      cu::DevicePtr address = 0;
      size_t bytes = 0;
      waits[m] = d.moduleGetGlobal(&address, &bytes, self->modules_[m],
                                   bundle::kGridDependencySymbol) == cu::kSuccess;
    }

  // Each kernel from its own module (manifest validation keeps cudaModule in range), and a GEMM
  // launch's epilogue function beside it.
  self->functions_.assign(manifest.launches.size(), nullptr);
  self->dependentLaunch_.assign(manifest.launches.size(), false);
  self->hopper_.assign(manifest.launches.size(), false);
  self->epilogues_.assign(manifest.launches.size(), nullptr);
  int64_t libraryGemms = 0;
  for (size_t i = 0; i < manifest.launches.size(); ++i) {
    const Launch &launch = manifest.launches[i];
    if (launch.kind != LaunchKind::Kernel)
      continue;
    size_t module = size_t(launch.cudaModule);
    if (module >= images.size())
      return makeError(label(manifest, i), ": no CUDA module ", launch.cudaModule);
    std::string symbol = launch.cudaSymbol.empty() ? launch.name : launch.cudaSymbol;
    TC_RETURN_IF_ERROR(
        d.check(d.moduleGetFunction(&self->functions_[i], self->modules_[module], symbol.c_str()),
                label(manifest, i) + ": kernel not in " + images[module]->file));
    self->dependentLaunch_[i] = waits[module];
    self->hopper_[i] = launch.hopper && hopperModules[module];
    int64_t shared = self->hopper_[i] ? launch.hopper->sharedBytes : launch.cudaSharedBytes;
    // Dynamic shared memory is opted into once per function: the default limit of 48 KB counts
    // static and dynamic shared memory together, so a kernel with 48 KB of dynamic shared memory
    // and a static word (the split-K kernels' tk_last) fails to launch without it.
    constexpr int kMaxDynamicShared = 8; // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    if (shared > 0)
      TC_RETURN_IF_ERROR(d.check(
          d.funcSetAttribute(self->functions_[i], kMaxDynamicShared, int(shared)),
          label(manifest, i) + ": " + std::to_string(shared) + " bytes of dynamic shared memory"));
    if (!launch.gemm)
      continue;
    libraryGemms += launch.gemm->library == bundle::kCublasLt;
    if (launch.gemm->direct)
      continue;
    symbol += bundle::kGemmEpilogueSuffix;
    TC_RETURN_IF_ERROR(
        d.check(d.moduleGetFunction(&self->epilogues_[i], self->modules_[module], symbol.c_str()),
                label(manifest, i) + ": " + symbol + " not in " + images[module]->file));
  }

  // cuBLASLt where tuning chose it, unless turned off or not loadable: then the kernels run.
  self->useLibrary_.assign(manifest.launches.size(), false);
  if (libraryGemms > 0) {
    const char *libraryOff = std::getenv("TENSORC_GEMM_LIBRARY");
    // Why the kernels run instead, as the end of gemmLibrary_; empty: the library runs.
    std::string off = !options.gemmLibraries                         ? "; libraries off"
                      : libraryOff && std::string(libraryOff) == "0" ? "; TENSORC_GEMM_LIBRARY=0"
                                                                     : "";
    if (Status opened = off.empty() ? self->openLibrary() : Status::ok(); !opened)
      off = ", but " + opened.message();
    if (off.empty()) {
      for (size_t i = 0; i < manifest.launches.size(); ++i)
        self->useLibrary_[i] =
            manifest.launches[i].gemm && manifest.launches[i].gemm->library == bundle::kCublasLt;
      self->gemmLibrary_ =
          strCat("cuBLASLt for ", libraryGemms, " GEMMs (", self->blas_->file, ")");
    } else {
      self->gemmLibrary_ = strCat("generated kernels (the bundle chose cuBLASLt for ", libraryGemms,
                                  " GEMMs", off, ")");
    }
  }

  self->pointers_.assign(manifest.buffers.size(), 0);
  self->capacities_.assign(manifest.buffers.size(), 0);
  self->useGraphs_ = options.graphs && graphBlocker(manifest).empty();
  for (const BufferDesc &buffer : manifest.buffers) {
    if (buffer.kind != BufferKind::Weight || !usedBuffers[size_t(buffer.id)])
      continue;
    std::vector<int64_t> shape;
    for (const bundle::SizeExpr &dim : buffer.shape)
      shape.push_back(dim.constantValue().value_or(0));
    std::string what = strCat("weight '", buffer.name, "'");
    TC_ASSIGN_OR_RETURN(size_t bytes, byteSize(shape, buffer.dtype, what));
    TC_RETURN_IF_ERROR(self->ensure(self->pointers_[size_t(buffer.id)],
                                    self->capacities_[size_t(buffer.id)], bytes, what));
    if (bytes)
      TC_RETURN_IF_ERROR(
          d.check(d.memcpyHtoDAsync(self->pointers_[size_t(buffer.id)], weights[size_t(buffer.id)],
                                    bytes, self->stream_),
                  "uploading " + what));
  }
  TC_RETURN_IF_ERROR(d.check(d.streamSynchronize(self->stream_), "uploading weights"));
  return self;
}

// Extern fallbacks synchronize with the host, which a CUDA graph cannot hold.
std::string CudaExecutor::graphBlocker(const Manifest &manifest) {
  size_t externs = 0, first = 0;
  for (size_t i = 0; i < manifest.launches.size(); ++i)
    if (manifest.launches[i].kind == LaunchKind::Extern && externs++ == 0)
      first = i;
  if (externs == 0)
    return "";
  return strCat(externs, " reference-kernel fallback launch", externs == 1 ? "" : "es",
                " on the host (first: ", label(manifest, first),
                "); compile with --fallback=error to see which ops lack GPU kernels");
}

CudaExecutor::~CudaExecutor() {
  if (!driver_)
    return;
  const cu::Driver &d = *driver_;
  if (context_)
    d.ctxSetCurrent(context_);
  for (auto &[key, graph] : graphs_)
    d.graphExecDestroy(graph.exec);
  for (auto &[begin, end] : launchEvents_) {
    if (begin)
      d.eventDestroy(begin);
    if (end)
      d.eventDestroy(end);
  }
  if (runStart_)
    d.eventDestroy(runStart_);
  for (cu::DevicePtr pointer : pointers_)
    if (pointer)
      d.memFree(pointer);
  for (cu::DevicePtr pointer : {arena_, partials_, counters_, product_, workspace_})
    if (pointer)
      d.memFree(pointer);
  plans_.clear();
  if (blasHandle_)
    blas_->destroy(blasHandle_);
  for (cu::Module module : modules_)
    if (module)
      d.moduleUnload(module);
  if (ownStream_)
    d.streamDestroy(ownStream_);
  if (context_)
    d.primaryCtxRelease(device_);
}

Status CudaExecutor::ensure(cu::DevicePtr &pointer, size_t &capacity, size_t bytes,
                            const std::string &what) {
  if (bytes <= capacity && (pointer || bytes == 0))
    return Status::ok();
  size_t rounded = (std::max<size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  cu::DevicePtr fresh = 0;
  cu::Result result = driver_->memAlloc(&fresh, rounded);
  if (result != cu::kSuccess)
    return makeError("cannot allocate ", rounded, " bytes of device memory for ", what, ": ",
                     driver_->describe(result));
  if (pointer) {
    // Work queued on the stream may still read the old block.
    driver_->streamSynchronize(stream_);
    driver_->memFree(pointer);
  }
  pointer = fresh;
  capacity = rounded;
  ++generation_;
  return Status::ok();
}

Status CudaExecutor::runExtern(size_t index, const std::map<std::string, int64_t> &bindings,
                               const std::vector<std::vector<int64_t>> &shapes) {
  const cu::Driver &d = *driver_;
  const Launch &launch = manifest_->launches[index];
  const Graph &graph = *(*externGraphs_)[index];
  size_t numInputs = graph.userInputs().size();
  // The reference kernel runs on the host: bring the operands over, send the results back.
  std::vector<Tensor> inputs;
  for (size_t a = 0; a < numInputs; ++a) {
    size_t id = size_t(launch.args[a]);
    TC_ASSIGN_OR_RETURN(Tensor host, Tensor::zeros(manifest_->buffers[id].dtype, shapes[id]));
    if (host.nbytes())
      TC_RETURN_IF_ERROR(
          d.check(d.memcpyDtoHAsync(host.mutableData(), pointers_[id], host.nbytes(), stream_),
                  label(*manifest_, index) + ": reading operands"));
    inputs.push_back(std::move(host));
  }
  TC_RETURN_IF_ERROR(d.check(d.streamSynchronize(stream_), label(*manifest_, index)));
  Expected<std::vector<Tensor>> results = interp::interpret(graph, inputs, bindings);
  if (!results)
    return results.takeError().withContext(label(*manifest_, index));
  for (size_t r = 0; r < results->size(); ++r) {
    size_t id = size_t(launch.args[numInputs + r]);
    const Tensor &result = (*results)[r];
    const BufferDesc &buffer = manifest_->buffers[id];
    if (result.dtype() != buffer.dtype || result.shape() != shapes[id])
      return makeError(label(*manifest_, index), ": result ", r, " is ",
                       describeShape(result.dtype(), result.shape()), ", but buffer '", buffer.name,
                       "' is ", describeShape(buffer.dtype, shapes[id]));
    if (result.nbytes())
      TC_RETURN_IF_ERROR(
          d.check(d.memcpyHtoDAsync(pointers_[id], result.data(), result.nbytes(), stream_),
                  label(*manifest_, index) + ": writing results"));
    // The host tensor must outlive the copy.
    TC_RETURN_IF_ERROR(d.check(d.streamSynchronize(stream_), label(*manifest_, index)));
  }
  return Status::ok();
}

/// The device's buffers seen from the host: each read or write is a copy and a synchronization.
class CudaExecutor::DeviceBuffers : public BufferAccess {
public:
  DeviceBuffers(CudaExecutor &executor, const std::vector<std::vector<int64_t>> &shapes)
      : executor_(executor), shapes_(shapes) {}

  Expected<Tensor> read(int64_t id) override {
    TC_RETURN_IF_ERROR(check(id));
    const cu::Driver &d = *executor_.driver_;
    TC_ASSIGN_OR_RETURN(Tensor copy, Tensor::zeros(executor_.manifest_->buffers[size_t(id)].dtype,
                                                   shapes_[size_t(id)]));
    if (copy.nbytes()) {
      TC_RETURN_IF_ERROR(
          d.check(d.memcpyDtoHAsync(copy.mutableData(), executor_.pointers_[size_t(id)],
                                    copy.nbytes(), executor_.stream_),
                  "reading a buffer"));
      TC_RETURN_IF_ERROR(d.check(d.streamSynchronize(executor_.stream_), "reading a buffer"));
    }
    return copy;
  }

  Status write(int64_t id, const Tensor &value) override {
    TC_RETURN_IF_ERROR(check(id));
    const BufferDesc &buffer = executor_.manifest_->buffers[size_t(id)];
    if (buffer.kind == BufferKind::Input || buffer.kind == BufferKind::Weight)
      return makeError("buffers[", id, "] '", buffer.name, "' is read-only");
    TC_ASSIGN_OR_RETURN(size_t bytes, byteSize(shapes_[size_t(id)], buffer.dtype, buffer.name));
    if (value.dtype() != buffer.dtype || value.nbytes() != bytes)
      return makeError("buffers[", id, "] '", buffer.name, "' is ",
                       describeShape(buffer.dtype, shapes_[size_t(id)]), ", not ",
                       describeShape(value.dtype(), value.shape()));
    if (!bytes)
      return Status::ok();
    const cu::Driver &d = *executor_.driver_;
    TC_RETURN_IF_ERROR(d.check(
        d.memcpyHtoDAsync(executor_.pointers_[size_t(id)], value.data(), bytes, executor_.stream_),
        "writing a buffer"));
    return d.check(d.streamSynchronize(executor_.stream_), "writing a buffer");
  }

private:
  Status check(int64_t id) const {
    if (id < 0 || size_t(id) >= executor_.pointers_.size())
      return makeError("no buffer ", id);
    bool empty = false;
    for (int64_t dim : shapes_[size_t(id)])
      empty |= dim == 0;
    if (!executor_.pointers_[size_t(id)] && !empty)
      return makeError("buffer ", id, " has no device memory in this run");
    return Status::ok();
  }
  CudaExecutor &executor_;
  const std::vector<std::vector<int64_t>> &shapes_;
};

Status CudaExecutor::enqueue(const std::map<std::string, int64_t> &bindings,
                             const std::vector<int64_t> &symbols,
                             const std::vector<std::vector<int64_t>> &shapes) {
  const cu::Driver &d = *driver_;
  const Manifest &m = *manifest_;
  if (profiler_) {
    recorded_.assign(m.launches.size(), false);
    launchEvents_.resize(m.launches.size(), {nullptr, nullptr});
    if (!runStart_)
      TC_RETURN_IF_ERROR(d.check(d.eventCreate(&runStart_, 0), "cuEventCreate"));
    TC_RETURN_IF_ERROR(d.check(d.eventRecord(runStart_, stream_), "cuEventRecord"));
  }
  // Profiling: CUDA events before and after launch i on the stream.
  auto mark = [&](size_t i, bool after) -> Status {
    if (!profiler_)
      return Status::ok();
    cu::Event &event = after ? launchEvents_[i].second : launchEvents_[i].first;
    if (!event)
      TC_RETURN_IF_ERROR(d.check(d.eventCreate(&event, 0), "cuEventCreate"));
    recorded_[i] = after;
    return d.check(d.eventRecord(event, stream_), "cuEventRecord");
  };
  for (size_t i = 0; i < m.launches.size(); ++i) {
    const Launch &launch = m.launches[i];
    if (launch.kind == LaunchKind::Kernel) {
      TC_ASSIGN_OR_RETURN(int64_t blocks, launch.cudaGrid.evaluate(bindings));
      if (blocks <= 0)
        continue; // nothing to do for empty tensors
    }
    DeviceBuffers buffers(*this, shapes);
    if (observer_)
      TC_RETURN_IF_ERROR(observer_->beforeLaunch(i, buffers));
    TC_RETURN_IF_ERROR(mark(i, false));
    TC_RETURN_IF_ERROR(runLaunch(i, bindings, symbols, shapes));
    TC_RETURN_IF_ERROR(mark(i, true));
    if (observer_) {
      // Kernel errors surface here, naming the launch, rather than at the end of the run.
      TC_RETURN_IF_ERROR(d.check(d.streamSynchronize(stream_), label(m, i)));
      TC_RETURN_IF_ERROR(observer_->afterLaunch(i, buffers));
    }
  }
  return Status::ok();
}

Status CudaExecutor::runLaunch(size_t i, const std::map<std::string, int64_t> &bindings,
                               const std::vector<int64_t> &symbols,
                               const std::vector<std::vector<int64_t>> &shapes) {
  const cu::Driver &d = *driver_;
  const Manifest &m = *manifest_;
  const Launch &launch = m.launches[i];
  switch (launch.kind) {
  case LaunchKind::Kernel: {
    TC_ASSIGN_OR_RETURN(int64_t grid, launch.cudaGrid.evaluate(bindings));
    if (grid <= 0)
      return Status::ok(); // nothing to do for empty tensors
    if (useLibrary_[i])
      return runLibraryGemm(i, bindings, symbols, shapes, size_t(launch.gemm->algo));
    return launchKernel(i, functions_[i], grid, bindings, symbols, nullptr);
  }
  case LaunchKind::Extern:
    return runExtern(i, bindings, shapes);
  case LaunchKind::Copy: {
    size_t from = size_t(launch.args[0]), to = size_t(launch.args[1]);
    TC_ASSIGN_OR_RETURN(size_t bytes, byteSize(shapes[from], m.buffers[from].dtype, label(m, i)));
    if (bytes)
      return d.check(d.memcpyDtoDAsync(pointers_[to], pointers_[from], bytes, stream_),
                     label(m, i));
    return Status::ok();
  }
  }
  return Status::ok();
}

Expected<HopperMapArgs> hopperMapArgs(const bundle::HopperGemm &form,
                                      const bundle::HopperGemm::Map &map, uint64_t buffer,
                                      const std::map<std::string, int64_t> &bindings) {
  int64_t element = int64_t(dtypeSize(form.dtype)); // TF32 operands are f32 in memory
  TC_ASSIGN_OR_RETURN(int64_t offset, map.offset.evaluate(bindings));
  TC_ASSIGN_OR_RETURN(int64_t k, form.k.evaluate(bindings));
  TC_ASSIGN_OR_RETURN(int64_t rows, map.rows.evaluate(bindings));
  TC_ASSIGN_OR_RETURN(int64_t ld, map.ld.evaluate(bindings));
  TC_ASSIGN_OR_RETURN(int64_t batchStride, map.batchStride.evaluate(bindings));
  TC_ASSIGN_OR_RETURN(int64_t batch, form.batch.evaluate(bindings));
  HopperMapArgs args;
  args.dataType = form.tf32 ? 11 : form.dtype == DType::BF16 ? 9 : 6; // CUtensorMapDataType
  bool batched = batchStride != 0;
  int64_t dims[3] = {k, rows, batched ? batch : 1};
  int64_t strides[2] = {ld * element, (batched ? batchStride : ld * rows) * element};
  // TMA's limits: dims 1..2^32, strides multiples of 16 below 2^40, a 16-byte aligned address.
  for (int64_t dim : dims)
    if (dim < 1 || dim > (int64_t(1) << 32))
      return makeError("Hopper GEMM: tensor map dim ", dim, " outside 1..2^32");
  for (int64_t stride : strides)
    if (stride <= 0 || stride % 16 || stride >= (int64_t(1) << 40))
      return makeError("Hopper GEMM: tensor map stride of ", stride,
                       " bytes is not a positive multiple of 16 below 2^40");
  args.address = buffer + uint64_t(offset * element);
  if (offset < 0 || args.address % 16)
    return makeError("Hopper GEMM: operand at element ", offset, " is not 16-byte aligned");
  for (int i = 0; i < 3; ++i)
    args.dims[i] = uint64_t(dims[i]);
  args.strides[0] = uint64_t(strides[0]), args.strides[1] = uint64_t(strides[1]);
  args.box[0] = unsigned(128 / element), args.box[1] = unsigned(map.boxRows), args.box[2] = 1;
  return args;
}

Status CudaExecutor::launchKernel(size_t index, cu::Function function, int64_t grid,
                                  const std::map<std::string, int64_t> &bindings,
                                  const std::vector<int64_t> &symbols, const cu::DevicePtr *extra) {
  const cu::Driver &d = *driver_;
  const Launch &launch = manifest_->launches[index];
  // A kernel with a Hopper form takes two tensor maps first in every image; encoded where its
  // module's sm_90a image runs (zeros, unread, elsewhere).
  struct alignas(64) TensorMap {
    unsigned char bytes[128];
  };
  TensorMap maps[2] = {};
  bool form = launch.hopper && !extra;
  bool hopper = form && hopper_[index];
  if (hopper) {
    const bundle::HopperGemm &h = *launch.hopper;
    TC_ASSIGN_OR_RETURN(int64_t units, h.units.evaluate(bindings));
    grid = std::min(units, h.blocksPerSm * smCount_); // persistent: what fits at once
    const bundle::HopperGemm::Map *specs[2] = {&h.a, &h.b};
    for (int m = 0; m < 2; ++m) {
      uint64_t buffer = pointers_[size_t(launch.args[size_t(specs[m]->arg)])];
      Expected<HopperMapArgs> args = hopperMapArgs(h, *specs[m], buffer, bindings);
      if (!args)
        return args.takeError().withContext(label(*manifest_, index));
      const unsigned ones[3] = {1, 1, 1};
      // Interleave none (0), 128-byte swizzle (3), 256-byte L2 promotion (3), zero fill (0).
      TC_RETURN_IF_ERROR(d.check(
          d.tensorMapEncodeTiled(maps[m].bytes, args->dataType, 3,
                                 reinterpret_cast<void *>(args->address), args->dims, args->strides,
                                 args->box, ones, 0, 3, 3, 0),
          strCat(label(*manifest_, index), ": cuTensorMapEncodeTiled (", m == 0 ? "A" : "B", ")")));
    }
  }
  grid = std::min<int64_t>(grid, int64_t(1) << 30); // kernels stride over their work
  std::vector<unsigned long long> values;
  for (int64_t arg : launch.args)
    values.push_back(pointers_[size_t(arg)]);
  for (int64_t symbol : symbols)
    values.push_back(static_cast<unsigned long long>(symbol));
  if (extra) {
    values.push_back(*extra);
  } else if (launch.splitK()) {
    values.push_back(partials_);
    values.push_back(counters_);
  }
  std::vector<void *> params;
  if (form)
    params = {maps[0].bytes, maps[1].bytes};
  for (unsigned long long &value : values)
    params.push_back(&value);
  // One launch call for both kinds: a plain launch is the same config without the attribute.
  cu::LaunchAttribute dependent = {};
  dependent.id = cu::kLaunchAttributeProgrammaticStreamSerialization;
  dependent.value.programmaticStreamSerializationAllowed = 1;
  cu::LaunchConfig config = {};
  config.gridDimX = unsigned(grid), config.gridDimY = 1, config.gridDimZ = 1;
  bool epilogue = extra != nullptr;
  config.blockDimX = unsigned(epilogue ? bundle::kGemmEpilogueBlock
                              : hopper ? launch.hopper->block
                                       : launch.cudaBlock);
  config.blockDimY = 1, config.blockDimZ = 1;
  config.sharedMemBytes = epilogue ? 0
                          : hopper ? unsigned(launch.hopper->sharedBytes)
                                   : unsigned(launch.cudaSharedBytes);
  config.stream = stream_;
  config.attrs = &dependent, config.numAttrs = dependentLaunch_[index] ? 1 : 0;
  return d.check(d.launchKernelEx(&config, function, params.data(), nullptr),
                 label(*manifest_, index) + (epilogue ? " (GEMM epilogue)" : ""));
}

Status CudaExecutor::openLibrary() {
  if (blasHandle_)
    return Status::ok();
  TC_ASSIGN_OR_RETURN(blas_, blaslt::library());
  return blas_->check(blas_->create(&blasHandle_), "cublasLtCreate");
}

namespace {

/// The largest power of two (up to 256) dividing `address`.
int64_t alignmentOf(uint64_t address) {
  int64_t alignment = 256;
  while (alignment > 1 && address % uint64_t(alignment) != 0)
    alignment /= 2;
  return alignment;
}

} // namespace

Expected<const blaslt::Plan *>
CudaExecutor::gemmPlan(size_t index, const std::map<std::string, int64_t> &bindings,
                       const std::vector<int64_t> &symbols,
                       const std::vector<std::vector<int64_t>> &shapes, GemmAddresses &at,
                       std::string *problemText) {
  const Launch &launch = manifest_->launches[index];
  const bundle::GemmCall &g = *launch.gemm;
  std::string what = label(*manifest_, index) + ": GEMM call";
  blaslt::Problem problem;
  problem.dtype = g.dtype;
  problem.tf32 = g.tf32;
  TC_ASSIGN_OR_RETURN(problem.m, g.m.evaluate(bindings));
  TC_ASSIGN_OR_RETURN(problem.n, g.n.evaluate(bindings));
  TC_ASSIGN_OR_RETURN(problem.k, g.k.evaluate(bindings));
  TC_ASSIGN_OR_RETURN(problem.batch, g.batch.evaluate(bindings));
  // cuBLASLt's sizes and batch count are 32-bit.
  constexpr int64_t kLimit = (int64_t(1) << 31) - 1;
  if (problem.m <= 0 || problem.n <= 0 || problem.k <= 0 || problem.batch <= 0 ||
      problem.m > kLimit || problem.n > kLimit || problem.k > kLimit || problem.batch > kLimit)
    return makeError(what, ": sizes ", problem.batch, " x ", problem.m, " x ", problem.n, " x ",
                     problem.k);
  size_t elementBytes = dtypeSize(g.dtype);
  auto elementsOf = [&](size_t id) {
    int64_t elements = 1;
    for (int64_t dim : shapes[id])
      elements *= dim;
    return elements;
  };
  // Each operand view must lie inside its buffer: the last element it reads is below the
  // buffer's element count.
  auto operand = [&](const bundle::GemmCall::Operand &o, int64_t rows, const char *name,
                     blaslt::Problem::Operand &out, cu::DevicePtr &address) -> Status {
    int64_t offset = 0;
    TC_ASSIGN_OR_RETURN(offset, o.offset.evaluate(bindings));
    TC_ASSIGN_OR_RETURN(out.ld, o.ld.evaluate(bindings));
    TC_ASSIGN_OR_RETURN(out.batchStride, o.batchStride.evaluate(bindings));
    out.kContiguous = o.kContiguous;
    size_t id = size_t(launch.args[size_t(o.arg)]);
    int64_t elements = elementsOf(id);
    int64_t lines = o.kContiguous ? rows : problem.k, line = o.kContiguous ? problem.k : rows;
    // In 128 bits: an edited manifest's strides cannot wrap the bound around.
    __int128 last = __int128(offset) + __int128(problem.batch - 1) * out.batchStride +
                    __int128(lines - 1) * out.ld + line - 1;
    if (offset < 0 || out.ld < 0 || out.batchStride < 0 || last >= elements)
      return makeError(what, ": operand ", name, " (offset ", offset, ", ld ", out.ld,
                       ", batch stride ", out.batchStride, ") reaches past the ", elements,
                       " elements of buffer '", manifest_->buffers[id].name, "'");
    address = pointers_[id] + uint64_t(offset) * elementBytes;
    out.alignment = alignmentOf(address);
    if (!o.kContiguous || lines > 1)
      out.alignment = std::min(out.alignment, alignmentOf(uint64_t(out.ld) * elementBytes));
    if (problem.batch > 1)
      out.alignment =
          std::min(out.alignment, alignmentOf(uint64_t(out.batchStride) * elementBytes));
    return Status::ok();
  };
  TC_RETURN_IF_ERROR(operand(g.a, problem.m, "A", problem.a, at.a));
  TC_RETURN_IF_ERROR(operand(g.b, problem.n, "B", problem.b, at.b));
  at.c = product_;
  at.bias = 0;
  if (g.direct) { // the output itself, dense [batch][M][N]
    size_t id = size_t(launch.args[size_t(g.output)]);
    int64_t elements = elementsOf(id);
    if (__int128(elements) < __int128(problem.batch) * problem.m * problem.n)
      return makeError(what, ": output buffer '", manifest_->buffers[id].name, "' has ", elements,
                       " elements, not ", problem.batch, " x ", problem.m, " x ", problem.n);
    problem.output = manifest_->buffers[id].dtype;
    at.c = pointers_[id];
    problem.outputAlignment = alignmentOf(at.c);
  }
  if (g.bias >= 0) { // N elements of the output's dtype (the manifest's checks)
    size_t id = size_t(launch.args[size_t(g.bias)]);
    if (elementsOf(id) < problem.n)
      return makeError(what, ": bias buffer '", manifest_->buffers[id].name, "' has ",
                       elementsOf(id), " elements, not ", problem.n);
    at.bias = pointers_[id];
    problem.bias = reinterpret_cast<const void *>(uintptr_t(at.bias));
  }
  if (problemText)
    *problemText = problem.describe();
  std::vector<int64_t> key = {int64_t(index), problem.a.alignment, problem.b.alignment,
                              problem.outputAlignment, at.bias ? alignmentOf(at.bias) : 0};
  key.insert(key.end(), symbols.begin(), symbols.end());
  std::unique_ptr<blaslt::Plan> &plan = plans_[key];
  if (!plan) {
    Expected<std::unique_ptr<blaslt::Plan>> made =
        blaslt::Plan::create(*blas_, blasHandle_, problem, planAlgorithms_);
    if (!made) {
      plans_.erase(key);
      return made.takeError().withContext(what);
    }
    plan = std::move(*made);
  }
  return plan.get();
}

Status CudaExecutor::placeProducts(const std::map<std::string, int64_t> &bindings, bool all) {
  int64_t floats = 0;
  bool any = false; // a GEMM runs on the library: it needs the workspace, direct or not
  for (size_t i = 0; i < manifest_->launches.size(); ++i) {
    const Launch &launch = manifest_->launches[i];
    if (!launch.gemm || !(all || useLibrary_[i]))
      continue;
    any = true;
    if (launch.gemm->direct)
      continue; // writes its output: no product
    int64_t size = 1;
    for (const bundle::SizeExpr *dim : {&launch.gemm->batch, &launch.gemm->m, &launch.gemm->n}) {
      TC_ASSIGN_OR_RETURN(int64_t value, dim->evaluate(bindings));
      if (value < 0 || value > (int64_t(1) << 31) || __builtin_mul_overflow(size, value, &size))
        return makeError(label(*manifest_, i), ": GEMM product of ", value, " x ... elements");
    }
    floats = std::max(floats, size);
  }
  if (!any)
    return Status::ok();
  TC_RETURN_IF_ERROR(
      ensure(product_, productCapacity_, size_t(floats) * sizeof(float), "the GEMM products"));
  return ensure(workspace_, workspaceCapacity_, blaslt::kWorkspaceBytes, "the cuBLASLt workspace");
}

Status CudaExecutor::runLibraryGemm(size_t index, const std::map<std::string, int64_t> &bindings,
                                    const std::vector<int64_t> &symbols,
                                    const std::vector<std::vector<int64_t>> &shapes, size_t algo,
                                    bool fallBack) {
  GemmAddresses at;
  Expected<const blaslt::Plan *> plan = gemmPlan(index, bindings, symbols, shapes, at);
  auto pointer = [](cu::DevicePtr address) { return reinterpret_cast<void *>(uintptr_t(address)); };
  Status ran = plan ? (*plan)->run(pointer(at.a), pointer(at.b), pointer(at.bias), pointer(at.c),
                                   pointer(workspace_), stream_, algo)
                    : Status(plan.takeError());
  if (!ran) {
    if (!fallBack)
      return ran.takeError().withContext(label(*manifest_, index));
    // Sizes or an alignment tuning never saw (no algorithm, K = 0): the launch's own kernel,
    // which handles every binding, runs instead; nothing of the library's was queued.
    TC_ASSIGN_OR_RETURN(int64_t grid, manifest_->launches[index].cudaGrid.evaluate(bindings));
    return launchKernel(index, functions_[index], grid, bindings, symbols, nullptr);
  }
  const bundle::GemmCall &gemm = *manifest_->launches[index].gemm;
  if (gemm.direct)
    return Status::ok();
  TC_ASSIGN_OR_RETURN(int64_t grid, gemm.epilogueGrid.evaluate(bindings));
  return launchKernel(index, epilogues_[index], grid, bindings, symbols, &product_);
}

Status CudaExecutor::collectProfile(double hostStartUs) {
  const cu::Driver &d = *driver_;
  for (size_t i = 0; i < recorded_.size(); ++i) {
    if (!recorded_[i])
      continue;
    float startMs = 0, durationMs = 0;
    TC_RETURN_IF_ERROR(d.check(d.eventElapsedTime(&startMs, runStart_, launchEvents_[i].first),
                               "cuEventElapsedTime"));
    TC_RETURN_IF_ERROR(
        d.check(d.eventElapsedTime(&durationMs, launchEvents_[i].first, launchEvents_[i].second),
                "cuEventElapsedTime"));
    int64_t range = 1;
    if (manifest_->launches[i].kind == LaunchKind::Kernel) {
      TC_ASSIGN_OR_RETURN(range, manifest_->launches[i].range.evaluate(lastBindings_));
    }
    profiler_->add({profileRun_, i, 0, 0, range, hostStartUs + double(startMs) * 1e3,
                    double(durationMs) * 1e3});
  }
  return Status::ok();
}

Expected<MachinePeaks> CudaExecutor::peaks() const {
  const cu::Driver &d = *driver_;
  int sms = 0, clockKhz = 0, memoryKhz = 0, busBits = 0, major = 0, minor = 0;
  TC_RETURN_IF_ERROR(d.check(d.deviceGetAttribute(&sms, cu::kAttrMultiprocessorCount, device_),
                             "device attributes"));
  TC_RETURN_IF_ERROR(
      d.check(d.deviceGetAttribute(&clockKhz, cu::kAttrClockRate, device_), "device attributes"));
  TC_RETURN_IF_ERROR(d.check(d.deviceGetAttribute(&memoryKhz, cu::kAttrMemoryClockRate, device_),
                             "device attributes"));
  TC_RETURN_IF_ERROR(d.check(d.deviceGetAttribute(&busBits, cu::kAttrMemoryBusWidth, device_),
                             "device attributes"));
  TC_RETURN_IF_ERROR(d.check(d.deviceGetAttribute(&major, cu::kAttrComputeCapabilityMajor, device_),
                             "device arch"));
  TC_RETURN_IF_ERROR(d.check(d.deviceGetAttribute(&minor, cu::kAttrComputeCapabilityMinor, device_),
                             "device arch"));
  if (sms <= 0 || clockKhz <= 0 || memoryKhz <= 0 || busBits <= 0)
    return makeError("the driver reports no clock or memory figures for this GPU; pass "
                     "--peak-gbps and --peak-gflops");
  // f32 lanes per SM: 64 on sm_70 and sm_80 (A100), 128 on sm_86, sm_89, sm_90 and newer.
  int lanes = (major == 7 || (major == 8 && minor == 0)) ? 64 : 128;
  MachinePeaks peaks;
  peaks.bytesPerSecond = 2.0 * double(memoryKhz) * 1e3 * double(busBits) / 8.0;
  peaks.flopsPerSecond = double(sms) * lanes * 2.0 * double(clockKhz) * 1e3;
  peaks.source = strCat("device attributes: ", sms, " SMs x ", lanes, " f32 lanes at ",
                        clockKhz / 1000, " MHz; ", busBits, "-bit memory at ", memoryKhz / 1000,
                        " MHz (f32 CUDA cores, not tensor cores)");
  return peaks;
}

Status CudaExecutor::placeBuffers(const std::map<std::string, int64_t> &bindings,
                                  const std::vector<std::vector<int64_t>> &shapes,
                                  bool ownInputsOutputs, std::vector<size_t> &bytes) {
  const cu::Driver &d = *driver_;
  const Manifest &m = *manifest_;
  // Device memory for this binding: grown, never shrunk, so repeated shapes reuse it.
  TC_ASSIGN_OR_RETURN(int64_t arenaBytes, m.arenaBytes.evaluate(bindings));
  TC_RETURN_IF_ERROR(ensure(arena_, arenaCapacity_, size_t(std::max<int64_t>(arenaBytes, 0)),
                            "the scratch arena"));
  // Split-K workspaces: the largest any launch needs at these sizes.
  int64_t partials = 0, counters = 0;
  for (size_t i = 0; i < m.launches.size(); ++i) {
    const Launch &launch = m.launches[i];
    if (launch.kind != LaunchKind::Kernel || !launch.splitK())
      continue;
    TC_ASSIGN_OR_RETURN(int64_t floats, launch.cudaPartials.evaluate(bindings));
    TC_ASSIGN_OR_RETURN(int64_t count, launch.cudaCounters.evaluate(bindings));
    if (floats < 0 || count < 0 || floats > (int64_t(1) << 40) || count > (int64_t(1) << 40))
      return makeError(label(m, i), ": split-K workspaces of ", floats, " floats and ", count,
                       " counters");
    partials = std::max(partials, floats);
    counters = std::max(counters, count);
  }
  TC_RETURN_IF_ERROR(ensure(partials_, partialsCapacity_, size_t(partials) * sizeof(float),
                            "the split-K partials"));
  TC_RETURN_IF_ERROR(placeProducts(bindings, /*all=*/false));
  size_t countersBefore = countersCapacity_;
  TC_RETURN_IF_ERROR(ensure(counters_, countersCapacity_, size_t(counters) * sizeof(unsigned),
                            "the split-K counters"));
  if (countersCapacity_ != countersBefore) { // a fresh block: the kernels need it zero
    std::vector<unsigned char> zeros(countersCapacity_, 0);
    TC_RETURN_IF_ERROR(d.check(d.memcpyHtoDAsync(counters_, zeros.data(), zeros.size(), stream_),
                               "zeroing the split-K counters"));
    TC_RETURN_IF_ERROR(d.check(d.streamSynchronize(stream_), "zeroing the split-K counters"));
  }
  bytes.assign(m.buffers.size(), 0);
  for (const BufferDesc &buffer : m.buffers) {
    size_t id = size_t(buffer.id);
    if (shapes[id].empty() && !buffer.shape.empty())
      continue; // unused by every launch
    std::string what = strCat("buffer '", buffer.name, "'");
    TC_ASSIGN_OR_RETURN(bytes[id], byteSize(shapes[id], buffer.dtype, what));
    switch (buffer.kind) {
    case BufferKind::Input:
    case BufferKind::Output:
      if (ownInputsOutputs)
        TC_RETURN_IF_ERROR(ensure(pointers_[id], capacities_[id], bytes[id], what));
      break;
    case BufferKind::Arena: {
      TC_ASSIGN_OR_RETURN(int64_t offset, buffer.offset.evaluate(bindings));
      if (offset < 0 || size_t(offset) + bytes[id] > size_t(std::max<int64_t>(arenaBytes, 0)))
        return makeError(what, ": does not fit the arena");
      pointers_[id] = arena_ + size_t(offset);
      break;
    }
    case BufferKind::Weight:
      break;
    }
  }
  return Status::ok();
}

Status CudaExecutor::run(const std::map<std::string, int64_t> &bindings,
                         const std::vector<int64_t> &symbols,
                         const std::vector<std::vector<int64_t>> &shapes,
                         const std::vector<Tensor> &inputs, std::vector<Tensor> &outputs,
                         cu::Stream stream) {
  const cu::Driver &d = *driver_;
  const Manifest &m = *manifest_;
  TC_RETURN_IF_ERROR(d.check(d.ctxSetCurrent(context_), "cuCtxSetCurrent"));
  stream_ = stream ? stream : ownStream_;
  std::vector<size_t> bytes;
  TC_RETURN_IF_ERROR(placeBuffers(bindings, shapes, /*ownInputsOutputs=*/true, bytes));
  for (const BufferDesc &buffer : m.buffers)
    if (buffer.kind == BufferKind::Input && bytes[size_t(buffer.id)])
      TC_RETURN_IF_ERROR(d.check(d.memcpyHtoDAsync(pointers_[size_t(buffer.id)],
                                                   inputs[size_t(buffer.index)].data(),
                                                   bytes[size_t(buffer.id)], stream_),
                                 "copying input '" + m.inputs[size_t(buffer.index)].name + "'"));

  lastBindings_ = bindings;
  double hostStartUs = profiler_ ? profiler_->nowUs() : 0.0;
  if (replaysGraphs()) {
    CapturedGraph &graph = graphs_[symbols];
    if (graph.exec && graph.generation != generation_) {
      d.graphExecDestroy(graph.exec);
      graph.exec = nullptr;
    }
    if (graph.exec) {
      ++replays_;
    } else {
      TC_RETURN_IF_ERROR(d.check(d.streamBeginCapture(stream_, cu::kCaptureModeThreadLocal),
                                 "beginning CUDA graph capture"));
      Status enqueued = enqueue(bindings, symbols, shapes);
      cu::Graph captured = nullptr;
      cu::Result ended = d.streamEndCapture(stream_, &captured);
      TC_RETURN_IF_ERROR(enqueued);
      TC_RETURN_IF_ERROR(d.check(ended, "ending CUDA graph capture"));
      cu::Result instantiated = d.graphInstantiate(&graph.exec, captured, 0);
      d.graphDestroy(captured);
      TC_RETURN_IF_ERROR(d.check(instantiated, "instantiating the CUDA graph"));
      graph.generation = generation_;
    }
    TC_RETURN_IF_ERROR(d.check(d.graphLaunch(graph.exec, stream_), "launching the CUDA graph"));
  } else {
    TC_RETURN_IF_ERROR(enqueue(bindings, symbols, shapes));
  }

  for (const BufferDesc &buffer : m.buffers)
    if (buffer.kind == BufferKind::Output && bytes[size_t(buffer.id)])
      TC_RETURN_IF_ERROR(d.check(d.memcpyDtoHAsync(outputs[size_t(buffer.index)].mutableData(),
                                                   pointers_[size_t(buffer.id)],
                                                   bytes[size_t(buffer.id)], stream_),
                                 "copying output '" + m.outputs[size_t(buffer.index)].name + "'"));
  TC_RETURN_IF_ERROR(d.check(d.streamSynchronize(stream_), "running the model on the GPU"));
  return profiler_ ? collectProfile(hostStartUs) : Status::ok();
}

Status CudaExecutor::runOnDevice(const std::map<std::string, int64_t> &bindings,
                                 const std::vector<int64_t> &symbols,
                                 const std::vector<std::vector<int64_t>> &shapes,
                                 const std::vector<cu::DevicePtr> &inputs,
                                 const std::vector<cu::DevicePtr> &outputs, cu::Stream stream) {
  const cu::Driver &d = *driver_;
  const Manifest &m = *manifest_;
  TC_RETURN_IF_ERROR(d.check(d.ctxSetCurrent(context_), "cuCtxSetCurrent"));
  stream_ = stream ? stream : ownStream_;
  std::vector<size_t> bytes;
  TC_RETURN_IF_ERROR(placeBuffers(bindings, shapes, /*ownInputsOutputs=*/false, bytes));
  // The launches read pointers_: point the input and output buffers at the caller's memory for
  // this run, and give the executor's own buffers back afterwards, whatever happens.
  std::vector<std::pair<size_t, cu::DevicePtr>> saved;
  for (const BufferDesc &buffer : m.buffers) {
    size_t id = size_t(buffer.id);
    if (buffer.kind != BufferKind::Input && buffer.kind != BufferKind::Output)
      continue;
    saved.emplace_back(id, pointers_[id]);
    pointers_[id] = buffer.kind == BufferKind::Input ? inputs[size_t(buffer.index)]
                                                     : outputs[size_t(buffer.index)];
  }
  Status enqueued = enqueue(bindings, symbols, shapes);
  Status finished = d.check(d.streamSynchronize(stream_), "running the model on the GPU");
  for (const auto &[id, pointer] : saved)
    pointers_[id] = pointer;
  TC_RETURN_IF_ERROR(enqueued);
  return finished;
}

Expected<std::shared_ptr<void>> CudaExecutor::allocate(size_t bytes, cu::DevicePtr *address,
                                                       const std::string &what) {
  const cu::Driver &d = *driver_;
  *address = 0;
  if (bytes == 0)
    return std::shared_ptr<void>();
  TC_RETURN_IF_ERROR(d.check(d.ctxSetCurrent(context_), "cuCtxSetCurrent"));
  cu::Result result = d.memAlloc(address, bytes);
  if (result != cu::kSuccess)
    return makeError("cannot allocate ", bytes, " bytes of device memory for ", what, ": ",
                     d.describe(result));
  cu::Context context = nullptr;
  if (Status retained = d.check(d.primaryCtxRetain(&context, device_), "cuDevicePrimaryCtxRetain");
      !retained) {
    d.memFree(*address);
    return retained.takeError();
  }
  const cu::Driver *driver = driver_;
  cu::Device device = device_;
  return std::shared_ptr<void>(reinterpret_cast<void *>(uintptr_t(*address)),
                               [driver, context, device](void *pointer) {
                                 driver->ctxSetCurrent(context);
                                 driver->memFree(cu::DevicePtr(uintptr_t(pointer)));
                                 driver->primaryCtxRelease(device);
                               });
}

} // namespace tensorc::rt

namespace tensorc::rt {

Expected<std::vector<double>> CudaExecutor::timeLaunches(
    const std::map<std::string, int64_t> &bindings, const std::vector<int64_t> &symbols,
    const std::vector<std::vector<int64_t>> &shapes, int64_t iterations, bool replay) {
  const cu::Driver &d = *driver_;
  TC_RETURN_IF_ERROR(d.check(d.ctxSetCurrent(context_), "cuCtxSetCurrent"));
  stream_ = ownStream_;
  cu::GraphExec graph = nullptr;
  if (replay && replaysGraphs()) {
    auto it = graphs_.find(symbols);
    if (it == graphs_.end() || !it->second.exec || it->second.generation != generation_)
      return makeError("timing needs a run with the same shapes first");
    graph = it->second.exec;
  }
  std::vector<double> times;
  for (int64_t i = 0; i < iterations; ++i) {
    auto start = std::chrono::steady_clock::now();
    if (graph)
      TC_RETURN_IF_ERROR(d.check(d.graphLaunch(graph, stream_), "launching the CUDA graph"));
    else
      TC_RETURN_IF_ERROR(enqueue(bindings, symbols, shapes));
    TC_RETURN_IF_ERROR(d.check(d.streamSynchronize(stream_), "running the model on the GPU"));
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  return times;
}

} // namespace tensorc::rt

namespace tensorc::rt {

Expected<std::vector<CudaExecutor::GemmTiming>> CudaExecutor::tuneGemms(
    const std::map<std::string, int64_t> &bindings, const std::vector<int64_t> &symbols,
    const std::vector<std::vector<int64_t>> &shapes, int64_t iterations, int64_t algorithms,
    double margin, const std::function<bool(size_t)> &wanted) {
  const cu::Driver &d = *driver_;
  const Manifest &m = *manifest_;
  TC_RETURN_IF_ERROR(d.check(d.ctxSetCurrent(context_), "cuCtxSetCurrent"));
  TC_RETURN_IF_ERROR(openLibrary());
  stream_ = ownStream_;
  if (int(std::max<int64_t>(algorithms, 1)) != planAlgorithms_) {
    planAlgorithms_ = int(std::clamp<int64_t>(algorithms, 1, 64));
    plans_.clear();
  }
  TC_RETURN_IF_ERROR(placeProducts(bindings, /*all=*/true));
  cu::Event start = nullptr, end = nullptr;
  TC_RETURN_IF_ERROR(d.check(d.eventCreate(&start, 0), "cuEventCreate"));
  std::shared_ptr<void> startOwner(nullptr, [&](void *) { d.eventDestroy(start); });
  TC_RETURN_IF_ERROR(d.check(d.eventCreate(&end, 0), "cuEventCreate"));
  std::shared_ptr<void> endOwner(nullptr, [&](void *) { d.eventDestroy(end); });
  iterations = std::max<int64_t>(iterations, 1);
  // Microseconds per call of `enqueue`.
  // A model at batch 1 streams each layer's weights from memory once per run; calls back to
  // back on the same operands would find them in the L2 cache (tens of MB on an H100) and favour
  // whichever way reuses it best. So each call is timed alone, after a copy of kFlushBytes
  // that evicts the L2: the median of `iterations` calls, after one untimed warm-up call.
  constexpr size_t kFlushBytes = size_t(128) << 20;
  cu::DevicePtr flush = 0;
  TC_RETURN_IF_ERROR(
      d.check(d.memAlloc(&flush, 2 * kFlushBytes), "allocating the L2 flush buffer"));
  std::shared_ptr<void> flushOwner(nullptr, [&](void *) { d.memFree(flush); });
  auto time = [&](const std::function<Status()> &enqueue) -> Expected<double> {
    TC_RETURN_IF_ERROR(enqueue());
    std::vector<double> calls;
    for (int64_t it = 0; it < iterations; ++it) {
      TC_RETURN_IF_ERROR(
          d.check(d.memcpyDtoDAsync(flush + kFlushBytes, flush, kFlushBytes, stream_),
                  "flushing the L2 cache"));
      TC_RETURN_IF_ERROR(d.check(d.eventRecord(start, stream_), "cuEventRecord"));
      TC_RETURN_IF_ERROR(enqueue());
      TC_RETURN_IF_ERROR(d.check(d.eventRecord(end, stream_), "cuEventRecord"));
      TC_RETURN_IF_ERROR(d.check(d.streamSynchronize(stream_), "timing a GEMM"));
      float ms = 0;
      TC_RETURN_IF_ERROR(d.check(d.eventElapsedTime(&ms, start, end), "cuEventElapsedTime"));
      calls.push_back(double(ms) * 1e3);
    }
    std::sort(calls.begin(), calls.end());
    return calls[calls.size() / 2];
  };
  DeviceBuffers buffers(*this, shapes);
  std::vector<GemmTiming> timings;
  // Each GEMM runs on the operands the model gives it: the launches before it run again first
  // (since the last GEMM timed), because later launches may have reused its operands' memory
  // after the run (the arena plan shares memory between buffers whose lifetimes do not overlap),
  // and a GEMM over stale bytes checks cuBLASLt against garbage.
  size_t replayed = 0;
  for (size_t i = 0; i < m.launches.size(); ++i) {
    const Launch &launch = m.launches[i];
    if (launch.kind != LaunchKind::Kernel || !launch.gemm || (wanted && !wanted(i)))
      continue;
    for (; replayed < i; ++replayed)
      TC_RETURN_IF_ERROR(runLaunch(replayed, bindings, symbols, shapes));
    replayed = i + 1; // timing runs it, last the way it chooses
    GemmTiming timing;
    timing.launch = i;
    TC_ASSIGN_OR_RETURN(int64_t grid, launch.cudaGrid.evaluate(bindings));
    if (grid <= 0) {
      timing.note = "empty";
      timings.push_back(std::move(timing));
      continue;
    }
    auto generated = [&] {
      return launchKernel(i, functions_[i], grid, bindings, symbols, nullptr);
    };
    TC_ASSIGN_OR_RETURN(timing.generatedUs, time(generated));
    TC_RETURN_IF_ERROR(generated());
    int64_t output = launch.args[size_t(launch.gemm->output)];
    TC_ASSIGN_OR_RETURN(Tensor expected, buffers.read(output));
    GemmAddresses at;
    Expected<const blaslt::Plan *> plan =
        gemmPlan(i, bindings, symbols, shapes, at, &timing.problem);
    if (!plan) {
      timing.note = plan.error().message();
      timings.push_back(std::move(timing));
      continue;
    }
    timing.algorithms = int64_t((*plan)->algorithms());
    for (size_t algo = 0; algo < (*plan)->algorithms() && int64_t(algo) < algorithms; ++algo) {
      Expected<double> us =
          time([&] { return runLibraryGemm(i, bindings, symbols, shapes, algo, false); });
      if (!us) {
        timing.note = us.error().message();
        continue;
      }
      if (timing.libraryUs < 0 || *us < timing.libraryUs)
        timing.libraryUs = *us, timing.algo = int64_t(algo);
    }
    if (timing.libraryUs < 0) {
      TC_RETURN_IF_ERROR(generated()); // the output the GEMMs after it read
      timings.push_back(std::move(timing));
      continue;
    }
    // The library's output against the kernel's, relative to the output's largest finite
    // magnitude.
    TC_RETURN_IF_ERROR(runLibraryGemm(i, bindings, symbols, shapes, size_t(timing.algo), false));
    TC_ASSIGN_OR_RETURN(Tensor actual, buffers.read(output));
    OutputDifference difference = outputDifference(expected, actual);
    timing.maxError = difference.relative();
    bool strict = launch.gemm->dtype == DType::F32 && !launch.gemm->tf32;
    double tolerance = strict ? 1e-4 : 2e-2;
    if (difference.largest == 0 && expected.numel() > 0)
      timing.note = "not chosen: the kernel's output has no finite nonzero value to check "
                    "cuBLASLt's against";
    else if (!(timing.maxError <= tolerance))
      timing.note = strCat("cuBLASLt's output differs from the kernel's by ", timing.maxError,
                           " of its largest magnitude");
    else if (margin <= -1 || timing.libraryUs < timing.generatedUs * (1 - margin))
      timing.useLibrary = true;
    if (!timing.useLibrary)
      TC_RETURN_IF_ERROR(generated()); // the output the GEMMs after it read is the kernel's
    timings.push_back(std::move(timing));
  }
  return timings;
}

} // namespace tensorc::rt
