// The flash-attention kernel (f16/bf16 on tensor cores, sm_80+): one block computes 64 query
// rows of one batch entry, streaming 64-key tiles of K and V through shared memory; the L x S
// scores only ever exist as one 16 x 64 tile per warp, in registers.
#include "FlashAttention.h"

#include "tensorc/Ops/AttentionShapes.h"

#include <algorithm>

namespace tensorc::cuda {

int64_t flashAttentionSmemElements(int64_t e, int64_t ev, int64_t stages, int64_t split) {
  int64_t tiles = kFlashKeys * (e + 8 + ev + 8);
  int64_t elements = stages == 1 ? tiles : kFlashRows / split * (e + 8) + stages * tiles;
  // Split rows meet in the same memory: a max, a sum and EV floats per warp and row.
  int64_t parts = split > 1 ? kFlashThreads / 32 * 16 * (ev + 2) * 2 : 0;
  return std::max(elements, parts);
}

int64_t flashAttentionStages(int64_t e, int64_t ev, int64_t split) {
  return flashAttentionSmemElements(e, ev, 2, split) * 2 <= kStaticSmemBytes ? 2 : 1;
}

int64_t flashAttentionSplit(int64_t blocks, int64_t sms) { return blocks * 4 <= sms ? 2 : 1; }

bool flashAttentionFits(const loop::LoopProgram &program, const loop::LoopNode &node) {
  const loop::LoopNode::Attention &a = node.attention;
  DType dtype = program.buffers[size_t(a.q.buffer)].dtype;
  return tensorCoreAttentionShape(dtype, SymInt(a.e), SymInt(a.ev)) &&
         program.buffers[size_t(a.k.buffer)].dtype == dtype &&
         program.buffers[size_t(a.v.buffer)].dtype == dtype &&
         program.buffers[size_t(node.output)].dtype == dtype;
}

const std::string &flashAttentionLibrary() {
  // Fragments of mma.sync.m16n8k16 (lane = 4 * g + t): A (16 x 16, row-major) registers a0..a3
  // hold (row g, cols 2t and 2t + 1), (g + 8, 2t..), (g, 2t + 8..), (g + 8, 2t + 8..); B
  // (16 x 8, k x n) registers b0, b1 hold (k = 2t, 2t + 1; n = g) and (k = 2t + 8, 2t + 9; n = g);
  // the f32 accumulator c0..c3 is (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1). The low
  // half of a register holds the element of lower k (A) or lower row (B's k), as in memory.
  // ldmatrix.x4 reads four 8 x 8 matrices of 16-bit elements, matrix m from the row addresses of
  // lanes 8m..8m+7, and gives lane 4r + c, in register m, elements (r, 2c) and (r, 2c + 1) of
  // matrix m; with .trans elements (2c, r) and (2c + 1, r).
  //
  // Per block: Q (64 x E) is loaded into A fragments, once. Then per key tile: S = Q . K^T (each
  // warp 16 x 64, K rows are B's columns as stored), scores to log2 units (scale * log2 e, the
  // mask times log2 e, -inf for keys past S or masked out), the online softmax (running max m and
  // sum l per row, the accumulators rescaled by 2^(m_old - m_new)), P rounded to the input dtype
  // as A fragments straight from the score accumulators, O += P . V with V's fragments through
  // ldmatrix.trans. How K and V tiles flow through shared memory (one buffer each, or two) is the
  // kernel's STAGES (tc_flash_attention's comment).
  static const std::string text = R"(// Flash attention (f16/bf16, mma.sync m16n8k16, sm_80+)
#define TC_FA_ROWS 64
#define TC_FA_KEYS 64
#define TC_FA_THREADS 128
// ---- inline PTX (test/e2e/cuda_emu.h emulates what lies between these lines) ----
TC_DEVICE unsigned tc_smem_address(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
// Shared-memory operands are 32-bit shared-window addresses (tc_smem_address).
TC_DEVICE void tc_cp_async16(unsigned dst, const void *src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(dst), "l"(src) : "memory");
}
TC_DEVICE void tc_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> TC_DEVICE void tc_cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory"); }
TC_DEVICE void tc_ldmatrix_x4(unsigned (&r)[4], unsigned p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(p) : "memory");
}
TC_DEVICE void tc_ldmatrix_x4_trans(unsigned (&r)[4], unsigned p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(p) : "memory");
}
// d += a . b on tensor cores (f32 accumulators).
template <bool BF16> TC_DEVICE void tc_mma16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  if (BF16)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// Two floats rounded to f16/bf16 (to nearest even) in one register, `lo` in the low half.
template <bool BF16> TC_DEVICE unsigned tc_pack2(float lo, float hi) {
  unsigned r;
  if (BF16)
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  else
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
// 2^x: 0 for -inf, NaN for NaN.
TC_DEVICE float tc_exp2(float x) { float y; asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x)); return y; }
// ---- end of inline PTX ----
template <bool BF16> TC_DEVICE float tc_widen(unsigned short h) { return BF16 ? tc_bf2f(h) : tc_h2f(h); }

