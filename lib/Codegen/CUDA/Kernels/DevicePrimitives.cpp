// Device text every library kernel uses: the inline-PTX primitives (cp.async with zero fill,
// ldmatrix, mma.sync for f16/bf16/TF32, TF32 rounding; on Hopper mbarriers, TMA, wgmma, clusters),
// storage-type traits, the swizzled shared-memory layout and the operand loaders (dense matrices
// and NHWC convolution patches).
#include "LibrarySources.h"

namespace tensorc::cuda::kernels::detail {

const char *devicePrimitives() {
  // The swizzle: a tile is rows of CPR 16-byte chunks. Rows of 128 bytes or more XOR the low
  // three bits of the chunk index with the row (mod 8); shorter rows are grouped into 128-byte
  // lines, and the chunk's position in its line is XORed with the line (mod 8). Either way the
  // eight 16-byte row reads of one ldmatrix matrix (eight consecutive rows, or eight k rows of
  // a transposed tile, starting at a multiple of 8) hit eight different groups of four banks,
  // and each 128-byte line is a permutation of itself, so 16-byte copies into it don't conflict
  // either. Both forms satisfy tk_swz(row, c ^ x) == tk_swz(row, c) ^ (x << 4) for x below CPR
  // that keeps c within its row's aligned group, which the fragment loops use to step along K
  // with one XOR.
  return R"(// ---- tensorc kernel library (tk_) ----
#ifndef TC_DEVICE
#define TC_DEVICE __device__ __forceinline__
#endif
// ---- inline PTX (test/e2e/cuda_emu.h emulates what lies between these lines) ----
#define TK_DYNAMIC_SMEM(name) extern __shared__ __align__(128) unsigned char name[]
TC_DEVICE unsigned tk_smem_u32(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
// 16 bytes global -> shared, asynchronously; only the first `bytes` (0..16) are read, the rest
// of the destination is zero-filled.
TC_DEVICE void tk_cp_async16(unsigned dst, const void *src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(dst), "l"(src), "r"(bytes) : "memory");
}
TC_DEVICE void tk_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> TC_DEVICE void tk_cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory"); }
TC_DEVICE void tk_ldsm4(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
TC_DEVICE void tk_ldsm4_t(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
// d += a . b. KIND 0: f16 m16n8k16, 1: bf16 m16n8k16, 2: tf32 m16n8k8 (operands already rounded).
template <int KIND> TC_DEVICE void tk_mma(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  if (KIND == 0)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else if (KIND == 1)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// f32 bits -> TF32 bits, rounded to nearest with ties away from zero (torch's and cuBLAS's TF32).
TC_DEVICE unsigned tk_tf32(unsigned x) { unsigned r; asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(__uint_as_float(x))); return r; }
// Split-K's count-in: an atomic increment with release (this block's partials, stored before
// the barrier that precedes it, become visible) and acquire (the other parts' partials are
// visible to the block that counts last) at GPU scope: lighter than __threadfence's fence.sc.
TC_DEVICE unsigned tk_count_in(unsigned *counter) {
  unsigned before;
  asm volatile("atom.add.acq_rel.gpu.global.u32 %0, [%1], 1;\n" : "=r"(before) : "l"(counter) : "memory");
  return before;
}
TC_DEVICE float tk_h2f(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;\n" : "=f"(f) : "h"(h)); return f; }
TC_DEVICE unsigned short tk_f2h(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;\n" : "=h"(h) : "f"(f)); return h; }
// ---- end of inline PTX ----
TC_DEVICE float tk_bf2f(unsigned short h) { return __uint_as_float(((unsigned)h) << 16); }
TC_DEVICE unsigned short tk_f2bf(float f) {
  unsigned u = __float_as_uint(f);
  if (f != f) return (unsigned short)((u >> 16) | 0x40u);
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
TC_DEVICE long long tk_min(long long a, long long b) { return a < b ? a : b; }

// Storage types: 0 f16, 1 bf16, 2 f32.
template <int TYPE> struct TkType {
  using T = unsigned short;
  static TC_DEVICE float widen(T v) { return TYPE == 1 ? tk_bf2f(v) : tk_h2f(v); }
};
template <> struct TkType<2> {
  using T = float;
  static TC_DEVICE float widen(float v) { return v; }
};

// Byte offset of 16-byte chunk `chunk` of row `row` in a swizzled tile of CPR chunks per row
// (see DevicePrimitives.cpp for why it is conflict-free).
template <int CPR> TC_DEVICE int tk_swz(int row, int chunk) {
  if (CPR >= 8)
    return row * (CPR * 16) + ((chunk ^ (row & 7)) << 4);
  const int l = row * CPR + chunk;
  return ((l & ~7) | ((l ^ (l >> 3)) & 7)) << 4;
}

// V elements as one aligned vector (16 bytes for the loaders' V), so one load moves them.
template <class T, int V> struct alignas(sizeof(T) * V) TkVec { T v[V]; };

// A dense operand: element (r, k) of batch entry b at base[b * batchStride + r * ld + k]
// (K_MAJOR, K contiguous) or base[b * batchStride + k * ld + r]. A "line" is one row of the
// shared-memory tile: an r (K_MAJOR) or a k; its contiguous dim runs to `extent`.
template <class T, bool K_MAJOR, bool VECTOR> struct TkMatrix {
  static constexpr bool kMajor = K_MAJOR, vector = VECTOR;
  const T *base;
  long long ld, batchStride, rows, depth; // rows: M (A) or N (B); depth: K
  struct Line {
    const T *p;
    long long extent;
    bool valid;
  };
  TC_DEVICE Line line(long long batch, long long index) const {
    Line l;
    l.valid = index < (K_MAJOR ? rows : depth);
    l.p = base + batch * batchStride + (l.valid ? index : 0) * ld;
    l.extent = K_MAJOR ? depth : rows;
    return l;
  }
  // The 16 bytes from element `at` of the line into shared memory, zero past its end.
  TC_DEVICE void copy(const Line &l, long long at, unsigned dst) const {
    long long left = l.valid ? (l.extent - at) * (long long)sizeof(T) : 0;
    const int bytes = left <= 0 ? 0 : left >= 16 ? 16 : (int)left;
    tk_cp_async16(dst, bytes ? (const void *)(l.p + at) : (const void *)base, bytes);
  }
  // V elements from `at` into registers, zero past the end.
  template <int V> TC_DEVICE void load(const Line &l, long long at, T (&v)[V]) const {
    if (VECTOR && l.valid && at + V <= l.extent) {
      const TkVec<T, V> x = *reinterpret_cast<const TkVec<T, V> *>(l.p + at);
      #pragma unroll
      for (int e = 0; e < V; ++e)
        v[e] = x.v[e];
      return;
    }
    #pragma unroll
    for (int e = 0; e < V; ++e)
      v[e] = (l.valid && at + e < l.extent) ? l.p[at + e] : (T)0;
  }
};

// Patches of an NHWC input for an implicit-GEMM convolution: GEMM row m is output pixel
// (n, oh, ow), column k is (kh, kw, c) with c innermost within the group's CG channels; the
// batch index is the group. Lines are GEMM rows (the tile is K-major). With VECTOR, CG is a
// multiple of the 16-byte vector, so a vector never straddles two taps.
template <class T, int KH, int KW, int CG, int SH, int SW, int DH, int DW, bool VECTOR>
struct TkConvInput {
  static constexpr bool kMajor = true, vector = VECTOR;
  const T *input;
  long long pixels; // N * OH * OW
  int h, w, c, oh, ow, padH, padW;
  struct Line {
    const T *image; // this pixel's image, at the group's first channel
    int ih0, iw0;
    bool valid;
  };
  TC_DEVICE Line line(long long group, long long m) const {
    Line l;
    l.valid = m < pixels;
    const long long mm = l.valid ? m : 0;
    const long long n = mm / ((long long)oh * ow);
    const int rest = (int)(mm - n * oh * ow), y = rest / ow, x = rest - y * ow;
    l.image = input + n * h * w * c + group * CG;
    l.ih0 = y * SH - padH;
    l.iw0 = x * SW - padW;
    return l;
  }
  // Where element k of the line lives, or null in the padding and past K.
  TC_DEVICE const T *at(const Line &l, long long k) const {
    const int kk = (int)k, tap = kk / CG, ch = kk - tap * CG, r = tap / KW, s = tap - r * KW;
    const int ih = l.ih0 + r * DH, iw = l.iw0 + s * DW;
    const bool ok = l.valid && tap < KH * KW && (unsigned)ih < (unsigned)h && (unsigned)iw < (unsigned)w;
    return ok ? l.image + ((long long)ih * w + iw) * c + ch : nullptr;
  }
  TC_DEVICE void copy(const Line &l, long long k, unsigned dst) const {
    const T *p = at(l, k);
    tk_cp_async16(dst, p ? (const void *)p : (const void *)input, p ? 16 : 0);
  }
  template <int V> TC_DEVICE void load(const Line &l, long long k, T (&v)[V]) const {
    if (VECTOR) {
      const T *p = at(l, k);
      if (p) {
        const TkVec<T, V> x = *reinterpret_cast<const TkVec<T, V> *>(p);
        #pragma unroll
        for (int e = 0; e < V; ++e)
          v[e] = x.v[e];
      } else {
        #pragma unroll
        for (int e = 0; e < V; ++e)
          v[e] = (T)0;
      }
      return;
    }
    #pragma unroll
    for (int e = 0; e < V; ++e) {
      const T *p = at(l, k + e);
      v[e] = p ? *p : (T)0;
    }
  }
};

// Tile rasterization: tiles are visited in column-major groups of 8 tile rows, so blocks that
// run together share A rows and B columns in L2.
TC_DEVICE void tk_raster(long long t, long long tilesM, long long tilesN, long long &tm, long long &tn) {
  const long long inGroup = 8 * tilesN, first = (t / inGroup) * 8;
  const long long size = tk_min(tilesM - first, 8);
  tm = first + (t % inGroup) % size;
  tn = (t % inGroup) / size;
}
// The same in 32 bits (a 64-bit division is a subroutine of ~70 instructions; the Hopper kernel's
// producer runs this before its first copy).
TC_DEVICE void tk_raster(unsigned t, unsigned tilesM, unsigned tilesN, unsigned &tm, unsigned &tn) {
  const unsigned inGroup = 8u * tilesN, first = (t / inGroup) * 8u, rest = t % inGroup;
  const unsigned size = tilesM - first < 8u ? tilesM - first : 8u;
  tm = first + rest % size;
  tn = rest / size;
}
// A persistent GEMM's work: each of batches x tilesM x tilesN output tiles is cut into SPLITK
// ranges of K slices; unit u is split u % SPLITK of tile u / SPLITK (tiles in raster order).
struct TkGemmUnit {
  int split;
  long long tileId, batch, m0, n0, kbeg, kend;
};
template <int BM, int BN, int BK, int SPLITK> struct TkGemmUnits {
  long long tilesM, tilesN, tiles, KT, count;
  TC_DEVICE TkGemmUnits(long long M, long long N, long long K, long long batches)
      : tilesM((M + BM - 1) / BM), tilesN((N + BN - 1) / BN), tiles(tilesM * tilesN),
        KT((K + BK - 1) / BK), count(batches * tiles * SPLITK) {}
  TC_DEVICE TkGemmUnit at(long long unit) const {
    TkGemmUnit u;
    u.split = (int)(unit % SPLITK);
    u.tileId = unit / SPLITK;
    u.batch = u.tileId / tiles;
    long long tm, tn;
    tk_raster(u.tileId % tiles, tilesM, tilesN, tm, tn);
    u.m0 = tm * BM;
    u.n0 = tn * BN;
    u.kbeg = KT * u.split / SPLITK;
    u.kend = KT * (u.split + 1) / SPLITK;
    return u;
  }
};
// The chunks of one operand's tile (R rows of the operand x BK of K, VEC elements a chunk) that a
// thread moves: chunk c (row c / CPR, chunk c % CPR) belongs to thread c % THREADS. A K-major
// operand's rows are fixed for a whole tile: begin() finds them once.
template <class L, int R, int BK, int VEC, int THREADS> struct TkTileChunks {
  static constexpr bool KM = L::kMajor;
  static constexpr int ROWS = KM ? R : BK, CPR = (KM ? BK : R) / VEC;
  static constexpr int CHUNKS = ROWS * CPR, P = (CHUNKS + THREADS - 1) / THREADS;
  typename L::Line lines[KM ? P : 1];
  TC_DEVICE static bool active(int tid, int p) { return CHUNKS % THREADS == 0 || tid + p * THREADS < CHUNKS; }
  TC_DEVICE void begin(const L &l, long long batch, long long r0, int tid) {
    if (KM) {
      #pragma unroll
      for (int p = 0; p < P; ++p)
        if (active(tid, p))
          lines[KM ? p : 0] = l.line(batch, r0 + (tid + p * THREADS) / CPR);
    }
  }
};
// Split-K through a global workspace: once the block's partials are stored, thread 0 counts this
// part in for its tile; true in the block of the last part to arrive, which sums every part and
// resets the counter for the next launch (its acquire and the barrier make the partials visible).
template <int SPLITK> TC_DEVICE bool tk_splitk_last(unsigned *counters, long long tileId) {
  __shared__ unsigned tk_last;
  __syncthreads(); // every thread's partials are stored; thread 0's release covers them
  if (threadIdx.x == 0) {
    const unsigned before = tk_count_in(&counters[tileId]);
    tk_last = before == SPLITK - 1;
    if (tk_last)
      counters[tileId] = 0; // every part has counted: ready for the next launch
  }
  __syncthreads();
  return tk_last;
}
// The outputs of a row's last, partial group: one copy of the single-output epilogue per kernel
// (a call, not inlined at every call site W times: the epilogue's copies were most of the
// compile time of a GEMM with a long epilogue), taking the values from its own array.
template <int W, class Epi1>
__device__ __noinline__ void tk_epilogue_tail(Epi1 &epi1, long long batch, long long row,
                                              long long col, long long N, const float *v) {
  #pragma unroll 1
  for (int e = 0; e < W; ++e)
    if (col + e < N)
      epi1(batch, row, col + e, v[e]);
}
// One row's W consecutive outputs from column `col` on: the vector epilogue when all are inside
// the N columns, else the single one for each that is.
template <int W, class EpiV, class Epi1>
TC_DEVICE void tk_epilogue_row(EpiV &epiV, Epi1 &epi1, long long batch, long long row, long long col,
                               long long N, const float *v) {
  if (col + W <= N) {
    epiV(batch, row, col, v);
  } else if (col < N) {
    float tail[W]; // a copy: the caller's registers stay registers
    #pragma unroll
    for (int e = 0; e < W; ++e)
      tail[e] = v[e];
    tk_epilogue_tail<W>(epi1, batch, row, col, N, tail);
  }
}
)";
}

const char *hopperPrimitives() {
  // sm_90 / sm_90a only; functions a kernel does not call are not compiled, so the text is
  // harmless in sm_80 modules. Addresses are shared-window (32-bit) addresses. mbarrier phases
  // are waited on by parity: a fresh barrier's "previous" phase (parity 1) counts as complete.
  // TK_WATCHDOG_MS (defined by benchmark builds) turns a barrier wait that has not completed
  // after that many milliseconds of the global timer into a trap instead of a hang (a count of
  // polls would not bound the time: a failed try_wait may sleep for a system-dependent limit).
  return R"(
// ---- Hopper: TMA tensor maps, mbarriers, wgmma, clusters ----
struct alignas(64) TkTensorMap { unsigned long long opaque[16]; };
// ---- inline PTX (test/e2e/cuda_emu.h emulates what lies between these lines) ----
TC_DEVICE void tk_mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(bar), "r"(count) : "memory");
}
TC_DEVICE void tk_fence_mbar_init() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }
// Arrives once and expects `bytes` more from the copies that complete on this barrier.
TC_DEVICE void tk_mbar_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" :: "r"(bar), "r"(bytes) : "memory");
}
TC_DEVICE void tk_mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" :: "r"(bar) : "memory");
}
// Arrives on the barrier at the same offset in cluster CTA `rank` (release at cluster scope).
TC_DEVICE void tk_mbar_arrive_cluster(unsigned bar, unsigned rank) {
  asm volatile("{\n.reg .b32 tk_r;\nmapa.shared::cluster.u32 tk_r, %0, %1;\n"
               "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [tk_r];\n}\n" :: "r"(bar), "r"(rank) : "memory");
}
TC_DEVICE bool tk_mbar_try(unsigned bar, unsigned parity) {
  unsigned done;
  asm volatile("{\n.reg .pred tk_p;\nmbarrier.try_wait.parity.shared::cta.b64 tk_p, [%1], %2;\nselp.u32 %0, 1, 0, tk_p;\n}\n"
               : "=r"(done) : "r"(bar), "r"(parity) : "memory");
  return done != 0;
}
// Acquire at cluster scope: what other CTAs of the cluster wrote before arriving is visible.
TC_DEVICE bool tk_mbar_try_cluster(unsigned bar, unsigned parity) {
  unsigned done;
  asm volatile("{\n.reg .pred tk_p;\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 tk_p, [%1], %2;\nselp.u32 %0, 1, 0, tk_p;\n}\n"
               : "=r"(done) : "r"(bar), "r"(parity) : "memory");
  return done != 0;
}
// A 3-D tile of `map` at element coordinates (c0 innermost) into shared memory at `dst`,
// completing its bytes on `bar`.
TC_DEVICE void tk_tma_load_3d(unsigned dst, const TkTensorMap *map, int c0, int c1, int c2, unsigned bar) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar) : "memory");
}
TC_DEVICE void tk_prefetch_tmap(const TkTensorMap *map) {
  asm volatile("prefetch.tensormap [%0];\n" :: "l"((unsigned long long)map) : "memory");
}
TC_DEVICE void tk_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
TC_DEVICE void tk_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> TC_DEVICE void tk_wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(N) : "memory"); }
template <int R> TC_DEVICE void tk_setmaxnreg_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" :: "n"(R)); }
template <int R> TC_DEVICE void tk_setmaxnreg_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" :: "n"(R)); }
// Named barrier `id` over `count` threads (whole warps).
TC_DEVICE void tk_bar_sync(int id, int count) { asm volatile("bar.sync %0, %1;\n" :: "r"(id), "r"(count) : "memory"); }
TC_DEVICE void tk_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
TC_DEVICE unsigned tk_cluster_rank() { unsigned r; asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r)); return r; }
// 16 bytes at shared address `addr` of cluster CTA `rank`.
TC_DEVICE float4 tk_ld_cluster_f4(unsigned addr, unsigned rank) {
  float4 v;
  asm volatile("{\n.reg .b32 tk_r;\nmapa.shared::cluster.u32 tk_r, %4, %5;\nld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [tk_r];\n}\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(addr), "r"(rank) : "memory");
  return v;
}
// Nanoseconds of the GPU's global timer.
TC_DEVICE unsigned long long tk_globaltimer() { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t)); return t; }
// ---- end of inline PTX ----
#ifndef TK_WATCHDOG_TRAP
#define TK_WATCHDOG_TRAP() __trap()
#endif
TC_DEVICE void tk_mbar_wait(unsigned bar, unsigned parity) {
#ifdef TK_WATCHDOG_MS
  if (tk_mbar_try(bar, parity)) return;
  const unsigned long long start = tk_globaltimer();
  while (!tk_mbar_try(bar, parity))
    if (tk_globaltimer() - start > TK_WATCHDOG_MS * 1000000ull) TK_WATCHDOG_TRAP();
#else
  while (!tk_mbar_try(bar, parity)) {}
#endif
}
TC_DEVICE void tk_mbar_wait_cluster(unsigned bar, unsigned parity) {
#ifdef TK_WATCHDOG_MS
  if (tk_mbar_try_cluster(bar, parity)) return;
  const unsigned long long start = tk_globaltimer();
  while (!tk_mbar_try_cluster(bar, parity))
    if (tk_globaltimer() - start > TK_WATCHDOG_MS * 1000000ull) TK_WATCHDOG_TRAP();
#else
  while (!tk_mbar_try_cluster(bar, parity)) {}
#endif
}
// wgmma shared-memory descriptor of a K-major tile in 128-byte swizzled rows (8-row atoms of
// 1024 bytes): start address, leading offset 16 (unused by this layout), stride 1024 between
// 8-row groups, swizzle mode 1 (128 bytes). A K step adds its byte offset to the start.
TC_DEVICE unsigned long long tk_wg_desc(unsigned addr) {
  return (unsigned long long)((addr & 0x3FFFFu) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}
// D (64 x N f32, the warpgroup's fragments) += A (64 x K step, descriptor) . B (N x K step).
// KIND 0 f16, 1 bf16 (k16), 2 TF32 (k8). The specializations a kernel uses come with it.
template <int N, int KIND> TC_DEVICE void tk_wgmma(float (&d)[N / 2], unsigned long long a, unsigned long long b);
)";
}

} // namespace tensorc::cuda::kernels::detail
