// ConformanceTarget: how the conformance runner executes an imported model (interpreter today;
// compiled CPU and CUDA bundles later).
#pragma once

#include "tensorc/IR/Graph.h"
#include "tensorc/Support/Tensor.h"

#include <memory>
#include <string>
#include <vector>

namespace tensorc::conformance {

/// One way of executing a model. The runner imports the model, calls prepare() once, then run()
/// once per test data set. Each test runs in its own forked process, so a target may keep state.
class ConformanceTarget {
public:
  virtual ~ConformanceTarget() = default;
  /// Readies `graph` for run() (a compiled target builds its bundle here). `graph` outlives the
  /// target's use of it.
  virtual Status prepare(const Graph &graph) = 0;
  /// Runs the model on its user inputs (signature order) and returns its outputs in order.
  virtual Expected<std::vector<Tensor>> run(const std::vector<Tensor> &inputs) = 0;
};

/// The names accepted by createConformanceTarget(), for --help and error messages.
std::vector<std::string> conformanceTargetNames();

/// The target called `name`, or nullptr if there is none.
std::unique_ptr<ConformanceTarget> createConformanceTarget(const std::string &name);

} // namespace tensorc::conformance