// Rows [r0, r0 + ROWS) of a dense n x D matrix into shared rows of D + 8 elements at `dst` (the
// padding keeps ldmatrix's eight row reads on distinct banks), in 16-byte cp.async chunks; rows
// past n are zero.
template <int D, int ROWS>
TC_DEVICE void tc_fa_load(unsigned short *dst, const unsigned short *__restrict__ src, long long ld, long long r0,
                          long long n) {
  constexpr int CHUNKS = D / 8, TOTAL = ROWS * CHUNKS;
  if constexpr (TC_FA_THREADS % CHUNKS == 0 && TOTAL % TC_FA_THREADS == 0) {
    // The block covers STEP whole rows per pass: one column and a fixed row stride per thread.
    constexpr int STEP = TC_FA_THREADS / CHUNKS;
    const int r = threadIdx.x / CHUNKS, col = (threadIdx.x % CHUNKS) * 8;
    unsigned short *d = dst + r * (D + 8) + col;
    const unsigned short *from = src + (r0 + r) * ld + col;
    const long long left = n - r0 - r; // rows of this thread's column still in the matrix
    #pragma unroll
    for (int i = 0; i < ROWS / STEP; ++i) {
      if (i * STEP < left)
        tc_cp_async16(tc_smem_address(d + i * STEP * (D + 8)), from + i * STEP * ld);
      else
        *reinterpret_cast<uint4 *>(d + i * STEP * (D + 8)) = make_uint4(0u, 0u, 0u, 0u);
    }
  } else {
    #pragma unroll
    for (int i = 0; i < (TOTAL + TC_FA_THREADS - 1) / TC_FA_THREADS; ++i) {
      const int c = i * TC_FA_THREADS + threadIdx.x, r = c / CHUNKS, col = (c % CHUNKS) * 8;
      if (TOTAL % TC_FA_THREADS != 0 && c >= TOTAL)
        break;
      unsigned short *d = dst + r * (D + 8) + col;
      if (r0 + r < n)
        tc_cp_async16(tc_smem_address(d), src + (r0 + r) * ld + col);
      else
        *reinterpret_cast<uint4 *>(d) = make_uint4(0u, 0u, 0u, 0u);
    }
  }
}

// S = Q . K^T for this warp's keys of one tile: 16 rows x NT n-tiles of 8 keys, two per ldmatrix
// from the tile at `kLane` (this lane's K row address).
template <int E, bool BF16, int NT>
TC_DEVICE void tc_fa_scores(float (&s)[NT][4], const unsigned (&qf)[E / 16][4], unsigned kLane) {
  constexpr int KS = E + 8;
  #pragma unroll
  for (int n = 0; n < NT; ++n)
    s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
  #pragma unroll
  for (int kk = 0; kk < E / 16; ++kk) {
    #pragma unroll
    for (int n2 = 0; n2 < NT / 2; ++n2) {
      unsigned b[4];
      tc_ldmatrix_x4(b, kLane + (n2 * 16 * KS + kk * 16) * 2);
      tc_mma16816<BF16>(s[2 * n2], qf[kk], b[0], b[1]);
      tc_mma16816<BF16>(s[2 * n2 + 1], qf[kk], b[2], b[3]);
    }
  }
}

// This thread's mask elements of its keys [key0, key0 + keys) as stored (MASK 1: the bits of an
// f16/bf16 value, 2: a bool), element i of n-tile n at row `row` + (i >> 1) * 8, key n * 8 + 2t +
// (i & 1); 0 where the row or key lies outside. Loaded before the tile's scores are multiplied,
// so that the mask's memory round trip overlaps them instead of following them.
template <int MASK, int NT>
TC_DEVICE void tc_fa_mask_load(unsigned short (&mk)[NT][4], const void *__restrict__ mask,
                               long long maskRow, long long maskCol, long long L, long long row,
                               long long key0, int keys) {
  const int t = threadIdx.x & 3;
  #pragma unroll
  for (int n = 0; n < NT; ++n) {
    #pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int key = n * 8 + 2 * t + (i & 1);
      const long long r = row + (i >> 1) * 8;
      mk[n][i] = 0;
      if (MASK != 0 && key < keys && r < L) {
        const long long at = r * maskRow + (key0 + key) * maskCol;
        mk[n][i] = MASK == 1 ? static_cast<const unsigned short *>(mask)[at]
                             : (unsigned short)static_cast<const unsigned char *>(mask)[at];
      }
    }
  }
}

