// A CPU emulation of the CUDA that generated kernels use, for test/e2e/check_cuda_emulated.py:
// each block's threads run as cooperative fibers (ucontext), so barriers, warp shuffles and the
// tensor-core primitives of the flash-attention kernel (ldmatrix, mma.sync m16n8k16, cp.async
// groups) can be modelled from their PTX definitions and checked against the interpreter without
// a GPU. cp.async copies are deferred to the issuing thread's wait_group, so a missing wait or
// barrier reads stale shared memory. Shared memory is a static array: build without PIE, so its
// addresses fit the 32-bit shared window the kernels use.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <ucontext.h>
#include <vector>

struct tc_emu_dim3 {
  unsigned x = 0, y = 0, z = 0;
};
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
// The other 4-wide vector types of pointwise kernels' vector stores, CUDA's sizes and alignment.
struct alignas(16) float4 {
  float x, y, z, w;
};
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
struct alignas(8) float2 {
  float x, y;
};
inline float2 make_float2(float x, float y) { return {x, y}; }
struct alignas(16) int4 {
  int x, y, z, w;
};
struct alignas(8) ushort4 {
  unsigned short x, y, z, w;
};
struct alignas(8) short4 {
  short x, y, z, w;
};
struct alignas(4) uchar4 {
  unsigned char x, y, z, w;
};
struct alignas(4) char4 {
  signed char x, y, z, w;
};
// CUDA math functions the host's <cmath> lacks.
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }

