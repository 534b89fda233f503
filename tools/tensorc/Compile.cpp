// `tensorc compile`: a model to a bundle directory or a model library (--emit=so).
#include "Driver.h"

#include "tensorc/Pipeline/Compile.h"
#include "tensorc/Support/StrCat.h"

#include <iostream>
#include <memory>

namespace tensorc::driver {

namespace {

struct CompileCommand {
  std::string model;
  CompileOptions options;
  TrainFlags train;
  AttentionFlags attention;
  LimitFlags limits;
  std::string cpuArchs = "x86_64";
  std::string cudaArchs = "sm_90";
  std::string emit = "bundle";
  std::string mode = "default";
  std::string fallback; // empty: error with --target cuda, allow for cpu alone
};

int runCompile(CompileCommand &command, const OpRegistry &registry) {
  command.options.cpuArchs = splitList(command.cpuArchs);
  command.options.cudaArchs = splitList(command.cudaArchs);
  command.options.cudaGraphs = command.mode == "reduce-overhead";
  command.options.fuseAttention = command.attention.value();
  command.options.limits = command.limits.resolve();
  command.options.emit =
      command.emit == "so" ? CompileOptions::Emit::SharedObject : CompileOptions::Emit::Bundle;
  Expected<std::optional<autodiff::TrainOptions>> train = command.train.resolve();
  if (!train)
    return fail(train.error().message());
  command.options.train = *train;
  if (!command.fallback.empty()) {
    Expected<loop::FallbackPolicy> fallback = loop::parseFallbackPolicy(command.fallback);
    if (!fallback)
      return fail(fallback.error().message());
    command.options.fallback = *fallback;
  }
  Expected<CompileSummary> summary = compileModel(command.model, registry, command.options);
  if (!summary)
    return fail(summary.error().message());
  std::cerr << "tensorc: wrote " << command.options.outDir << " (" << summary->kernels
            << " kernels, " << summary->fallbacks << " fallback op types, arena peak "
            << summary->peakBytes << " bytes at example sizes; CPU: "
            << (summary->variants.empty() ? "none" : join(summary->variants, ", "));
  if (!summary->cudaArchs.empty())
    std::cerr << "; CUDA: " << join(summary->cudaArchs, ", ") << " + PTX";
  std::cerr << ")\n";
  return 0;
}

} // namespace

Subcommand addCompileCommand(CLI::App &app) {
  auto compile = std::make_shared<CompileCommand>();
  CLI::App *command =
      app.add_subcommand("compile", "Compile a model into a bundle directory or a model .so");
  command->add_option("model", compile->model, "Model file (.fx or .onnx)")->required();
  command
      ->add_option("-o,--output", compile->options.outDir,
                   "Bundle directory (or, with --emit=so, shared object) to write")
      ->required();
  command
      ->add_option("--emit", compile->emit,
                   "bundle: a bundle directory; so: one shared object with kernels, weights and "
                   "runtime inside, exporting the C ABI (tensorc.h)")
      ->check(CLI::IsMember({"bundle", "so"}))
      ->capture_default_str();
  command
      ->add_option("--target", compile->options.target,
                   "Comma-separated backends: cpu, cuda (kernels via NVRTC), or cpu,cuda")
      ->capture_default_str();
  command
      ->add_option("--cuda-arch", compile->cudaArchs,
                   "Comma-separated CUDA archs to emit cubins for (PTX for the lowest), e.g. "
                   "sm_80,sm_90")
      ->capture_default_str();
  addAttentionFlags(*command, compile->attention);
  command
      ->add_option("-O", compile->mode,
                   "default, or reduce-overhead (CUDA: replay the launch list as a CUDA graph)")
      ->check(CLI::IsMember({"default", "reduce-overhead"}))
      ->capture_default_str();
  command
      ->add_option("--cpu-arch", compile->cpuArchs,
                   "Comma-separated CPU architectures: x86_64 (AVX2 + AVX-512), aarch64 (NEON)")
      ->capture_default_str();
  command
      ->add_option("--fallback", compile->fallback,
                   "allow: ops without a generated kernel run on their reference kernels in the "
                   "runtime (on the host); error: such an op is an error naming it and its node. "
                   "Default: error when --target includes cuda (a GPU bundle runs every op on "
                   "the GPU), allow for cpu alone")
      ->check(CLI::IsMember({"allow", "error"}));
  addTrainOptions(command, compile->train);
  addLimitFlags(*command, compile->limits);
  return {command,
          [compile](const OpRegistry &registry) { return runCompile(*compile, registry); }};
}

} // namespace tensorc::driver
