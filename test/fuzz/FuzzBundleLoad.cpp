// libFuzzer harness: arbitrary bytes as the manifest.json of a bundle whose other files are fixed
// (weights w: f32[4]; the runtime tests' hand-written kernels as the host's CPU variant). The
// runtime loads it (manifest validation, file checks and digests, kernel signatures, extern
// graphs) and, when it loads, runs it on generated inputs with every symbol bound to 3: a
// rejection is fine; reading or writing past a buffer, a crash or a leak is a finding.
// In the seeds (corpus/bundle_load) the digests are the tokens @weights_sha256@ and
// @kernels_sha256@, replaced here by the real ones, so that mutations reach past the digests.
#include "FuzzCommon.h"

#include "tensorc/Runtime/Model.h"
#include "tensorc/Runtime/RunInputs.h"
#include "tensorc/Support/Safetensors.h"
#include "tensorc/Support/Sha256.h"

#include <filesystem>
#include <fstream>

#ifndef TENSORC_FUZZ_KERNELS
#error "TENSORC_FUZZ_KERNELS must name the test kernels library"
#endif

using namespace tensorc;
namespace fs = std::filesystem;

namespace {

struct BundleTemplate {
  std::string dir;
  std::string weightsDigest, kernelsDigest;
};

const BundleTemplate &bundleTemplate() {
  static const BundleTemplate bundle = [] {
    BundleTemplate made;
    made.dir = fuzz::scratchDir() + "/bundle";
#if defined(__aarch64__)
    const char *variant = "aarch64";
#else
    const char *variant = "x86_64";
#endif
    fs::create_directories(made.dir + "/cpu");
    Tensor w = Tensor::zerosUnchecked(DType::F32, {4});
    for (int i = 0; i < 4; ++i)
      w.setDouble(i, 100.0 * (i + 1));
    fuzz::check(writeSafetensors(made.dir + "/weights.safetensors", {{"w", w}}).isOk(),
                "cannot write the weights");
    std::string so = made.dir + "/cpu/" + variant + ".so";
    fs::copy_file(TENSORC_FUZZ_KERNELS, so, fs::copy_options::overwrite_existing);
    made.weightsDigest = sha256File(made.dir + "/weights.safetensors").value();
    made.kernelsDigest = sha256File(so).value();
    return made;
  }();
  return bundle;
}

void replaceAll(std::string &text, const std::string &token, const std::string &value) {
  for (size_t at = text.find(token); at != std::string::npos; at = text.find(token, at))
    text.replace(at, token.size(), value), at += value.size();
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  fuzz::limitTensorBytes();
  bundleTemplate();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const BundleTemplate &bundle = bundleTemplate();
  std::string manifest(reinterpret_cast<const char *>(data), size);
  replaceAll(manifest, "@weights_sha256@", bundle.weightsDigest);
  replaceAll(manifest, "@kernels_sha256@", bundle.kernelsDigest);
  {
    std::ofstream out(bundle.dir + "/manifest.json", std::ios::binary | std::ios::trunc);
    out << manifest;
  }
  rt::LoadOptions options;
  options.threads = 1;
  Expected<std::unique_ptr<rt::Model>> model = rt::Model::load(bundle.dir, options);
  if (!model)
    return 0;
  rt::RunInputOptions inputs;
  inputs.seed = 1;
  for (const std::string &symbol : (*model)->manifest().symbols)
    inputs.dims[symbol] = 3;
  Expected<std::vector<Tensor>> made = rt::makeRunInputs(**model, inputs);
  if (made)
    (void)(*model)->run(*made);
  return 0;
}