namespace tc_emu {

struct Copy {
  unsigned dst;
  const void *src;
  int bytes = 16; // read from src; the rest of the 16 destination bytes are zero-filled
};
struct Thread {
  ucontext_t context;
  std::unique_ptr<char[]> stack;
  bool done = false;
  unsigned tid = 0;                     // threadIdx.x
  int cta = 0;                          // rank of its block in the cluster
  std::vector<Copy> open;               // cp.async since the last commit
  std::deque<std::vector<Copy>> groups; // committed, oldest first
  unsigned long long collectives = 0;   // warp-collective operations so far
  // wgmma operations since the last commit, and committed groups (oldest first): each runs at
  // the wait_group that retires it, as the hardware may read shared memory until then.
  std::vector<std::function<void()>> wgOpen;
  std::deque<std::vector<std::function<void()>>> wgGroups;
};
// One warp-collective operation: every lane's inputs, then every lane's outputs (computed once,
// by the last lane to arrive). Two per warp, alternating: a lane reaches round k + 2 only after
// every lane reached k + 1, so no lane still reads round k.
struct Exchange {
  unsigned long long round = ~0ull;
  int arrived = 0;
  uint64_t in[32][8];
  uint64_t out[32][4];
};
// A barrier among some threads (a block's __syncthreads, a named barrier, a cluster barrier).
struct Barrier {
  unsigned arrived = 0;
  unsigned long long generation = 0;
};

inline ucontext_t scheduler;
inline std::vector<Thread> threads;
inline std::vector<Exchange> exchanges;
inline int current = -1;
inline unsigned long long progress = 0;
inline tc_emu_dim3 blockIdxValue, gridDimValue, blockDimValue;
inline std::function<void()> body;
// Blocks of a thread-block cluster (1-D, `clusterSize` consecutive blocks) run together, each
// with its own shared memory; other launches run one block at a time.
inline unsigned clusterSize = 1, clusterBase = 0;
// The order blocks (clusters) run in: 0 ascending, 1 descending, 2 a fixed shuffle. Blocks of
// one launch that meet through global memory (split-K's last-arriving block) must not depend
// on it.
inline int blockOrder = 0;
// Dynamic shared memory (TK_DYNAMIC_SMEM), one window per block of a cluster, poisoned with 0xff
// bytes (NaN in f16, bf16 and f32) before every block, so a read of shared memory nothing wrote
// shows in the result. Windows are 1024-byte aligned, as swizzled layouts assume.
constexpr size_t kSharedWindow = 256 * 1024;
constexpr unsigned kMaxCluster = 8;
// Aligned to a whole window: a wgmma descriptor's 18 address bits then find the byte in its
// block's window, as the hardware's shared addresses (under 256 KB) do.
alignas(kSharedWindow) inline unsigned char dynamicShared[kMaxCluster * kSharedWindow];
inline std::vector<Barrier> blockBarriers; // __syncthreads, per block of the cluster
inline std::vector<Barrier> namedBarriers; // bar.sync id, per block (16 ids each)
inline Barrier clusterBarrier;
// ldmatrix reads whose eight row addresses of one matrix share a bank (conflicts counted per
// matrix: 8 minus the distinct 16-byte bank groups hit).
inline unsigned long long ldmatrixConflicts = 0, ldmatrixReads = 0;
// cp.async copies land at issue (catches a buffer refilled while still read) or at the issuing
// thread's wait_group (catches a buffer read before its copy was waited for).
inline bool eagerCopies = false;
// Scheduling rounds give every warp a turn (warps stay in step), or, with a seeded generator,
// a random half of the warps (they drift apart, so a barrier missing between one warp's reads
// and another's writes shows).
inline bool randomSchedule = false;
inline uint64_t randomState = 0x9e3779b97f4a7c15ull;
inline bool coinFlip() {
  randomState ^= randomState << 13;
  randomState ^= randomState >> 7;
  randomState ^= randomState << 17;
  return randomState & 1;
}

inline Thread &self() { return threads[size_t(current)]; }
[[noreturn]] inline void fail(const char *what) {
  std::fprintf(stderr, "cuda_emu: %s (block %u, thread %d)\n", what,
               current >= 0 ? clusterBase + unsigned(self().cta) : blockIdxValue.x,
               current >= 0 ? int(self().tid) : -1);
  std::exit(3);
}
inline unsigned char *blockShared(int cta) { return dynamicShared + size_t(cta) * kSharedWindow; }
inline void yield() { swapcontext(&threads[size_t(current)].context, &scheduler); }
inline void entry() {
  body();
  threads[size_t(current)].done = true;
  ++progress;
  swapcontext(&threads[size_t(current)].context, &scheduler);
}
void resetAsyncState(); // mbarriers and wgmma groups (defined with them, below)

/// Runs `kernel` on grid x block threads, one block (or one cluster of `cluster` blocks) at a
/// time.
inline void launch(unsigned grid, unsigned block, std::function<void()> kernel,
                   unsigned cluster = 1) {
  constexpr size_t kStack = 256 * 1024;
  if (cluster < 1 || cluster > kMaxCluster || grid % cluster)
    fail("the grid is not a whole number of clusters of 1..8 blocks");
  gridDimValue = {grid, 1, 1};
  blockDimValue = {block, 1, 1};
  clusterSize = cluster;
  body = std::move(kernel);
  unsigned clusters = grid / cluster;
  for (unsigned i = 0; i < clusters; ++i) {
    unsigned c = blockOrder == 0   ? i
                 : blockOrder == 1 ? clusters - 1 - i
                                   : unsigned((i * 7919ull + 13) % clusters);
    if (blockOrder == 2 && clusters % 7919 == 0)
      c = i;
    clusterBase = c * cluster;
    blockIdxValue = {clusterBase, 0, 0};
    std::memset(dynamicShared, 0xff, cluster * kSharedWindow);
    resetAsyncState();
    threads = std::vector<Thread>(size_t(block) * cluster);
    exchanges = std::vector<Exchange>((threads.size() + 31) / 32 * 2);
    blockBarriers = std::vector<Barrier>(cluster);
    namedBarriers = std::vector<Barrier>(size_t(cluster) * 16);
    clusterBarrier = Barrier();
    for (size_t t = 0; t < threads.size(); ++t) {
      Thread &thread = threads[t];
      thread.tid = unsigned(t % block);
      thread.cta = int(t / block);
      thread.stack.reset(new char[kStack]);
      getcontext(&thread.context);
      thread.context.uc_stack.ss_sp = thread.stack.get();
      thread.context.uc_stack.ss_size = kStack;
      thread.context.uc_link = nullptr;
      makecontext(&thread.context, entry, 0);
    }
    for (unsigned long long round = 0;; ++round) {
      unsigned long long before = progress;
      bool all = true, full = !randomSchedule || round % 16 == 0;
      std::vector<bool> runs((threads.size() + 31) / 32, true);
      if (!full)
        for (size_t w = 0; w < runs.size(); ++w)
          runs[w] = coinFlip();
      for (size_t i = 0; i < threads.size(); ++i) {
        if (threads[i].done)
          continue;
        if (runs[i / 32]) {
          current = int(i);
          swapcontext(&scheduler, &threads[i].context);
        }
        all = all && threads[i].done;
      }
      current = -1;
      if (all)
        break;
      if (full && progress == before)
        fail("deadlock: every live thread waits (a barrier, collective or mbarrier that never "
             "completes)");
    }
  }
}

/// Waits at `barrier` until every live thread that `member` selects has arrived.
template <class Member> void barrierWait(Barrier &barrier, Member &&member) {
  unsigned long long generation = barrier.generation;
  ++progress;
  unsigned live = 0;
  for (const Thread &thread : threads)
    live += !thread.done && member(thread);
  if (++barrier.arrived == live) {
    barrier.arrived = 0;
    ++barrier.generation;
    return;
  }
  while (barrier.generation == generation)
    yield();
}

inline void syncthreads() {
  int cta = self().cta;
  barrierWait(blockBarriers[size_t(cta)], [&](const Thread &t) { return t.cta == cta; });
}

/// A warp-collective operation: deposits this lane's `in`, waits for the warp, and returns this
/// lane's outputs, which `compute(in, out)` derives for every lane at once.
template <class Compute> const uint64_t *collective(const uint64_t (&in)[8], Compute &&compute) {
  Thread &self = threads[size_t(current)];
  unsigned lane = unsigned(current) % 32, warp = unsigned(current) / 32;
  unsigned long long round = self.collectives++;
  Exchange &x = exchanges[warp * 2 + round % 2];
  if (x.round != round) {
    x.round = round;
    x.arrived = 0;
  }
  std::memcpy(x.in[lane], in, sizeof in);
  ++progress;
  if (++x.arrived == 32)
    compute(x.in, x.out);
  while (x.arrived < 32)
    yield();
  return x.out[lane];
}

inline uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float fromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float halfToFloat(uint16_t h) {
  _Float16 value;
  std::memcpy(&value, &h, 2);
  return float(value);
}
inline uint16_t floatToHalf(float f) { // round to nearest even
  _Float16 value = _Float16(f);
  uint16_t h;
  std::memcpy(&h, &value, 2);
  return h;
}
inline float bf16ToFloat(uint16_t h) { return fromBits(uint32_t(h) << 16); }
inline uint16_t floatToBf16(float f) { // round to nearest even
  uint32_t u = bits(f);
  if (f != f)
    return uint16_t((u >> 16) | 0x40u);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

} // namespace tc_emu

#define threadIdx (tc_emu_dim3{tc_emu::self().tid, 0, 0})
#define blockIdx (tc_emu_dim3{tc_emu::clusterBase + unsigned(tc_emu::self().cta), 0, 0})
#define gridDim (tc_emu::gridDimValue)
#define blockDim (tc_emu::blockDimValue)
#define __global__
#define __device__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __cluster_dims__(...)
#define __grid_constant__
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))

