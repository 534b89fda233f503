// One CPU kernel's LLVM IR (CpuCodegen.cpp), for the module splitting and linking of
// CpuModules.cpp.
#pragma once

#include "tensorc/Codegen/CPU/CpuCodegen.h"
#include "tensorc/Lowering/LoopIR.h"
#include "tensorc/Scheduler/Schedule.h"
#include "tensorc/Support/Status.h"

#include <llvm/IR/Module.h>

namespace tensorc::cpu {

/// Emits `kernel` of the legalized program `legal` into `module` as a function of its name.
Status emitKernel(llvm::Module &module, const loop::LoopProgram &legal, const CpuTarget &target,
                  const sched::Kernel &kernel);

} // namespace tensorc::cpu
