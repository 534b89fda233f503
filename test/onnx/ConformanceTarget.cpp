// The conformance targets: the reference interpreter and bundles compiled for this CPU or a GPU.
#include "ConformanceTarget.h"

#include "tensorc/IR/Rewriter.h"
#include "tensorc/Interp/Interpreter.h"
#include "tensorc/Pipeline/Compile.h"
#include "tensorc/Runtime/Model.h"
#include "tensorc/Support/Safetensors.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tensorc::conformance {
namespace {

/// Runs the graph on the reference interpreter; nothing to prepare.
class InterpTarget final : public ConformanceTarget {
public:
  Status prepare(const Graph &graph) override {
    graph_ = &graph;
    return Status::ok();
  }
  Expected<std::vector<Tensor>> run(const std::vector<Tensor> &inputs) override {
    return interp::interpret(*graph_, inputs);
  }

private:
  const Graph *graph_ = nullptr;
};

// Only the host's baseline variant: one compile per test keeps a full run affordable.
#if defined(__aarch64__)
constexpr const char *kHostArch = "aarch64";
constexpr const char *kHostVariant = "aarch64";
#else
constexpr const char *kHostArch = "x86_64";
constexpr const char *kHostVariant = "x86_64";
#endif

/// A fresh empty directory under $TMPDIR (or /tmp).
Expected<std::string> makeTempDir() {
  const char *tmp = std::getenv("TMPDIR");
  std::string pattern = strCat(tmp && *tmp ? tmp : "/tmp", "/tensorc-conformance-bundle-XXXXXX");
  if (!::mkdtemp(pattern.data()))
    return makeError("mkdtemp ", pattern, ": ", std::strerror(errno));
  return pattern;
}

/// Compiles the graph into a bundle and runs it with the runtime: on this CPU (its baseline
/// variant, one thread: tests run in forked children, several at once), or on a CUDA GPU. Without
/// a GPU a CUDA bundle is compiled (every kernel through NVRTC) but not run.
class CompiledTarget final : public ConformanceTarget {
public:
  CompiledTarget(const OpRegistry &registry, std::string device)
      : registry_(registry), device_(std::move(device)) {}
  ~CompiledTarget() override { discardBundle(); }

  Status prepare(const Graph &graph) override {
    discardBundle();
    // compileGraph consumes its graph; the runner keeps the imported one (Graph is move-only).
    RewriteFn keepEveryNode =
        [](RewriteContext &) -> Expected<std::optional<std::vector<Value *>>> {
      return std::optional<std::vector<Value *>>();
    };
    TC_ASSIGN_OR_RETURN(Graph copy, rewriteGraph(graph, keepEveryNode));
    TC_ASSIGN_OR_RETURN(bundleDir_, makeTempDir());
    CompileOptions options;
    options.outDir = bundleDir_;
    options.cpuArchs = {kHostArch};
    options.variants = {kHostVariant};
    options.quiet = true;
    if (device_ == "cuda") {
      options.target = "cuda";
      // The suite checks every op, those on reference kernels too (counted apart).
      options.fallback = loop::FallbackPolicy::Allow;
      if (const char *archs = std::getenv("TENSORC_CONFORMANCE_CUDA_ARCH"); archs && *archs)
        options.cudaArchs = {archs};
    }
    Expected<CompileSummary> compiled =
        compileGraph(std::move(copy), registry_, options, "model.onnx", "");
    if (!compiled)
      return withoutBundleDir(compiled.status());
    generatedKernels_ = compiled->generatedKernels > 0;
    rt::LoadOptions load;
    load.threads = 1;
    load.variant = device_ == "cpu" ? kHostVariant : "";
    load.device = device_;
    Expected<std::unique_ptr<rt::Model>> model = rt::Model::load(bundleDir_, load);
    if (!model && device_ == "cuda" && isNoGpu(model.error().message())) {
      cannotRun_ = withoutBundleDir(model.status()).message();
      return Status::ok();
    }
    if (!model)
      return withoutBundleDir(model.status());
    model_ = std::move(*model);
    return Status::ok();
  }

  std::optional<std::string> cannotRun() const override {
    if (cannotRun_.empty())
      return std::nullopt;
    return cannotRun_;
  }