// The scores of this warp's first `keys` keys of the tile to log2 units with the mask (mk,
// tc_fa_mask_load's; -inf for keys past them), then the online softmax step: the running max m
// and this thread's part of the running sum l for its two rows (g and g + 8 of the warp's 16),
// the accumulators rescaled by 2^(m_old - m_new), and s replaced by P (unnormalized). Element i
// of n-tile n is row g + (i >> 1) * 8, key n * 8 + 2t + (i & 1).
template <int EV, bool BF16, int MASK, int NT>
TC_DEVICE void tc_fa_softmax(float (&s)[NT][4], float (&m)[2], float (&l)[2], float (&o)[EV / 8][4],
                             const unsigned short (&mk)[NT][4], int keys, float scaleLog2) {
  const int t = threadIdx.x & 3;
  const float negInf = __int_as_float((int)0xff800000u);
  const float log2e = 1.4426950408889634f;
  float tileMax[2] = {negInf, negInf};
  #pragma unroll
  for (int n = 0; n < NT; ++n) {
    #pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int key = n * 8 + 2 * t + (i & 1);
      float x = s[n][i] * scaleLog2;
      // Outside the rows and keys mk is 0: nothing added, or -inf for a key past the tile's
      // valid ones (as the line below gives) or a row past L (never stored).
      if (MASK == 1)
        x += log2e * tc_widen<BF16>(mk[n][i]);
      else if (MASK == 2 && !mk[n][i])
        x = negInf;
      x = key < keys ? x : negInf;
      s[n][i] = x;
      tileMax[i >> 1] = fmaxf(tileMax[i >> 1], x);
    }
  }
  // A row's four threads (one quad) agree on its max. While every score so far is -inf the
  // exponent base is 0, so those keys weigh 0 (not NaN); a row that stays so ends as 0 / 0 = NaN,
  // as the unfused softmax gives.
  float base[2];
  #pragma unroll
  for (int r = 0; r < 2; ++r) {
    tileMax[r] = fmaxf(tileMax[r], __shfl_xor_sync(0xffffffffu, tileMax[r], 1));
    tileMax[r] = fmaxf(tileMax[r], __shfl_xor_sync(0xffffffffu, tileMax[r], 2));
    const float next = fmaxf(m[r], tileMax[r]);
    base[r] = next == negInf ? 0.0f : next;
    const float alpha = tc_exp2(m[r] - base[r]); // 0 while m was -inf, 1 when unchanged
    m[r] = next;
    l[r] *= alpha;
    #pragma unroll
    for (int d = 0; d < EV / 8; ++d) {
      o[d][2 * r] *= alpha;
      o[d][2 * r + 1] *= alpha;
    }
  }
  #pragma unroll
  for (int n = 0; n < NT; ++n) {
    #pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float p = tc_exp2(s[n][i] - base[i >> 1]);
      s[n][i] = p;
      l[i >> 1] += p;
    }
  }
}

// O += P . V: P's A fragment for keys 16j..16j+15 is n-tiles 2j and 2j + 1 of the scores; V's B
// fragments for two 8-column tiles per ldmatrix.trans from the tile at `vLane`.
template <int EV, bool BF16, int NT>
TC_DEVICE void tc_fa_pv(float (&o)[EV / 8][4], const float (&s)[NT][4], unsigned vLane) {
  constexpr int VS = EV + 8;
  #pragma unroll
  for (int j = 0; j < NT / 2; ++j) {
    const unsigned a[4] = {tc_pack2<BF16>(s[2 * j][0], s[2 * j][1]), tc_pack2<BF16>(s[2 * j][2], s[2 * j][3]),
                           tc_pack2<BF16>(s[2 * j + 1][0], s[2 * j + 1][1]),
                           tc_pack2<BF16>(s[2 * j + 1][2], s[2 * j + 1][3])};
    #pragma unroll
    for (int d2 = 0; d2 < EV / 16; ++d2) {
      unsigned b[4];
      tc_ldmatrix_x4_trans(b, vLane + (j * 16 * VS + d2 * 16) * 2);
      tc_mma16816<BF16>(o[2 * d2], a, b[0], b[1]);
      tc_mma16816<BF16>(o[2 * d2 + 1], a, b[2], b[3]);
    }
  }
}

