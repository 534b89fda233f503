// Tuning a bundle compiled with -O max-autotune on the GPU it will run on: every GEMM launch with
// a library call is timed as its generated kernel and as cuBLASLt's product followed by the
// kernel's epilogue function, and the faster way of each is recorded in the bundle's manifest
// (Launch::gemm->library). Needs only the runtime: `tensorc tune` and `tensorc-run --tune` both
// call it.
#pragma once

#include "tensorc/Support/Status.h"
#include "tensorc/Support/Tensor.h"

#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>

namespace tensorc::rt {

struct TuneOptions {
  std::string bundle; // a bundle directory (a model .so cannot be rewritten)
  std::string inputs; // .safetensors; empty: random inputs from `seed`
  uint64_t seed = 0;
  std::map<std::string, int64_t> dims; // symbolic dims for random inputs
  int cudaDevice = 0;
  int64_t iterations = 20; // calls timed, each alone after evicting the L2 cache (median)
  int64_t algorithms = 8;  // cuBLASLt's first candidates timed per GEMM
  /// How much faster cuBLASLt must be to be chosen (0.03: 3%); negative prefers it, -1 chooses it
  /// wherever it agrees with the kernel (to test the library path).
  double margin = 0.03;
  bool dryRun = false; // report only
  /// A tuning cache (bundle/TuningCache.h) to take known GEMMs' choices from and to add the
  /// timed ones to; "" for none.
  std::string cache;
};

/// How far `actual` is from `expected` (one shape): the largest |actual - expected| over the
/// elements, relative to `expected`'s largest finite magnitude (the absolute difference when it
/// has none). A value finite in one and not in the other (an overflow one side has), or
/// infinities of opposite signs, is an infinite difference; NaN matches NaN.
struct OutputDifference {
  double largest = 0;    // expected's largest finite magnitude
  double difference = 0; // the largest |actual - expected|
  double relative() const { return largest > 0 ? difference / largest : difference; }
};
OutputDifference outputDifference(const Tensor &expected, const Tensor &actual);

/// Times the bundle's GEMM launches on the GPU both ways (Model::tuneGemms), prints a table to
/// `report`, and rewrites manifest.json with the winners: atomically, then checked end to end
/// (the tuned bundle's outputs against the untuned one's on the same inputs: 1e-4 of their
/// largest magnitude for strict-f32 bundles with f32 outputs, 2e-2 otherwise). On any error the
/// manifest is as it was. Errors: not a bundle directory, no GEMM with a library call (compile
/// with -O max-autotune), no GPU, cuBLASLt not loadable.
Status tuneBundle(const TuneOptions &options, std::ostream &report);

} // namespace tensorc::rt
