// ConformanceTarget: how the conformance runner executes an imported model (the interpreter, or
// a bundle compiled for this CPU or for a CUDA GPU).
#pragma once

#include "tensorc/IR/Graph.h"
#include "tensorc/Ops/Registry.h"
#include "tensorc/Support/Tensor.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tensorc::conformance {

/// One way of executing a model. The runner imports the model, calls prepare() once, then run()
/// once per test data set. Each test runs in its own forked process, so a target may keep state.
class ConformanceTarget {
public:
  virtual ~ConformanceTarget() = default;
  /// Readies `graph` for run() (a compiled target builds its bundle here). `graph` outlives the
  /// target's use of it. May be called again with another graph (inputs specialized per data
  /// set), which replaces the previous one.
  virtual Status prepare(const Graph &graph) = 0;
  /// Runs the model on its user inputs (signature order) and returns its outputs in order.
  virtual Expected<std::vector<Tensor>> run(const std::vector<Tensor> &inputs) = 0;
  /// For compiled targets, once prepared: whether the model ran at least one generated kernel
  /// (false: every op fell back to the reference kernels). std::nullopt for the interpreter.
  virtual std::optional<bool> ranGeneratedCode() const { return std::nullopt; }
  /// Once prepared: why the compiled model cannot run on this machine (a CUDA bundle without a
  /// GPU), or std::nullopt when run() works.
  virtual std::optional<std::string> cannotRun() const { return std::nullopt; }
  /// Writes the prepared bundle to `dir`/bundle, `inputs` and `expected` (named after the bundle's
  /// inputs and outputs) as safetensors and the tolerances as case.json: one case of a GPU test
  /// kit (test/gpu/verify_kit.py runs it on a GPU machine).
  virtual Status exportCase(const std::string &dir, const std::vector<Tensor> &inputs,
                            const std::vector<Tensor> &expected, double rtol, double atol) const;
};

/// The names accepted by createConformanceTarget(), for --help and error messages.
std::vector<std::string> conformanceTargetNames();

/// The target called `name`, or nullptr if there is none. `registry` outlives the target.
std::unique_ptr<ConformanceTarget> createConformanceTarget(const std::string &name,
                                                           const OpRegistry &registry);

} // namespace tensorc::conformance
