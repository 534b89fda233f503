// Matrix products (aten.mm, bmm, addmm, matmul) and the blocked GEMM behind them and convolution.
#include "DecomposeHelpers.h"
#include "DenseKernels.h"
#include "OpGroups.h"
#include "OpHelpers.h"

#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <system_error>
#include <thread>
#include <type_traits>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TENSORC_GEMM_X86 1
#endif

namespace tensorc::ops {
namespace {

// ---- GEMM ------------------------------------------------------------------------------------
//
// BLIS-style: for each kc x nc panel of B (packed into nr-wide column strips) and each mc x kc
// block of A (packed into kMr-tall row strips), a micro-kernel computes a kMr x nr tile of C in
// registers. Blocks are sized so a B strip stays in L1 and the A block in L2.

constexpr int64_t kMr = 6;

template <typename T> struct GemmBlocking;
template <> struct GemmBlocking<float> {
  static constexpr int64_t nr = 16, kc = 256, mc = 120, nc = 2048;
};
template <> struct GemmBlocking<double> {
  static constexpr int64_t nr = 8, kc = 256, mc = 96, nc = 1024;
};

/// Multiply-accumulates below this many (m*n*k) use the plain loop: packing would cost more.
constexpr int64_t kSmallGemm = 8 * 1024;
/// Each thread gets at least this many multiply-accumulates, so threads pay for their start.
constexpr int64_t kMacsPerThread = int64_t(1) << 22;

/// Computes acc = Apanel @ Bpanel over `kc` (A strip kMr-tall, B strip nr-wide, both packed) and
/// adds alpha * acc to the valid mr x nr corner of C.
template <typename T>
using MicroKernel = void (*)(int64_t kc, const T *a, const T *b, T alpha, T *c, int64_t ldc,
                             int64_t mr, int64_t nr);

template <typename T>
void addTile(const T *tile, T alpha, T *c, int64_t ldc, int64_t mr, int64_t nr) {
  constexpr int64_t kNr = GemmBlocking<T>::nr;
  for (int64_t i = 0; i < mr; ++i)
    for (int64_t j = 0; j < nr; ++j)
      c[i * ldc + j] += alpha * tile[i * kNr + j];
}

template <typename T>
void microKernelPortable(int64_t kc, const T *a, const T *b, T alpha, T *c, int64_t ldc, int64_t mr,
                         int64_t nr) {
  constexpr int64_t kNr = GemmBlocking<T>::nr;
  alignas(64) T acc[kMr * kNr] = {};
  for (int64_t p = 0; p < kc; ++p, a += kMr, b += kNr)
    for (int64_t i = 0; i < kMr; ++i)
      for (int64_t j = 0; j < kNr; ++j)
        acc[i * kNr + j] += a[i] * b[j];
  addTile(acc, alpha, c, ldc, mr, nr);
}

#ifdef TENSORC_GEMM_X86
#define TENSORC_AVX2 __attribute__((target("avx2,fma"), always_inline)) static

/// The AVX2 operations of the micro-kernel on 8 floats or 4 doubles.
template <typename T> struct Avx2;
template <> struct Avx2<float> {
  using Vec = __m256;
  TENSORC_AVX2 Vec zero() { return _mm256_setzero_ps(); }
  TENSORC_AVX2 Vec load(const float *p) { return _mm256_loadu_ps(p); }
  TENSORC_AVX2 Vec broadcast(const float *p) { return _mm256_broadcast_ss(p); }
  TENSORC_AVX2 Vec splat(float x) { return _mm256_set1_ps(x); }
  TENSORC_AVX2 Vec fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
  TENSORC_AVX2 void store(float *p, Vec v) { _mm256_storeu_ps(p, v); }
  TENSORC_AVX2 void storeAligned(float *p, Vec v) { _mm256_store_ps(p, v); }
};
template <> struct Avx2<double> {
  using Vec = __m256d;
  TENSORC_AVX2 Vec zero() { return _mm256_setzero_pd(); }
  TENSORC_AVX2 Vec load(const double *p) { return _mm256_loadu_pd(p); }
  TENSORC_AVX2 Vec broadcast(const double *p) { return _mm256_broadcast_sd(p); }
  TENSORC_AVX2 Vec splat(double x) { return _mm256_set1_pd(x); }
  TENSORC_AVX2 Vec fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_pd(a, b, c); }
  TENSORC_AVX2 void store(double *p, Vec v) { _mm256_storeu_pd(p, v); }
  TENSORC_AVX2 void storeAligned(double *p, Vec v) { _mm256_store_pd(p, v); }
};
#undef TENSORC_AVX2

// A 6 x nr tile in 12 ymm accumulators (nr = 16 floats or 8 doubles: two vectors a row): per k
// step two loads of B, six broadcasts of A and twelve FMAs.
template <typename T>
__attribute__((target("avx2,fma"))) void microKernelAvx2(int64_t kc, const T *a, const T *b,
                                                         T alpha, T *c, int64_t ldc, int64_t mr,
                                                         int64_t nr) {
  using V = Avx2<T>;
  constexpr int64_t kNr = GemmBlocking<T>::nr, kHalf = kNr / 2;
  typename V::Vec acc[kMr][2];
#pragma GCC unroll 6
  for (int64_t i = 0; i < kMr; ++i)
    acc[i][0] = acc[i][1] = V::zero();
#pragma GCC unroll 4
  for (int64_t p = 0; p < kc; ++p, a += kMr, b += kNr) {
    typename V::Vec b0 = V::load(b), b1 = V::load(b + kHalf);
#pragma GCC unroll 6
    for (int64_t i = 0; i < kMr; ++i) {
      typename V::Vec ai = V::broadcast(a + i);
      acc[i][0] = V::fma(ai, b0, acc[i][0]);
      acc[i][1] = V::fma(ai, b1, acc[i][1]);
    }
  }
  typename V::Vec alphas = V::splat(alpha);
  if (mr == kMr && nr == kNr) {
#pragma GCC unroll 6
    for (int64_t i = 0; i < kMr; ++i) {
      T *row = c + i * ldc;
      V::store(row, V::fma(alphas, acc[i][0], V::load(row)));
      V::store(row + kHalf, V::fma(alphas, acc[i][1], V::load(row + kHalf)));
    }
    return;
  }
  alignas(32) T tile[kMr * kNr];
#pragma GCC unroll 6
  for (int64_t i = 0; i < kMr; ++i) {
    V::storeAligned(tile + i * kNr, acc[i][0]);
    V::storeAligned(tile + i * kNr + kHalf, acc[i][1]);
  }
  addTile(tile, alpha, c, ldc, mr, nr);
}
#endif

template <typename T> MicroKernel<T> selectMicroKernel() {
#ifdef TENSORC_GEMM_X86
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return microKernelAvx2<T>;
#endif
  return microKernelPortable<T>;
}

/// Packs rows [i0, i0+mc) x cols [p0, p0+kc) of A into kMr-tall strips, each column of a strip
/// contiguous; rows past mc are zero.
template <typename T>
void packA(MatrixView<T> a, int64_t i0, int64_t mc, int64_t p0, int64_t kc, T *out) {
  for (int64_t ir = 0; ir < mc; ir += kMr) {
    int64_t rows = std::min(kMr, mc - ir);
    const T *base = a.data + (i0 + ir) * a.rowStride + p0 * a.colStride;
    for (int64_t p = 0; p < kc; ++p, out += kMr) {
      const T *column = base + p * a.colStride;
      for (int64_t i = 0; i < rows; ++i)
        out[i] = column[i * a.rowStride];
      for (int64_t i = rows; i < kMr; ++i)
        out[i] = T(0);
    }
  }
}

/// Packs rows [p0, p0+kc) x cols [j0, j0+nc) of B into nr-wide strips, each row of a strip
/// contiguous; columns past nc are zero.
template <typename T>
void packB(MatrixView<T> b, int64_t p0, int64_t kc, int64_t j0, int64_t nc, T *out) {
  constexpr int64_t kNr = GemmBlocking<T>::nr;
  for (int64_t jr = 0; jr < nc; jr += kNr, out += kNr * kc) {
    int64_t cols = std::min(kNr, nc - jr);
    const T *base = b.data + p0 * b.rowStride + (j0 + jr) * b.colStride;
    if (b.colStride == 1 && cols == kNr) {
      for (int64_t p = 0; p < kc; ++p)
        std::copy(base + p * b.rowStride, base + p * b.rowStride + kNr, out + p * kNr);
      continue;
    }
    if (b.colStride != 1) {
      // Columns are the contiguous direction (a transposed B): walk down each column.
      for (int64_t j = 0; j < cols; ++j)
        for (int64_t p = 0; p < kc; ++p)
          out[p * kNr + j] = base[j * b.colStride + p * b.rowStride];
    } else {
      for (int64_t p = 0; p < kc; ++p)
        for (int64_t j = 0; j < cols; ++j)
          out[p * kNr + j] = base[p * b.rowStride + j];
    }
    for (int64_t p = 0; p < kc; ++p)
      for (int64_t j = cols; j < kNr; ++j)
        out[p * kNr + j] = T(0);
  }
}

template <typename T>
void gemmBlocked(int64_t m, int64_t n, int64_t k, T alpha, MatrixView<T> a, MatrixView<T> b, T *c,
                 int64_t ldc, MicroKernel<T> micro) {
  using Blocking = GemmBlocking<T>;
  constexpr int64_t kNr = Blocking::nr;
  int64_t kcMax = std::min(k, Blocking::kc);
  int64_t mcMax = std::min(m, Blocking::mc);
  int64_t ncMax = std::min(n, Blocking::nc);
  std::vector<T> aPack(size_t((mcMax + kMr - 1) / kMr * kMr * kcMax));
  std::vector<T> bPack(size_t((ncMax + kNr - 1) / kNr * kNr * kcMax));
  for (int64_t jc = 0; jc < n; jc += Blocking::nc) {
    int64_t nc = std::min(Blocking::nc, n - jc);
    for (int64_t pc = 0; pc < k; pc += Blocking::kc) {
      int64_t kc = std::min(Blocking::kc, k - pc);
      packB(b, pc, kc, jc, nc, bPack.data());
      for (int64_t ic = 0; ic < m; ic += Blocking::mc) {
        int64_t mc = std::min(Blocking::mc, m - ic);
        packA(a, ic, mc, pc, kc, aPack.data());
        for (int64_t jr = 0; jr < nc; jr += kNr)
          for (int64_t ir = 0; ir < mc; ir += kMr)
            micro(kc, aPack.data() + ir * kc, bPack.data() + jr * kc, alpha,
                  c + (ic + ir) * ldc + jc + jr, ldc, std::min(kMr, mc - ir),
                  std::min(kNr, nc - jr));
      }
    }
  }
}

/// The plain loop, for tiny or vector-shaped products and for integer dtypes (which wrap around
/// like torch's).
template <typename T>
void gemmSimple(int64_t m, int64_t n, int64_t k, T alpha, MatrixView<T> a, MatrixView<T> b, T *c,
                int64_t ldc) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, T, uint64_t>;
  std::vector<Acc> row(static_cast<size_t>(n));
  for (int64_t i = 0; i < m; ++i) {
    std::fill(row.begin(), row.end(), Acc(0));
    for (int64_t p = 0; p < k; ++p) {
      Acc aip = Acc(a.data[i * a.rowStride + p * a.colStride]);
      const T *bRow = b.data + p * b.rowStride;
      for (int64_t j = 0; j < n; ++j)
        row[size_t(j)] += aip * Acc(bRow[j * b.colStride]);
    }
    for (int64_t j = 0; j < n; ++j)
      c[i * ldc + j] = T(Acc(c[i * ldc + j]) + Acc(alpha) * row[size_t(j)]);
  }
}

