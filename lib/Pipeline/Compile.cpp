// `tensorc compile`: pipeline -> LoopIR -> schedule -> each target's backend -> bundle directory.
#include "tensorc/Pipeline/Compile.h"

#include "InjectBug.h"

#include "tensorc/Bundle/BundleWriter.h"
#include "tensorc/Bundle/LaunchCosts.h"
#include "tensorc/Bundle/Manifest.h"
#include "tensorc/Bundle/TuningCache.h"
#include "tensorc/Codegen/Backend.h"
#include "tensorc/Codegen/CPU/PackGemmWeights.h"
#include "tensorc/Pipeline/CompileCache.h"
#include "tensorc/Pipeline/ModelLibrary.h"
#include "tensorc/Pipeline/Pipeline.h"
#include "tensorc/Scheduler/KernelCost.h"
#include "tensorc/Support/Log.h"
#include "tensorc/Support/MappedFile.h"
#include "tensorc/Support/Safetensors.h"
#include "tensorc/Support/Sha256.h"
#include "tensorc/Support/StrCat.h"
#include "tensorc/Support/Timing.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <unistd.h>

#ifndef TENSORC_VERSION
#define TENSORC_VERSION "0.0.0"
#endif

namespace tensorc {

namespace {

using bundle::BufferDesc;
using bundle::BufferKind;
using bundle::Launch;
using bundle::LaunchKind;
using bundle::Manifest;
using bundle::SizeExpr;

Expected<SizeExpr> sizeExpr(const SymInt &value) { return SizeExpr::parse(value.str()); }

Expected<std::vector<SizeExpr>> shapeExprs(const std::vector<SymInt> &shape) {
  std::vector<SizeExpr> dims;
  for (const SymInt &dim : shape) {
    TC_ASSIGN_OR_RETURN(SizeExpr expr, sizeExpr(dim));
    dims.push_back(std::move(expr));
  }
  return dims;
}

/// The manifest of a scheduled program (the CPU variants are added by the caller).
Expected<Manifest> buildManifest(const loop::LoopProgram &program, const sched::Schedule &schedule,
                                 const Graph &graph) {
  Manifest manifest;
  manifest.tensorcVersion = TENSORC_VERSION;
  manifest.symbols = program.symbols;
  // Every symbol must be a whole dim of some input, or the runtime could not bind it.
  std::set<std::string> bindable;
  for (const Value *input : graph.userInputs()) {
    bundle::TensorDesc desc;
    desc.name = input->name();
    desc.dtype = input->type().dtype;
    TC_ASSIGN_OR_RETURN(desc.shape, shapeExprs(input->type().shape));
    for (const SymInt &dim : input->type().shape)
      if (auto name = dim.symbolName())
        bindable.insert(*name);
    manifest.inputs.push_back(std::move(desc));
  }
  for (const std::string &symbol : program.symbols)
    if (!bindable.count(symbol))
      return makeError("symbol '", symbol,
                       "' is no input's whole dim, so a caller's shapes could not bind it");

  std::map<int, int64_t> outputIndex; // buffer -> output position it is returned as
  std::set<std::string> outputNames;
  for (size_t i = 0; i < program.outputs.size(); ++i) {
    const loop::Buffer &buffer = program.buffers[size_t(program.outputs[i])];
    bundle::TensorDesc desc;
    desc.name = graph.outputs()[i]->name();
    // A value returned twice (e.g. equal outputs merged by the graph passes) still needs one
    // name per output in the manifest.
    for (size_t k = i; !outputNames.insert(desc.name).second; ++k)
      desc.name = strCat(graph.outputs()[i]->name(), "_", k);
    desc.dtype = buffer.dtype;
    TC_ASSIGN_OR_RETURN(desc.shape, shapeExprs(buffer.shape));
    // The runtime allocates outputs before running, so their sizes must follow from the inputs'.
    std::set<std::string> used;
    for (const SizeExpr &dim : desc.shape)
      dim.collectSymbols(used);
    for (const std::string &symbol : used)
      if (!bindable.count(symbol))
        return makeError("output '", desc.name, "' has a data-dependent shape (dim '", symbol,
                         "'), which bundles do not support yet");
    manifest.outputs.push_back(std::move(desc));
    if (buffer.kind == loop::Buffer::Kind::Intermediate && !outputIndex.count(buffer.id))
      outputIndex[buffer.id] = int64_t(i);
  }

  for (const loop::Buffer &buffer : program.buffers) {
    BufferDesc desc;
    desc.id = buffer.id;
    desc.name = buffer.name;
    desc.dtype = buffer.dtype;
    TC_ASSIGN_OR_RETURN(desc.shape, shapeExprs(buffer.shape));
    desc.offset = SizeExpr::constant(0);
    switch (buffer.kind) {
    case loop::Buffer::Kind::Input:
      desc.kind = BufferKind::Input;
      desc.index = buffer.inputIndex;
      break;
    case loop::Buffer::Kind::Weight:
      desc.kind = BufferKind::Weight;
      desc.weight = buffer.name;
      break;
    case loop::Buffer::Kind::Intermediate:
      if (auto it = outputIndex.find(buffer.id); it != outputIndex.end()) {
        desc.kind = BufferKind::Output;
        desc.index = it->second;
      } else {
        desc.kind = BufferKind::Arena;
        TC_ASSIGN_OR_RETURN(desc.offset, sizeExpr(schedule.plan.offsets[size_t(buffer.id)]));
      }
      break;
    }
    manifest.buffers.push_back(std::move(desc));
  }
  TC_ASSIGN_OR_RETURN(manifest.arenaBytes, sizeExpr(schedule.plan.arenaBytes));
  manifest.peakBytes = schedule.plan.peakBytes;

  for (const sched::Kernel &kernel : schedule.kernels) {
    Launch launch;
    launch.name = kernel.name;
    launch.args.assign(kernel.args.begin(), kernel.args.end());
    switch (kernel.kind) {
    case sched::Kernel::Kind::Loop: {
      launch.kind = LaunchKind::Kernel;
      SymInt range(1);
      for (const SymInt &dim : kernel.outerRanges)
        range = range * dim;
      TC_ASSIGN_OR_RETURN(launch.range, sizeExpr(range));
      launch.grain = kernel.grain;
      break;
    }
    case sched::Kernel::Kind::Template: {
      launch.kind = LaunchKind::Kernel;
      TC_ASSIGN_OR_RETURN(
          launch.range, sizeExpr(sched::templateTileCount(program.nodes[size_t(kernel.nodes[0])])));
      break;
    }
    case sched::Kernel::Kind::Extern: {
      const loop::LoopNode &node = program.nodes[size_t(kernel.nodes[0])];
      launch.kind = LaunchKind::Extern;
      launch.name = node.externOp;
      launch.args.assign(node.externInputs.begin(), node.externInputs.end());
      launch.args.insert(launch.args.end(), node.externOutputs.begin(), node.externOutputs.end());
      launch.graph = node.externGraph;
      launch.range = SizeExpr::constant(1);
      break;
    }
    }
    manifest.launches.push_back(std::move(launch));
  }

  // Outputs that are inputs, weights, or another output's buffer are copied into their own.
  for (size_t i = 0; i < program.outputs.size(); ++i) {
    int source = program.outputs[i];
    auto it = outputIndex.find(source);
    if (it != outputIndex.end() && it->second == int64_t(i))
      continue;
    BufferDesc desc = manifest.buffers[size_t(source)];
    desc.id = int64_t(manifest.buffers.size());
    desc.name = manifest.outputs[i].name + "_out";
    desc.kind = BufferKind::Output;
    desc.index = int64_t(i);
    desc.weight.clear();
    desc.offset = SizeExpr::constant(0);
    Launch copy;
    copy.kind = LaunchKind::Copy;
    copy.name = "copy_" + manifest.outputs[i].name;
    copy.args = {source, desc.id};
    copy.range = SizeExpr::constant(1);
    manifest.buffers.push_back(std::move(desc));
    manifest.launches.push_back(std::move(copy));
  }
  return manifest;
}

/// costs.json: each launch's static bytes and operations (the profiler's roofline). Launches
/// follow the schedule's kernels, then the output copies.
Expected<bundle::LaunchCosts> launchCosts(const loop::LoopProgram &program,
                                          const sched::Schedule &schedule,
                                          const Manifest &manifest) {
  bundle::LaunchCosts costs;
  for (size_t i = 0; i < manifest.launches.size(); ++i) {
    const Launch &launch = manifest.launches[i];
    SymInt bytes, flops;
    if (i < schedule.kernels.size()) {
      sched::KernelCost cost = sched::estimateCost(program, schedule.kernels[i]);
      bytes = cost.bytes, flops = cost.flops;
    } else { // a copy reads and writes its source's bytes
      const loop::Buffer &source = program.buffers[size_t(launch.args[0])];
      bytes = SymInt(2 * int64_t(dtypeSize(source.dtype))) * source.numel();
    }
    bundle::LaunchCost cost;
    cost.name = launch.name;
    TC_ASSIGN_OR_RETURN(cost.bytes, sizeExpr(bytes));
    TC_ASSIGN_OR_RETURN(cost.flops, sizeExpr(flops));
    costs.launches.push_back(std::move(cost));
  }
  return costs;
}

/// `--emit=so`: the files a bundle needs at run time (not src/) in one library with the runtime,
/// linked inside `staging` and renamed into place.
Status writeModelLibrary(bundle::StagingArea &staging, std::string_view manifestText,
                         std::string_view weightBytes,
                         const std::vector<codegen::BundleFile> &files) {
  std::vector<cpu::EmbedFile> embedded = {{"manifest.json", manifestText, 1},
                                          {"weights.safetensors", weightBytes, 64}};
  for (const codegen::BundleFile &file : files)
    if (file.path.rfind("src/", 0) != 0)
      embedded.push_back({file.path, file.bytes, 1});
  TC_ASSIGN_OR_RETURN(std::string scratch, staging.scratchDir());
  TC_RETURN_IF_ERROR(linkModelLibrary(embedded, staging.dir() + "/model.so", "", scratch));
  return staging.commit("model.so");
}

/// The manifest's form of a GEMM template's library call.
Expected<bundle::GemmCall> gemmCall(const cuda::GemmCall &gemm) {
  bundle::GemmCall call;
  call.dtype = gemm.dtype;
  call.tf32 = gemm.tf32;
  call.output = gemm.output;
  call.direct = gemm.direct;
  call.bias = gemm.bias;
  for (auto [from, to] : {std::pair{&gemm.a, &call.a}, std::pair{&gemm.b, &call.b}}) {
    to->arg = from->arg;
    to->kContiguous = from->kContiguous;
    TC_ASSIGN_OR_RETURN(to->offset, sizeExpr(from->offset));
    TC_ASSIGN_OR_RETURN(to->ld, sizeExpr(from->ld));
    TC_ASSIGN_OR_RETURN(to->batchStride, sizeExpr(from->batchStride));
  }
  TC_ASSIGN_OR_RETURN(call.m, sizeExpr(gemm.m));
  TC_ASSIGN_OR_RETURN(call.n, sizeExpr(gemm.n));
  TC_ASSIGN_OR_RETURN(call.k, sizeExpr(gemm.k));
  TC_ASSIGN_OR_RETURN(call.batch, sizeExpr(gemm.batch));
  TC_ASSIGN_OR_RETURN(call.epilogueGrid, sizeExpr(gemm.epilogueGrid));
  return call;
}

Expected<bundle::HopperGemm> hopperGemm(const cuda::HopperGemm &form) {
  bundle::HopperGemm h;
  h.dtype = form.dtype;
  h.tf32 = form.tf32;
  h.blocksPerSm = form.blocksPerSm;
  h.block = form.block;
  h.sharedBytes = form.sharedBytes;
  for (auto [from, to] : {std::pair{&form.a, &h.a}, std::pair{&form.b, &h.b}}) {
    to->arg = from->arg;
    to->boxRows = from->boxRows;
    TC_ASSIGN_OR_RETURN(to->offset, sizeExpr(from->offset));
    TC_ASSIGN_OR_RETURN(to->rows, sizeExpr(from->rows));
    TC_ASSIGN_OR_RETURN(to->ld, sizeExpr(from->ld));
    TC_ASSIGN_OR_RETURN(to->batchStride, sizeExpr(from->batchStride));
  }
  TC_ASSIGN_OR_RETURN(h.k, sizeExpr(form.k));
  TC_ASSIGN_OR_RETURN(h.batch, sizeExpr(form.batch));
  TC_ASSIGN_OR_RETURN(h.units, sizeExpr(form.units));
  return h;
}

/// The manifest entries for what a backend made: its kernel images and launch shapes.
Status describeOutput(const codegen::BackendOutput &output, Manifest &manifest) {
  for (const codegen::KernelImage &image : output.images) {
    switch (image.kind) {
    case codegen::KernelImage::Kind::CpuLibrary: {
      bundle::CpuVariant variant;
      variant.name = image.name;
      variant.arch = image.arch;
      variant.file = image.file;
      variant.requires_ = image.requires_;
      variant.priority = image.priority;
      manifest.cpu.push_back(std::move(variant));
      break;
    }
    case codegen::KernelImage::Kind::CudaCubin:
    case codegen::KernelImage::Kind::CudaPtx:
      manifest.cuda.push_back({image.name, image.file,
                               image.kind == codegen::KernelImage::Kind::CudaPtx, image.module});
      break;
    }
  }
  if (output.launches.empty())
    return Status::ok();
  for (Launch &launch : manifest.launches) {
    if (launch.kind != LaunchKind::Kernel)
      continue;
    auto it = output.launches.find(launch.name);
    if (it == output.launches.end())
      return makeError("CUDA: no kernel rendered for launch ", launch.name);
    Expected<SizeExpr> grid = sizeExpr(it->second.grid);
    if (!grid)
      return makeError("CUDA: kernel ", launch.name, ": ", grid.error().message());
    launch.cudaGrid = std::move(*grid);
    launch.cudaBlock = it->second.block;
    launch.cudaSharedBytes = it->second.sharedBytes;
    if (it->second.counterCount != SymInt(0)) {
      Expected<SizeExpr> partials = sizeExpr(it->second.partialFloats);
      Expected<SizeExpr> counters = sizeExpr(it->second.counterCount);
      if (!partials || !counters)
        return makeError("CUDA: kernel ", launch.name, ": split-K workspaces: ",
                         (partials ? counters.error() : partials.error()).message());
      launch.cudaPartials = std::move(*partials);
      launch.cudaCounters = std::move(*counters);
    }
    launch.cudaSymbol = it->second.symbol;
    launch.cudaModule = it->second.module;
    if (const std::optional<cuda::GemmCall> &gemm = it->second.gemm) {
      Expected<bundle::GemmCall> call = gemmCall(*gemm);
      if (!call)
        return makeError("CUDA: kernel ", launch.name, ": GEMM call: ", call.error().message());
      launch.gemm = std::move(*call);
    }
    if (const std::optional<cuda::HopperGemm> &form = it->second.hopper) {
      Expected<bundle::HopperGemm> hopper = hopperGemm(*form);
      if (!hopper)
        return makeError("CUDA: kernel ", launch.name, ": Hopper form: ", hopper.error().message());
      launch.hopper = std::move(*hopper);
      manifest.formatVersion = bundle::kFormatVersion;
    }
  }
  return Status::ok();
}

/// A backend per --target, created before any work: a bad --cpu-arch or --cuda-arch fails first.
Expected<std::vector<std::unique_ptr<codegen::Backend>>>
createBackends(const TargetSet &targets, const CompileOptions &options) {
  std::vector<std::unique_ptr<codegen::Backend>> backends;
  if (targets.cpu) {
    codegen::CpuBackendOptions cpu;
    cpu.archs = options.cpuArchs;
    cpu.variants = options.variants;
    cpu.linker = options.linker;
    cpu.quiet = options.quiet;
    cpu.jobs = options.jobs;
    TC_ASSIGN_OR_RETURN(backends.emplace_back(), codegen::createCpuBackend(cpu));
  }
  if (targets.cuda) {
    codegen::CudaBackendOptions cuda;
    cuda.archs = options.cudaArchs;
    cuda.cacheDir = options.cacheDir;
    cuda.quiet = options.quiet;
    cuda.jobs = options.jobs;
    cuda.tf32 = options.tf32;
    cuda.gemmCalls = options.gemmCalls;
    cuda.programCost = options.cudaProgramCost;
    TC_ASSIGN_OR_RETURN(backends.emplace_back(), codegen::createCudaBackend(cuda));
  }
  if (options.emit == CompileOptions::Emit::SharedObject) {
    if (targets.cuda)
      return makeError(
          "--emit=so holds CPU kernels only; use a bundle directory for --target cuda");
    for (const std::string &arch : options.cpuArchs)
      if (arch != "x86_64" || codegen::hostCpuArch() != "x86_64")
        return makeError("--emit=so builds for the host (x86_64); use a bundle directory for ",
                         arch);
  }
  return backends;
}

} // namespace

bundle::TrainingInfo trainingInfo(const autodiff::TrainingSignature &signature) {
  bundle::TrainingInfo info;
  info.optimizer = signature.optimizer;
  info.loss = signature.loss;
  info.data = signature.data;
  for (const autodiff::TrainingSignature::State &state : signature.state)
    info.state.push_back({state.input, state.output, state.init});
  return info;
}

Expected<CompileSummary> compileGraph(Graph graph, const OpRegistry &registry,
                                      const CompileOptions &options, const std::string &modelName,
                                      const std::string &sourceHash) {
  const std::string &modelPath = modelName; // for messages
  TC_ASSIGN_OR_RETURN(TargetSet targets, parseTargets(options.target));
  TC_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<codegen::Backend>> backends,
                      createBackends(targets, options));
  // Every file of the compile, temporaries included, lives in the staging area from here on.
  TC_ASSIGN_OR_RETURN(
      std::unique_ptr<bundle::StagingArea> staging,
      bundle::StagingArea::create(options.outDir, options.emit == CompileOptions::Emit::SharedObject
                                                      ? bundle::StagingArea::Kind::File
                                                      : bundle::StagingArea::Kind::Directory));
  TC_ASSIGN_OR_RETURN(std::string scratchDir, staging->scratchDir());
  TC_ASSIGN_OR_RETURN(PipelineOptions pipeline, pipelineOptionsFor(targets, options.fuseAttention,
                                                                   options.train.has_value()));
  pipeline.timeStages = options.timeStages;
  pipeline.onStageStart = options.progress;
  pipeline.train = options.train;
  pipeline.fallback = options.fallback.value_or(targets.cuda ? loop::FallbackPolicy::Error
                                                             : loop::FallbackPolicy::Allow);
  pipeline.limits = options.limits;
  LoweredModel lowered;
  autodiff::TrainingSignature training;
  if (Status staged = runCompileStages(graph, registry, pipeline, lowered, training); !staged) {
    std::string message = staged.message();
    if (!options.fallback && targets.cuda &&
        message.find("--fallback=error forbids") != std::string::npos)
      message += " (the default with --target cuda: a GPU bundle runs every op on the GPU; "
                 "--fallback=allow runs this one on the host)";
    return makeError(modelPath, ": ", message);
  }
  // TEMPORARY (issue 18): moves into Codegen/Common.
  if (Status injected = injectBugForTesting(lowered.program, lowered.schedule); !injected)
    return makeError(modelPath, ": ", injected.message());
  // CPU-only inference bundles store constant GEMM operands packed for the CPU micro-kernels.
  if (targets.cpu && !targets.cuda && !options.train) {
    Expected<int> packed = cpu::packGemmWeights(lowered.program, lowered.schedule);
    if (!packed)
      return makeError(modelPath, ": ", packed.error().message());
    Expected<int> convs =
        cpu::packConvTemplates(lowered.program, lowered.schedule, options.winograd);
    if (!convs)
      return makeError(modelPath, ": ", convs.error().message());
  }
  if (!lowered.program.fallbacks.empty() && !options.quiet)
    log::info(strCat("fallbacks (run by the runtime's reference kernels): ",
                     join(lowered.program.fallbacks, ", ")));

