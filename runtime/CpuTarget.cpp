// Host CPU detection and variant selection.
#include "CpuTarget.h"

#include "tensorc/Support/StrCat.h"

#include <algorithm>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace tensorc::rt {

namespace {

/// Feature names the compiler may require. __builtin_cpu_supports only takes string literals,
/// hence the list; a name not here counts as unsupported. Unused on other hosts.
[[maybe_unused]] bool x86Supports(const std::string &feature) {
#if defined(__x86_64__)
#define TENSORC_X86_FEATURE(name)                                                                  \
  if (feature == name)                                                                             \
    return __builtin_cpu_supports(name);
  TENSORC_X86_FEATURE("sse4.2")
  TENSORC_X86_FEATURE("popcnt")
  TENSORC_X86_FEATURE("avx")
  TENSORC_X86_FEATURE("avx2")
  TENSORC_X86_FEATURE("fma")
  // Older clang (the fuzzing build's) does not know "f16c": CPUID leaf 1, ECX bit 29.
  if (feature == "f16c") {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
  }
  TENSORC_X86_FEATURE("bmi")
  TENSORC_X86_FEATURE("bmi2")
  TENSORC_X86_FEATURE("avx512f")
  TENSORC_X86_FEATURE("avx512cd")
  TENSORC_X86_FEATURE("avx512bw")
  TENSORC_X86_FEATURE("avx512dq")
  TENSORC_X86_FEATURE("avx512vl")
  TENSORC_X86_FEATURE("avx512vnni")
  TENSORC_X86_FEATURE("avx512bf16")
#undef TENSORC_X86_FEATURE
#else
  (void)feature;
#endif
  return false;
}

std::vector<std::string> missingFeatures(const bundle::CpuVariant &variant, const HostCpu &host) {
  std::vector<std::string> missing;
  for (const std::string &feature : variant.requires_)
    if (!host.supports(feature))
      missing.push_back(feature);
  return missing;
}

std::string variantNames(const std::vector<bundle::CpuVariant> &cpu) {
  std::vector<std::string> names;
  for (const bundle::CpuVariant &variant : cpu)
    names.push_back(variant.name + " (" + variant.arch + ")");
  return join(names, ", ");
}

} // namespace

HostCpu hostCpu() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return HostCpu{"x86_64", x86Supports};
#elif defined(__aarch64__)
  // NEON is part of the aarch64 baseline, so variants for it require nothing we could check.
  return HostCpu{"aarch64", [](const std::string &) { return true; }};
#else
  return HostCpu{"unknown", [](const std::string &) { return false; }};
#endif
}

Expected<const bundle::CpuVariant *> selectCpuVariant(const std::vector<bundle::CpuVariant> &cpu,
                                                      const HostCpu &host,
                                                      const std::string &forced) {
  if (cpu.empty())
    return makeError("bundle has no CPU code");
  if (!forced.empty()) {
    for (const bundle::CpuVariant &variant : cpu) {
      if (variant.name != forced)
        continue;
      if (variant.arch != host.arch)
        return makeError("CPU variant '", forced, "' is for ", variant.arch, ", this machine is ",
                         host.arch);
      std::vector<std::string> missing = missingFeatures(variant, host);
      if (!missing.empty())
        return makeError("CPU variant '", forced, "' needs ", join(missing, ", "),
                         ", which this machine lacks");
      return &variant;
    }
    return makeError("bundle has no CPU variant '", forced, "' (it has ", variantNames(cpu), ")");
  }

  const bundle::CpuVariant *best = nullptr;
  std::vector<std::string> rejected;
  std::vector<std::string> arches;
  for (const bundle::CpuVariant &variant : cpu) {
    if (variant.arch != host.arch) {
      if (std::find(arches.begin(), arches.end(), variant.arch) == arches.end())
        arches.push_back(variant.arch);
      continue;
    }
    std::vector<std::string> missing = missingFeatures(variant, host);
    if (!missing.empty()) {
      rejected.push_back(variant.name + " needs " + join(missing, ", "));
      continue;
    }
    if (!best || variant.priority > best->priority)
      best = &variant;
  }
  if (best)
    return best;
  if (rejected.empty())
    return makeError("bundle has CPU code for ", join(arches, ", "), " only, this machine is ",
                     host.arch);
  return makeError("no CPU variant of the bundle runs on this machine: ", join(rejected, "; "));
}

} // namespace tensorc::rt