inline void __syncthreads() { tc_emu::syncthreads(); }
inline float __int_as_float(int i) { return tc_emu::fromBits(uint32_t(i)); }
inline float __uint_as_float(unsigned u) { return tc_emu::fromBits(u); }
inline unsigned __float_as_uint(float f) { return tc_emu::bits(f); }
inline int __float_as_int(float f) { return int(tc_emu::bits(f)); }
inline double __longlong_as_double(long long i) {
  double d;
  std::memcpy(&d, &i, 8);
  return d;
}
inline size_t __cvta_generic_to_shared(const void *p) {
  uintptr_t address = reinterpret_cast<uintptr_t>(p);
  if (address >> 32)
    tc_emu::fail("shared memory above 4 GiB: build the emulation without PIE");
  return size_t(address);
}

// Warp shuffles move 64-bit patterns.
template <class T> T tc_emu_shuffle(T value, int (*source)(int lane, int arg), int arg) {
  uint64_t in[8] = {};
  std::memcpy(in, &value, sizeof(T));
  const uint64_t *out =
      tc_emu::collective(in, [&](const uint64_t(&all)[32][8], uint64_t(&result)[32][4]) {
        for (int lane = 0; lane < 32; ++lane) {
          int from = source(lane, arg);
          result[lane][0] = all[from >= 0 && from < 32 ? from : lane][0];
        }
      });
  T result;
  std::memcpy(&result, out, sizeof(T));
  return result;
}
template <class T> T __shfl_xor_sync(unsigned, T value, int mask) {
  return tc_emu_shuffle(
      value, [](int lane, int m) { return lane ^ m; }, mask);
}
// Blocks run one at a time, so global atomics and fences need no more than this.
inline unsigned atomicAdd(unsigned *p, unsigned v) {
  unsigned old = *p;
  *p = old + v;
  return old;
}
inline void __threadfence() {}
inline float4 __ldcg(const float4 *p) { return *p; }

