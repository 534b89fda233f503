// `tensorc minify`: delta debugging of a model that fails to compile, fails or crashes when run,
// or gives wrong numbers, down to a small model that fails the same way (the counterpart of
// torch's minifiers, on the model file rather than a traced graph).
#pragma once

#include "tensorc/IR/Graph.h"
#include "tensorc/Support/Status.h"

#include <functional>
#include <string>

namespace tensorc::debug {

struct MinifyOptions {
  /// What must keep failing: "compile" (compilation errors), "run" (the bundle's run errors or
  /// crashes), "accuracy" (outputs differ from the interpreter's).
  std::string check = "compile";
  /// The reduced model: ends in the input's extension (.fx writes a side .safetensors too).
  std::string output;
  /// The failure must contain this text; "" = the same failure as the model's own (the innermost
  /// part of its message, digits ignored; a signal for crashes).
  std::string match;
  std::string target = "cpu";
  std::string variant;
  std::string cudaArch = "sm_90";
  int cudaDevice = 0;
  uint64_t seed = 0;
  SymbolBindings dims;
  /// Per check (a hang counts as failing in the stage it hung in).
  int timeoutSeconds = 300;
  /// At most this many checks (each a compile, maybe a run).
  int maxChecks = 1000;
};

struct MinifyResult {
  size_t nodesBefore = 0, nodesAfter = 0;
  int checks = 0;
  std::string failure; // the reduced model's failure message
};

/// Reduces `modelPath` while the failure persists: keeps one output, cuts the graph after a
/// node (a binary-then-linear search over cut points), turns node results into inputs (cutting
/// what computes them), removes nodes whose result has an operand's type, and shrinks input dims;
/// writes the smallest failing model to `options.output` and checks it once more from the file.
/// Each check runs in a child process. Progress lines go through `print`.
Expected<MinifyResult> minifyModel(const std::string &modelPath, const OpRegistry &registry,
                                   const MinifyOptions &options,
                                   const std::function<void(const std::string &)> &print);

/// The part of a failure message two failures must share (`match` unset): the text after the
/// last ": " (errors read "context: context: cause"), digits replaced by '#'.
std::string failureSignature(const std::string &message);

} // namespace tensorc::debug
