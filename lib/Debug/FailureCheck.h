// Does a model still fail? One check of `tensorc minify`: import, compile, run and compare with
// the interpreter in a forked child, so a crash or a hang is an outcome rather than the end.
#pragma once

#include "tensorc/IR/Graph.h"

#include <string>

namespace tensorc::debug {

/// What the child got to: a model that does not import (or that the interpreter cannot run) is
/// Invalid; otherwise the first stage that failed, or Pass.
enum class CheckStage { Invalid, Pass, Compile, Run, Accuracy };
const char *checkStageName(CheckStage stage);

struct CheckOptions {
  CheckStage until = CheckStage::Compile; // the last stage to try: Compile, Run or Accuracy
  std::string target = "cpu";
  std::string variant; // CPU variant compiled and run ("" = every one, the host's pick)
  std::string cudaArch = "sm_90";
  int cudaDevice = 0;
  uint64_t seed = 0;   // random inputs
  SymbolBindings dims; // symbols of the inputs (2 for any not given)
  int timeoutSeconds = 300;
  std::string workDir; // where the child compiles (a fresh subdirectory per check)
};

struct CheckOutcome {
  CheckStage stage = CheckStage::Invalid;
  std::string message; // the error, "killed by signal 11 (Segmentation fault)", or the mismatch
};

/// Runs the check on the model file `path` (.fx or .onnx) in a child process.
CheckOutcome checkModelFile(const std::string &path, const OpRegistry &registry,
                            const CheckOptions &options);

} // namespace tensorc::debug
