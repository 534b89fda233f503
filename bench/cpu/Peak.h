// The machine's f32 FMA peak, measured: independent FMA chains (enough to cover the latency)
// in inline assembly, per vector width, and the core clock from a chain of dependent adds.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace tensorc::bench {

struct Peak {
  double ghz = 0;         // core clock while running one thread
  double avx2Flops = 0;   // FLOP/s of one core with 256-bit FMAs (2 FLOPs per lane)
  double avx512Flops = 0; // with 512-bit FMAs (0 when the host has no AVX-512)
};

namespace detail {

using Clock = std::chrono::steady_clock;

inline double seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Short runs, best of many: a run preempted on a busy machine does not count.
template <typename Run> double bestSeconds(Run run, int repeats = 300) {
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    auto start = Clock::now();
    run();
    best = std::min(best, seconds(start));
  }
  return best;
}

#if defined(__x86_64__)
__attribute__((noinline)) inline void addChain(int64_t iterations) {
  int64_t x = 0;
  asm volatile("1:\n add $1, %0\n add $1, %0\n add $1, %0\n add $1, %0\n dec %1\n jnz 1b\n"
               : "+r"(x), "+r"(iterations));
}

#define TC_FMA12(R, M, A)                                                                          \
  "vfmadd231ps %%" M ", %%" A ", %%" R "0\n vfmadd231ps %%" M ", %%" A ", %%" R "1\n"              \
  "vfmadd231ps %%" M ", %%" A ", %%" R "2\n vfmadd231ps %%" M ", %%" A ", %%" R "3\n"              \
  "vfmadd231ps %%" M ", %%" A ", %%" R "4\n vfmadd231ps %%" M ", %%" A ", %%" R "5\n"              \
  "vfmadd231ps %%" M ", %%" A ", %%" R "6\n vfmadd231ps %%" M ", %%" A ", %%" R "7\n"              \
  "vfmadd231ps %%" M ", %%" A ", %%" R "8\n vfmadd231ps %%" M ", %%" A ", %%" R "9\n"              \
  "vfmadd231ps %%" M ", %%" A ", %%" R "10\n vfmadd231ps %%" M ", %%" A ", %%" R "11\n"

// 12 independent chains: covers an FMA latency of 4-6 cycles at 2 FMAs per cycle.
__attribute__((noinline, target("avx2,fma"))) inline void fma256(int64_t iterations) {
  asm volatile("vxorps %%xmm0, %%xmm0, %%xmm0\n 1:\n" TC_FMA12(
                   "ymm", "ymm14", "ymm15") "dec %0\n jnz 1b\n vzeroupper\n"
               : "+r"(iterations)
               :
               : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
                 "xmm10", "xmm11");
}

__attribute__((noinline, target("avx512f"))) inline void fma512(int64_t iterations) {
  asm volatile("vxorps %%xmm0, %%xmm0, %%xmm0\n 1:\n" TC_FMA12(
                   "zmm", "zmm14", "zmm15") "dec %0\n jnz 1b\n vzeroupper\n"
               : "+r"(iterations)
               :
               : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
                 "xmm10", "xmm11");
}
#undef TC_FMA12
#endif

} // namespace detail

/// Measures the peak (x86-64; zeros elsewhere). Takes about a second.
inline Peak measurePeak() {
  Peak peak;
#if defined(__x86_64__)
  constexpr int64_t kIterations = 100000;
  // A dependent integer add retires one per cycle: 4 per iteration.
  peak.ghz = 4.0 * kIterations / detail::bestSeconds([] { detail::addChain(kIterations); }) * 1e-9;
  peak.avx2Flops =
      12.0 * 16 * kIterations / detail::bestSeconds([] { detail::fma256(kIterations); });
  if (__builtin_cpu_supports("avx512f"))
    peak.avx512Flops =
        12.0 * 32 * kIterations / detail::bestSeconds([] { detail::fma512(kIterations); });
#endif
  return peak;
}

} // namespace tensorc::bench
