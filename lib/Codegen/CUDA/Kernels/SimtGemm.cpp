// The strict-f32 SIMT GEMM: the device template tk_gemm_simt (BM x BN tiles, 8 x 8 outputs per
// thread, K slices of BK = 8, 16 or 32 double-buffered in shared memory with the next slice's
// global loads in registers while this one multiplies, deterministic split-K as in the
// tensor-core kernel). Deeper slices hide more of a load's latency behind each slice's FMAs:
// what small problems, a few warps per SM, are bound by.
#include "LibrarySources.h"

#include "tensorc/Support/StrCat.h"

namespace tensorc::cuda::kernels::detail {

const char *simtDevice() {
  // Shared tiles are K-major transposed (As[k][m], Bs[k][n]), so a thread reads its 4 + 4 rows
  // and 4 + 4 columns of one k as four float4s. A thread's outputs are two 4-row and two 4-column
  // runs half a tile apart, so the 16 threads along N read 16 consecutive float4s (no bank
  // conflicts) and the threads along M read 2 (broadcast). Rows are padded by 4 floats: the
  // transposing stores of K-contiguous operands (thread t writes k rows 4 (t % 2) .. + 3 of
  // column t / 2) then land on distinct banks.
  return R"(
// ---- tk_gemm_simt: strict f32 GEMM on CUDA cores ----
template <int BM_, int BN_, int SPLITK_, int BK_ = 8> struct TkSimtConfig {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, SPLITK = SPLITK_;
  static constexpr int TX = BN / 8, TY = BM / 8, THREADS = TX * TY;
  static constexpr int AS = BM + 4, BS = BN + 4; // padded row lengths (floats)
  static constexpr int SMEM = 2 * BK * (AS + BS) * 4;
};

// Loads one operand's R x BK slice into registers (4 consecutive elements along the operand's
// contiguous dim per chunk) and stores it transposed to k-major shared rows of length RS.
template <class L, int R, int RS, int THREADS, int BK>
struct TkSimtTile : TkTileChunks<L, R, BK, 4, THREADS> {
  using Chunks = TkTileChunks<L, R, BK, 4, THREADS>;
  using Chunks::KM, Chunks::CPR, Chunks::P, Chunks::lines, Chunks::active;
  float v[P][4];
  TC_DEVICE void fetch(const L &l, long long batch, long long r0, long long k0, int tid) {
    #pragma unroll
    for (int p = 0; p < P; ++p) {
      if (!active(tid, p))
        continue;
      const int c = tid + p * THREADS, row = c / CPR, col = (c % CPR) * 4;
      const typename L::Line line = KM ? lines[KM ? p : 0] : l.line(batch, k0 + row);
      l.template load<4>(line, (KM ? k0 : r0) + col, v[p]);
    }
  }
  TC_DEVICE void store(float *s, int tid) const {
    #pragma unroll
    for (int p = 0; p < P; ++p) {
      if (!active(tid, p))
        continue;
      const int c = tid + p * THREADS, row = c / CPR, col = (c % CPR) * 4;
      if (KM) {
        #pragma unroll
        for (int e = 0; e < 4; ++e)
          s[(col + e) * RS + row] = v[p][e];
      } else {
        *reinterpret_cast<float4 *>(s + row * RS + col) = make_float4(v[p][0], v[p][1], v[p][2], v[p][3]);
      }
    }
  }
};

template <class C, class LA, class LB, class EpiV, class Epi1>
TC_DEVICE void tk_gemm_simt(const LA &la, const LB &lb, long long M, long long N, long long K, long long batches,
                            float *__restrict__ partials, unsigned *__restrict__ counters, unsigned char *smem,
                            EpiV epiV, Epi1 epi1) {
  constexpr int BM = C::BM, BN = C::BN, BK = C::BK, THREADS = C::THREADS, SPLITK = C::SPLITK;
  const int tid = threadIdx.x, tx = tid % C::TX, ty = tid / C::TX;
  float *As = reinterpret_cast<float *>(smem), *Bs = As + 2 * BK * C::AS;
  TkSimtTile<LA, BM, C::AS, THREADS, BK> ta;
  TkSimtTile<LB, BN, C::BS, THREADS, BK> tb;
  const TkGemmUnits<BM, BN, BK, SPLITK> work(M, N, K, batches);
  for (long long unit = blockIdx.x; unit < work.count; unit += gridDim.x) {
    const TkGemmUnit u = work.at(unit);
    ta.begin(la, u.batch, u.m0, tid);
    tb.begin(lb, u.batch, u.n0, tid);
    float acc[8][8];
    #pragma unroll
    for (int i = 0; i < 8; ++i)
      #pragma unroll
      for (int j = 0; j < 8; ++j)
        acc[i][j] = 0.0f;
    if (u.kbeg < u.kend) {
      ta.fetch(la, u.batch, u.m0, u.kbeg * BK, tid);
      tb.fetch(lb, u.batch, u.n0, u.kbeg * BK, tid);
      ta.store(As, tid);
      tb.store(Bs, tid);
    }
    __syncthreads();
    for (long long kt = u.kbeg; kt < u.kend; ++kt) {
      const int cur = (int)((kt - u.kbeg) & 1);
      const bool more = kt + 1 < u.kend;
      if (more) { // in flight while this slice multiplies
        ta.fetch(la, u.batch, u.m0, (kt + 1) * BK, tid);
        tb.fetch(lb, u.batch, u.n0, (kt + 1) * BK, tid);
      }
      const float *a = As + cur * BK * C::AS, *b = Bs + cur * BK * C::BS;
      #pragma unroll
      for (int k = 0; k < BK; ++k) {
        const float4 a0 = *reinterpret_cast<const float4 *>(a + k * C::AS + ty * 4);
        const float4 a1 = *reinterpret_cast<const float4 *>(a + k * C::AS + BM / 2 + ty * 4);
        const float4 b0 = *reinterpret_cast<const float4 *>(b + k * C::BS + tx * 4);
        const float4 b1 = *reinterpret_cast<const float4 *>(b + k * C::BS + BN / 2 + tx * 4);
        const float av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
        const float bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
        #pragma unroll
        for (int i = 0; i < 8; ++i)
          #pragma unroll
          for (int j = 0; j < 8; ++j)
            acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
      }
      if (more) { // the other buffer: every warp finished reading it before the last barrier
        ta.store(As + (cur ^ 1) * BK * C::AS, tid);
        tb.store(Bs + (cur ^ 1) * BK * C::BS, tid);
      }
      __syncthreads();
    }

    if (SPLITK > 1) {
      float4 *mine = reinterpret_cast<float4 *>(partials) + (u.tileId * SPLITK + u.split) * 16 * THREADS + tid;
      #pragma unroll
      for (int i = 0; i < 8; ++i)
        #pragma unroll
        for (int h = 0; h < 2; ++h)
          mine[(i * 2 + h) * THREADS] = make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
      if (!tk_splitk_last<SPLITK>(counters, u.tileId))
        continue;
      const float4 *all = reinterpret_cast<const float4 *>(partials) + u.tileId * SPLITK * 16 * THREADS + tid;
      #pragma unroll
      for (int i = 0; i < 8; ++i)
        #pragma unroll
        for (int j = 0; j < 8; ++j)
          acc[i][j] = 0.0f;
      for (int part = 0; part < SPLITK; ++part) {
        #pragma unroll
        for (int i = 0; i < 8; ++i)
          #pragma unroll
          for (int h = 0; h < 2; ++h) {
            const float4 v = __ldcg(all + (part * 16 + i * 2 + h) * THREADS);
            acc[i][4 * h] += v.x;
            acc[i][4 * h + 1] += v.y;
            acc[i][4 * h + 2] += v.z;
            acc[i][4 * h + 3] += v.w;
          }
      }
    }

    // Rows ty * 4 + i (+ BM / 2 for i >= 4), columns tx * 4 + j (+ BN / 2 for j >= 4). The row
    // loop stays rolled, so the epilogue is compiled twice rather than 16 times (most of the
    // compile time of a kernel with a long epilogue): row i is always acc[0], the rows after it
    // move up one each iteration (register moves, static indices).
    #pragma unroll 1
    for (int i = 0; i < 8; ++i) {
      const long long row = u.m0 + (i >> 2) * (BM / 2) + ty * 4 + (i & 3);
      if (row < M) {
        #pragma unroll
        for (int h = 0; h < 2; ++h) {
          const long long col = u.n0 + h * (BN / 2) + tx * 4;
          tk_epilogue_row<4>(epiV, epi1, u.batch, row, col, N, &acc[0][4 * h]);
        }
      }
      #pragma unroll
      for (int r = 0; r < 7; ++r)
        #pragma unroll
        for (int j = 0; j < 8; ++j)
          acc[r][j] = acc[r + 1][j];
    }
  }
}
)";
}