template <class T> T __shfl_down_sync(unsigned, T value, int delta) {
  return tc_emu_shuffle(
      value, [](int lane, int d) { return lane + d < 32 ? lane + d : lane; }, delta);
}

// ---- the flash-attention primitives, from their PTX definitions ----

inline unsigned tc_smem_address(const void *p) { return unsigned(__cvta_generic_to_shared(p)); }
inline void tc_cp_async16(unsigned dst, const void *src) {
  if (dst % 16 || reinterpret_cast<uintptr_t>(src) % 16)
    tc_emu::fail("cp.async of 16 bytes needs 16-byte aligned addresses");
  if (tc_emu::eagerCopies)
    std::memcpy(reinterpret_cast<void *>(uintptr_t(dst)), src, 16);
  else
    tc_emu::threads[size_t(tc_emu::current)].open.push_back({dst, src});
}
inline void tc_cp_async_commit() {
  tc_emu::Thread &self = tc_emu::threads[size_t(tc_emu::current)];
  self.groups.push_back(std::move(self.open));
  self.open.clear();
}
namespace tc_emu {
inline void land(const Copy &copy) {
  unsigned char *dst = reinterpret_cast<unsigned char *>(uintptr_t(copy.dst));
  std::memcpy(dst, copy.src, size_t(copy.bytes));
  std::memset(dst + copy.bytes, 0, size_t(16 - copy.bytes));
}
} // namespace tc_emu
template <int N> void tc_cp_async_wait() {
  tc_emu::Thread &self = tc_emu::threads[size_t(tc_emu::current)];
  while (self.groups.size() > size_t(N)) {
    for (const tc_emu::Copy &copy : self.groups.front())
      tc_emu::land(copy);
    self.groups.pop_front();
  }
}
// ldmatrix.x4: lanes 8m..8m+7 address the rows of matrix m; lane 4r + c receives, in register m,
// elements (r, 2c) and (r, 2c + 1) of matrix m (.trans: (2c, r) and (2c + 1, r)), low half first.
inline void tc_emu_ldmatrix(unsigned (&r)[4], unsigned p, bool trans) {
  if (p % 16)
    tc_emu::fail("ldmatrix row address not 16-byte aligned");
  uint64_t in[8] = {p};
  const uint64_t *out =
      tc_emu::collective(in, [&](const uint64_t(&all)[32][8], uint64_t(&result)[32][4]) {
        for (int m = 0; m < 4; ++m) {
          unsigned groups = 0;
          for (int row = 0; row < 8; ++row)
            groups |= 1u << ((all[8 * m + row][0] / 16) % 8);
          tc_emu::ldmatrixConflicts += 8 - unsigned(__builtin_popcount(groups));
          ++tc_emu::ldmatrixReads;
        }
        for (int lane = 0; lane < 32; ++lane)
          for (int m = 0; m < 4; ++m) {
            auto element = [&](int row, int col) {
              const uint16_t *rowData =
                  reinterpret_cast<const uint16_t *>(uintptr_t(all[8 * m + row][0]));
              return uint64_t(rowData[col]);
            };
            int a = lane / 4, c = lane % 4;
            uint64_t lo = trans ? element(2 * c, a) : element(a, 2 * c);
            uint64_t hi = trans ? element(2 * c + 1, a) : element(a, 2 * c + 1);
            result[lane][m] = lo | (hi << 16);
          }
      });
  for (int m = 0; m < 4; ++m)
    r[m] = unsigned(out[m]);
}
inline void tc_ldmatrix_x4(unsigned (&r)[4], unsigned p) { tc_emu_ldmatrix(r, p, false); }
inline void tc_ldmatrix_x4_trans(unsigned (&r)[4], unsigned p) { tc_emu_ldmatrix(r, p, true); }
// mma.m16n8k16 (lane = 4g + t): A registers a0..a3 hold (g, 2t..2t+1), (g + 8, 2t..),
// (g, 2t + 8..), (g + 8, 2t + 8..); B registers b0, b1 hold (k = 2t..2t+1, n = g) and
// (k = 2t + 8.., n = g); C/D element i is (g + 8 (i >> 1), 2t + (i & 1)).
template <bool BF16>
void tc_mma16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  uint64_t in[8] = {a[0],
                    a[1],
                    a[2],
                    a[3],
                    b0,
                    b1,
                    tc_emu::bits(d[0]) | uint64_t(tc_emu::bits(d[1])) << 32,
                    tc_emu::bits(d[2]) | uint64_t(tc_emu::bits(d[3])) << 32};
  const uint64_t *out =
      tc_emu::collective(in, [&](const uint64_t(&all)[32][8], uint64_t(&result)[32][4]) {
        auto widen = [](uint64_t h) {
          return BF16 ? tc_emu::bf16ToFloat(uint16_t(h)) : tc_emu::halfToFloat(uint16_t(h));
        };
        float A[16][16], B[16][8], C[16][8];
        for (int lane = 0; lane < 32; ++lane) {
          int g = lane / 4, t = lane % 4;
          for (int r = 0; r < 4; ++r) {
            int row = g + (r & 1) * 8, col = 2 * t + (r >> 1) * 8;
            A[row][col] = widen(all[lane][r] & 0xffff);
            A[row][col + 1] = widen((all[lane][r] >> 16) & 0xffff);
          }
          for (int r = 0; r < 2; ++r) {
            int k = 2 * t + r * 8;
            B[k][g] = widen(all[lane][4 + r] & 0xffff);
            B[k + 1][g] = widen((all[lane][4 + r] >> 16) & 0xffff);
          }
          for (int i = 0; i < 4; ++i)
            C[g + (i >> 1) * 8][2 * t + (i & 1)] =
                tc_emu::fromBits(uint32_t(all[lane][6 + i / 2] >> (32 * (i & 1))));
        }
        for (int lane = 0; lane < 32; ++lane) {
          int g = lane / 4, t = lane % 4;
          for (int i = 0; i < 4; ++i) {
            int row = g + (i >> 1) * 8, col = 2 * t + (i & 1);
            double sum = C[row][col];
            for (int k = 0; k < 16; ++k)
              sum += double(A[row][k]) * double(B[k][col]);
            result[lane][i] = tc_emu::bits(float(sum));
          }
        }
      });
  for (int i = 0; i < 4; ++i)
    d[i] = tc_emu::fromBits(uint32_t(out[i]));
}
template <bool BF16> unsigned tc_pack2(float lo, float hi) {
  uint16_t l = BF16 ? tc_emu::floatToBf16(lo) : tc_emu::floatToHalf(lo);
  uint16_t h = BF16 ? tc_emu::floatToBf16(hi) : tc_emu::floatToHalf(hi);
  return unsigned(l) | unsigned(h) << 16;
}
inline float tc_exp2(float x) { return std::exp2(x); }