  timing::Scope manifestTime("manifest");
  Expected<Manifest> manifestOr = buildManifest(lowered.program, lowered.schedule, graph);
  if (!manifestOr)
    return makeError(modelPath, ": ", manifestOr.error().message());
  Manifest manifest = std::move(*manifestOr);
  manifest.sourceHash = sourceHash;
  manifest.model = modelName;
  if (options.train)
    manifest.training = trainingInfo(training);
  manifest.cudaGraphs = targets.cuda && options.cudaGraphs;
  if (targets.cuda)
    manifest.matmulPrecision = options.tf32 ? "high" : "highest";
  manifestTime.stop();

  // Code generation: each target's backend on the schedule.
  std::vector<codegen::BundleFile> files;
  CompileSummary summary;
  // Each image carries the kernels' signatures (what the runtime checks every launch against),
  // with the launch shapes its backend chose.
  codegen::CompileContext context;
  context.tempDir = scratchDir;
  context.dataSymbol = bundle::kKernelSignatureSymbol;
  context.progress = options.progress;
  context.dataFor =
      [&manifest](
          const std::map<std::string, codegen::LaunchShape> &launches) -> Expected<std::string> {
    Manifest shaped = manifest;
    codegen::BackendOutput shapes;
    shapes.launches = launches;
    TC_RETURN_IF_ERROR(describeOutput(shapes, shaped));
    return bundle::kernelSignatureTable(shaped);
  };
  for (const std::unique_ptr<codegen::Backend> &backend : backends) {
    timing::Scope backendTime(strCat("codegen ", backend->name()));
    Expected<codegen::BackendOutput> output =
        backend->compile(lowered.program, lowered.schedule, context);
    if (!output)
      return makeError(modelPath, ": ", backend->name() == std::string("cuda") ? "CUDA: " : "",
                       output.error().message());
    if (Status described = describeOutput(*output, manifest); !described)
      return makeError(modelPath, ": ", described.message());
    for (const codegen::KernelImage &image : output->images)
      if (image.kind == codegen::KernelImage::Kind::CpuLibrary)
        summary.variants.push_back(image.name);
    std::move(output->files.begin(), output->files.end(), std::back_inserter(files));
  }

