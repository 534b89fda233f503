// The tensor-core GEMM (mma.sync: f16/bf16 m16n8k16, TF32 m16n8k8; f32 accumulators): the
// device template tk_gemm_tc (multistage cp.async ring, swizzled shared memory, ldmatrix,
// deterministic split-K, an epilogue staged through shared memory for row-contiguous stores)
// and the checks of its configurations.
#include "LibrarySources.h"

#include "tensorc/Support/StrCat.h"

namespace tensorc::cuda::kernels {

namespace detail {

const char *tensorCoreDevice() {
  // Per block: a BM x BN output tile of one batch entry and one K range (split-K part). The K
  // slices stream through a ring of STAGES shared-memory slots with cp.async: slices i + 1 ..
  // i + STAGES - 1 are in flight while slice i multiplies. Warps own (BM / WARPS_M) x
  // (BN / WARPS_N) sub-tiles of MI x NI mma tiles; fragments come from shared memory through
  // ldmatrix (.trans for an operand whose M or N is contiguous; TF32 has no 32-bit transposed
  // ldmatrix, so such an operand is read element by element). The accumulators go through a
  // shared-memory tile so that each thread hands the epilogue 8 consecutive columns of one row.
  //
  // Split-K: each part stores its accumulators to `partials` in the thread's own order (each
  // thread reads back only what the same thread index wrote, so the layout needs no
  // transposition and the accesses coalesce), then counts itself in with an atomic on the
  // tile's counter. The part that arrives last sums all parts in part order (so the result does
  // not depend on which part came last), resets the counter for the next launch and runs the
  // epilogue.
  return R"(
// ---- tk_gemm_tc: tensor-core GEMM ----
template <int BM_, int BN_, int BK_, int WARPS_M_, int WARPS_N_, int STAGES_, int SPLITK_, int KIND_>
struct TkTcConfig {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, WARPS_M = WARPS_M_, WARPS_N = WARPS_N_;
  static constexpr int STAGES = STAGES_, SPLITK = SPLITK_, KIND = KIND_;
  static constexpr int THREADS = WARPS_M * WARPS_N * 32;
  static constexpr int E = KIND == 2 ? 4 : 2;      // bytes per element in memory
  static constexpr int VEC = 16 / E;               // elements per 16-byte chunk
  static constexpr int KSTEP = KIND == 2 ? 8 : 16; // k per mma: always two chunks
  static constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N, MI = WM / 16, NI = WN / 8;
  static constexpr int A_BYTES = BM * BK * E, B_BYTES = BN * BK * E, STAGE_BYTES = A_BYTES + B_BYTES;
  static constexpr int CPAD = 8; // floats of padding per staged output row (conflict-free float2 stores)
  static constexpr int C_BYTES = BM * (BN + CPAD) * 4;
  static constexpr int SMEM = STAGES * STAGE_BYTES > C_BYTES ? STAGES * STAGE_BYTES : C_BYTES;
  static_assert(WM % 16 == 0 && WN % 16 == 0, "warp tiles are whole 16 x 16 mma pairs");
  static_assert(BK % KSTEP == 0 && BK / VEC >= 2, "K slices are whole mma steps");
  static_assert(STAGES >= 2, "a ring needs two slots");
};

// Moves one operand's tile (R rows of the operand x BK of K) from global into a shared slot.
// Chunk c of the tile (row c / CPR, chunk c % CPR) belongs to thread c % THREADS.
template <class L, class T, int R, int BK, int THREADS>
struct TkTileCopy : TkTileChunks<L, R, BK, 16 / (int)sizeof(T), THREADS> {
  using Chunks = TkTileChunks<L, R, BK, 16 / (int)sizeof(T), THREADS>;
  using Chunks::KM, Chunks::CPR, Chunks::P, Chunks::lines, Chunks::active;
  static constexpr int VEC = 16 / (int)sizeof(T);
  int row[P], col[P], off[P];
  TC_DEVICE void init(int tid) {
    #pragma unroll
    for (int p = 0; p < P; ++p) {
      const int c = tid + p * THREADS;
      row[p] = c / CPR;
      col[p] = c % CPR;
      off[p] = tk_swz<CPR>(row[p], col[p]);
    }
  }
  // The tile of K slice starting at k0 into the slot at `tile` (generic) / `addr` (shared).
  TC_DEVICE void copy(const L &l, long long batch, long long r0, long long k0, unsigned char *tile,
                      unsigned addr, int tid) const {
    #pragma unroll
    for (int p = 0; p < P; ++p) {
      if (!active(tid, p))
        continue;
      const typename L::Line line = KM ? lines[KM ? p : 0] : l.line(batch, k0 + row[p]);
      const long long at = (KM ? k0 : r0) + col[p] * VEC;
      if (L::vector) {
        l.copy(line, at, addr + off[p]);
      } else {
        TkVec<T, VEC> v;
        l.template load<VEC>(line, at, v.v);
        *reinterpret_cast<TkVec<T, VEC> *>(tile + off[p]) = v;
      }
    }
  }
};

template <class C, class LA, class LB, class EpiV, class Epi1>
TC_DEVICE void tk_gemm_tc(const LA &la, const LB &lb, long long M, long long N, long long K, long long batches,
                          float *__restrict__ partials, unsigned *__restrict__ counters, unsigned char *smem,
                          EpiV epiV, Epi1 epi1) {
  using T = typename TkType<C::KIND == 2 ? 2 : C::KIND>::T;
  constexpr int BM = C::BM, BN = C::BN, BK = C::BK, THREADS = C::THREADS, VEC = C::VEC;
  constexpr int MI = C::MI, NI = C::NI, SPLITK = C::SPLITK, STAGES = C::STAGES;
  constexpr bool AK = LA::kMajor, BKM = LB::kMajor;
  static_assert(AK || C::KIND == 2 || BM / VEC >= 4, "a transposed A tile needs 32 rows of M");
  static_assert(BKM || C::KIND == 2 || BN / VEC >= 4, "a transposed B tile needs 32 columns of N");
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm0 = (warp / C::WARPS_N) * C::WM, wn0 = (warp % C::WARPS_N) * C::WN;
  const int g = lane >> 2, t4 = lane & 3;
  const unsigned sbase = tk_smem_u32(smem);

  TkTileCopy<LA, T, BM, BK, THREADS> copyA;
  TkTileCopy<LB, T, BN, BK, THREADS> copyB;
  copyA.init(tid);
  copyB.init(tid);
  // This lane's ldmatrix row address in a slot (bytes), per 16-row (A) or 16-column (B) group at
  // k step 0; later steps XOR (K-major) or add (transposed) a constant.
  int aoff[MI], boff[NI / 2];
  #pragma unroll
  for (int i = 0; i < MI; ++i)
    aoff[i] = AK ? tk_swz<BK / VEC>(wm0 + i * 16 + (lane & 15), lane >> 4)
                 : tk_swz<BM / VEC>((lane & 7) + ((lane >> 4) << 3), (wm0 + i * 16) / VEC + ((lane >> 3) & 1));
  #pragma unroll
  for (int j = 0; j < NI / 2; ++j)
    boff[j] = BKM ? tk_swz<BK / VEC>(wn0 + j * 16 + (lane & 7) + ((lane >> 4) << 3), (lane >> 3) & 1)
                  : tk_swz<BN / VEC>((lane & 7) + (((lane >> 3) & 1) << 3), (wn0 + j * 16) / VEC + (lane >> 4));

  const TkGemmUnits<BM, BN, BK, SPLITK> work(M, N, K, batches);
  for (long long unit = blockIdx.x; unit < work.count; unit += gridDim.x) {
    const TkGemmUnit u = work.at(unit);
    copyA.begin(la, u.batch, u.m0, tid);
    copyB.begin(lb, u.batch, u.n0, tid);
    auto load = [&](int slot, long long kt) {
      unsigned char *tile = smem + slot * C::STAGE_BYTES;
      const unsigned addr = sbase + slot * C::STAGE_BYTES;
      copyA.copy(la, u.batch, u.m0, kt * BK, tile, addr, tid);
      copyB.copy(lb, u.batch, u.n0, kt * BK, tile + C::A_BYTES, addr + C::A_BYTES, tid);
    };

    float acc[MI][NI][4];
    #pragma unroll
    for (int i = 0; i < MI; ++i)
      #pragma unroll
      for (int j = 0; j < NI; ++j)
        acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;

    // Prologue: slices u.kbeg .. u.kbeg + STAGES - 2 in flight, one commit group each (empty
    // groups past the end keep the count, so the wait below always means "slice i is in").
    #pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (u.kbeg + s < u.kend)
        load(s, u.kbeg + s);
      tk_cp_async_commit();
    }
    for (long long kt = u.kbeg; kt < u.kend; ++kt) {
      const int i = (int)(kt - u.kbeg);
      tk_cp_async_wait<STAGES - 2>();
      __syncthreads(); // slice i is in for every thread; every warp is done with slot i - 1
      if (kt + STAGES - 1 < u.kend)
        load((i + STAGES - 1) % STAGES, kt + STAGES - 1);
      tk_cp_async_commit();

      const int slot = i % STAGES;
      const unsigned aS = sbase + slot * C::STAGE_BYTES, bS = aS + C::A_BYTES;
      const unsigned char *aT = smem + slot * C::STAGE_BYTES, *bT = aT + C::A_BYTES;
      #pragma unroll
      for (int s = 0; s < BK / C::KSTEP; ++s) {
        unsigned af[MI][4], bf[NI][2];
        #pragma unroll
        for (int i2 = 0; i2 < MI; ++i2) {
          if (AK) {
            tk_ldsm4(af[i2], aS + (aoff[i2] ^ (s << 5)));
          } else if (C::KIND != 2) {
            tk_ldsm4_t(af[i2], aS + aoff[i2] + s * 16 * (BM / VEC) * 16);
          } else { // TF32, M contiguous: a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4)
            #pragma unroll
            for (int q = 0; q < 4; ++q) {
              const int k = s * 8 + t4 + (q >> 1) * 4, m = wm0 + i2 * 16 + g + (q & 1) * 8;
              af[i2][q] = *reinterpret_cast<const unsigned *>(aT + tk_swz<BM / VEC>(k, m / VEC) + (m % VEC) * 4);
            }
          }
        }
        #pragma unroll
        for (int j = 0; j < NI / 2; ++j) {
          if (C::KIND != 2 || BKM) {
            unsigned r[4];
            if (BKM)
              tk_ldsm4(r, bS + (boff[j] ^ (s << 5)));
            else
              tk_ldsm4_t(r, bS + boff[j] + s * 16 * (BN / VEC) * 16);
            bf[2 * j][0] = r[0];
            bf[2 * j][1] = r[1];
            bf[2 * j + 1][0] = r[2];
            bf[2 * j + 1][1] = r[3];
          } else { // TF32, N contiguous: b0 (k = t, n = g), b1 (k = t + 4, n = g)
            #pragma unroll
            for (int q = 0; q < 4; ++q) {
              const int k = s * 8 + t4 + (q & 1) * 4, n = wn0 + (2 * j + (q >> 1)) * 8 + g;
              bf[2 * j + (q >> 1)][q & 1] =
                  *reinterpret_cast<const unsigned *>(bT + tk_swz<BN / VEC>(k, n / VEC) + (n % VEC) * 4);
            }
          }
        }
        if (C::KIND == 2) {
          #pragma unroll
          for (int i2 = 0; i2 < MI; ++i2)
            #pragma unroll
            for (int q = 0; q < 4; ++q)
              af[i2][q] = tk_tf32(af[i2][q]);
          #pragma unroll
          for (int j = 0; j < NI; ++j) {
            bf[j][0] = tk_tf32(bf[j][0]);
            bf[j][1] = tk_tf32(bf[j][1]);
          }
        }
        #pragma unroll
        for (int i2 = 0; i2 < MI; ++i2)
          #pragma unroll
          for (int j = 0; j < NI; ++j)
            tk_mma<C::KIND>(acc[i2][j], af[i2], bf[j][0], bf[j][1]);
      }
    }
    tk_cp_async_wait<0>();
    __syncthreads(); // the ring is free for the output tile

    if (SPLITK > 1) {
      float4 *mine = reinterpret_cast<float4 *>(partials) + (u.tileId * SPLITK + u.split) * (MI * NI) * THREADS + tid;
      #pragma unroll
      for (int i = 0; i < MI; ++i)
        #pragma unroll
        for (int j = 0; j < NI; ++j)
          mine[(i * NI + j) * THREADS] = make_float4(acc[i][j][0], acc[i][j][1], acc[i][j][2], acc[i][j][3]);
      if (!tk_splitk_last<SPLITK>(counters, u.tileId))
        continue;
      const float4 *all = reinterpret_cast<const float4 *>(partials) + u.tileId * SPLITK * (MI * NI) * THREADS + tid;
      #pragma unroll
      for (int i = 0; i < MI; ++i)
        #pragma unroll
        for (int j = 0; j < NI; ++j)
          acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;
      for (int part = 0; part < SPLITK; ++part) {
        #pragma unroll
        for (int i = 0; i < MI; ++i)
          #pragma unroll
          for (int j = 0; j < NI; ++j) {
            const float4 v = __ldcg(all + (part * (MI * NI) + i * NI + j) * THREADS);
            acc[i][j][0] += v.x;
            acc[i][j][1] += v.y;
            acc[i][j][2] += v.z;
            acc[i][j][3] += v.w;
          }
      }
    }

    // Accumulator (i, j) holds rows g, g + 8 x columns 2t, 2t + 1 of mma tile (i, j).
    float *cs = reinterpret_cast<float *>(smem);
    constexpr int CS = BN + C::CPAD;
    #pragma unroll
    for (int i = 0; i < MI; ++i)
      #pragma unroll
      for (int j = 0; j < NI; ++j) {
        const int r = wm0 + i * 16 + g, c = wn0 + j * 8 + 2 * t4;
        *reinterpret_cast<float2 *>(cs + r * CS + c) = make_float2(acc[i][j][0], acc[i][j][1]);
        *reinterpret_cast<float2 *>(cs + (r + 8) * CS + c) = make_float2(acc[i][j][2], acc[i][j][3]);
      }
    __syncthreads();
    constexpr int TPR = BN / 8, RPP = THREADS / TPR;
    #pragma unroll 1 // one copy of the epilogue (it reads the tile from shared memory)
    for (int pass = 0; pass < (BM + RPP - 1) / RPP; ++pass) {
      const int r = pass * RPP + tid / TPR, c = (tid % TPR) * 8;
      const long long row = u.m0 + r, col = u.n0 + c;
      if ((BM % RPP == 0 || r < BM) && row < M) {
        const float4 lo = *reinterpret_cast<const float4 *>(cs + r * CS + c);
        const float4 hi = *reinterpret_cast<const float4 *>(cs + r * CS + c + 4);
        const float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
        tk_epilogue_row<8>(epiV, epi1, u.batch, row, col, N, v);
      }
    }
    __syncthreads(); // the output tile is read before the next unit's copies land
  }
}
)";
}

