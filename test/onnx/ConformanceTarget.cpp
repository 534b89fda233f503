// The conformance targets: the reference interpreter (compiled targets will join it here).
#include "ConformanceTarget.h"

#include "tensorc/Interp/Interpreter.h"

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

} // namespace

std::vector<std::string> conformanceTargetNames() { return {"interp"}; }

std::unique_ptr<ConformanceTarget> createConformanceTarget(const std::string &name) {
  if (name == "interp")
    return std::make_unique<InterpTarget>();
  return nullptr;
}

} // namespace tensorc::conformance
