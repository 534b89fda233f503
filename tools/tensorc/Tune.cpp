// `tensorc tune`: times a -O max-autotune bundle's GEMMs on this GPU (generated kernel or
// cuBLASLt) and records the faster of each in its manifest (rt::tuneBundle).
#include "tensorc/Runtime/Tune.h"
#include "Driver.h"

#include <iostream>
#include <memory>

namespace tensorc::driver {

Subcommand addTuneCommand(CLI::App &app) {
  auto tune = std::make_shared<rt::TuneOptions>();
  auto dims = std::make_shared<std::vector<std::string>>();
  CLI::App *command = app.add_subcommand(
      "tune", "Time a -O max-autotune bundle's GEMMs on this GPU (generated kernel or cuBLASLt) "
              "and record the faster of each in its manifest");
  command->add_option("bundle", tune->bundle, "Bundle directory")->required();
  command->add_option("--cuda-device", tune->cudaDevice, "GPU index");
  CLI::Option *inputsOption = command->add_option(
      "--inputs", tune->inputs, "Inputs as a .safetensors file (default: random, seed 0)");
  command
      ->add_option("--dim", *dims, "Value of a symbolic dim for generated inputs, e.g. --dim s0=64")
      ->excludes(inputsOption);
  command
      ->add_option("--iterations", tune->iterations,
                   "Calls timed per way, each after evicting the L2 cache (median)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  command
      ->add_option("--algorithms", tune->algorithms,
                   "cuBLASLt algorithms timed per GEMM (its heuristic's first)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  command
      ->add_option("--margin", tune->margin,
                   "How much faster cuBLASLt must be to be chosen (0.03: 3%; negative prefers "
                   "it, -1 chooses it wherever it agrees)")
      ->check(CLI::Range(-1.0, 0.9))
      ->capture_default_str();
  command->add_flag("--dry-run", tune->dryRun, "Report only; leave the manifest as it was");
  command->add_option("--cache", tune->cache,
                      "Tuning cache: GEMMs it knows (this GPU's arch, these sizes) take its "
                      "choice untimed; those timed are added (the file is created if missing)");
  return {command, [tune, dims](const OpRegistry &) {
            Expected<SymbolBindings> bindings = parseDims(*dims);
            if (!bindings)
              return fail(bindings.error().message());
            tune->dims = *bindings;
            Status tuned = rt::tuneBundle(*tune, std::cout);
            return tuned ? 0 : fail(tuned.message());
          }};
}

} // namespace tensorc::driver