template <typename T>
void gemmImpl(int64_t m, int64_t n, int64_t k, T alpha, MatrixView<T> a, MatrixView<T> b, T *c,
              int64_t ldc) {
  if (m == 0 || n == 0 || k == 0)
    return;
  if (m == 1 || n == 1 || m * n * k < kSmallGemm) {
    gemmSimple(m, n, k, alpha, a, b, c, ldc);
    return;
  }
  MicroKernel<T> micro = selectMicroKernel<T>();
  int64_t hardware = std::max<int64_t>(1, int64_t(std::thread::hardware_concurrency()));
  int64_t threads = std::min(hardware, m * n * k / kMacsPerThread);
  // Split the longer of m and n into tile-aligned chunks, one per thread; each thread packs its
  // own panels, so they share nothing but the read-only inputs.
  bool splitColumns = n >= m;
  int64_t extent = splitColumns ? n : m;
  int64_t align = splitColumns ? GemmBlocking<T>::nr : kMr;
  threads = std::min(threads, (extent + align - 1) / align);
  if (threads <= 1) {
    gemmBlocked(m, n, k, alpha, a, b, c, ldc, micro);
    return;
  }
  int64_t chunk = ((extent + threads - 1) / threads + align - 1) / align * align;
  auto runChunk = [&, micro](int64_t begin) {
    int64_t size = std::min(chunk, extent - begin);
    if (splitColumns) {
      MatrixView<T> bPart{b.data + begin * b.colStride, b.rowStride, b.colStride};
      gemmBlocked(m, size, k, alpha, a, bPart, c + begin, ldc, micro);
    } else {
      MatrixView<T> aPart{a.data + begin * a.rowStride, a.rowStride, a.colStride};
      gemmBlocked(size, n, k, alpha, aPart, b, c + begin * ldc, ldc, micro);
    }
  };
  std::vector<std::thread> workers;
  for (int64_t begin = chunk; begin < extent; begin += chunk) {
    try {
      workers.emplace_back(runChunk, begin);
    } catch (const std::system_error &) {
      runChunk(begin); // no thread to be had: do this chunk here
    }
  }
  runChunk(0);
  for (std::thread &worker : workers)
    worker.join();
}

