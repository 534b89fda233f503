// `tensorc explain`: one page on what the compiler does with a model (the counterpart of
// torch._dynamo.explain and the TORCH_COMPILE_DEBUG summaries, for an ahead-of-time compile).
#pragma once

#include "tensorc/IR/Graph.h"
#include "tensorc/Support/Status.h"

#include <optional>
#include <string>

namespace tensorc::debug {

struct ExplainOptions {
  /// "cpu", "cuda" or "cpu,cuda": lower and fuse as `compile --target` would.
  std::string target = "cpu";
  /// `--fuse-attention` / `--no-fuse-attention` (unset: the target's default).
  std::optional<bool> fuseAttention;
  /// Symbol values for sizes and costs; a symbol not given takes 64 (the scheduler's example).
  SymbolBindings dims;
  /// Longest list printed per section (the rest is counted).
  size_t listLimit = 8;
};

/// Imports `modelPath`, runs the pipeline up to the schedule (no code generation) and describes
/// it: ops imported, what the simplify and decompose stages did (each decomposition rule and the
/// ops it emits), fallbacks with their reason, kernels by kind, fusions made and refused with the
/// reasons, the memory plan and its peak, and the largest kernels by estimated cost.
/// Deterministic: the same model and options give the same text.
Expected<std::string> explainModel(const std::string &modelPath, const OpRegistry &registry,
                                   const ExplainOptions &options);

} // namespace tensorc::debug