  // GEMM choices from a tuning cache made on the GPU machine, for the newest arch compiled for.
  if (!options.tuningCache.empty()) {
    if (!options.gemmCalls || !targets.cuda)
      return makeError(options.tuningCache,
                       ": a tuning cache needs GEMM library calls (--target cuda -O max-autotune)");
    Expected<bundle::TuningCache> cache = bundle::TuningCache::load(options.tuningCache);
    if (!cache)
      return cache.takeError();
    std::string arch = *std::max_element(options.cudaArchs.begin(), options.cudaArchs.end(),
                                         [](const std::string &a, const std::string &b) {
                                           return std::stoi(a.substr(3)) < std::stoi(b.substr(3));
                                         });
    int64_t calls = 0;
    for (const Launch &launch : manifest.launches)
      calls += launch.gemm.has_value();
    int64_t found = cache->apply(manifest, arch, {});
    int64_t library = 0;
    for (const Launch &launch : manifest.launches)
      library += launch.gemm && !launch.gemm->library.empty();
    if (!options.quiet)
      log::info(strCat("tuning cache ", options.tuningCache, ": ", found, " of ", calls,
                       " GEMMs found for ", arch, ", ", library, " of them on cuBLASLt"));
  }

  if (options.progress)
    options.progress("writing the bundle");
  timing::Scope writeTime("write bundle");
  std::vector<std::pair<std::string, Tensor>> weights(lowered.program.weights.begin(),
                                                      lowered.program.weights.end());
  // A training bundle's parameters start from the model's values (manifest training.state).
  for (const auto &[name, tensor] : training.initialParams)
    weights.emplace_back(name, tensor);
  // Everything but the manifest is written first, so that the manifest records their digests.
  auto record = [&](const std::string &path, std::string_view bytes) {
    manifest.files.push_back({path, sha256Hex(bytes)});
  };
  std::string weightsPath =
      (options.emit == CompileOptions::Emit::SharedObject ? scratchDir : staging->dir()) +
      "/weights.safetensors";
  timing::Scope weightsTime("  write weights");
  TC_RETURN_IF_ERROR(writeSafetensors(weightsPath, weights));
  weightsTime.stop();
  TC_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> weightFile, MappedFile::open(weightsPath));
  std::string_view weightBytes = weightFile->bytes();
  timing::Scope digestTime("  weights sha256");
  record("weights.safetensors", weightBytes);
  digestTime.stop();
  for (const codegen::BundleFile &file : files)
    if (file.path.rfind("src/", 0) != 0)
      record(file.path, file.bytes);
  std::sort(
      manifest.files.begin(), manifest.files.end(),
      [](const bundle::BundleFile &a, const bundle::BundleFile &b) { return a.path < b.path; });
  std::string manifestText = manifest.toJson().dump(2) + "\n";
  Expected<bundle::LaunchCosts> costs = launchCosts(lowered.program, lowered.schedule, manifest);
  if (!costs)
    return makeError(modelPath, ": ", costs.error().message());
  if (options.emit == CompileOptions::Emit::SharedObject) {
    if (Status library = writeModelLibrary(*staging, manifestText, weightBytes, files); !library)
      return makeError(modelPath, ": ", library.message());
  } else {
    const std::string &dir = staging->dir();
    files.push_back({"src/lower.txt", loop::printProgram(lowered.program)});
    files.push_back({"src/fuse.txt", sched::printSchedule(lowered.program, lowered.schedule)});
    files.push_back({bundle::kLaunchCostsFile, costs->toJson().dump(2) + "\n"});
    for (const codegen::BundleFile &file : files)
      TC_RETURN_IF_ERROR(bundle::writeFile(dir + "/" + file.path, file.bytes));
    // The manifest goes last: a directory with one is complete.
    TC_RETURN_IF_ERROR(bundle::writeFile(dir + "/manifest.json", manifestText));
    TC_RETURN_IF_ERROR(staging->commit());
  }

  summary.kernels = lowered.schedule.kernels.size();
  for (const sched::Kernel &kernel : lowered.schedule.kernels)
    summary.generatedKernels += kernel.kind != sched::Kernel::Kind::Extern;
  summary.fallbacks = lowered.program.fallbacks.size();
  summary.fallbackOps.assign(lowered.program.fallbacks.begin(), lowered.program.fallbacks.end());
  summary.peakBytes = lowered.schedule.plan.peakBytes;
  if (targets.cuda)
    summary.cudaArchs = options.cudaArchs;
  return summary;
}