// ---- Shapes ----------------------------------------------------------------------------------

std::string matrixStr(const Shape &shape) { return join(shape, "x"); }

Status checkOperandDTypes(const TensorType &a, const TensorType &b, const char *aName,
                          const char *bName) {
  if (a.dtype != b.dtype)
    return makeError("expected ", aName, " and ", bName,
                     " to have the same dtype, but got: ", dtypeName(a.dtype),
                     " != ", dtypeName(b.dtype));
  if (a.dtype == DType::Bool)
    return makeError("matrix products are not defined for bool tensors");
  return Status::ok();
}

Status checkRank(const TensorType &type, size_t rank, const char *name, const char *what) {
  if (type.rank() != rank)
    return makeError(name, " must be a ", what, " (rank ", rank, "), got ", type.str());
  return Status::ok();
}

Status checkInner(const TensorType &a, const TensorType &b, const SymInt &ka, const SymInt &kb,
                  const char *aName, const char *bName) {
  if (!mayBeEqual(ka, kb))
    return makeError(aName, " and ", bName, " shapes cannot be multiplied (", matrixStr(a.shape),
                     " and ", matrixStr(b.shape), ")");
  return Status::ok();
}

Expected<std::vector<TensorType>> inferMm(const InferContext &ctx) {
  const TensorType &a = ctx.input(0), &b = ctx.input(1);
  TC_RETURN_IF_ERROR(checkRank(a, 2, "self", "matrix"));
  TC_RETURN_IF_ERROR(checkRank(b, 2, "mat2", "matrix"));
  TC_RETURN_IF_ERROR(checkOperandDTypes(a, b, "self", "mat2"));
  TC_RETURN_IF_ERROR(checkInner(a, b, a.shape[1], b.shape[0], "self", "mat2"));
  return std::vector<TensorType>{TensorType(a.dtype, {a.shape[0], b.shape[1]})};
}

