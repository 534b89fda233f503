// `tensorc bisect`: the accuracy debugger. Runs a model's compiled kernels one at a time against
// the interpreter's values of the same graph values, then narrows a divergence down by recompiling
// with fusion limited (a binary search over --max-fusions) and with each graph pass and fusion
// kind disabled in turn.
#pragma once

#include "tensorc/IR/Graph.h"
#include "tensorc/Support/Status.h"

#include <functional>
#include <optional>
#include <string>

namespace tensorc::debug {

struct BisectOptions {
  /// "cpu" or "cuda" (one at a time).
  std::string target = "cpu";
  std::optional<bool> fuseAttention;
  /// Inputs from this .safetensors file, else generated from `seed` (the interpreter's generator)
  /// with the symbols of `dims` (2 for a symbol not given).
  std::string inputsPath;
  uint64_t seed = 0;
  SymbolBindings dims;
  /// CPU: the variant to compile and run ("" = every variant of the host, the runtime's pick).
  std::string variant;
  /// CUDA: the arch to compile for and the device to run on.
  std::string cudaArch = "sm_90";
  int cudaDevice = 0;
  /// After the kernel check, search fusion limits and disabled passes for what breaks the model.
  bool narrow = true;
};

struct BisectResult {
  /// Launches checked, and those whose outputs left the tolerance.
  size_t kernelsChecked = 0, kernelsDiverged = 0;
  /// The first diverging kernel ("" when all match).
  std::string firstDivergent;
  /// The model's outputs against the interpreter's on the model as written.
  bool outputsMatch = true;
  /// What the narrowing named ("" when nothing did or it did not run): "fusion #3 (...)" or
  /// "pass cse".
  std::string culprit;
};

/// The binary search over a limit (`--max-fusions`): `passing` < `failing` are limits known to
/// pass and fail; returns the smallest failing limit, calling `fails` O(log(failing - passing))
/// times (assuming failure is monotone in the limit, as Inductor's bisector does).
Expected<int64_t> firstFailingLimit(int64_t passing, int64_t failing,
                                    const std::function<Expected<bool>(int64_t)> &fails);

/// Runs the check, printing its report line by line through `print` as it goes (compiles take
/// time). Errors (a model that does not import, a compile failure of the unmodified model) are
/// returned; divergences are results.
Expected<BisectResult> bisectModel(const std::string &modelPath, const OpRegistry &registry,
                                   const BisectOptions &options,
                                   const std::function<void(const std::string &)> &print);

} // namespace tensorc::debug
