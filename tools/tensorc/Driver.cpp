// The option groups and helpers several subcommands share.
#include "Driver.h"

#include "tensorc/Interp/Inputs.h"
#include "tensorc/Support/Printable.h"
#include "tensorc/Support/Safetensors.h"
#include "tensorc/Support/StrCat.h"

#include <cstdlib>
#include <iostream>
#include <sstream>

namespace tensorc::driver {

int fail(const std::string &message) {
  // One line, whatever names from the model it quotes (no forged lines, no terminal escapes).
  std::cerr << "tensorc: error: " << printable(message) << "\n";
  return 1;
}

Expected<std::optional<autodiff::TrainOptions>> TrainFlags::resolve() const {
  if (!train)
    return std::optional<autodiff::TrainOptions>();
  autodiff::TrainOptions resolved = options;
  std::stringstream list(params);
  for (std::string item; std::getline(list, item, ',');)
    if (!item.empty())
      resolved.params.push_back(item);
  TC_ASSIGN_OR_RETURN(resolved.partition, autodiff::parsePartitionKind(partition));
  return std::optional<autodiff::TrainOptions>(resolved);
}

void addTrainOptions(CLI::App *command, TrainFlags &flags, bool always) {
  if (!always)
    command->add_flag("--train", flags.train,
                      "Compile a training step (forward, backward and optimizer update) instead "
                      "of inference");
  command
      ->add_option("--loss", flags.options.loss,
                   "Training loss: mse (against --label), cross_entropy (logits vs integer "
                   "labels), output (the model's scalar output)")
      ->check(CLI::IsMember({"mse", "cross_entropy", "output"}))
      ->capture_default_str();
  command->add_option("--label", flags.options.label, "Name of the label input")
      ->capture_default_str();
  command
      ->add_option("--optimizer", flags.options.optimizer,
                   "sgd, adamw, or none (the step returns gradients, updates nothing)")
      ->check(CLI::IsMember({"sgd", "adamw", "none"}))
      ->capture_default_str();
  command->add_option("--lr", flags.options.lr, "Learning rate")->capture_default_str();
  command->add_option("--momentum", flags.options.momentum, "SGD momentum")->capture_default_str();
  command
      ->add_option("--weight-decay", flags.options.weightDecay,
                   "Weight decay (decoupled for adamw, L2 for sgd)")
      ->capture_default_str();
  command->add_option("--params", flags.params,
                      "Comma-separated parameters to train (default: every float parameter)");
  command
      ->add_option("--partition", flags.partition,
                   "What the backward reads: min-cut (recompute cheap ops to save memory) or "
                   "default (save every value autograd would)")
      ->check(CLI::IsMember({"min-cut", "default"}))
      ->capture_default_str();
}

void addAttentionFlags(CLI::App &command, AttentionFlags &flags) {
  CLI::Option *on = command.add_flag(
      "--fuse-attention", flags.on,
      "--target cuda: run every softmax(Q.K^T*s [+mask]).V as one attention kernel (default: "
      "those of f16/bf16 with head dims multiples of 16 up to 128, which run on tensor cores; "
      "the others run on a slower scalar kernel)");
  command.add_flag("--no-fuse-attention", flags.off, "Keep attention as separate kernels")
      ->excludes(on);
}

void addMatmulPrecisionFlag(CLI::App &command, std::string &precision) {
  command
      .add_option("--matmul-precision", precision,
                  "--target cuda: how f32 matrix products and convolutions multiply, as "
                  "torch.set_float32_matmul_precision: highest (strict f32) or high (TF32 tensor "
                  "cores: operands rounded to 10-bit mantissas, f32 accumulation)")
      ->check(CLI::IsMember({"highest", "high"}))
      ->capture_default_str();
}

DebugLimits LimitFlags::resolve() const {
  DebugLimits limits;
  for (const std::string &pass : splitList(passes))
    limits.disabledPasses.insert(pass);
  for (const std::string &kind : splitList(fusions))
    limits.disabledFusions.insert(kind);
  limits.maxFusions = maxFusions;
  return limits;
}

void addLimitFlags(CLI::App &command, LimitFlags &flags) {
  command.add_option("--disable-passes", flags.passes,
                     "Debugging: comma-separated graph passes the simplify and decompose stages "
                     "skip (" +
                         join(disablablePasses(), ", ") + ")");
  command.add_option("--disable-fusions", flags.fusions,
                     "Debugging: comma-separated fusion kinds the scheduler refuses (pointwise, "
                     "reduction, epilogue)");
  command.add_option("--max-fusions", flags.maxFusions,
                     "Debugging: make at most K fusions, in scheduling order (what `tensorc "
                     "bisect` searches over)");
}

Expected<SymbolBindings> parseDims(const std::vector<std::string> &dims) {
  SymbolBindings bindings;
  for (const std::string &dim : dims) {
    size_t eq = dim.find('=');
    char *end = nullptr;
    long long value = eq == std::string::npos ? 0 : std::strtoll(dim.c_str() + eq + 1, &end, 10);
    if (eq == std::string::npos || !end || *end != '\0' || value < 0)
      return makeError("--dim expects NAME=VALUE with a non-negative VALUE, got '", dim, "'");
    bindings[dim.substr(0, eq)] = value;
  }
  return bindings;
}

std::vector<std::string> splitList(const std::string &text) {
  std::vector<std::string> items;
  std::stringstream stream(text);
  for (std::string item; std::getline(stream, item, ',');)
    if (!item.empty())
      items.push_back(item);
  return items;
}

int writeOutputs(const std::string &path, const std::vector<std::string> &names,
                 const std::vector<Tensor> &outputs) {
  std::vector<std::pair<std::string, Tensor>> named;
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::cout << names[i] << ": " << interp::summarizeTensor(outputs[i]) << "\n";
    named.emplace_back(names[i], outputs[i]);
  }
  if (!path.empty()) {
    Status written = writeSafetensors(path, named);
    if (!written)
      return fail(written.message());
  }
  return 0;
}

} // namespace tensorc::driver