Expected<std::vector<TensorType>> inferBmm(const InferContext &ctx) {
  const TensorType &a = ctx.input(0), &b = ctx.input(1);
  TC_RETURN_IF_ERROR(checkRank(a, 3, "self", "batch of matrices"));
  TC_RETURN_IF_ERROR(checkRank(b, 3, "mat2", "batch of matrices"));
  TC_RETURN_IF_ERROR(checkOperandDTypes(a, b, "self", "mat2"));
  if (!mayBeEqual(a.shape[0], b.shape[0]))
    return makeError("self and mat2 must have the same batch size, got ", a.shape[0], " and ",
                     b.shape[0]);
  TC_RETURN_IF_ERROR(checkInner(a, b, a.shape[2], b.shape[1], "self", "mat2"));
  SymInt batch = a.shape[0].isConstant() ? a.shape[0] : b.shape[0];
  return std::vector<TensorType>{TensorType(a.dtype, {batch, a.shape[1], b.shape[2]})};
}

Expected<std::vector<TensorType>> inferAddmm(const InferContext &ctx) {
  const TensorType &self = ctx.input(0), &a = ctx.input(1), &b = ctx.input(2);
  TC_RETURN_IF_ERROR(checkRank(a, 2, "mat1", "matrix"));
  TC_RETURN_IF_ERROR(checkRank(b, 2, "mat2", "matrix"));
  TC_RETURN_IF_ERROR(checkOperandDTypes(a, b, "mat1", "mat2"));
  TC_RETURN_IF_ERROR(checkOperandDTypes(self, a, "self", "mat1"));
  TC_RETURN_IF_ERROR(checkInner(a, b, a.shape[1], b.shape[0], "mat1", "mat2"));
  Shape outShape{a.shape[0], b.shape[1]};
  Expected<Shape> broadcast = broadcastShapes(self.shape, outShape);
  if (self.rank() > 2 || !broadcast || *broadcast != outShape)
    return makeError("self ", self.str(), " does not broadcast to the product's shape [",
                     join(outShape, ", "), "]");
  return std::vector<TensorType>{TensorType(a.dtype, outShape)};
}

