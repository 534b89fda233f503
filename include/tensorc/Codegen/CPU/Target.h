// The CPU targets tensorc emits code for: one LLVM triple/CPU/feature set and vector width each.
#pragma once

#include "tensorc/Support/Status.h"

#include <string>
#include <vector>

namespace tensorc::cpu {

/// One compiled variant of the CPU kernels. A bundle holds one shared object per variant; the
/// runtime picks the best one the host supports (`requires` are cpuid feature names).
struct CpuTarget {
  std::string name;       // "x86_64", "x86_64-avx512", "aarch64": the .so is cpu/<name>.so
  std::string arch;       // "x86_64" | "aarch64": what `--cpu-arch` selects
  std::string triple;     // "x86_64-unknown-linux-gnu"
  std::string cpu;        // LLVM CPU name: "haswell", "skylake-avx512", "generic"
  std::string features;   // LLVM feature string: "+avx2,+fma,+f16c"
  unsigned vectorBits = 256;           // f32 vector width of the inner loops: 256, 512, 128
  std::vector<std::string> requires_;  // host features the runtime checks before loading
  unsigned f32Lanes() const { return vectorBits / 32; }
};

/// The variants for one `--cpu-arch` value: "x86_64" gives the AVX2 baseline and the AVX-512
/// variant; "aarch64" gives NEON. Errors list the known architectures.
Expected<std::vector<CpuTarget>> targetsForArch(const std::string &arch);

/// The architecture this compiler runs on ("x86_64" or "aarch64").
std::string hostArch();

} // namespace tensorc::cpu
