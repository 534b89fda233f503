// What the driver's subcommands share: the registration interface and common option groups.
#pragma once

#include "tensorc/Autodiff/Training.h"
#include "tensorc/IR/Graph.h"
#include "tensorc/Pipeline/Pipeline.h"
#include "tensorc/Support/Status.h"
#include "tensorc/Support/Tensor.h"

#include <CLI/CLI.hpp>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tensorc::driver {

/// One subcommand: its CLI11 app (to test whether it was given) and what runs it once parsed.
struct Subcommand {
  CLI::App *app = nullptr;
  std::function<int(const OpRegistry &)> run;
};

/// Each file tools/tensorc/<Name>.cpp adds one subcommand to the driver.
Subcommand addInspectCommand(CLI::App &app);
Subcommand addOptCommand(CLI::App &app);
Subcommand addCompileCommand(CLI::App &app);
Subcommand addTrainCommand(CLI::App &app);
Subcommand addRunCommand(CLI::App &app);
Subcommand addExplainCommand(CLI::App &app);
Subcommand addBisectCommand(CLI::App &app);
Subcommand addMinifyCommand(CLI::App &app);
Subcommand addTuneCommand(CLI::App &app);

/// Prints "tensorc: error: <message>" and returns the exit status 1.
int fail(const std::string &message);

/// `--train` and its options, shared by compile, inspect and train.
struct TrainFlags {
  bool train = false;
  autodiff::TrainOptions options;
  std::string params;
  std::string partition = "min-cut";

  /// The options to compile with, or nullopt without --train.
  Expected<std::optional<autodiff::TrainOptions>> resolve() const;
};
/// Adds the training options (and `--train` itself unless `always`).
void addTrainOptions(CLI::App *command, TrainFlags &flags, bool always = false);

/// `--fuse-attention` / `--no-fuse-attention`, or neither (the target's default).
struct AttentionFlags {
  bool on = false, off = false;
  std::optional<bool> value() const {
    return on ? std::optional<bool>(true) : off ? std::optional<bool>(false) : std::nullopt;
  }
};
void addAttentionFlags(CLI::App &command, AttentionFlags &flags);

/// `--matmul-precision highest|high` (CUDA f32 GEMMs and convolutions) into `precision`.
void addMatmulPrecisionFlag(CLI::App &command, std::string &precision);

/// The debugging limits (DebugLimits): `--disable-passes`, `--disable-fusions`, `--max-fusions`.
struct LimitFlags {
  std::string passes, fusions;
  int64_t maxFusions = -1;
  DebugLimits resolve() const;
};
void addLimitFlags(CLI::App &command, LimitFlags &flags);

/// `--dim NAME=VALUE` list -> bindings; errors quote the bad entry.
Expected<SymbolBindings> parseDims(const std::vector<std::string> &dims);

/// "a,b,,c" -> {"a", "b", "c"}.
std::vector<std::string> splitList(const std::string &text);

/// Prints one summary line per output and, with a `path`, writes them as safetensors.
int writeOutputs(const std::string &path, const std::vector<std::string> &names,
                 const std::vector<Tensor> &outputs);

} // namespace tensorc::driver