/// torch.matmul's shapes: 1-D operands get a dim prepended (self) or appended (other) that the
/// result drops; the batch dims (all but the last two) broadcast.
struct MatmulShapes {
  Shape batchA, batchB;
  SymInt n, k, kOther, m;
  bool vectorA = false, vectorB = false;
};

Expected<MatmulShapes> splitMatmulShapes(const Shape &a, const Shape &b) {
  if (a.empty() || b.empty())
    return makeError("both arguments to matmul need to be at least 1D, but they are ", a.size(),
                     "D and ", b.size(), "D");
  MatmulShapes shapes;
  shapes.vectorA = a.size() == 1;
  shapes.vectorB = b.size() == 1;
  shapes.n = shapes.vectorA ? SymInt(1) : a[a.size() - 2];
  shapes.k = a.back();
  shapes.kOther = shapes.vectorB ? b[0] : b[b.size() - 2];
  shapes.m = shapes.vectorB ? SymInt(1) : b.back();
  shapes.batchA.assign(a.begin(), a.end() - (shapes.vectorA ? 1 : 2));
  shapes.batchB.assign(b.begin(), b.end() - (shapes.vectorB ? 1 : 2));
  return shapes;
}

Expected<std::vector<TensorType>> inferMatmul(const InferContext &ctx) {
  const TensorType &a = ctx.input(0), &b = ctx.input(1);
  TC_RETURN_IF_ERROR(checkOperandDTypes(a, b, "self", "other"));
  TC_ASSIGN_OR_RETURN(MatmulShapes shapes, splitMatmulShapes(a.shape, b.shape));
  TC_RETURN_IF_ERROR(checkInner(a, b, shapes.k, shapes.kOther, "self", "other"));
  Expected<Shape> batch = broadcastShapes(shapes.batchA, shapes.batchB);
  if (!batch)
    return makeError("matmul batch dims: ", batch.error().message());
  Shape out = *batch;
  if (!shapes.vectorA)
    out.push_back(shapes.n);
  if (!shapes.vectorB)
    out.push_back(shapes.m);
  return std::vector<TensorType>{TensorType(a.dtype, out)};
}

// ---- Kernels ---------------------------------------------------------------------------------

/// A batch of products C[i] += alpha * A[i] @ B[i]; C is the contiguous output, batch-major.
struct MatmulPlan {
  int64_t m = 0, n = 0, k = 0;
  int64_t aRowStride = 0, aColStride = 1, bRowStride = 0, bColStride = 1;
  std::vector<int64_t> aOffsets{0}, bOffsets{0}; // one per batch entry, in elements
};

Shape constShape(const std::vector<int64_t> &dims) { return Shape(dims.begin(), dims.end()); }

std::vector<int64_t> concreteDims(const Shape &shape) {
  std::vector<int64_t> dims;
  for (const SymInt &dim : shape)
    dims.push_back(dim.constant().value_or(0));
  return dims;
}

