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

/// Tiles by preference (largest first). Rows are capped near M: a tile much taller than the
/// problem multiplies zeros.
std::vector<Tile> candidates(int64_t m, MathMode math) {
  std::vector<Tile> all;
  if (math == MathMode::SimtF32) {
    all = {{128, 128, 0, 0}, {128, 64, 0, 0}, {64, 128, 0, 0},
           {64, 64, 0, 0},   {32, 128, 0, 0}, {32, 64, 0, 0}};
  } else {
    all = {{128, 256, 2, 4}, {128, 128, 2, 4}, {128, 64, 2, 2}, {64, 128, 2, 2}, {64, 64, 2, 2},
           {32, 128, 1, 4},  {32, 64, 1, 4},   {16, 128, 1, 4}, {16, 64, 1, 4}};
  }
  int cap = math == MathMode::SimtF32 ? 32 : 16;
  while (cap < m && cap < 128)
    cap *= 2;
  std::vector<Tile> fit;
  for (const Tile &t : all)
    if (t.bm <= cap)
      fit.push_back(t);
  // Keep only tiles of the capped height when M is small: their B traffic is what counts.
  if (cap < 128) {
    std::vector<Tile> exact;
    for (const Tile &t : fit)
      if (t.bm == cap)
        exact.push_back(t);
    if (!exact.empty())
      fit = exact;
  }
  return fit;
}

} // namespace

GemmConfig chooseGemmConfig(int64_t m, int64_t n, int64_t k, int64_t batch, ElemType type,
                            MathMode math, const GpuInfo &gpu) {
  m = std::max<int64_t>(m, 1), n = std::max<int64_t>(n, 1), k = std::max<int64_t>(k, 1);
  batch = std::max<int64_t>(batch, 1);
  std::vector<Tile> tiles = candidates(m, math);
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
  if (math == MathMode::SimtF32) {
    c.bk = 8;
    c.stages = 2;
  } else {
    // 64 bytes of K per row (128 for small M, whose blocks stream B and want more in flight).
    c.bk = (small ? 128 : 64) / elem;
    int stageBytes = (c.bm + c.bn) * c.bk * elem;
    int budget = small ? gpu.smemPerBlock / 2 : gpu.smemPerBlock / 3;
    c.stages = std::clamp(budget / stageBytes, 3, 6);
  }
  // Split K while the blocks leave SMs idle; each part keeps >= 4 K slices (2 for small M).
  int64_t have = blocks(chosen, m, n, batch);
  int64_t target = small ? 2 * int64_t(gpu.sms) : gpu.sms;
  int64_t slices = ceilDiv(k, c.bk), minSlices = small ? 2 : 4;
  c.splitK = 1;
  while (have * c.splitK < target && c.splitK < 16 && slices / (c.splitK + 1) >= minSlices)
    ++c.splitK;
  return c;
}

GemmConfig chooseConvConfig(const ConvSpec &spec, int64_t batch, const GpuInfo &gpu) {
  int64_t m = batch * int64_t(spec.oh()) * spec.ow();
  int64_t cg = spec.c / std::max(spec.groups, 1);
  int64_t n = spec.oc / std::max(spec.groups, 1), k = int64_t(spec.kh) * spec.kw * cg;
  return chooseGemmConfig(m, n, k, spec.groups, spec.type, spec.math, gpu);
}

void chooseDepthwiseTiles(DepthwiseSpec &spec, int64_t batch, const GpuInfo &gpu) {
  int vec = spec.type == ElemType::F32 ? 4 : 8;
  spec.channelsPerBlock = 4 * vec;
  spec.rowsPerThread = 2;
  auto count = [&](int th, int tw) {
    return batch * ceilDiv(spec.oh(), th) * ceilDiv(spec.ow(), tw) *
           ceilDiv(spec.c, spec.channelsPerBlock);
  };
  spec.tileH = 8, spec.tileW = 8;
  if (count(8, 8) < 2 * gpu.sms)
    spec.tileH = 4;
  if (count(spec.tileH, 8) < 2 * gpu.sms)
    spec.tileW = 4;
  // A block keeps at least one warp: 4 vectors x tileW x tileH / 2 threads.
  while (4 * spec.tileW * (spec.tileH / spec.rowsPerThread) < 32)
    spec.rowsPerThread = 1;
}

} // namespace tensorc::cuda::kernels
