// The back half of CPU code generation: an LLVM module -> O3 -> object for one target -> .so.
#pragma once

#include "tensorc/Codegen/CPU/CpuCodegen.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace tensorc::cpu {

/// A TargetMachine for `target` (PIC, aggressive optimization); registers the X86 and AArch64
/// backends on first use.
Expected<std::unique_ptr<llvm::TargetMachine>> createTargetMachine(const CpuTarget &target);

/// Verifies `module`, runs the O3 pipeline, checks that it calls nothing outside itself (but for
/// shared micro-kernels, which another module of the same link defines), adds
/// `data` (exported NUL-terminated strings, name and text) and emits an object (its bytes).
/// `optimizedIR` gets the module text (before `data`).
Expected<std::string> optimizeToObject(llvm::Module &module, llvm::TargetMachine &machine,
                                       const CpuTarget &target,
                                       const std::vector<std::pair<std::string, std::string>> &data,
                                       std::string &optimizedIR);

/// Links `objects` (bytes, in this order) with ld.lld into one shared object (its bytes);
/// temporaries go to options.tempDir. Errors carry the linker's output.
Expected<std::string> linkObjects(const std::vector<std::string> &objects, const CpuTarget &target,
                                  const CodegenOptions &options);

/// optimizeToObject with options.dataSymbols, then linkObjects of that one object: the shared
/// object's bytes. `optimizedIR` gets the module text.
Expected<std::string> optimizeAndLink(llvm::Module &module, llvm::TargetMachine &machine,
                                      const CpuTarget &target, const CodegenOptions &options,
                                      std::string &optimizedIR);

} // namespace tensorc::cpu