/// Plans matmul on concrete row-major operands (also serves mm and bmm).
Expected<MatmulPlan> planMatmul(const std::vector<int64_t> &aDims,
                                const std::vector<int64_t> &bDims) {
  TC_ASSIGN_OR_RETURN(MatmulShapes shapes, splitMatmulShapes(constShape(aDims), constShape(bDims)));
  MatmulPlan plan;
  plan.n = *shapes.n.constant();
  plan.k = *shapes.k.constant();
  plan.m = *shapes.m.constant();
  if (plan.k != *shapes.kOther.constant())
    return makeError("shapes cannot be multiplied (", join(aDims, "x"), " and ", join(bDims, "x"),
                     ")");
  TC_ASSIGN_OR_RETURN(Shape batchShape, broadcastShapes(shapes.batchA, shapes.batchB));
  std::vector<int64_t> batchA = concreteDims(shapes.batchA), batchB = concreteDims(shapes.batchB),
                       batch = concreteDims(batchShape);
  plan.aRowStride = plan.k;
  plan.bRowStride = plan.m;
  if (product(batchB) == 1) {
    // One B for every batch entry: fold the batch of A into its rows (a single large GEMM).
    plan.n *= product(batchA);
    return plan;
  }
  BroadcastIndexer aIndex(batchA, batch), bIndex(batchB, batch);
  int64_t count = product(batch);
  plan.aOffsets.resize(size_t(count));
  plan.bOffsets.resize(size_t(count));
  for (int64_t i = 0; i < count; ++i) {
    plan.aOffsets[size_t(i)] = aIndex(i) * plan.n * plan.k;
    plan.bOffsets[size_t(i)] = bIndex(i) * plan.k * plan.m;
  }
  return plan;
}

template <typename T>
void runPlanTyped(const MatmulPlan &plan, const Tensor &a, const Tensor &b, Tensor &out,
                  double alpha) {
  const T *aData = a.dataAs<T>();
  const T *bData = b.dataAs<T>();
  T *cData = out.mutableDataAs<T>();
  for (size_t i = 0; i < plan.aOffsets.size(); ++i) {
    MatrixView<T> aView{aData + plan.aOffsets[i], plan.aRowStride, plan.aColStride};
    MatrixView<T> bView{bData + plan.bOffsets[i], plan.bRowStride, plan.bColStride};
    T *c = cData + int64_t(i) * plan.m * plan.n;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
      gemm(plan.n, plan.m, plan.k, T(alpha), aView, bView, c, plan.m);
    else
      gemmSimple(plan.n, plan.m, plan.k, T(alpha), aView, bView, c, plan.m);
  }
}

/// out += alpha * (a @ b) per `plan`; f16/bf16 accumulate in f32 and round once.
Status runPlan(const MatmulPlan &plan, const Tensor &a, const Tensor &b, Tensor &out) {
  return dispatchCompute({&a, &b}, out,
                         [&](auto zero, const std::vector<const Tensor *> &in, Tensor &c) {
                           runPlanTyped<decltype(zero)>(plan, *in[0], *in[1], c, 1.0);
                           return Status::ok();
                         });
}

Status runMatmul(KernelContext &ctx) {
  TC_ASSIGN_OR_RETURN(MatmulPlan plan, planMatmul(ctx.input(0).shape(), ctx.input(1).shape()));
  return runPlan(plan, ctx.input(0), ctx.input(1), ctx.output(0));
}

Status runBmm(KernelContext &ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  if (a.dim(0) != b.dim(0))
    return makeError("self and mat2 must have the same batch size, got ", a.dim(0), " and ",
                     b.dim(0));
  return runMatmul(ctx);
}

Status runAddmm(KernelContext &ctx) {
  TC_ASSIGN_OR_RETURN(MatmulPlan plan, planMatmul(ctx.input(1).shape(), ctx.input(2).shape()));
  double alpha = ctx.getScalar("alpha"), beta = ctx.getScalar("beta");
  return dispatchCompute({&ctx.input(0), &ctx.input(1), &ctx.input(2)}, ctx.output(0),
                         [&](auto zero, const std::vector<const Tensor *> &in, Tensor &out) {
                           using T = decltype(zero);
                           // out = beta * self (broadcast over [n, m]); beta == 0 ignores self,
                           // NaNs included.
                           if (beta != 0) {
                             const Tensor &self = *in[0];
                             std::vector<int64_t> dims = self.shape();
                             dims.insert(dims.begin(), 2 - dims.size(), 1);
                             int64_t rowStride = dims[0] == 1 ? 0 : dims[1];
                             int64_t colStride = dims[1] == 1 ? 0 : 1;
                             const T *s = self.dataAs<T>();
                             T *o = out.mutableDataAs<T>();
                             T betaT = T(beta);
                             for (int64_t i = 0; i < plan.n; ++i)
                               for (int64_t j = 0; j < plan.m; ++j)
                                 o[i * plan.m + j] = T(betaT * s[i * rowStride + j * colStride]);
                           }
                           runPlanTyped<T>(plan, *in[1], *in[2], out, alpha);
                           return Status::ok();
                         });
}

