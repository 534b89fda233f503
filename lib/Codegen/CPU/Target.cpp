#include "tensorc/Codegen/CPU/Target.h"

namespace tensorc::cpu {

Expected<std::vector<CpuTarget>> targetsForArch(const std::string &arch) {
  if (arch == "x86_64") {
    CpuTarget avx2{"x86_64", "x86_64", "x86_64-unknown-linux-gnu", "haswell",
                   "+avx2,+fma,+f16c,+bmi2", 256, {"avx2", "fma", "f16c", "bmi2"}};
    CpuTarget avx512{"x86_64-avx512", "x86_64", "x86_64-unknown-linux-gnu", "skylake-avx512",
                     "+avx512f,+avx512bw,+avx512vl,+avx512dq,+avx2,+fma,+f16c,+bmi2", 512,
                     {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx2", "fma"}};
    return std::vector<CpuTarget>{avx2, avx512};
  }
  if (arch == "aarch64") {
    CpuTarget neon{"aarch64", "aarch64", "aarch64-unknown-linux-gnu", "generic", "+neon", 128, {}};
    return std::vector<CpuTarget>{neon};
  }
  return makeError("unknown CPU architecture '", arch, "' (known: x86_64, aarch64)");
}

std::string hostArch() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#else
  return "unknown";
#endif
}

} // namespace tensorc::cpu
