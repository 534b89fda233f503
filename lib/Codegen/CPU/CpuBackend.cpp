// The CPU backend: every requested variant's kernels as LLVM IR, optimized and linked into a
// shared object (cpu/<variant>.so) with its IR kept for people (src/<variant>.ll).
#include "tensorc/Codegen/Backend.h"

#include "tensorc/Codegen/CPU/CpuCodegen.h"
#include "tensorc/Codegen/CPU/Target.h"
#include "tensorc/Support/Log.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>

namespace tensorc::codegen {

namespace {

class CpuBackend final : public Backend {
public:
  CpuBackend(std::vector<cpu::CpuTarget> targets, const CpuBackendOptions &options)
      : targets_(std::move(targets)), options_(options) {}

  const char *name() const override { return "cpu"; }

  Expected<std::string> source(const loop::LoopProgram &program,
                               const sched::Schedule &schedule) override {
    TC_ASSIGN_OR_RETURN(cpu::CompiledKernels kernels,
                        cpu::compileKernels(program, schedule, targets_.front(), codegenOptions()));
    return kernels.llvmIR;
  }

  Expected<BackendOutput> compile(const loop::LoopProgram &program,
                                  const sched::Schedule &schedule,
                                  const CompileContext &context) override {
    BackendOutput output;
    cpu::CodegenOptions codegen = codegenOptions();
    codegen.tempDir = context.tempDir;
    if (!context.dataSymbol.empty() && context.dataFor) {
      TC_ASSIGN_OR_RETURN(std::string data, context.dataFor({}));
      codegen.dataSymbols = {{context.dataSymbol, std::move(data)}};
    }
    for (const cpu::CpuTarget &target : targets_) {
      if (!options_.quiet)
        log::info(strCat("generating ", schedule.kernels.size(), " kernels for ", target.name));
      if (context.progress) {
        context.progress(strCat("cpu ", target.name, ": emitting and optimizing"));
        codegen.onModuleDone = [&](size_t done, size_t total) {
          context.progress(strCat("cpu ", target.name, ": ", done, "/", total, " modules"));
        };
      }
      Expected<cpu::CompiledKernels> kernels =
          cpu::compileKernels(program, schedule, target, codegen);
      if (!kernels)
        return makeError(target.name, ": ", kernels.error().message());
      KernelImage image;
      image.kind = KernelImage::Kind::CpuLibrary;
      image.name = target.name;
      image.arch = target.arch;
      image.file = "cpu/" + target.name + ".so";
      image.requires_ = target.requires_;
      image.priority = int64_t(target.vectorBits);
      output.files.push_back({image.file, std::move(kernels->sharedObject)});
      output.files.push_back({"src/" + target.name + ".ll", std::move(kernels->llvmIR)});
      output.images.push_back(std::move(image));
    }
    return output;
  }

private:
  cpu::CodegenOptions codegenOptions() const {
    cpu::CodegenOptions codegen;
    codegen.linker = options_.linker;
    codegen.jobs = options_.jobs;
    return codegen;
  }

  std::vector<cpu::CpuTarget> targets_;
  CpuBackendOptions options_;
};

} // namespace

Expected<std::unique_ptr<Backend>> createCpuBackend(const CpuBackendOptions &options) {
  std::vector<cpu::CpuTarget> targets;
  for (const std::string &arch : options.archs) {
    TC_ASSIGN_OR_RETURN(std::vector<cpu::CpuTarget> archTargets, cpu::targetsForArch(arch));
    for (const cpu::CpuTarget &target : archTargets)
      if (options.variants.empty() ||
          std::count(options.variants.begin(), options.variants.end(), target.name))
        targets.push_back(target);
  }
  if (targets.empty())
    return makeError("no CPU variant selected (--cpu-arch)");
  return std::unique_ptr<Backend>(new CpuBackend(std::move(targets), options));
}

std::string hostCpuArch() { return cpu::hostArch(); }

} // namespace tensorc::codegen
