// The configuration heuristic: tiles, K slice depth, pipeline stages and split-K for a GEMM or
// convolution of given sizes on a GPU of given SM count (rules in KernelLibrary.h).
#include "KernelLibrary.h"

#include <algorithm>

namespace tensorc::cuda::kernels {

namespace {

struct Tile {
  int bm, bn, warpsM, warpsN;
};

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t blocks(const Tile &t, int64_t m, int64_t n, int64_t batch) {
  return batch * ceilDiv(m, t.bm) * ceilDiv(n, t.bn);
}

/// Tensor-core tiles by preference (largest first). Problems of more than 64 rows take 64- or
/// 128-row tiles (shorter tiles re-read B from L2 once per 16 or 32 rows and multiply at a
/// fraction of the rate); smaller ones a tile of their own height (16, 32 or 64 rows), so no tile
/// multiplies many rows of zeros.
std::vector<Tile> candidates(int64_t m) {
  const Tile all[] = {{128, 256, 2, 4}, {128, 128, 2, 4}, {128, 64, 2, 2},
                      {64, 128, 2, 2},  {64, 64, 2, 2},   {32, 128, 1, 4},
                      {32, 64, 1, 4},   {16, 128, 1, 4},  {16, 64, 1, 4}};
  int low = 16;
  while (low < m && low < 64)
    low *= 2;
  std::vector<Tile> fit;
  for (const Tile &t : all)
    if (m > 64 ? t.bm >= 64 : t.bm == low)
      fit.push_back(t);
  return fit;
}

/// Costs of the Hopper kernel's small-problem model, fitted to run 2 on an H100 (NOTES.md in
/// bench/cuda_kernels): a block takes its operands into shared memory at about 55 GB/s however
/// deep its ring, so a kernel of few, short K loops is as fast as its busiest SM's bytes; a
/// split-K cluster adds about 2.5 us (2 CTAs) or 3.5 us (4 CTAs) of launch, barrier and
/// reduction time; clusters of 5 to 8 measured 1.5-2x slower than 4 (they pack badly into the
/// GPCs), 3 is not a divisor of the GPCs' SM counts either.
constexpr double kSmIngestBytesPerUs = 55e3;
constexpr double kClusterUs[] = {0.0, 0.0, 2.5, 0.0, 3.5};
constexpr double kSmFlopsPerUs = 5e6; // f16 wgmma per SM with two consumer warpgroups

/// The Hopper kernel's configuration (rules in KernelLibrary.h).
GemmConfig chooseWgmmaConfig(int64_t m, int64_t n, int64_t k, int64_t batch, ElemType type,
                             MathMode math, const GpuInfo &gpu) {
  GemmConfig c;
  c.kernel = GemmKernel::Wgmma;
  c.warpsM = c.warpsN = 0;
  c.bk = math == MathMode::TF32 ? 32 : 64;
  int64_t slices = ceilDiv(k, c.bk);
  auto tiles = [&](int bm, int bn) { return batch * ceilDiv(m, bm) * ceilDiv(n, bn); };
  struct Tile {
    int bm, bn, split;
  };
  // Big problems: the first of 128x256 (M > 1024), 128x128, 128x64 whose tiles alone give every
  // SM a block, unsplit (compute-bound: wide tiles multiply at the highest rate per byte; 128x64
  // for products of few columns, ViT-B/16's 1576 x 768 x 3072 at batch 8).
  Tile chosen{0, 0, 1};
  for (Tile t : {Tile{128, 256, 1}, Tile{128, 128, 1}, Tile{128, 64, 1}})
    if ((t.bn < 256 || m > 1024) && !(t.bn >= 2 * n) && tiles(t.bm, t.bn) >= gpu.sms) {
      chosen = t;
      break;
    }
  if (!chosen.bm) {
    // Small problems (latency-bound, run 2): the cheapest of 64/128 x 128/64/32 tiles split 1, 2
    // or 4 ways under a model: the busiest SM's operand bytes at kSmIngestBytesPerUs, or its
    // FLOPs, or all the DRAM traffic at 3 TB/s, whichever is longest, plus the cluster's cost.
    // Ties go to the earlier candidate (64-row tiles first: one consumer warpgroup, measured
    // faster than 128x64 at equal bytes).
    int elem = type == ElemType::F32 ? 4 : 2;
    double flopsPerUs = kSmFlopsPerUs / (math == MathMode::TF32 ? 2 : 1);
    double dramUs = double(batch) * (m * k + n * k + m * n) * elem / 3e6;
    double best = 0;
    for (int bm : {64, 128})
      for (int bn : {128, 64, 32})
        for (int split : {1, 2, 4}) {
          if ((bm == 128 && m <= 64) || (bn > 64 && bn >= 2 * n) ||
              (split > 1 && slices / split < 2))
            continue;
          int64_t units = tiles(bm, bn) * split, perSm = ceilDiv(units, gpu.sms);
          int64_t perPart = ceilDiv(slices, split);
          double bytes = double(perSm) * perPart * (bm + bn) * 128;
          double flops = double(perSm) * 2.0 * bm * bn * perPart * c.bk;
          double us = std::max({bytes / kSmIngestBytesPerUs,
                                flops / (flopsPerUs * (bm == 128 ? 1.0 : 0.6)), dramUs}) +
                      kClusterUs[split];
          if (!chosen.bm || us < best)
            best = us, chosen = {bm, bn, split};
        }
  }
  c.bm = chosen.bm, c.bn = chosen.bn, c.splitK = chosen.split;
  // Stages: what fits beside the epilogue's staging tile, no more than a part's K slices + 1
  // (the next unit's first slice), 2..8: a short K loop has every load in flight at once. Passes
  // of 64 columns (32 when that leaves fewer than 4 stages); a split-K cluster stages its whole
  // tile.
  int stageBytes = (c.bm + c.bn) * 128, reserve = 1024 + 128;
  int64_t perPart = ceilDiv(slices, c.splitK);
  auto fit = [&](int epi) {
    return (gpu.smemPerBlock - reserve - c.bm * (epi + 8) * 4) / stageBytes;
  };
  c.epilogueCols = c.splitK > 1 ? c.bn : std::min(c.bn, 64);
  if (c.splitK == 1 && fit(c.epilogueCols) < 4 && c.bn > 32)
    c.epilogueCols = 32;
  int maxStages = c.bn == 256 ? 6 : 8;
  c.stages =
      int(std::clamp<int64_t>(std::min<int64_t>(fit(c.epilogueCols), perPart + 1), 2, maxStages));
  int smem = c.stages * stageBytes + c.bm * (c.epilogueCols + 8) * 4 + reserve;
  int perSm = std::max(1, std::min((228 * 1024) / (smem + 1024), 2048 / (128 * (c.bm / 64 + 1))));
  c.gridLimit = gpu.sms * perSm;
  return c;
}

/// Strict f32 on CUDA cores: a thread computes 8 x 8 outputs, so a BM x BN tile is BM * BN / 2048
/// warps, and the K slices are 8 deep. Fitted to the strict-f32 sweeps of bench/cuda_kernels.py
/// on an H100 (sweep_simt_*: the GEMMs of BERT/GPT-2 and Llama at M = 128, ViT-B/16 at 197, Swin-T
/// at 49..3136, 1024^3; NOTES.md there): an SM wants about 12 warps in flight, and the best way
/// to get them on a small problem is many 64 x 64 tiles and K split into parts of at least 12
/// slices (96 of K) — bigger tiles of split K came out no faster and write more partial sums;
/// shallow problems that leave most SMs idle split further (the old rule's parts of 4 slices were
/// faster there: ResNet-50's f32 convolutions in the same kit).
/// The old rule (the first tile that gave a block per SM) left 2 warps per SM and ran these
/// shapes at 0.39-0.71x of cuBLAS; this one picks configs within 5% of each shape's best
/// (geometric mean). Problems that reach the target unsplit keep the largest such tile.
GemmConfig chooseSimtConfig(int64_t m, int64_t n, int64_t k, int64_t batch, const GpuInfo &gpu) {
  GemmConfig c;
  c.bk = 8;
  c.stages = 2;
  c.warpsM = c.warpsN = 0;
  const int64_t wantWarps = 12 * int64_t(gpu.sms);
  auto warps = [&](const Tile &t) { return blocks(t, m, n, batch) * (t.bm * t.bn / 2048); };
  Tile chosen{m <= 32 ? 32 : 64, m <= 32 ? 128 : 64, 0, 0};
  if (m > 64)
    for (Tile t : {Tile{128, 128, 0, 0}, Tile{128, 64, 0, 0}})
      if (warps(t) >= wantWarps) {
        chosen = t;
        break;
      }
  c.bm = chosen.bm;
  c.bn = chosen.bn;
  int64_t slices = ceilDiv(k, c.bk);
  // Parts of >= 12 slices; a problem that would leave under 3 warps per SM splits down to parts
  // of 4 (ResNet-50's shallow convolutions at 7..56 pixels: measured faster so).
  auto partsOk = [&](int parts) {
    return slices / parts >= (warps(chosen) * c.splitK * 4 < wantWarps ? 4 : 12);
  };
  while (warps(chosen) * c.splitK < wantWarps && c.splitK < 16 && partsOk(c.splitK + 1))
    ++c.splitK;
  return c;
}

} // namespace

GemmConfig chooseGemmConfig(int64_t m, int64_t n, int64_t k, int64_t batch, ElemType type,
                            MathMode math, const GpuInfo &gpu, bool tmaOperands) {
  m = std::max<int64_t>(m, 1), n = std::max<int64_t>(n, 1), k = std::max<int64_t>(k, 1);
  batch = std::max<int64_t>(batch, 1);
  if (gpu.sm90a && tmaOperands && m > 16 && math != MathMode::SimtF32 &&
      (math == MathMode::TF32) == (type == ElemType::F32))
    return chooseWgmmaConfig(m, n, k, batch, type, math, gpu);
  if (math == MathMode::SimtF32)
    return chooseSimtConfig(m, n, k, batch, gpu);
  std::vector<Tile> tiles = candidates(m);
  // Narrow products (grouped convolutions: 4-32 output channels per group) take tiles of 16 or
  // 32 columns, warps along M only: a 64- to 256-column tile would multiply mostly zeros.
  const int narrow = n <= 16 ? 16 : n <= 32 ? 32 : 0;
  auto fitN = [&](Tile t) { return narrow ? Tile{t.bm, narrow, std::min(4, t.bm / 16), 1} : t; };
  for (Tile &t : tiles)
    t = fitN(t);
  // 128x256 only when it still gives two waves: its 128 accumulators per thread allow one block
  // per SM.
  Tile chosen = tiles.back();
  for (const Tile &t : tiles) {
    int64_t want = t.bn == 256 ? 2 * int64_t(gpu.sms) : gpu.sms;
    if (blocks(t, m, n, batch) >= want) {
      chosen = t;
      break;
    }
  }
  GemmConfig c;
  c.bm = chosen.bm;
  c.bn = chosen.bn;
  c.warpsM = chosen.warpsM;
  c.warpsN = chosen.warpsN;
  bool small = m <= 64;
  int elem = type == ElemType::F32 ? 4 : 2;
  // 64 bytes of K per row (128 for small M, whose blocks stream B and want more in flight).
  c.bk = (small ? 128 : 64) / elem;
  int stageBytes = (c.bm + c.bn) * c.bk * elem;
  int budget = small ? gpu.smemPerBlock / 2 : gpu.smemPerBlock / 3;
  c.stages = std::clamp(budget / stageBytes, 3, 6);
  // Split K while the blocks leave SMs idle; each part keeps >= 4 K slices (2 for small M).
  int64_t target = small ? 2 * int64_t(gpu.sms) : gpu.sms;
  int64_t slices = ceilDiv(k, c.bk), minSlices = small ? 2 : 4;
  auto split = [&](int64_t have) {
    int parts = 1;
    while (have * parts < target && parts < 16 && slices / (parts + 1) >= minSlices)
      ++parts;
    return parts;
  };
  c.splitK = split(blocks(chosen, m, n, batch));
  // Too shallow a K to split: shorter tiles instead, their work per block is small anyway.
  if (!small && blocks(chosen, m, n, batch) * c.splitK < gpu.sms) {
    for (Tile t : {fitN({32, 64, 1, 4}), fitN({16, 64, 1, 4})}) {
      if (blocks(t, m, n, batch) > blocks(chosen, m, n, batch) * c.splitK) {
        chosen = t;
        c.bm = t.bm, c.bn = t.bn, c.warpsM = t.warpsM, c.warpsN = t.warpsN;
        c.splitK = split(blocks(t, m, n, batch));
      }
      if (blocks(t, m, n, batch) * c.splitK >= gpu.sms)
        break;
    }
  }
  return c;
}

GemmConfig chooseConvConfig(const ConvSpec &spec, int64_t batch, const GpuInfo &gpu) {
  int64_t m = batch * int64_t(spec.oh()) * spec.ow();
  int64_t cg = spec.c / std::max(spec.groups, 1);
  int64_t n = spec.oc / std::max(spec.groups, 1), k = int64_t(spec.kh) * spec.kw * cg;
  return chooseGemmConfig(m, n, k, spec.groups, spec.type, spec.math, gpu, convIsDenseGemm(spec));
}

void chooseDepthwiseTiles(DepthwiseSpec &spec, int64_t batch, const GpuInfo &gpu) {
  // Candidates by preference: big spatial tiles read the fewest halo pixels per output; fewer
  // channels per block and one row per thread trade that for more blocks (128 threads down to
  // 32). The first that gives two blocks per SM wins, else the one with the most blocks.
  int vec = spec.type == ElemType::F32 ? 4 : 8;
  struct Tiles {
    int h, w, vectors, rows;
  };
  const Tiles all[] = {{8, 8, 4, 2}, {8, 8, 2, 1}, {8, 8, 1, 1}, {4, 8, 2, 1}, {4, 8, 1, 1}};
  auto count = [&](const Tiles &t) {
    return batch * ceilDiv(spec.oh(), t.h) * ceilDiv(spec.ow(), t.w) *
           ceilDiv(spec.c, int64_t(t.vectors) * vec);
  };
  const Tiles *chosen = &all[0];
  for (const Tiles &t : all) {
    if (count(t) > count(*chosen))
      chosen = &t;
    if (count(t) >= 2 * int64_t(gpu.sms)) {
      chosen = &t;
      break;
    }
  }
  spec.tileH = chosen->h;
  spec.tileW = chosen->w;
  spec.channelsPerBlock = chosen->vectors * vec;
  spec.rowsPerThread = chosen->rows;
}

} // namespace tensorc::cuda::kernels