std::string checkSimtConfig(const GemmConfig &c) {
  if (!((c.bm == 128 && c.bn == 128) || (c.bm == 128 && c.bn == 64) ||
        (c.bm == 64 && c.bn == 128) || (c.bm == 64 && c.bn == 64) || (c.bm == 32 && c.bn == 64) ||
        (c.bm == 32 && c.bn == 128)))
    return strCat("SIMT tile ", c.bm, "x", c.bn,
                  " is not one of 128x128, 128x64, 64x128, 64x64, 32x128, 32x64");
  if (c.bk != 8 && c.bk != 16 && c.bk != 32)
    return strCat("the SIMT kernel's BK is 8, 16 or 32, not ", c.bk);
  if (c.splitK < 1 || c.splitK > 64)
    return strCat("splitK ", c.splitK, " outside 1..64");
  return "";
}

std::string simtConfigType(const GemmConfig &c) {
  if (c.bk == 8) // the default
    return strCat("TkSimtConfig<", c.bm, ", ", c.bn, ", ", c.splitK, ">");
  return strCat("TkSimtConfig<", c.bm, ", ", c.bn, ", ", c.splitK, ", ", c.bk, ">");
}

int simtThreads(const GemmConfig &c) { return (c.bm / 8) * (c.bn / 8); }
int simtSmemBytes(const GemmConfig &c) { return 2 * c.bk * (c.bm + 4 + c.bn + 4) * 4; }

} // namespace tensorc::cuda::kernels::detail