// ---- the prelude's inline-PTX conversions ----
#define TC_EMU_PRELUDE_CONVERSIONS
inline float tc_h2f(unsigned short h) { return tc_emu::halfToFloat(h); }
inline unsigned short tc_f2h(float f) { return tc_emu::floatToHalf(f); }

// ---- the kernel library's primitives (lib/Codegen/CUDA/Kernels), from their PTX definitions ----
#define TK_DYNAMIC_SMEM(name) unsigned char *name = tc_emu::blockShared(tc_emu::self().cta)
inline unsigned tk_smem_u32(const void *p) { return tc_smem_address(p); }
// cp.async.cg.shared.global [dst], [src], 16, bytes: reads `bytes` (0..16), zero-fills the rest.
inline void tk_cp_async16(unsigned dst, const void *src, int bytes) {
  if (dst % 16 || reinterpret_cast<uintptr_t>(src) % 16)
    tc_emu::fail("cp.async of 16 bytes needs 16-byte aligned addresses");
  if (bytes < 0 || bytes > 16)
    tc_emu::fail("cp.async src-size outside 0..16");
  tc_emu::Copy copy{dst, src, bytes};
  if (tc_emu::eagerCopies)
    tc_emu::land(copy);
  else
    tc_emu::threads[size_t(tc_emu::current)].open.push_back(copy);
}
inline void tk_cp_async_commit() { tc_cp_async_commit(); }
template <int N> void tk_cp_async_wait() { tc_cp_async_wait<N>(); }
inline void tk_ldsm4(unsigned (&r)[4], unsigned addr) { tc_emu_ldmatrix(r, addr, false); }
inline void tk_ldsm4_t(unsigned (&r)[4], unsigned addr) { tc_emu_ldmatrix(r, addr, true); }
// cvt.rna.tf32.f32: round to nearest, ties away from zero, to 10 mantissa bits (the low 13 bits
// of the result are zero); infinities stay, NaN stays NaN.
inline unsigned tk_tf32(unsigned x) {
  if ((x & 0x7f800000u) == 0x7f800000u)
    return (x & 0x007fffffu) ? 0x7fffe000u : x;
  return (x + 0x1000u) & 0xffffe000u;
}
// mma.m16n8k8 with .tf32 operands (lane = 4g + t): A registers a0..a3 hold (g, t), (g + 8, t),
// (g, t + 4), (g + 8, t + 4); B registers b0, b1 hold (k = t, n = g), (k = t + 4, n = g); C/D as
// m16n8k16. An operand is its register read as TF32: the low 13 bits do not take part.
inline void tk_emu_mma_tf32(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  uint64_t in[8] = {a[0],
                    a[1],
                    a[2],
                    a[3],
                    b0,
                    b1,
                    tc_emu::bits(d[0]) | uint64_t(tc_emu::bits(d[1])) << 32,
                    tc_emu::bits(d[2]) | uint64_t(tc_emu::bits(d[3])) << 32};
  const uint64_t *out =
      tc_emu::collective(in, [&](const uint64_t(&all)[32][8], uint64_t(&result)[32][4]) {
        auto tf32 = [](uint64_t r) { return tc_emu::fromBits(uint32_t(r) & 0xffffe000u); };
        float A[16][8], B[8][8], C[16][8];
        for (int lane = 0; lane < 32; ++lane) {
          int g = lane / 4, t = lane % 4;
          for (int r = 0; r < 4; ++r)
            A[g + (r & 1) * 8][t + (r >> 1) * 4] = tf32(all[lane][r]);
          B[t][g] = tf32(all[lane][4]);
          B[t + 4][g] = tf32(all[lane][5]);
          for (int i = 0; i < 4; ++i)
            C[g + (i >> 1) * 8][2 * t + (i & 1)] =
                tc_emu::fromBits(uint32_t(all[lane][6 + i / 2] >> (32 * (i & 1))));
        }
        for (int lane = 0; lane < 32; ++lane) {
          int g = lane / 4, t = lane % 4;
          for (int i = 0; i < 4; ++i) {
            int row = g + (i >> 1) * 8, col = 2 * t + (i & 1);
            double sum = C[row][col];
            for (int k = 0; k < 8; ++k)
              sum += double(A[row][k]) * double(B[k][col]);
            result[lane][i] = tc_emu::bits(float(sum));
          }
        }
      });
  for (int i = 0; i < 4; ++i)
    d[i] = tc_emu::fromBits(uint32_t(out[i]));
}
template <int KIND> void tk_mma(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  if (KIND == 2)
    tk_emu_mma_tf32(d, a, b0, b1);
  else
    tc_mma16816<KIND == 1>(d, a, b0, b1);
}
inline float tk_h2f(unsigned short h) { return tc_emu::halfToFloat(h); }
inline unsigned short tk_f2h(float f) { return tc_emu::floatToHalf(f); }

