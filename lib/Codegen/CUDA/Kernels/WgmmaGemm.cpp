// The Hopper GEMM (sm_90a): the device template tk_gemm_wg (a producer warpgroup issuing TMA
// loads into a ring of 128-byte-swizzled shared-memory stages, one or two consumer warpgroups
// multiplying with wgmma, split-K across a thread-block cluster reduced through distributed
// shared memory, a persistent grid, the epilogue staged through shared memory), the wgmma
// wrappers a kernel needs, the checks of its configurations and renderWgmma, which renderGemm
// and renderConv (pointwise convolutions) call.
#include "LibrarySources.h"

#include "tensorc/Support/StrCat.h"

namespace tensorc::cuda::kernels {

namespace detail {

const char *wgmmaDevice() {
  // Ring protocol: full[s] completes when the producer has armed it (one arrive with the
  // stage's byte count) and both TMA copies have landed; empty[s] completes when every consumer
  // warp has finished the wgmma reading slot s (one arrive per warp after wgmma.wait_group shows
  // the group done). The producer waits on empty with the opposite parity, so each slot's first
  // use does not wait. Consumers keep one wgmma group in flight: slot i is released after slice
  // i + 1 is issued.
  //
  // Epilogue: the accumulators (rows g and g + 8 of the warp's 16, columns 8j + 2t, + 1) go
  // through shared memory so that each thread hands the caller 8 consecutive columns of one row.
  // Without split-K each warp stages its own 16 rows (a __syncwarp, no block barrier), `EPI`
  // columns per pass. With split-K the SPLITK CTAs of a cluster each stage their partial tile;
  // CTA r then sums rows [BM r / SPLITK, BM (r + 1) / SPLITK) over all CTAs' tiles in rank order
  // (deterministic), reading the others' shared memory, and runs the epilogue for them. Two
  // mbarriers per CTA order this: `ready` (every CTA's tile is staged) and `consumed` (every CTA
  // has read this CTA's tile, so it may be overwritten or the CTA may exit).
  return R"(
// ---- tk_gemm_wg: Hopper GEMM (TMA, mbarrier ring, wgmma, warp-specialized) ----
template <int BM_, int BN_, int STAGES_, int SPLITK_, int KIND_, int EPI_, bool REGS_>
struct TkWgConfig {
  static constexpr int BM = BM_, BN = BN_, STAGES = STAGES_, SPLITK = SPLITK_, KIND = KIND_, EPI = EPI_;
  static constexpr bool REGS = REGS_; // move registers from the producer to the consumers
  static constexpr int CONSUMERS = BM / 64, THREADS = 128 * (CONSUMERS + 1);
  static constexpr int E = KIND == 2 ? 4 : 2, BK = 128 / E;
  static constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128, STAGE_BYTES = A_BYTES + B_BYTES;
  static constexpr int CS = EPI + 8; // floats per staged output row (conflict-free float2 stores)
  static constexpr int OUT_OFFSET = STAGES * STAGE_BYTES;
  static constexpr int BAR_OFFSET = OUT_OFFSET + BM * CS * 4;
  static constexpr int SMEM = BAR_OFFSET + (2 * STAGES + 2) * 8 + 1024; // + slack: 1024-byte alignment
  static_assert(BM == 64 || BM == 128, "one or two consumer warpgroups of 64 rows");
  static_assert(BN % 16 == 0 && BN >= 16 && BN <= 256, "wgmma N: a multiple of 16 up to 256");
  static_assert(BN % EPI == 0 && EPI % 16 == 0, "whole epilogue passes of 16-column multiples");
  static_assert(SPLITK == 1 || EPI == BN, "a cluster reduces its tile in one pass");
  static_assert(SPLITK >= 1 && SPLITK <= 8, "a portable cluster");
};

// A_BATCHED / B_BATCHED: the operand's map has a batch dimension (else batch coordinate 0).
template <class C, bool A_BATCHED, bool B_BATCHED, class EpiV, class Epi1>
TC_DEVICE void tk_gemm_wg(const TkTensorMap *mapA, const TkTensorMap *mapB, long long M, long long N, long long K,
                          long long batches, unsigned char *smemRaw, EpiV epiV, Epi1 epi1) {
  constexpr int BM = C::BM, BN = C::BN, BK = C::BK, STAGES = C::STAGES, SPLITK = C::SPLITK;
  constexpr int EPI = C::EPI, CS = C::CS, CONSUMER_THREADS = C::CONSUMERS * 128;
  const unsigned raw = tk_smem_u32(smemRaw), base = (raw + 1023u) & ~1023u;
  float *const staged = reinterpret_cast<float *>(smemRaw + (base - raw) + C::OUT_OFFSET);
  const unsigned stagedS = base + C::OUT_OFFSET, bars = base + C::BAR_OFFSET;
  // full[s] at bars + 8 s, empty[s] at bars + 8 (STAGES + s), then the cluster's ready, consumed.
  const unsigned ready = bars + 16 * STAGES, consumed = ready + 8;
  const int tid = threadIdx.x;
  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      tk_mbar_init(bars + 8 * s, 1);
      tk_mbar_init(bars + 8 * (STAGES + s), C::CONSUMERS * 4);
    }
    tk_mbar_init(ready, SPLITK);
    tk_mbar_init(consumed, SPLITK);
    tk_fence_mbar_init();
  }
  if (SPLITK > 1)
    tk_cluster_sync(); // the barriers are initialized before any CTA of the cluster arrives on them
  else
    __syncthreads();
  // Tile and unit indices in 32 bits (cheap divisions; a problem of 2^32 tiles is not a GEMM).
  const unsigned tilesM = (unsigned)((M + BM - 1) / BM), tilesN = (unsigned)((N + BN - 1) / BN);
  const unsigned tiles = tilesM * tilesN, KT = (unsigned)((K + BK - 1) / BK);
  const unsigned units = (unsigned)batches * tiles * SPLITK;