// ---- Decompositions ---------------------------------------------------------------------------

/// addmm(self, a, b) = beta * self + alpha * (a @ b), skipping multiplications by 1; beta = 0
/// ignores self (NaN included), as the kernel does.
DecomposeResult decomposeAddmm(RewriteContext &rewrite, const OpRegistry &registry) {
  DecomposeBuilder b(rewrite, registry);
  AttrReader attrs(b.node().attrs());
  const Attribute &alpha = attrs.attr("alpha"), &beta = attrs.attr("beta");
  DType dtype = b.resultType().dtype;
  if (!isFloating(dtype) && (alpha.isFloat() || beta.isFloat()))
    return keepNode();
  TC_ASSIGN_OR_RETURN(Value * product, b.emit(OpId::Mm, {b.operand(1), b.operand(2)}));
  if (alpha.asScalar() != 1.0) {
    TC_ASSIGN_OR_RETURN(Value * scale, b.scalar(alpha, dtype));
    TC_ASSIGN_OR_RETURN(product, b.mul(product, scale));
  }
  if (beta.asScalar() == 0.0)
    return replaceWith(product);
  Value *self = b.operand(0);
  if (beta.asScalar() != 1.0) {
    TC_ASSIGN_OR_RETURN(Value * scale, b.scalar(beta, dtype));
    TC_ASSIGN_OR_RETURN(self, b.mul(self, scale));
  }
  TC_ASSIGN_OR_RETURN(Value * result, b.add(product, self));
  return replaceWith(result);
}

/// matmul by the operand ranks: with a matrix or vector on the right, the left operand's leading
/// dims fold into the rows of one mm ([1, k] for a vector); otherwise both sides expand to the
/// broadcast batch (static, or already equal) and flatten it for bmm. The product is viewed back
/// to the result's shape.
DecomposeResult decomposeMatmul(RewriteContext &rewrite, const OpRegistry &registry) {
  DecomposeBuilder b(rewrite, registry);
  Value *lhs = b.operand(0), *rhs = b.operand(1);
  const Shape &lhsShape = lhs->type().shape, &rhsShape = rhs->type().shape;
  const Shape &outShape = b.resultType().shape;
  if (rhsShape.size() <= 2) {
    SymInt rows(1);
    for (size_t i = 0; i + 1 < lhsShape.size(); ++i)
      rows = rows * lhsShape[i];
    TC_ASSIGN_OR_RETURN(Value * matrix, b.view(lhs, {rows, lhsShape.back()}));
    if (rhsShape.size() == 1) {
      TC_ASSIGN_OR_RETURN(rhs, b.view(rhs, {rhsShape[0], SymInt(1)}));
    }
    TC_ASSIGN_OR_RETURN(Value * product, b.emit(OpId::Mm, {matrix, rhs}));
    TC_ASSIGN_OR_RETURN(Value * result, b.view(product, outShape));
    return replaceWith(result);
  }

  bool vectorLhs = lhsShape.size() == 1;
  Shape lhsBatch(lhsShape.begin(), lhsShape.end() - (vectorLhs ? 1 : 2));
  Shape rhsBatch(rhsShape.begin(), rhsShape.end() - 2);
  Shape batch(outShape.begin(), outShape.end() - (vectorLhs ? 1 : 2));
  SymInt batchSize(1);
  bool staticBatch = true;
  for (const SymInt &dim : batch) {
    batchSize = batchSize * dim;
    staticBatch = staticBatch && dim.isConstant();
  }
  if (!staticBatch && !(lhsBatch == batch && rhsBatch == batch))
    return keepNode(); // broadcasting symbolic batch dims could retype
  SymInt n = vectorLhs ? SymInt(1) : lhsShape[lhsShape.size() - 2];
  const SymInt &k = lhsShape.back(), &kOther = rhsShape[rhsShape.size() - 2], &m = rhsShape.back();
  auto batched = [&](Value *operand, const SymInt &rows, const SymInt &cols) -> Expected<Value *> {
    Value *matrices = operand;
    if (operand->type().rank() == 1) {
      TC_ASSIGN_OR_RETURN(matrices, b.view(operand, {rows, cols}));
    }
    Shape full = batch;
    full.push_back(rows);
    full.push_back(cols);
    TC_ASSIGN_OR_RETURN(Value * expanded, b.expand(matrices, full));
    return b.view(expanded, {batchSize, rows, cols});
  };
  TC_ASSIGN_OR_RETURN(Value * lhs3, batched(lhs, n, k));
  TC_ASSIGN_OR_RETURN(Value * rhs3, batched(rhs, kOther, m));
  TC_ASSIGN_OR_RETURN(Value * product, b.emit(OpId::Bmm, {lhs3, rhs3}));
  TC_ASSIGN_OR_RETURN(Value * result, b.view(product, outShape));
  return replaceWith(result);
}

} // namespace