// ---- Hopper (test/e2e/cuda_emu.h models the PTX of lib/Codegen/CUDA/Kernels' Hopper primitives)
// ----
namespace tc_emu {
// An mbarrier: a phase completes when `pending` arrivals and `tx` bytes have come in; then the
// next phase starts with `count` arrivals pending. try_wait.parity(P) succeeds once the phase of
// parity P has completed: the current (incomplete) phase's parity differs from P.
struct MBarrier {
  unsigned count = 0, pending = 0;
  long long tx = 0;
  unsigned long long completed = 0;
  bool initialized = false;
};
inline std::map<unsigned, MBarrier> mbarriers;
inline void resetAsyncState() { mbarriers.clear(); }
inline MBarrier &mbarrier(unsigned addr) {
  auto found = mbarriers.find(addr);
  if (found == mbarriers.end() || !found->second.initialized)
    fail("mbarrier used before mbarrier.init");
  return found->second;
}
inline void mbarrierSettle(MBarrier &b) {
  if (b.pending == 0 && b.tx == 0) {
    ++b.completed;
    b.pending = b.count;
  }
}
inline void mbarrierArrive(unsigned addr) {
  MBarrier &b = mbarrier(addr);
  if (b.pending == 0)
    fail("mbarrier arrival beyond its expected count");
  --b.pending;
  ++progress;
  mbarrierSettle(b);
}
inline void mbarrierTransfer(unsigned addr, long long bytes) {
  MBarrier &b = mbarrier(addr);
  b.tx -= bytes;
  ++progress;
  mbarrierSettle(b);
}
/// The address `addr` (in the calling block's shared window) in block `rank`'s window (mapa).
inline unsigned clusterAddress(unsigned addr, unsigned rank) {
  uintptr_t mine = reinterpret_cast<uintptr_t>(blockShared(self().cta));
  if (rank >= clusterSize)
    fail("mapa to a block outside the cluster");
  if (addr < mine || addr >= mine + kSharedWindow)
    fail("mapa of an address outside the block's shared memory");
  return unsigned(reinterpret_cast<uintptr_t>(blockShared(int(rank))) + (addr - mine));
}
// The 128-byte swizzle of TMA and wgmma: address bits [6:4] (the 16-byte chunk) XOR bits [9:7].
inline uintptr_t swizzle128(uintptr_t addr) { return addr ^ (((addr >> 7) & 7) << 4); }
inline float tf32Round(float f) { // cvt.rna.tf32.f32
  uint32_t u = bits(f);
  if ((u & 0x7f800000u) == 0x7f800000u)
    return f;
  return fromBits((u + 0x1000u) & 0xffffe000u);
}
} // namespace tc_emu

