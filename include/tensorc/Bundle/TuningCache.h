// A shippable record of GEMM tuning (DESIGN §5): per GPU arch and GEMM problem, whether cuBLASLt
// or the generated kernel won and by how much. `tensorc tune --cache FILE` reads it (known
// problems are not timed again) and adds what it times; `tensorc compile -O max-autotune
// --tuning-cache FILE` applies it at compile time, without a GPU, so that a CI job can build a
// tuned bundle or model .so from a cache made once on the GPU machine.
#pragma once

#include "tensorc/Bundle/Manifest.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace tensorc::bundle {

struct TuningEntry {
  std::string library; // "" (the generated kernel won) or kCublasLt
  int64_t algo = 0;
  double kernelUs = 0, libraryUs = -1; // as timed (-1: the library had no algorithm)
};

class TuningCache {
public:
  /// Reads a cache file; a missing file is an empty cache. Errors name the file and the entry.
  static Expected<TuningCache> load(const std::string &path);
  /// Writes the cache (a temporary file renamed into place).
  Status save(const std::string &path) const;

  /// The key of `launch`'s GEMM call at `bindings` on GPU arch `arch` ("sm_90"): the arch, the
  /// operand and output dtypes, TF32, the sizes, each operand's layout (unit-stride dim, ld,
  /// batch stride, 16-byte alignment of its offset), whether there is an epilogue function, and
  /// the kernel's name without its index (what its epilogue computes: "tem_mm_add_mul_erf").
  /// nullopt when the launch has no GEMM call or a size does not evaluate.
  static std::optional<std::string> key(const Manifest &manifest, const Launch &launch,
                                        const std::map<std::string, int64_t> &bindings,
                                        const std::string &arch);

  const TuningEntry *find(const std::string &key) const;
  void put(const std::string &key, TuningEntry entry) { entries_[key] = std::move(entry); }
  size_t size() const { return entries_.size(); }

  /// Sets the choice of every GEMM call of `manifest` whose key (at `bindings`, on `arch`) the
  /// cache holds; returns how many it found.
  int64_t apply(Manifest &manifest, const std::string &arch,
                const std::map<std::string, int64_t> &bindings) const;

private:
  std::map<std::string, TuningEntry> entries_;
};

} // namespace tensorc::bundle