  if (tid < 128) { // the producer warpgroup: one thread issues every copy
    if (C::REGS)
      tk_setmaxnreg_dec<40>();
    if (tid == 0) {
      tk_prefetch_tmap(mapA);
      tk_prefetch_tmap(mapB);
      int stage = 0;
      unsigned phase = 0;
      for (unsigned unit = blockIdx.x; unit < units; unit += gridDim.x) {
        const unsigned split = unit % SPLITK, tileId = unit / SPLITK, batch = tileId / tiles;
        unsigned tm, tn;
        tk_raster(tileId % tiles, tilesM, tilesN, tm, tn);
        const unsigned kbeg = KT * split / SPLITK, kend = KT * (split + 1) / SPLITK;
        for (unsigned kt = kbeg; kt < kend; ++kt) {
          tk_mbar_wait(bars + 8 * (STAGES + stage), phase ^ 1u);
          const unsigned full = bars + 8 * stage, slot = base + stage * C::STAGE_BYTES;
          tk_mbar_expect_tx(full, C::STAGE_BYTES);
          tk_tma_load_3d(slot, mapA, (int)(kt * BK), (int)(tm * BM), A_BATCHED ? (int)batch : 0, full);
          tk_tma_load_3d(slot + C::A_BYTES, mapB, (int)(kt * BK), (int)(tn * BN), B_BATCHED ? (int)batch : 0, full);
          if (++stage == STAGES) {
            stage = 0;
            phase ^= 1u;
          }
        }
      }
    }
    return;
  }