  Status exportCase(const std::string &dir, const std::vector<Tensor> &inputs,
                    const std::vector<Tensor> &expected, double rtol, double atol) const override {
    namespace fs = std::filesystem;
    if (bundleDir_.empty())
      return makeError("no bundle to export");
    Expected<std::string> manifestText = readText(bundleDir_ + "/manifest.json");
    if (!manifestText)
      return manifestText.status();
    Expected<Json> json = Json::parse(*manifestText);
    if (!json)
      return json.status();
    Expected<bundle::Manifest> manifest = bundle::Manifest::fromJson(*json);
    if (!manifest)
      return manifest.status();
    if (manifest->inputs.size() != inputs.size() || manifest->outputs.size() != expected.size())
      return makeError("the bundle takes ", manifest->inputs.size(), " inputs and returns ",
                       manifest->outputs.size(), " outputs; the data set has ", inputs.size(),
                       " and ", expected.size());
    std::error_code error;
    fs::remove_all(dir, error);
    fs::create_directories(dir, error);
    fs::copy(bundleDir_, dir + "/bundle", fs::copy_options::recursive, error);
    if (error)
      return makeError("copying the bundle to ", dir, ": ", error.message());
    fs::remove_all(dir + "/bundle/src", error); // sources are for humans, not the GPU run
    std::vector<std::pair<std::string, Tensor>> named;
    for (size_t i = 0; i < inputs.size(); ++i)
      named.emplace_back(manifest->inputs[i].name, inputs[i]);
    TC_RETURN_IF_ERROR(writeSafetensors(dir + "/inputs.safetensors", named));
    named.clear();
    for (size_t i = 0; i < expected.size(); ++i)
      named.emplace_back(manifest->outputs[i].name, expected[i]);
    TC_RETURN_IF_ERROR(writeSafetensors(dir + "/expected.safetensors", named));
    Json meta = Json::object();
    meta["rtol"] = rtol;
    meta["atol"] = atol;
    std::ofstream out(dir + "/case.json");
    out << meta.dump(2) << "\n";
    if (!out)
      return makeError(dir, "/case.json: cannot write");
    return Status::ok();
  }

  Expected<std::vector<Tensor>> run(const std::vector<Tensor> &inputs) override {
    if (!model_)
      return makeError("the model was not compiled");
    return model_->run(inputs);
  }

  std::optional<bool> ranGeneratedCode() const override {
    if (!cannotRun_.empty())
      return generatedKernels_;
    if (!model_)
      return std::nullopt;
    const std::vector<bundle::Launch> &launches = model_->manifest().launches;
    return std::any_of(launches.begin(), launches.end(), [](const bundle::Launch &launch) {
      return launch.kind == bundle::LaunchKind::Kernel;
    });
  }

private:
  /// Errors that mean "this machine has no usable GPU" rather than "the bundle is wrong".
  static bool isNoGpu(const std::string &message) {
    return message.find("no CUDA driver") != std::string::npos ||
           message.find("cuInit") != std::string::npos ||
           message.find("does not exist (0 device(s) present)") != std::string::npos;
  }

  static Expected<std::string> readText(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
      return makeError("cannot read ", path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }

  /// The error with the (random) bundle directory written `<bundle>`, so that reasons group.
  Status withoutBundleDir(const Status &status) const {
    std::string message = status.message();
    for (size_t at; !bundleDir_.empty() && (at = message.find(bundleDir_)) != std::string::npos;)
      message.replace(at, bundleDir_.size(), "<bundle>");
    return makeError(message);
  }

  void discardBundle() {
    model_.reset(); // unmaps the kernels and weights before their files go
    if (bundleDir_.empty())
      return;
    std::error_code ignored;
    std::filesystem::remove_all(bundleDir_, ignored);
    bundleDir_.clear();
    cannotRun_.clear();
  }

  const OpRegistry &registry_;
  std::string device_;
  std::string bundleDir_;
  std::unique_ptr<rt::Model> model_;
  std::string cannotRun_;
  bool generatedKernels_ = false;
};

} // namespace

Status ConformanceTarget::exportCase(const std::string &, const std::vector<Tensor> &,
                                     const std::vector<Tensor> &, double, double) const {
  return makeError("this target has no bundle to export");
}

std::vector<std::string> conformanceTargetNames() { return {"interp", "cpu", "cuda"}; }

std::unique_ptr<ConformanceTarget> createConformanceTarget(const std::string &name,
                                                           const OpRegistry &registry) {
  if (name == "interp")
    return std::make_unique<InterpTarget>();
  if (name == "cpu" || name == "cuda")
    return std::make_unique<CompiledTarget>(registry, name);
  return nullptr;
}

} // namespace tensorc::conformance
