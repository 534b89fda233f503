// The conformance targets: the reference interpreter and a bundle compiled for this CPU.
#include "ConformanceTarget.h"

#include "tensorc/IR/Rewriter.h"
#include "tensorc/Interp/Interpreter.h"
#include "tensorc/Pipeline/Compile.h"
#include "tensorc/Runtime/Model.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

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

/// Compiles the graph into a bundle for this CPU and runs it with the runtime, one thread (tests
/// run in forked children, several at once).
class CpuTarget final : public ConformanceTarget {
public:
  explicit CpuTarget(const OpRegistry &registry) : registry_(registry) {}
  ~CpuTarget() override { discardBundle(); }

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
    if (Status compiled =
            compileGraph(std::move(copy), registry_, options, "model.onnx", "").status();
        !compiled)
      return withoutBundleDir(compiled);
    rt::LoadOptions load;
    load.threads = 1;
    load.variant = kHostVariant;
    Expected<std::unique_ptr<rt::Model>> model = rt::Model::load(bundleDir_, load);
    if (!model)
      return withoutBundleDir(model.status());
    model_ = std::move(*model);
    return Status::ok();
  }

  Expected<std::vector<Tensor>> run(const std::vector<Tensor> &inputs) override {
    if (!model_)
      return makeError("the model was not compiled");
    return model_->run(inputs);
  }

  std::optional<bool> ranGeneratedCode() const override {
    if (!model_)
      return std::nullopt;
    const std::vector<bundle::Launch> &launches = model_->manifest().launches;
    return std::any_of(launches.begin(), launches.end(), [](const bundle::Launch &launch) {
      return launch.kind == bundle::LaunchKind::Kernel;
    });
  }

private:
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
  }

  const OpRegistry &registry_;
  std::string bundleDir_;
  std::unique_ptr<rt::Model> model_;
};

} // namespace

std::vector<std::string> conformanceTargetNames() { return {"interp", "cpu"}; }

std::unique_ptr<ConformanceTarget> createConformanceTarget(const std::string &name,
                                                           const OpRegistry &registry) {
  if (name == "interp")
    return std::make_unique<InterpTarget>();
  if (name == "cpu")
    return std::make_unique<CpuTarget>(registry);
  return nullptr;
}

} // namespace tensorc::conformance
