// Tuning a -O max-autotune bundle on a GPU (`tensorc tune`, `tensorc-run --tune`): each GEMM
// timed as its generated kernel and as cuBLASLt's product plus the kernel's epilogue, the faster
// way of each recorded in the bundle's manifest (DESIGN §5: the library is a tuning candidate,
// loaded with dlopen only by bundles that chose it).
#include "tensorc/Runtime/Tune.h"

#include "BundleFiles.h"
#include "tensorc/Bundle/BundleWriter.h"
#include "tensorc/Bundle/Manifest.h"
#include "tensorc/Bundle/TuningCache.h"
#include "tensorc/Runtime/Model.h"
#include "tensorc/Runtime/RunInputs.h"
#include "tensorc/Support/Printable.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

namespace tensorc::rt {

namespace fs = std::filesystem;

OutputDifference outputDifference(const Tensor &expected, const Tensor &actual) {
  OutputDifference result;
  for (int64_t e = 0; e < expected.numel() && e < actual.numel(); ++e) {
    double want = expected.getDouble(e), got = actual.getDouble(e);
    if (std::isfinite(want))
      result.largest = std::max(result.largest, std::fabs(want));
    if (std::isfinite(want) && std::isfinite(got))
      result.difference = std::max(result.difference, std::fabs(want - got));
    else if (!(std::isnan(want) && std::isnan(got)) && want != got)
      result.difference = INFINITY;
  }
  return result;
}

Status tuneBundle(const TuneOptions &options, std::ostream &report) {
  std::error_code ec;
  std::string manifestPath = options.bundle + "/manifest.json";
  if (!fs::is_directory(options.bundle, ec) || !fs::is_regular_file(manifestPath, ec))
    return makeError(options.bundle, ": not a bundle directory (tune rewrites a bundle's "
                                     "manifest.json; a model .so cannot be tuned afterwards)");
  TC_ASSIGN_OR_RETURN(std::string text, readFile(manifestPath));
  std::optional<bundle::TuningCache> cache;
  if (!options.cache.empty()) {
    Expected<bundle::TuningCache> loaded = bundle::TuningCache::load(options.cache);
    if (!loaded)
      return loaded.takeError();
    cache = std::move(*loaded);
  }
  Expected<bundle::Manifest> manifest = parseManifest(text, manifestPath);
  if (!manifest)
    return manifest.takeError();
  size_t calls = 0;
  for (const bundle::Launch &launch : manifest->launches)
    calls += launch.gemm.has_value();
  if (calls == 0)
    return makeError(options.bundle,
                     ": no GEMM has a library call; compile the model with -O max-autotune");

  // Nothing is written before a GPU is known to be here.
  Expected<int> devices = cudaDeviceCount();
  if (!devices || *devices <= options.cudaDevice)
    return makeError(options.bundle, ": tuning needs a GPU (",
                     devices ? strCat("CUDA device ", options.cudaDevice, " not present")
                             : devices.error().message(),
                     ")");

  // The bundle as it stands with its GEMM choices ignored: every GEMM on its generated kernel.
  // The manifest on disk stays as it is until the tuned one replaces it.
  LoadOptions load;
  load.device = "cuda";
  load.cudaDevice = options.cudaDevice;
  load.cudaGraphs = 0;
  load.gemmLibraries = false;
  bundle::Manifest untuned = *manifest;
  for (bundle::Launch &launch : untuned.launches)
    if (launch.gemm)
      launch.gemm->library.clear(), launch.gemm->algo = 0;
  // manifest.json is replaced whole (bundle::replaceFile): a crash or a signal leaves the old
  // manifest or the new one, never a mix.
  bool replaced = false;
  auto restore = [&](Error error) -> Status {
    if (!replaced)
      return error;
    if (Status restored = bundle::replaceFile(manifestPath, text); !restored)
      return makeError(error.message(),
                       "; and restoring the manifest failed: ", restored.message());
    return error;
  };
  Expected<std::unique_ptr<Model>> model = Model::load(options.bundle, load);
  if (!model)
    return restore(model.takeError());
  RunInputOptions inputOptions;
  inputOptions.path = options.inputs;
  inputOptions.seed = options.seed;
  inputOptions.dims = options.dims;
  Expected<std::vector<Tensor>> inputs = makeRunInputs(**model, inputOptions);
  if (!inputs)
    return restore(inputs.takeError());
  Expected<std::vector<Tensor>> before = (*model)->run(*inputs);
  if (!before)
    return restore(before.takeError());
  // GEMMs the cache knows (this arch, these sizes) take its choice without being timed.
  std::string arch = (*model)->cudaArch();
  std::map<std::string, int64_t> bindings = (*model)->symbolBindings();
  std::vector<std::optional<std::string>> keys(manifest->launches.size());
  std::map<size_t, bundle::TuningEntry> cached;
  for (size_t i = 0; i < manifest->launches.size(); ++i) {
    keys[i] = bundle::TuningCache::key(*manifest, manifest->launches[i], bindings, arch);
    if (const bundle::TuningEntry *entry = keys[i] && cache ? cache->find(*keys[i]) : nullptr)
      cached[i] = *entry;
  }
  report << "tensorc: tuning " << calls << " GEMMs of " << options.bundle << " on "
         << (*model)->deviceDescription()
         << (cache ? strCat(" (", cached.size(), " from ", options.cache, ")") : std::string())
         << "\n";
  Expected<std::vector<Model::GemmTiming>> timed =
      (*model)->tuneGemms(*inputs, options.iterations, options.algorithms, options.margin,
                          [&](size_t launch) { return !cached.count(launch); });
  if (!timed)
    return restore(timed.takeError());
  model->reset();
  std::vector<Model::GemmTiming> timings = std::move(*timed);
  for (const auto &[launch, entry] : cached) {
    Model::GemmTiming t;
    t.launch = launch;
    t.problem = "(tuning cache)";
    t.generatedUs = entry.kernelUs;
    t.libraryUs = entry.libraryUs;
    t.algo = entry.algo;
    t.useLibrary = !entry.library.empty();
    t.note = "cached";
    timings.push_back(std::move(t));
  }
  std::sort(
      timings.begin(), timings.end(),
      [](const Model::GemmTiming &a, const Model::GemmTiming &b) { return a.launch < b.launch; });
  if (cache) {
    size_t added = 0;
    for (const Model::GemmTiming &t : timings)
      if (keys[t.launch] && !cached.count(t.launch)) {
        cache->put(*keys[t.launch],
                   {t.useLibrary ? bundle::kCublasLt : "", t.algo, t.generatedUs, t.libraryUs});
        ++added;
      }
    if (Status saved = added ? cache->save(options.cache) : Status::ok(); !saved)
      return restore(saved.takeError());
  }

  bundle::Manifest tuned = untuned;
  double generatedUs = 0, tunedUs = 0;
  int64_t chosen = 0;
  char line[512];
  std::snprintf(line, sizeof line, "%-40s %-44s %10s %10s %7s  %s\n", "kernel", "problem",
                "kernel us", "cuBLASLt", "speed", "choice");
  report << line;
  for (const Model::GemmTiming &t : timings) {
    bundle::Launch &launch = tuned.launches[t.launch];
    std::string choice = t.useLibrary
                             ? strCat("cuBLASLt (algorithm ", t.algo,
                                      t.algorithms ? strCat(" of ", t.algorithms) : "", ")")
                             : "kernel";
    if (!t.note.empty())
      choice += " - " + t.note;
    std::snprintf(line, sizeof line, "%-40s %-44s %10.2f %10s %7s  %s\n",
                  printable(launch.name).c_str(), t.problem.c_str(), t.generatedUs,
                  t.libraryUs < 0 ? "-" : strCat(std::lround(t.libraryUs * 100) / 100.0).c_str(),
                  t.libraryUs <= 0
                      ? "-"
                      : strCat(std::lround(t.generatedUs / t.libraryUs * 100) / 100.0, "x").c_str(),
                  printable(choice).c_str());
    report << line;
    generatedUs += t.generatedUs;
    tunedUs += t.useLibrary ? t.libraryUs : t.generatedUs;
    if (t.useLibrary) {
      launch.gemm->library = bundle::kCublasLt;
      launch.gemm->algo = t.algo;
      ++chosen;
    }
  }
  report << "tensorc: " << chosen << " of " << timings.size() << " GEMMs to cuBLASLt; their sum "
         << std::lround(generatedUs) << " -> " << std::lround(tunedUs) << " us\n";
  if (options.dryRun) {
    report << "tensorc: --dry-run: " << manifestPath << " left as it was\n";
    return Status::ok();
  }
  TC_RETURN_IF_ERROR(bundle::replaceFile(manifestPath, tuned.toJson().dump(2) + "\n"));
  replaced = true;
  if (chosen == 0)
    return Status::ok();
  // The tuned bundle end to end against the untuned run, on the same inputs.
  load.gemmLibraries = true;
  Expected<std::unique_ptr<Model>> check = Model::load(options.bundle, load);
  Expected<std::vector<Tensor>> after =
      check ? (*check)->run(*inputs) : Expected<std::vector<Tensor>>(check.takeError());
  if (!after)
    return restore(after.takeError().withContext("running the tuned bundle"));
  double difference = 0; // the worst output's
  for (size_t o = 0; o < before->size() && o < after->size(); ++o)
    difference = std::max(difference, outputDifference((*before)[o], (*after)[o]).relative());
  bool strict = manifest->matmulPrecision != "high";
  bool f32 = true;
  for (const bundle::TensorDesc &output : manifest->outputs)
    f32 &= output.dtype == DType::F32;
  double tolerance = strict && f32 ? 1e-4 : 2e-2;
  if (!(difference <= tolerance))
    return restore(makeError("the tuned bundle's outputs differ from the untuned one's by ",
                             difference, " of their largest magnitude (over ", tolerance,
                             "); the manifest is left as it was"));
  report << "tensorc: wrote " << manifestPath << " (" << (*check)->gemmLibrary()
         << "; outputs within " << difference << " of the untuned bundle's)\n";
  return Status::ok();
}

} // namespace tensorc::rt