  if (C::REGS)
    tk_setmaxnreg_inc<232>();
  const int cw = (tid >> 7) - 1, ctid = tid - 128, lane = tid & 31, wq = (tid >> 5) & 3;
  const int g = lane >> 2, t4 = lane & 3;
  const unsigned rank = SPLITK > 1 ? tk_cluster_rank() : 0u;
  int stage = 0;
  unsigned phase = 0, epiPhase = 0;
  float acc[BN / 2];
  for (unsigned unit = blockIdx.x; unit < units; unit += gridDim.x) {
    const unsigned split = unit % SPLITK, tileId = unit / SPLITK;
    const long long batch = tileId / tiles;
    unsigned tm, tn;
    tk_raster(tileId % tiles, tilesM, tilesN, tm, tn);
    const long long m0 = (long long)tm * BM, n0 = (long long)tn * BN;
    const unsigned kbeg = KT * split / SPLITK, kend = KT * (split + 1) / SPLITK;
    #pragma unroll
    for (int i = 0; i < BN / 2; ++i)
      acc[i] = 0.0f;
    int held = 0; // the slot whose wgmma group may still be in flight
    for (unsigned kt = kbeg; kt < kend; ++kt) {
      tk_mbar_wait(bars + 8 * stage, phase);
      const unsigned slot = base + stage * C::STAGE_BYTES, a = slot + cw * 64 * 128, b = slot + C::A_BYTES;
      tk_wgmma_fence();
      #pragma unroll
      for (int s = 0; s < 4; ++s) // four K steps of 32 bytes per 128-byte row
        tk_wgmma<BN, C::KIND>(acc, tk_wg_desc(a + 32 * s), tk_wg_desc(b + 32 * s));
      tk_wgmma_commit();
      tk_wgmma_wait<1>(); // the previous slice's group is done: its slot goes back
      if (kt > kbeg && lane == 0)
        tk_mbar_arrive(bars + 8 * (STAGES + held));
      held = stage;
      if (++stage == STAGES) {
        stage = 0;
        phase ^= 1u;
      }
    }
    tk_wgmma_wait<0>();
    if (kend > kbeg && lane == 0)
      tk_mbar_arrive(bars + 8 * (STAGES + held));

    if (SPLITK == 1) {
      // This warp's 16 rows, EPI columns per pass, through its own part of the staging tile.
      float *const mine = staged + (cw * 64 + wq * 16) * CS;
      #pragma unroll
      for (int c0 = 0; c0 < BN; c0 += EPI) {
        __syncwarp();
        #pragma unroll
        for (int j = 0; j < EPI / 8; ++j) {
          const int f = (c0 / 8 + j) * 4, col = 8 * j + 2 * t4;
          *reinterpret_cast<float2 *>(mine + g * CS + col) = make_float2(acc[f], acc[f + 1]);
          *reinterpret_cast<float2 *>(mine + (g + 8) * CS + col) = make_float2(acc[f + 2], acc[f + 3]);
        }
        __syncwarp();
        #pragma unroll 1 // one copy of the epilogue per column pass (it reads shared memory)
        for (int p = 0; p < EPI / 16; ++p) {
          const int i = p * 32 + lane, r = i / (EPI / 8), v = i % (EPI / 8);
          const long long row = m0 + cw * 64 + wq * 16 + r, col = n0 + c0 + 8 * v;
          if (row < M) {
            const float4 lo = *reinterpret_cast<const float4 *>(mine + r * CS + 8 * v);
            const float4 hi = *reinterpret_cast<const float4 *>(mine + r * CS + 8 * v + 4);
            const float vals[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
            tk_epilogue_row<8>(epiV, epi1, batch, row, col, N, vals);
          }
        }
      }
    } else {
      #pragma unroll
      for (int j = 0; j < BN / 8; ++j) {
        const int r = cw * 64 + wq * 16 + g, col = 8 * j + 2 * t4;
        *reinterpret_cast<float2 *>(staged + r * CS + col) = make_float2(acc[4 * j], acc[4 * j + 1]);
        *reinterpret_cast<float2 *>(staged + (r + 8) * CS + col) = make_float2(acc[4 * j + 2], acc[4 * j + 3]);
      }
      tk_bar_sync(1, CONSUMER_THREADS); // this CTA's partial tile is staged
      if (ctid == 0) {
        #pragma unroll
        for (int q = 0; q < SPLITK; ++q)
          tk_mbar_arrive_cluster(ready, q);
      }
      tk_mbar_wait_cluster(ready, epiPhase);
      const int r0 = BM * (int)rank / SPLITK, r1 = BM * ((int)rank + 1) / SPLITK;
      constexpr int VPR = BN / 8;
      for (int i = ctid; i < (r1 - r0) * VPR; i += CONSUMER_THREADS) {
        const int r = r0 + i / VPR, v = i % VPR;
        const long long row = m0 + r, col = n0 + 8 * v;
        if (row >= M)
          continue;
        float vals[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
        const unsigned at = stagedS + (unsigned)(r * CS + 8 * v) * 4u;
        #pragma unroll
        for (int q = 0; q < SPLITK; ++q) { // rank order: the sum does not depend on timing
          const float4 lo = tk_ld_cluster_f4(at, q), hi = tk_ld_cluster_f4(at + 16, q);
          vals[0] += lo.x, vals[1] += lo.y, vals[2] += lo.z, vals[3] += lo.w;
          vals[4] += hi.x, vals[5] += hi.y, vals[6] += hi.z, vals[7] += hi.w;
        }
        tk_epilogue_row<8>(epiV, epi1, batch, row, col, N, vals);
      }
      tk_bar_sync(1, CONSUMER_THREADS); // this CTA has read every CTA's tile
      if (ctid == 0) {
        #pragma unroll
        for (int q = 0; q < SPLITK; ++q)
          tk_mbar_arrive_cluster(consumed, q);
      }
      tk_mbar_wait_cluster(consumed, epiPhase); // nobody reads this CTA's tile any more
      epiPhase ^= 1u;
    }
  }
}
)";
}

std::string wgmmaWrapper(int n, int kind) {
  // One inline-PTX instruction with n / 2 accumulator operands; guarded so that kernels of one
  // module can each carry the wrappers they use.
  std::string guard = strCat("TK_WGMMA_", n, "_", kind);
  std::string regs, outs;
  for (int i = 0; i < n / 2; ++i) {
    regs += strCat(i ? ", " : "", "%", i);
    outs += strCat(i ? ", " : "", "\"+f\"(d[", i, "])");
  }
  const char *type = kind == 0 ? "f16.f16" : kind == 1 ? "bf16.bf16" : "tf32.tf32";
  int k = kind == 2 ? 8 : 16;
  std::string tail = kind == 2 ? "p, 1, 1" : "p, 1, 1, 0, 0";
  return strCat(
      "// ---- inline PTX (test/e2e/cuda_emu.h emulates what lies between these lines) ----\n",
      "#ifndef ", guard, "\n#define ", guard, "\n", "template <> TC_DEVICE void tk_wgmma<", n, ", ",
      kind, ">(float (&d)[", n / 2, "], unsigned long long a, unsigned long long b) {\n",
      "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %", n / 2 + 2,
      ", 0;\\nwgmma.mma_async.sync.aligned.m64n", n, "k", k, ".f32.", type, " {", regs, "}, %",
      n / 2, ", %", n / 2 + 1, ", ", tail, ";\\n}\\n\"\n               : ", outs,
      "\n               : \"l\"(a), \"l\"(b), \"n\"(1));\n}\n#endif\n",
      "// ---- end of inline PTX ----\n");
}

std::string checkWgmmaConfig(const GemmConfig &c, ElemType type, MathMode math) {
  if (math == MathMode::SimtF32)
    return "the wgmma kernel has no strict-f32 math";
  if (math == MathMode::Tensor16 && type == ElemType::F32)
    return "f32 operands need TF32 math";
  if (math == MathMode::TF32 && type != ElemType::F32)
    return "TF32 math takes f32 operands";
  if (c.bm != 64 && c.bm != 128)
    return strCat("wgmma tile rows ", c.bm, " are not 64 or 128");
  if (c.bn % 16 || c.bn < 16 || c.bn > 256)
    return strCat("wgmma tile columns ", c.bn, " are not a multiple of 16 in 16..256");
  int elems = math == MathMode::TF32 ? 32 : 64;
  if (c.bk != elems)
    return strCat("wgmma K slices are 128 bytes (", elems, " elements), not ", c.bk);
  if (c.stages < 2 || c.stages > 8)
    return strCat("stages ", c.stages, " outside 2..8");
  if (c.splitK < 1 || c.splitK > 8)
    return strCat("wgmma split-K ", c.splitK, " outside 1..8 (a portable cluster)");
  int epi = c.epilogueCols ? c.epilogueCols : c.bn;
  if (epi % 16 || c.bn % epi)
    return strCat("epilogue passes of ", epi, " columns do not divide ", c.bn);
  if (c.splitK > 1 && epi != c.bn)
    return "a split-K cluster stages its whole tile (epilogueCols = bn)";
  if (c.gridLimit < 0)
    return "negative grid limit";
  return "";
}

int wgmmaSmemBytes(const GemmConfig &c) {
  int epi = c.epilogueCols ? c.epilogueCols : c.bn;
  return c.stages * (c.bm + c.bn) * 128 + c.bm * (epi + 8) * 4 + (2 * c.stages + 2) * 8 + 1024;
}

KernelSource renderWgmma(const WgmmaProblem &p, std::string &error) {
  const GemmConfig &c = p.config;
  error = checkWgmmaConfig(c, p.type, p.math);
  if (error.empty() && (!p.a.kContiguous || !p.b.kContiguous || !p.a.aligned16 || !p.b.aligned16))
    error = "the wgmma kernel takes K-major operands with 16-byte aligned rows (TMA)";
  if (!error.empty()) {
    error = p.name + ": " + error;
    return {};
  }
  int kind = mmaKind(p.type, p.math), e = p.type == ElemType::F32 ? 4 : 2;
  int epi = c.epilogueCols ? c.epilogueCols : c.bn;
  bool regs = c.bm == 128 && c.bn > 128; // 128 f32 accumulators per consumer thread
  KernelSource k;
  k.name = p.name;
  k.arch = "sm_90a";
  k.threads = 128 * (c.bm / 64 + 1);
  k.smemBytes = wgmmaSmemBytes(c);
  k.clusterSize = c.splitK;
  std::string tiles = strCat("(((", p.m, ") + ", c.bm - 1, ") / ", c.bm, ") * (((", p.n, ") + ",
                             c.bn - 1, ") / ", c.bn, ")");
  k.units = strCat("(", p.batch, ") * ", tiles, " * ", c.splitK);
  k.grid = k.units;
  if (c.gridLimit > 0) {
    int limit = c.gridLimit / c.splitK * c.splitK;
    k.grid = strCat("((", k.units, ") < ", limit, " ? (", k.units, ") : ", limit, ")");
  }
  auto map = [&](const char *param, const std::string &operand, const MatrixOperand &o,
                 const std::string &rows, int box) {
    TensorMapSpec t;
    t.param = param;
    t.operand = operand;
    t.type = p.type;
    t.tf32 = p.math == MathMode::TF32;
    bool batched = o.batchStride != "0";
    t.dims[0] = p.k;
    t.dims[1] = rows;
    t.dims[2] = batched ? p.batch : "1";
    t.strides[0] = strCat("(", o.ld, ") * ", e);
    t.strides[1] = batched ? strCat("(", o.batchStride, ") * ", e)
                           : strCat("(", o.ld, ") * (", rows, ") * ", e);
    t.box[0] = 128 / e;
    t.box[1] = box;
    t.box[2] = 1;
    return t;
  };
  k.tensorMaps = {map("tk_map_a", p.aOperand, p.a, p.m, c.bm),
                  map("tk_map_b", p.bOperand, p.b, p.n, c.bn)};
  k.params = kernelParams({"const __grid_constant__ TkTensorMap tk_map_a",
                           "const __grid_constant__ TkTensorMap tk_map_b"},
                          p.epilogue, {}, p.scalarParams, {});
  std::string config = strCat("TkWgConfig<", c.bm, ", ", c.bn, ", ", c.stages, ", ", c.splitK, ", ",
                              kind, ", ", epi, ", ", regs ? "true" : "false", ">");
  std::string body = strCat(
      "  TK_DYNAMIC_SMEM(tk_smem);\n", "  const long long tk_M = (", p.m, "), tk_N = (", p.n,
      "), tk_K = (", p.k, "), tk_batches = (", p.batch, ");\n", "  tk_gemm_wg<", config, ", ",
      p.a.batchStride != "0" ? "true" : "false", ", ", p.b.batchStride != "0" ? "true" : "false",
      ">(&tk_map_a, &tk_map_b, tk_M, tk_N, tk_K, tk_batches, tk_smem,\n",
      epilogueLambdas(p.epilogue, 8, p.epilogueBatch, p.epilogueCol, "      ", true), ");\n");
  k.source = wgmmaWrapper(c.bn, kind) + wrapKernel(k, body);
  return k;
}

} // namespace detail

} // namespace tensorc::cuda::kernels
