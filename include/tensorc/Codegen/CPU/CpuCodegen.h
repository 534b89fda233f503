// CPU code generation: the scheduled LoopIR of one program -> LLVM IR -> optimized object for one
// CpuTarget -> a shared object linked by ld.lld (what the bundle stores as cpu/<target>.so).
#pragma once

#include "tensorc/Codegen/CPU/Target.h"
#include "tensorc/Lowering/LoopIR.h"
#include "tensorc/Scheduler/Schedule.h"
#include "tensorc/Support/Status.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace tensorc::cpu {

struct CodegenOptions {
  /// ld.lld to link with (found by CMake at build time; TENSORC_LD_LLD overrides at run time).
  std::string linker;
  /// Directory for temporary objects; empty = the system temp dir. Removed afterwards.
  std::string tempDir;
  /// Read-only data the shared object exports besides the kernels, as NUL-terminated strings
  /// (name, text): a bundle's kernel signature table, which the runtime checks its manifest
  /// against (bundle::kKernelSignatureSymbol).
  std::vector<std::pair<std::string, std::string>> dataSymbols;
  /// Threads compiling modules at once (0: every core). The output does not depend on it.
  unsigned jobs = 0;
  /// Called (from any thread) each time a module is compiled, with how many are and of how many.
  std::function<void(size_t done, size_t total)> onModuleDone;
};

struct CompiledKernels {
  std::string sharedObject; // the linked .so, bytes
  std::string llvmIR;       // the optimized module, text (bundle src/<target>.ll)
};

/// Emits every Loop and Template kernel of `schedule` (Extern kernels are the runtime's) as a
/// function `void <kernel.name>(void *const *args, const int64_t *syms, int64_t begin,
/// int64_t end)` (bundle::TensorcKernelFn): args are the kernel's `args` buffers in order, syms
/// the values of `program.symbols` in order, [begin, end) a slice of the kernel's range (Loop: the
/// product of outerRanges; Template: sched::templateTileCount). Freestanding: no libc or libm.
/// Kernels whose code is the same but for names are generated once (the others are aliases);
/// the distinct ones are split into several LLVM modules compiled on `options.jobs` threads
/// and linked into one shared object, the same whatever the number of threads.
Expected<CompiledKernels> compileKernels(const loop::LoopProgram &program,
                                         const sched::Schedule &schedule, const CpuTarget &target,
                                         const CodegenOptions &options);

} // namespace tensorc::cpu