// Rows [row0, row0 + ROWS) of out = softmax(q . k^T * scale [+ mask]) . v for one batch entry,
// ROWS = 64 / SPLIT: q [L, E], k [S, E], v [S, EV], out [L, EV], rows ldq, ldk, ldv, ldo elements
// apart (multiples of 8, 16-byte aligned bases), each row contiguous. MASK: 0 none, 1 additive
// (q's dtype), 2 bool (false: -inf), element (i, j) at mask[i * maskRow + j * maskCol].
// `scaleLog2` = scale * log2 e. Every thread of the block calls it with the same arguments;
// `smem` is 16-byte aligned and holds flashAttentionSmemElements(E, EV, STAGES, SPLIT) elements.
//
// SPLIT warps (1 or 2) share each 16 rows: warp `part` of them takes keys [part * KW,
// (part + 1) * KW) of every tile (KW = 64 / SPLIT) with a running max and sum of its own, and at
// the end the parts meet in shared memory (each rescaled by 2^(its max - the rows' max)). Where
// the grid is small (short sequences, batch 1), that cuts the chain of dependent work each warp
// runs by SPLIT and puts SPLIT times the blocks on the SMs.
//
// STAGES 1: K and V have one shared buffer each and Q is staged through K's, each load
// overlapping a compute phase: V of tile j while S of tile j multiplies, K of tile j + 1 while the
// softmax and P . V of tile j run. STAGES 2: Q has its own buffer and K and V two each, tile j in
// buffer j % 2, loaded as one cp.async group two tiles ahead: Q and the first two tiles are in
// flight together (one memory round trip before the first multiply, where STAGES 1 waits for
// three: Q, K, V), and tile j + 1 arrives while tile j computes.
template <int E, int EV, bool BF16, int MASK, bool SAFE, int STAGES, int SPLIT>
TC_DEVICE void tc_flash_attention(const unsigned short *__restrict__ q, long long ldq,
                                  const unsigned short *__restrict__ k, long long ldk,
                                  const unsigned short *__restrict__ v, long long ldv,
                                  unsigned short *__restrict__ out, long long ldo,
                                  const void *__restrict__ mask, long long maskRow, long long maskCol,
                                  long long L, long long S, long long row0, float scaleLog2,
                                  unsigned short *smem) {
  static_assert(E % 16 == 0 && EV % 16 == 0, "head dims are whole k-steps");
  static_assert(STAGES == 1 || STAGES == 2, "one or two key tiles in shared memory");
  static_assert(SPLIT == 1 || SPLIT == 2, "one or two warps per 16 rows");
  constexpr int ROWS = TC_FA_ROWS / SPLIT, KW = TC_FA_KEYS / SPLIT, NT = KW / 8;
  static_assert(ROWS <= TC_FA_KEYS, "Q is staged in a K tile's buffer");
  constexpr int KS = E + 8, VS = EV + 8, KTILE = TC_FA_KEYS * KS, VTILE = TC_FA_KEYS * VS;
  unsigned short *Qs = smem, *Ks = STAGES == 1 ? smem : smem + ROWS * KS, *Vs = Ks + STAGES * KTILE;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const int group = warp / SPLIT, part = warp % SPLIT; // this warp's 16 rows, and its keys
  // This lane's ldmatrix row addresses (bytes, shared window) for Q, K (keys 0-7 | 8-15 of an
  // n-tile pair, columns 0-7 | 8-15 of a k-step) and V (keys 0-7 | 8-15 of a k-step, columns
  // 0-7 | 8-15 of a pair of 8-column tiles) in buffer 0; loops add compile-time offsets.
  const unsigned qLane = tc_smem_address(Qs + (group * 16 + (lane & 15)) * KS + (lane >> 4) * 8);
  const unsigned kLane =
      tc_smem_address(Ks + (part * KW + (lane & 7) + (lane >> 4) * 8) * KS + ((lane >> 3) & 1) * 8);
  const unsigned vLane =
      tc_smem_address(Vs + (part * KW + (lane & 7) + ((lane >> 3) & 1) * 8) * VS + (lane >> 4) * 8);
  const float negInf = __int_as_float((int)0xff800000u);
  const long long tiles = (S + TC_FA_KEYS - 1) / TC_FA_KEYS, row = row0 + group * 16 + g;

  float o[EV / 8][4];
  #pragma unroll
  for (int d = 0; d < EV / 8; ++d)
    o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.0f;
  // Running max (log2 units) and this thread's part of the running sum, for rows g and g + 8.
  float m[2] = {negInf, negInf}, l[2] = {0.0f, 0.0f};
  unsigned qf[E / 16][4]; // Q's A fragments, one per 16 columns
  float s[NT][4];
  // The mask of this warp's keys of the next tile to compute: tile 0's is loaded with Q and the
  // first K/V tiles, each next one as soon as the softmax has used the last, so that its memory
  // round trip overlaps P . V and the next tile's loads.
  unsigned short mk[NT][4];
  // Valid keys of tile kt from this warp's first.
  auto keysOf = [&](long long kt) {
    return (int)(S - kt * TC_FA_KEYS < TC_FA_KEYS ? S - kt * TC_FA_KEYS : TC_FA_KEYS) - part * KW;
  };
  auto loadMask = [&](long long kt) {
    tc_fa_mask_load<MASK, NT>(mk, mask, maskRow, maskCol, L, row, kt * TC_FA_KEYS + part * KW, keysOf(kt));
  };
  if constexpr (STAGES == 1) {
    // Q through K's buffer: in a block's next tile the last reads of K lie behind two barriers
    // already, and the first load of K follows the barrier after the fragments are read.
    tc_fa_load<E, ROWS>(Qs, q, ldq, row0, L);
    tc_cp_async_commit();
    loadMask(0);
    tc_cp_async_wait<0>();
    __syncthreads();
    #pragma unroll
    for (int kk = 0; kk < E / 16; ++kk)
      tc_ldmatrix_x4(qf[kk], qLane + kk * 16 * 2);
    __syncthreads();
    tc_fa_load<E, TC_FA_KEYS>(Ks, k, ldk, 0, S);
    tc_cp_async_commit();
    for (long long kt = 0; kt < tiles; ++kt) {
      const long long key0 = kt * TC_FA_KEYS;
      const int keys = keysOf(kt);
      tc_cp_async_wait<0>();
      __syncthreads(); // K tile kt is in; every warp is done with V tile kt - 1
      tc_fa_load<EV, TC_FA_KEYS>(Vs, v, ldv, key0, S);
      tc_cp_async_commit();
      tc_fa_scores<E, BF16, NT>(s, qf, kLane);
      __syncthreads(); // every warp is done with K tile kt
      if (kt + 1 < tiles)
        tc_fa_load<E, TC_FA_KEYS>(Ks, k, ldk, key0 + TC_FA_KEYS, S);
      tc_cp_async_commit(); // empty after the last tile: the wait below still means "V is in"
      tc_fa_softmax<EV, BF16, MASK, NT>(s, m, l, o, mk, keys, scaleLog2);
      if (kt + 1 < tiles)
        loadMask(kt + 1);
      tc_cp_async_wait<1>();
      __syncthreads(); // V tile kt is in
      tc_fa_pv<EV, BF16, NT>(o, s, vLane);
    }
    tc_cp_async_wait<0>();
  } else {
    // Groups in flight: Q, then one per tile (K and V together; empty past the last tile), so
    // that "all but the newest group" always means "tile kt is in".
    tc_fa_load<E, ROWS>(Qs, q, ldq, row0, L);
    tc_cp_async_commit();
    #pragma unroll
    for (int j = 0; j < 2; ++j) {
      if (j < tiles) {
        tc_fa_load<E, TC_FA_KEYS>(Ks + j * KTILE, k, ldk, j * TC_FA_KEYS, S);
        tc_fa_load<EV, TC_FA_KEYS>(Vs + j * VTILE, v, ldv, j * TC_FA_KEYS, S);
      }
      tc_cp_async_commit();
    }
    loadMask(0);
    tc_cp_async_wait<2>();
    __syncthreads(); // Q is in
    #pragma unroll
    for (int kk = 0; kk < E / 16; ++kk)
      tc_ldmatrix_x4(qf[kk], qLane + kk * 16 * 2);
    for (long long kt = 0; kt < tiles; ++kt) {
      const long long key0 = kt * TC_FA_KEYS;
      const int keys = keysOf(kt), buffer = (int)(kt & 1);
      tc_cp_async_wait<1>();
      __syncthreads(); // tile kt is in
      tc_fa_scores<E, BF16, NT>(s, qf, kLane + buffer * KTILE * 2);
      tc_fa_softmax<EV, BF16, MASK, NT>(s, m, l, o, mk, keys, scaleLog2);
      if (kt + 1 < tiles)
        loadMask(kt + 1);
      tc_fa_pv<EV, BF16, NT>(o, s, vLane + buffer * VTILE * 2);
      __syncthreads(); // every warp is done with this buffer
      if (kt + 2 < tiles) {
        tc_fa_load<E, TC_FA_KEYS>(Ks + buffer * KTILE, k, ldk, key0 + 2 * TC_FA_KEYS, S);
        tc_fa_load<EV, TC_FA_KEYS>(Vs + buffer * VTILE, v, ldv, key0 + 2 * TC_FA_KEYS, S);
      }
      tc_cp_async_commit();
    }
    tc_cp_async_wait<0>();
    __syncthreads(); // a block's next rows reuse the buffers: every warp is done with them
  }

  #pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
  }
  if constexpr (SPLIT > 1) {
    // The parts of each row meet in shared memory (the tiles' buffers, free after the barrier):
    // max and sum per part and row, then O per part, row and column; the group's part 0 combines
    // them, each part weighted by 2^(its max - the rows' max) (0 for a part whose keys were all
    // masked, so that a row with every key masked still ends as 0 / 0).
    constexpr int PARTS = TC_FA_THREADS / 32; // (group, part) pairs
    float *pm = reinterpret_cast<float *>(smem), *pl = pm + PARTS * 16, *po = pl + PARTS * 16;
    if (STAGES == 1)
      __syncthreads(); // (STAGES 2 ends its loop on one)
    #pragma unroll
    for (int r = 0; r < 2; ++r) {
      if (t == 0) {
        pm[warp * 16 + g + r * 8] = m[r];
        pl[warp * 16 + g + r * 8] = l[r];
      }
      #pragma unroll
      for (int d = 0; d < EV / 8; ++d)
        *reinterpret_cast<float2 *>(po + (warp * 16 + g + r * 8) * EV + d * 8 + 2 * t) =
            make_float2(o[d][2 * r], o[d][2 * r + 1]);
    }
    __syncthreads();
    if (part == 0) {
      #pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int at = warp * 16 + g + r * 8; // this row's entry of part 0
        float top = pm[at];
        #pragma unroll
        for (int p = 1; p < SPLIT; ++p)
          top = fmaxf(top, pm[at + p * 16]);
        float weight[SPLIT];
        l[r] = 0.0f;
        #pragma unroll
        for (int p = 0; p < SPLIT; ++p) {
          weight[p] = pm[at + p * 16] == negInf ? 0.0f : tc_exp2(pm[at + p * 16] - top);
          l[r] += pl[at + p * 16] * weight[p];
        }
        #pragma unroll
        for (int d = 0; d < EV / 8; ++d) {
          float2 sum = make_float2(0.0f, 0.0f);
          #pragma unroll
          for (int p = 0; p < SPLIT; ++p) {
            const float2 x = *reinterpret_cast<const float2 *>(po + (at + p * 16) * EV + d * 8 + 2 * t);
            sum.x += x.x * weight[p];
            sum.y += x.y * weight[p];
          }
          o[d][2 * r] = sum.x;
          o[d][2 * r + 1] = sum.y;
        }
      }
    }
  }
  // out = O / l, two elements per 32-bit store.
  if (part == 0) {
    #pragma unroll
    for (int r = 0; r < 2; ++r) {
      const long long orow = row + r * 8;
      // SAFE (torch's safe softmax): a row whose softmax is undefined (l is 0 or NaN) gives 0.
      const bool zero = SAFE && !(l[r] > 0.0f);
      if (orow < L) {
        #pragma unroll
        for (int d = 0; d < EV / 8; ++d)
          *reinterpret_cast<unsigned *>(out + orow * ldo + d * 8 + 2 * t) =
              tc_pack2<BF16>(zero ? 0.0f : o[d][2 * r] / l[r], zero ? 0.0f : o[d][2 * r + 1] / l[r]);
      }
    }
  }
  if constexpr (SPLIT > 1)
    __syncthreads(); // a block's next rows reuse the buffers: part 0 is done reading the parts
}
)";
  return text;
}

