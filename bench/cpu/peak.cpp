// Prints this machine's f32 FMA peak per core (AVX2 and AVX-512) and the clock it ran at.
//
//   build/bench/cpu/tensorc-bench-peak
#include "Peak.h"

#include <cstdio>
#include <thread>

int main() {
  tensorc::bench::Peak peak = tensorc::bench::measurePeak();
  std::printf("clock            %.2f GHz (dependent-add chain)\n", peak.ghz);
  std::printf("AVX2 FMA peak    %.1f GFLOP/s per core = %.1f FLOP/cycle\n", peak.avx2Flops * 1e-9,
              peak.avx2Flops / (peak.ghz * 1e9));
  if (peak.avx512Flops > 0)
    std::printf("AVX-512 FMA peak %.1f GFLOP/s per core = %.1f FLOP/cycle\n",
                peak.avx512Flops * 1e-9, peak.avx512Flops / (peak.ghz * 1e9));
  std::printf("cores            %u\n", std::thread::hardware_concurrency());
  return 0;
}