void gemm(int64_t m, int64_t n, int64_t k, float alpha, MatrixView<float> a, MatrixView<float> b,
          float *c, int64_t ldc) {
  gemmImpl(m, n, k, alpha, a, b, c, ldc);
}

void gemm(int64_t m, int64_t n, int64_t k, double alpha, MatrixView<double> a, MatrixView<double> b,
          double *c, int64_t ldc) {
  gemmImpl(m, n, k, alpha, a, b, c, ldc);
}

Expected<Tensor> widenToF32(const Tensor &tensor) {
  if (tensor.dtype() == DType::F32)
    return tensor;
  if (!computesInF32(tensor.dtype()))
    return makeError("internal: cannot widen ", dtypeName(tensor.dtype()), " to f32");
  TC_ASSIGN_OR_RETURN(Tensor wide, Tensor::zeros(DType::F32, tensor.shape()));
  const uint16_t *source = tensor.dataAs<uint16_t>();
  float *dest = wide.mutableDataAs<float>();
  int64_t count = tensor.numel();
  if (tensor.dtype() == DType::F16) {
    for (int64_t i = 0; i < count; ++i)
      dest[i] = halfToFloat(source[i]);
  } else {
    for (int64_t i = 0; i < count; ++i)
      dest[i] = bf16ToFloat(source[i]);
  }
  return wide;
}

void narrowFromF32(const Tensor &source, Tensor &dest) {
  const float *from = source.dataAs<float>();
  uint16_t *to = dest.mutableDataAs<uint16_t>();
  int64_t count = dest.numel();
  if (dest.dtype() == DType::F16) {
    for (int64_t i = 0; i < count; ++i)
      to[i] = floatToHalf(from[i]);
  } else {
    for (int64_t i = 0; i < count; ++i)
      to[i] = floatToBf16(from[i]);
  }
}

Status registerLinearAlgebraOps(OpRegistry &registry) {
  TC_RETURN_IF_ERROR(registry.add(
      makeOp(OpId::Mm, {tensorParam("self"), tensorParam("mat2")}, inferMm, runMatmul)));
  TC_RETURN_IF_ERROR(registry.add(
      makeOp(OpId::Bmm, {tensorParam("self"), tensorParam("mat2")}, inferBmm, runBmm)));
  TC_RETURN_IF_ERROR(registry.add(withDecompose(
      makeOp(OpId::Addmm,
             {tensorParam("self"), tensorParam("mat1"), tensorParam("mat2"),
              attrParam("beta", AttrKind::Scalar, Attribute(int64_t(1)), /*kwargOnly=*/true),
              attrParam("alpha", AttrKind::Scalar, Attribute(int64_t(1)), /*kwargOnly=*/true)},
             inferAddmm, runAddmm),
      decomposeAddmm)));
  TC_RETURN_IF_ERROR(registry.add(withDecompose(
      makeOp(OpId::Matmul, {tensorParam("self"), tensorParam("other")}, inferMatmul, runMatmul),
      decomposeMatmul)));
  return Status::ok();
}

} // namespace tensorc::ops