Expected<CompileSummary> compileModel(const std::string &modelPath, const OpRegistry &registry,
                                      const CompileOptions &options) {
  // TENSORC_INJECT_BUG changes the kernels behind the options' back: never cached.
  std::string cacheDir = std::getenv("TENSORC_INJECT_BUG") ? "" : compileCacheDir(options);
  timing::Scope keyTime("cache key");
  TC_ASSIGN_OR_RETURN(CompileCacheKey key, compileCacheKey(modelPath, options));
  keyTime.stop();
  if (key.key.empty())
    cacheDir.clear();
  if (!cacheDir.empty()) {
    timing::Scope lookupTime("cache lookup");
    TC_ASSIGN_OR_RETURN(std::optional<CompileSummary> cached,
                        restoreFromCache(cacheDir, key.key, options));
    if (cached) {
      // What compiling would have said.
      if (!cached->fallbackOps.empty() && !options.quiet)
        log::info(strCat("fallbacks (run by the runtime's reference kernels): ",
                         join(cached->fallbackOps, ", ")));
      return std::move(*cached);
    }
  }
  if (options.progress)
    options.progress("import");
  timing::Scope importTime("stage import");
  TC_ASSIGN_OR_RETURN(Graph graph, importModel(modelPath, registry));
  importTime.stop();
  TC_ASSIGN_OR_RETURN(CompileSummary summary,
                      compileGraph(std::move(graph), registry, options,
                                   std::filesystem::path(modelPath).filename().string(),
                                   "tc128:" + key.modelHash));
  if (!cacheDir.empty()) {
    timing::Scope storeTime("cache store");
    storeInCache(cacheDir, key.key, options, summary);
  }
  return summary;
}

} // namespace tensorc
