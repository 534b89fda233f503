// The back half of CPU code generation: an LLVM module -> O3 -> object for one target -> .so.
#pragma once

#include "tensorc/Codegen/CPU/CpuCodegen.h"

#include <memory>
#include <string>

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace tensorc::cpu {

/// A TargetMachine for `target` (PIC, aggressive optimization); registers the X86 and AArch64
/// backends on first use.
Expected<std::unique_ptr<llvm::TargetMachine>> createTargetMachine(const CpuTarget &target);

/// Verifies `module`, runs the O3 pipeline, checks that it calls nothing outside itself, emits
/// an object and links it with ld.lld into a shared object. `optimizedIR` gets the module text.
Expected<std::string> optimizeAndLink(llvm::Module &module, llvm::TargetMachine &machine,
                                      const CpuTarget &target, const CodegenOptions &options,
                                      std::string &optimizedIR);

} // namespace tensorc::cpu