bool simtAttentionFits(const loop::LoopProgram &program, const loop::LoopNode &node) {
  const loop::LoopNode::Attention &a = node.attention;
  for (int buffer : {a.q.buffer, a.k.buffer, a.v.buffer, node.output})
    if (program.buffers[size_t(buffer)].dtype != DType::F32)
      return false;
  return simtAttentionShape(DType::F32, SymInt(a.e), SymInt(a.ev));
}

const std::string &simtAttentionLibrary() {
  // Per block: ROWS (16 or 32) query rows of one batch entry, threads as ROWS / RPT x 16 (ty, tx);
  // a thread holds rows RPT ty .. RPT ty + RPT - 1 of the scores for keys tx and tx + 16 of a
  // 32-key tile, and of the output the same rows x columns tx * EV / 16 .. + EV / 16 - 1. Q (scaled by scale * log2 e)
  // stays in shared memory; per key tile K and V come in (float4 copies, rows past S zero), the
  // scores go to log2 units with the mask, a row's 16 threads (half a warp) agree on its max with
  // shuffles, the output and the running sum are rescaled by 2^(m_old - m_new), P goes through
  // shared memory, and O += P . V. Rows are padded by 4 floats: the 16 keys (or rows) a phase
  // reads as float4s fall on distinct banks.
  static const std::string text = R"(// Flash attention in strict f32 on CUDA cores
#define TC_FA32_KEYS 32
// Rows [r0, r0 + ROWS) of a dense n x D f32 matrix (rows ld apart, 16-byte aligned) into shared
// rows of D + 4 floats, scaled by `scale`, by THREADS threads; rows past n are zero.
template <int D, int ROWS, int THREADS>
TC_DEVICE void tc_fa32_load(float *dst, const float *__restrict__ src, long long ld, long long r0, long long n,
                            float scale) {
  constexpr int CHUNKS = D / 4;
  #pragma unroll
  for (int i = 0; i < (ROWS * CHUNKS + THREADS - 1) / THREADS; ++i) {
    const int c = i * THREADS + threadIdx.x, r = c / CHUNKS, col = (c % CHUNKS) * 4;
    if ((ROWS * CHUNKS) % THREADS == 0 || r < ROWS) {
      float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (r0 + r < n) {
        x = *reinterpret_cast<const float4 *>(src + (r0 + r) * ld + col);
        x.x *= scale, x.y *= scale, x.z *= scale, x.w *= scale;
      }
      *reinterpret_cast<float4 *>(dst + r * (D + 4) + col) = x;
    }
  }
}

// Rows [row0, row0 + ROWS) of out = softmax(q . k^T * scale [+ mask]) . v for one batch entry, as
// tc_flash_attention but f32 throughout (E % 4 == 0, EV % 16 == 0, both at most 64; rows ld
// elements apart, multiples of 4 with 16-byte aligned bases). MASK: 0 none, 1 additive f32, 2 bool.
// A thread holds RPT rows; the block is ROWS / RPT x 16 threads.
template <int E, int EV, int MASK, bool SAFE, int ROWS, int RPT>
TC_DEVICE void tc_flash_attention_f32(const float *__restrict__ q, long long ldq, const float *__restrict__ k,
                                      long long ldk, const float *__restrict__ v, long long ldv,
                                      float *__restrict__ out, long long ldo, const void *__restrict__ mask,
                                      long long maskRow, long long maskCol, long long L, long long S,
                                      long long row0, float scaleLog2, float *smem) {
  static_assert(E % 4 == 0 && EV % 16 == 0 && E <= 64 && EV <= 64, "head dims of the f32 kernel");
  constexpr int QS = E + 4, VS = EV + 4, PS = TC_FA32_KEYS + 4, DPT = EV / 16, THREADS = ROWS / RPT * 16;
  float *Qs = smem, *Ks = Qs + ROWS * QS, *Vs = Ks + TC_FA32_KEYS * QS, *Ps = Vs + TC_FA32_KEYS * VS;
  const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
  const float negInf = __int_as_float((int)0xff800000u);
  const float log2e = 1.4426950408889634f;
  tc_fa32_load<E, ROWS, THREADS>(Qs, q, ldq, row0, L, scaleLog2);
  float o[RPT][DPT];
  #pragma unroll
  for (int i = 0; i < RPT; ++i)
    #pragma unroll
    for (int d = 0; d < DPT; ++d)
      o[i][d] = 0.0f;
  // Running max (log2 units) and this thread's part of the running sum, per row.
  float m[RPT], l[RPT];
  #pragma unroll
  for (int i = 0; i < RPT; ++i)
    m[i] = negInf, l[i] = 0.0f;
  for (long long key0 = 0; key0 < S; key0 += TC_FA32_KEYS) {
    __syncthreads(); // every thread is done with the last tile's K, V and P
    tc_fa32_load<E, TC_FA32_KEYS, THREADS>(Ks, k, ldk, key0, S, 1.0f);
    tc_fa32_load<EV, TC_FA32_KEYS, THREADS>(Vs, v, ldv, key0, S, 1.0f);
    __syncthreads();
    float s[RPT][2];
    #pragma unroll
    for (int i = 0; i < RPT; ++i)
      s[i][0] = s[i][1] = 0.0f;
    #pragma unroll 4
    for (int d = 0; d < E; d += 4) {
      float4 qv[RPT], kv[2];
      #pragma unroll
      for (int i = 0; i < RPT; ++i)
        qv[i] = *reinterpret_cast<const float4 *>(Qs + (ty * RPT + i) * QS + d);
      #pragma unroll
      for (int j = 0; j < 2; ++j)
        kv[j] = *reinterpret_cast<const float4 *>(Ks + (tx + 16 * j) * QS + d);
      #pragma unroll
      for (int i = 0; i < RPT; ++i)
        #pragma unroll
        for (int j = 0; j < 2; ++j) {
          s[i][j] = fmaf(qv[i].x, kv[j].x, s[i][j]);
          s[i][j] = fmaf(qv[i].y, kv[j].y, s[i][j]);
          s[i][j] = fmaf(qv[i].z, kv[j].z, s[i][j]);
          s[i][j] = fmaf(qv[i].w, kv[j].w, s[i][j]);
        }
    }
    // Scores in log2 units, the online softmax per row (its 16 threads agree on the max). While
    // every score so far is -inf the exponent base is 0, so those keys weigh 0 (not NaN); a row
    // that stays so ends as 0 / 0 = NaN, as the unfused softmax gives.
    #pragma unroll
    for (int i = 0; i < RPT; ++i) {
      const long long row = row0 + ty * RPT + i;
      float tileMax = negInf;
      #pragma unroll
      for (int j = 0; j < 2; ++j) {
        const long long key = key0 + tx + 16 * j;
        float x = s[i][j];
        if (MASK != 0 && key < S && row < L) {
          const long long at = row * maskRow + key * maskCol;
          if (MASK == 1)
            x += log2e * static_cast<const float *>(mask)[at];
          else if (!static_cast<const unsigned char *>(mask)[at])
            x = negInf;
        }
        x = key < S ? x : negInf;
        s[i][j] = x;
        tileMax = fmaxf(tileMax, x);
      }
      #pragma unroll
      for (int w = 8; w > 0; w >>= 1)
        tileMax = fmaxf(tileMax, __shfl_xor_sync(0xffffffffu, tileMax, w));
      const float next = fmaxf(m[i], tileMax);
      const float base = next == negInf ? 0.0f : next;
      const float alpha = exp2f(m[i] - base); // 0 while m was -inf, 1 when unchanged
      m[i] = next;
      l[i] *= alpha;
      #pragma unroll
      for (int d = 0; d < DPT; ++d)
        o[i][d] *= alpha;
      #pragma unroll
      for (int j = 0; j < 2; ++j) {
        const float p = exp2f(s[i][j] - base);
        l[i] += p;
        Ps[(ty * RPT + i) * PS + tx + 16 * j] = p;
      }
    }
    __syncthreads(); // P is in
    #pragma unroll 2
    for (int c = 0; c < TC_FA32_KEYS; c += 4) {
      float4 pv[RPT];
      #pragma unroll
      for (int i = 0; i < RPT; ++i)
        pv[i] = *reinterpret_cast<const float4 *>(Ps + (ty * RPT + i) * PS + c);
      #pragma unroll
      for (int cc = 0; cc < 4; ++cc) {
        float vv[DPT];
        #pragma unroll
        for (int d = 0; d < DPT; ++d)
          vv[d] = Vs[(c + cc) * VS + tx * DPT + d];
        #pragma unroll
        for (int i = 0; i < RPT; ++i) {
          const float p = cc == 0 ? pv[i].x : cc == 1 ? pv[i].y : cc == 2 ? pv[i].z : pv[i].w;
          #pragma unroll
          for (int d = 0; d < DPT; ++d)
            o[i][d] = fmaf(p, vv[d], o[i][d]);
        }
      }
    }
  }
  // out = O / l.
  #pragma unroll
  for (int i = 0; i < RPT; ++i) {
    #pragma unroll
    for (int w = 8; w > 0; w >>= 1)
      l[i] += __shfl_xor_sync(0xffffffffu, l[i], w);
    const long long row = row0 + ty * RPT + i;
    // SAFE (torch's safe softmax): a row whose softmax is undefined (l is 0 or NaN) gives 0.
    const bool zero = SAFE && !(l[i] > 0.0f);
    if (row < L) {
      #pragma unroll
      for (int d = 0; d < DPT; ++d)
        out[row * ldo + tx * DPT + d] = zero ? 0.0f : o[i][d] / l[i];
    }
  }
}
)";
  return text;
}

} // namespace tensorc::cuda
