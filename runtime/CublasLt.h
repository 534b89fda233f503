// cuBLASLt, loaded at run time with dlopen only by bundles whose tuning chose it for some GEMM
// (DESIGN §5: a GEMM library is an autotuning candidate, never a dependency). The few types and
// constants used are declared here with the library's ABI values, as CudaDriver.h does for the
// driver.
#pragma once

#include "CudaDriver.h"

#include "tensorc/Support/DType.h"
#include "tensorc/Support/Status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tensorc::rt::blaslt {

using Handle = struct cublasLtContext *;
using MatmulDesc = struct cublasLtMatmulDescOpaque *;
using Layout = struct cublasLtMatrixLayoutOpaque *;
using Preference = struct cublasLtMatmulPreferenceOpaque *;

/// cublasLtMatmulAlgo_t: 64 opaque bytes.
struct Algo {
  uint64_t data[8];
};
/// cublasLtMatmulHeuristicResult_t.
struct HeuristicResult {
  Algo algo;
  size_t workspaceSize;
  int state; // cublasStatus_t
  float wavesCount;
  int reserved[4];
};
static_assert(sizeof(HeuristicResult) == 96, "cublasLtMatmulHeuristicResult_t's layout");

/// The entry points used, resolved once per process.
struct Library {
  int (*create)(Handle *);
  int (*destroy)(Handle);
  int (*descCreate)(MatmulDesc *, int computeType, int scaleType);
  int (*descDestroy)(MatmulDesc);
  int (*descSetAttribute)(MatmulDesc, int, const void *, size_t);
  int (*layoutCreate)(Layout *, int type, uint64_t rows, uint64_t cols, int64_t ld);
  int (*layoutDestroy)(Layout);
  int (*layoutSetAttribute)(Layout, int, const void *, size_t);
  int (*preferenceCreate)(Preference *);
  int (*preferenceDestroy)(Preference);
  int (*preferenceSetAttribute)(Preference, int, const void *, size_t);
  int (*heuristic)(Handle, MatmulDesc, Layout, Layout, Layout, Layout, Preference, int,
                   HeuristicResult *, int *);
  int (*matmul)(Handle, MatmulDesc, const void *alpha, const void *a, Layout, const void *b, Layout,
                const void *beta, const void *c, Layout, void *d, Layout, const Algo *,
                void *workspace, size_t workspaceBytes, cu::Stream);
  std::string file; // the file dlopen found

  /// ok, or "<what>: cuBLASLt status N".
  Status check(int status, const std::string &what) const;
};

/// The process's cuBLASLt: $TENSORC_CUBLASLT (a path), else libcublasLt.so.13, .so.12 or .so on
/// the loader's path. Errors say what was tried.
Expected<const Library *> library();

/// The workspace every plan may use (cuBLASLt's recommendation for Hopper).
constexpr size_t kWorkspaceBytes = size_t(32) << 20;

/// A batched GEMM in the kernel library's terms (row-major C[batch][M][N] = A . B, dense, of
/// dtype `output`, at an address aligned to `outputAlignment` bytes):
/// A is M x K, B is K x N per batch entry, each with its unit-stride dim (kContiguous: K), the
/// elements between its lines (`ld`) and between batch entries (0: shared), and the alignment in
/// bytes its address is known to have.
struct Problem {
  DType dtype = DType::F32;
  bool tf32 = false;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  struct Operand {
    bool kContiguous = true;
    int64_t ld = 0, batchStride = 0;
    int64_t alignment = 16;
  } a, b;
  DType output = DType::F32;
  int64_t outputAlignment = 256;
  /// A vector of N elements of dtype `output` added to every row of the product before it is
  /// rounded to `output` (cuBLASLt's bias epilogue), or null. Its address is the one run() gets:
  /// the heuristic reads its alignment.
  const void *bias = nullptr;
  /// "f32 128x768x3072 (A k-major, B n-major)" for reports.
  std::string describe() const;
};

/// One problem's descriptors and the algorithms cuBLASLt's heuristic offers for it (best first).
class Plan {
public:
  /// Errors when the layout has no cuBLASLt form or the heuristic offers nothing; at most
  /// `maxAlgorithms` are kept.
  static Expected<std::unique_ptr<Plan>> create(const Library &library, Handle handle,
                                                const Problem &problem, int maxAlgorithms);
  ~Plan();
  Plan(const Plan &) = delete;
  Plan &operator=(const Plan &) = delete;

  size_t algorithms() const { return algorithms_.size(); }
  /// Enqueues C = A . B (+ the bias, for a problem with one: `bias`, aligned as the problem's)
  /// with algorithm `algo` (clamped to those offered) on `stream`; `c` is the dense
  /// [batch][M][N] result.
  Status run(const void *a, const void *b, const void *bias, void *c, void *workspace,
             cu::Stream stream, size_t algo) const;

private:
  Plan() = default;
  const Library *library_ = nullptr;
  Handle handle_ = nullptr;
  MatmulDesc desc_ = nullptr;
  Layout layoutA_ = nullptr, layoutB_ = nullptr, layoutD_ = nullptr;
  std::vector<HeuristicResult> algorithms_;
};

} // namespace tensorc::rt::blaslt