inline void tk_mbar_init(unsigned bar, unsigned count) {
  tc_emu::MBarrier &b = tc_emu::mbarriers[bar];
  b = tc_emu::MBarrier();
  b.count = b.pending = count;
  b.initialized = true;
}
inline void tk_fence_mbar_init() {}
inline void tk_mbar_expect_tx(unsigned bar, unsigned bytes) {
  tc_emu::mbarrier(bar).tx += bytes;
  tc_emu::mbarrierArrive(bar);
}
inline void tk_mbar_arrive(unsigned bar) { tc_emu::mbarrierArrive(bar); }
inline void tk_mbar_arrive_cluster(unsigned bar, unsigned rank) {
  tc_emu::mbarrierArrive(tc_emu::clusterAddress(bar, rank));
}
inline bool tk_mbar_try(unsigned bar, unsigned parity) {
  if ((tc_emu::mbarrier(bar).completed & 1) != parity)
    return true;
  tc_emu::yield();
  return false;
}
inline bool tk_mbar_try_cluster(unsigned bar, unsigned parity) { return tk_mbar_try(bar, parity); }
// The emulation's tensor map (the 16 words of TkTensorMap): base address, dims[3], strides[2]
// (bytes), box[3], element bytes. The copy lands at issue, 128-byte swizzled, zero outside the
// tensor, and completes the whole box's bytes on the barrier.
template <class Map>
void tk_tma_load_3d(unsigned dst, const Map *map, int c0, int c1, int c2, unsigned bar) {
  const unsigned long long *w = map->opaque;
  const unsigned char *base = reinterpret_cast<const unsigned char *>(uintptr_t(w[0]));
  long long dims[3] = {(long long)w[1], (long long)w[2], (long long)w[3]};
  unsigned long long strides[2] = {w[4], w[5]}, box[3] = {w[6], w[7], w[8]}, e = w[9];
  if (dst % 1024)
    tc_emu::fail("a 128-byte swizzled TMA destination must be 1024-byte aligned");
  if (box[0] * e != 128)
    tc_emu::fail("the emulation models TMA boxes of 128-byte rows");
  for (unsigned long long z = 0; z < box[2]; ++z)
    for (unsigned long long y = 0; y < box[1]; ++y)
      for (unsigned long long x = 0; x < box[0]; ++x) {
        long long cx = c0 + (long long)x, cy = c1 + (long long)y, cz = c2 + (long long)z;
        uintptr_t to = tc_emu::swizzle128(uintptr_t(dst) + ((z * box[1] + y) * box[0] + x) * e);
        unsigned char *out = reinterpret_cast<unsigned char *>(to);
        if (cx < 0 || cy < 0 || cz < 0 || cx >= dims[0] || cy >= dims[1] || cz >= dims[2])
          std::memset(out, 0, e);
        else
          std::memcpy(out, base + cz * strides[1] + cy * strides[0] + cx * e, e);
      }
  tc_emu::mbarrierTransfer(bar, (long long)(box[0] * box[1] * box[2] * e));
}
template <class Map> void tk_prefetch_tmap(const Map *) {}
inline void tk_wgmma_fence() {}
inline void tk_wgmma_commit() {
  tc_emu::Thread &me = tc_emu::self();
  me.wgGroups.push_back(std::move(me.wgOpen));
  me.wgOpen.clear();
}
template <int N> void tk_wgmma_wait() {
  tc_emu::Thread &me = tc_emu::self();
  while (me.wgGroups.size() > size_t(N)) {
    for (auto &op : me.wgGroups.front())
      op();
    me.wgGroups.pop_front();
  }
}
template <int R> void tk_setmaxnreg_inc() {}
template <int R> void tk_setmaxnreg_dec() {}
inline void tk_bar_sync(int id, int count) {
  int cta = tc_emu::self().cta;
  tc_emu::Barrier &b = tc_emu::namedBarriers[size_t(cta) * 16 + size_t(id)];
  unsigned long long generation = b.generation;
  ++tc_emu::progress;
  if (++b.arrived == unsigned(count)) {
    b.arrived = 0;
    ++b.generation;
    return;
  }
  while (b.generation == generation)
    tc_emu::yield();
}
inline void tk_cluster_sync() {
  tc_emu::barrierWait(tc_emu::clusterBarrier, [](const tc_emu::Thread &) { return true; });
}
inline unsigned tk_cluster_rank() { return unsigned(tc_emu::self().cta); }
inline float4 tk_ld_cluster_f4(unsigned addr, unsigned rank) {
  unsigned at = tc_emu::clusterAddress(addr, rank);
  if (at % 16)
    tc_emu::fail("ld.shared::cluster.v4 of an address not 16-byte aligned");
  return *reinterpret_cast<const float4 *>(uintptr_t(at));
}
inline void __syncwarp(unsigned = 0xffffffffu) {
  uint64_t in[8] = {};
  tc_emu::collective(in, [](const uint64_t(&)[32][8], uint64_t(&)[32][4]) {});
}
// wgmma m64nNk16 (f16, bf16) / m64nNk8 (TF32, operands rounded as a TFLOAT32 tensor map loads
// them): a thread of warp w (of 4) of the warpgroup, lane 4g + t, holds for each 8 columns j
// rows 16w + g and 16w + g + 8, columns 8j + 2t and 8j + 2t + 1 (d[4j .. 4j + 3]). Operands are
// K-major 128-byte-swizzled tiles: element (row, k) at start + (row / 8) * SBO + (row % 8) * 128
// + k * bytes, swizzled. Runs at the wait_group that retires it.
template <int N, int KIND>
void tk_wgmma(float (&d)[N / 2], unsigned long long a, unsigned long long b) {
  auto check = [](unsigned long long desc) {
    if ((desc >> 62) != 1 || ((desc >> 32) & 0x3fff) != 64 || ((desc >> 49) & 7) != 0)
      tc_emu::fail(
          "wgmma descriptor: the emulation models 128-byte swizzle, stride 1024, base offset 0");
  };
  check(a);
  check(b);
  const unsigned tid = tc_emu::self().tid;
  const uintptr_t window = reinterpret_cast<uintptr_t>(tc_emu::blockShared(tc_emu::self().cta));
  float *out = d;
  tc_emu::self().wgOpen.push_back([=]() {
    constexpr int K = KIND == 2 ? 8 : 16, E = KIND == 2 ? 4 : 2;
    auto element = [&](unsigned long long desc, int row, int k) {
      uintptr_t start = window | uintptr_t((desc & 0x3fff) << 4);
      uintptr_t at = tc_emu::swizzle128(start + uintptr_t(row / 8) * 1024 +
                                        uintptr_t(row % 8) * 128 + uintptr_t(k) * E);
      const void *p = reinterpret_cast<const void *>(at);
      if (KIND == 2)
        return double(tc_emu::tf32Round(*reinterpret_cast<const float *>(p)));
      uint16_t h = *reinterpret_cast<const uint16_t *>(p);
      return double(KIND == 1 ? tc_emu::bf16ToFloat(h) : tc_emu::halfToFloat(h));
    };
    const int w = int(tid / 32) % 4, lane = int(tid % 32), g = lane / 4, t = lane % 4;
    for (int j = 0; j < N / 8; ++j)
      for (int i = 0; i < 4; ++i) {
        int row = 16 * w + g + 8 * (i >> 1), col = 8 * j + 2 * t + (i & 1);
        double sum = 0;
        for (int k = 0; k < K; ++k)
          sum += element(a, row, k) * element(b, col, k);
        out[4 * j + i] = float(double(out[4 * j + i]) + sum);
      }
  });
}
// Blocks run one at a time: the count-in's ordering needs no more than the increment.
inline unsigned tk_count_in(unsigned *counter) { return atomicAdd(counter, 1u); }