std::string checkTensorCoreConfig(const GemmConfig &c, ElemType type, MathMode math, bool aKMajor,
                                  bool bKMajor) {
  if (math == MathMode::Tensor16 && type == ElemType::F32)
    return "f32 operands need TF32 or SIMT math";
  if (math == MathMode::TF32 && type != ElemType::F32)
    return "TF32 math takes f32 operands";
  int vec = math == MathMode::TF32 ? 4 : 8, kstep = math == MathMode::TF32 ? 8 : 16;
  if (c.warpsM < 1 || c.warpsN < 1 || c.bm % (16 * c.warpsM) || c.bn % (16 * c.warpsN))
    return strCat("tile ", c.bm, "x", c.bn, " does not split into ", c.warpsM, "x", c.warpsN,
                  " warps of whole 16x16 mma pairs");
  if (c.bk % kstep || c.bk / vec < 2 || (c.bk / vec) & (c.bk / vec - 1))
    return strCat("BK ", c.bk, " is not a power-of-two multiple of the mma step ", kstep);
  if (c.bn % 8 || (c.warpsM * c.warpsN * 32) % (c.bn / 8))
    return strCat("BN ", c.bn, " does not split into rows of the output stage");
  if (math != MathMode::TF32 && ((!aKMajor && c.bm < 32) || (!bKMajor && c.bn < 32)))
    return "a transposed operand tile needs 32 rows";
  for (int r : {c.bm, c.bn, c.bk})
    if (r & (r - 1))
      return strCat("tile dim ", r, " is not a power of two");
  if (c.stages < 2 || c.stages > 8)
    return strCat("stages ", c.stages, " outside 2..8");
  if (c.splitK < 1 || c.splitK > 64)
    return strCat("splitK ", c.splitK, " outside 1..64");
  return "";
}

std::string tensorCoreConfigType(const GemmConfig &c, ElemType type, MathMode math) {
  return strCat("TkTcConfig<", c.bm, ", ", c.bn, ", ", c.bk, ", ", c.warpsM, ", ", c.warpsN, ", ",
                c.stages, ", ", c.splitK, ", ", mmaKind(type, math), ">");
}

int tensorCoreSmemBytes(const GemmConfig &c, MathMode math) {
  int e = math == MathMode::TF32 ? 4 : 2;
  int ring = c.stages * (c.bm + c.bn) * c.bk * e, out = c.bm * (c.bn + 8) * 4;
  return ring > out ? ring : out;
}

} // namespace detail

} // namespace tensorc::cuda::kernels
