// O3 optimization, object emission through TargetMachine and the ld.lld link of CPU kernels.
#include "ObjectLinker.h"

#include "MicroKernel.h"
#include "tensorc/Codegen/CPU/RunTool.h"
#include "tensorc/Support/StrCat.h"

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Triple.h>

#include <cstdlib>
#include <mutex>
#include <vector>

#ifndef TENSORC_LD_LLD_PATH
#define TENSORC_LD_LLD_PATH "ld.lld"
#endif

namespace tensorc::cpu {

namespace {

void initializeTargets() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86Target();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86AsmPrinter();
    LLVMInitializeAArch64TargetInfo();
    LLVMInitializeAArch64Target();
    LLVMInitializeAArch64TargetMC();
    LLVMInitializeAArch64AsmPrinter();
  });
}

std::string linkerPath(const CodegenOptions &options) {
  if (!options.linker.empty())
    return options.linker;
  if (const char *env = std::getenv("TENSORC_LD_LLD"); env && *env)
    return env;
  return TENSORC_LD_LLD_PATH;
}

Status runO3(llvm::Module &module, llvm::TargetMachine &machine) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder builder(&machine);
  // Kernels are freestanding: no library function may be recognized or synthesized.
  llvm::TargetLibraryInfoImpl libraryInfo(llvm::Triple(module.getTargetTriple()));
  libraryInfo.disableAllFunctions();
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(libraryInfo); });
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager passes =
      builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  passes.run(module, mam);
  return Status::ok();
}

} // namespace

Expected<std::unique_ptr<llvm::TargetMachine>> createTargetMachine(const CpuTarget &target) {
  initializeTargets();
  std::string error;
  const llvm::Target *backend = llvm::TargetRegistry::lookupTarget(target.triple, error);
  if (!backend)
    return makeError("CPU target ", target.name, ": ", error);
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> machine(backend->createTargetMachine(
      target.triple, target.cpu, target.features, options, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    return makeError("CPU target ", target.name, ": cannot create a target machine for ",
                     target.triple);
  return machine;
}

Expected<std::string> optimizeToObject(llvm::Module &module, llvm::TargetMachine &machine,
                                       const CpuTarget &target,
                                       const std::vector<std::pair<std::string, std::string>> &data,
                                       std::string &optimizedIR) {
  std::string verifierMessage;
  llvm::raw_string_ostream verifierStream(verifierMessage);
  if (llvm::verifyModule(module, &verifierStream))
    return makeError("CPU codegen for ", target.name,
                     " built an invalid module: ", verifierMessage);
  TC_RETURN_IF_ERROR(runO3(module, machine));
  for (const llvm::Function &function : module)
    if (function.isDeclaration() && !function.isIntrinsic() && !isMicroKernelDeclaration(function))
      return makeError("CPU codegen for ", target.name, ": kernels must be freestanding, but ",
                       "the module calls external function '", function.getName().str(), "'");
  optimizedIR.clear();
  llvm::raw_string_ostream irStream(optimizedIR);
  module.print(irStream, nullptr);
  // Added after the IR dump (src/*.ll shows the kernels alone) and after O3 (nothing uses them).
  for (const auto &[name, text] : data) {
    llvm::Constant *init = llvm::ConstantDataArray::getString(module.getContext(), text, true);
    new llvm::GlobalVariable(module, init->getType(), /*isConstant=*/true,
                             llvm::GlobalValue::ExternalLinkage, init, name);
  }

  llvm::SmallVector<char, 0> object;
  {
    llvm::raw_svector_ostream objectStream(object);
    llvm::legacy::PassManager codegen;
    if (machine.addPassesToEmitFile(codegen, objectStream, nullptr,
                                    llvm::CodeGenFileType::ObjectFile))
      return makeError("CPU target ", target.name, " cannot emit object files");
    codegen.run(module);
  }
  return std::string(object.data(), object.size());
}

Expected<std::string> linkObjects(const std::vector<std::string> &objects, const CpuTarget &target,
                                  const CodegenOptions &options) {
  TempFiles temps(options.tempDir, "tensorc");
  std::vector<std::string> objectPaths;
  for (const std::string &object : objects) {
    TC_ASSIGN_OR_RETURN(std::string objectPath, temps.create(".o"));
    TC_RETURN_IF_ERROR(writeFile(objectPath, object));
    objectPaths.push_back(objectPath);
  }
  TC_ASSIGN_OR_RETURN(std::string libraryPath, temps.create(".so"));
  TC_ASSIGN_OR_RETURN(std::string logPath, temps.create(".log"));

  std::string linker = linkerPath(options);
  std::vector<std::string> args = {linker, "-shared", "-o", libraryPath};
  args.insert(args.end(), objectPaths.begin(), objectPaths.end());
  args.insert(args.end(), {"--no-undefined", "-z", "noexecstack"});
  if (llvm::Triple(target.triple).isAArch64())
    args.insert(args.end(), {"-m", "aarch64linux"});
  TC_RETURN_IF_ERROR(runTool(linker, args, std::nullopt, logPath,
                             strCat("linking the CPU kernels for ", target.name)));
  auto library = llvm::MemoryBuffer::getFile(libraryPath, /*IsText=*/false,
                                             /*RequiresNullTerminator=*/false);
  if (!library)
    return makeError("cannot read the linked ", libraryPath, ": ", library.getError().message());
  return (*library)->getBuffer().str();
}

Expected<std::string> optimizeAndLink(llvm::Module &module, llvm::TargetMachine &machine,
                                      const CpuTarget &target, const CodegenOptions &options,
                                      std::string &optimizedIR) {
  TC_ASSIGN_OR_RETURN(std::string object,
                      optimizeToObject(module, machine, target, options.dataSymbols, optimizedIR));
  return linkObjects({object}, target, options);
}

} // namespace tensorc::cpu
