// Test and benchmark helper: builds a module of generated kernels for one CpuTarget, optimizes it
// with the O3 pipeline the compiler runs, checks it stays freestanding, and JIT-compiles it for
// this host (function attributes select the target's ISA, so AVX2 and AVX-512 variants both run
// on a host that has AVX-512).
#pragma once

#include "JitHelpers.h"
#include "tensorc/Codegen/CPU/Target.h"

#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace tensorc::test {

inline tensorc::cpu::CpuTarget cpuTarget(const std::string &arch, const std::string &name) {
  auto targets = tensorc::cpu::targetsForArch(arch);
  if (targets)
    for (const tensorc::cpu::CpuTarget &target : *targets)
      if (target.name == name)
        return target;
  return {};
}

/// Whether this host runs code for `target` (its cpuid features, in LLVM's names).
inline bool hostSupports(const tensorc::cpu::CpuTarget &target) {
  if (target.arch != tensorc::cpu::hostArch())
    return false;
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  for (const std::string &feature : target.requires_)
    if (!features.lookup(feature))
      return false;
  return true;
}

inline void optimizeModuleO3(llvm::Module &module, llvm::TargetMachine &machine) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder passes(&machine);
  passes.registerModuleAnalyses(mam);
  passes.registerCGSCCAnalyses(cgam);
  passes.registerFunctionAnalyses(fam);
  passes.registerLoopAnalyses(lam);
  passes.crossRegisterProxies(lam, fam, cgam, mam);
  passes.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(module, mam);
}

/// Verifies, optimizes and JIT-compiles the module `build` fills in; on failure returns null and
/// sets `error` (invalid IR, calls to anything but intrinsics, JIT errors).
inline std::unique_ptr<HostJit> jitKernels(const std::function<void(llvm::Module &)> &build,
                                           std::string &error) {
  static std::once_flag initOnce;
  std::call_once(initOnce, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder) {
    error = llvm::toString(builder.takeError());
    return nullptr;
  }
  builder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  auto machine = builder->createTargetMachine();
  if (!machine) {
    error = llvm::toString(machine.takeError());
    return nullptr;
  }
  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto module = std::make_unique<llvm::Module>("kernels", *ctx);
  module->setDataLayout((*machine)->createDataLayout());
  module->setTargetTriple((*machine)->getTargetTriple().str());
  build(*module);
  std::string message;
  llvm::raw_string_ostream os(message);
  if (llvm::verifyModule(*module, &os)) {
    error = "invalid IR: " + message;
    return nullptr;
  }
  optimizeModuleO3(*module, **machine);
  for (const llvm::Function &fn : *module)
    if (fn.isDeclaration() && !fn.isIntrinsic() && !fn.use_empty())
      error += "calls " + fn.getName().str() + " ";
  if (!error.empty())
    return nullptr;
  auto jit = HostJit::create(std::move(module), std::move(ctx));
  if (!jit) {
    error = llvm::toString(jit.takeError());
    return nullptr;
  }
  return std::move(*jit);
}

} // namespace tensorc::test
