// Winograd F(2x2, 3x3) convolutions over the shared micro-kernel: per row group of 2 x 2 output
// tiles, the 4 x 4 input patches transformed (B^T d B) a block of channels at a time into a frame
// buffer, 16 products of those with the weights transformed at compile time (one GEMM per point
// of the 4 x 4 tile, accumulated over the channel blocks), and the output transform (A^T m A)
// with the epilogue fused, each output written once.
#include "tensorc/Codegen/CPU/Conv.h"

#include "IRLoops.h"
#include "MicroKernel.h"
#include "tensorc/Codegen/CPU/WeightPacking.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>

#include <algorithm>
#include <array>
#include <utility>

namespace tensorc::cpu {

using llvm::Value;

namespace {

/// Input channels transformed per pass (the products' K block).
constexpr int64_t kWinogradKBlock = 64;
/// Output channels per task at most: the products of a row group stay in a frame buffer of
/// 16 x MR x this many floats (48 KiB on AVX-512, with as much again for the transformed inputs).
constexpr int64_t kWinogradMaxNc = 64;
/// Input channels at most (the zero row a padded tap reads is that long).
constexpr int64_t kWinogradMaxChannels = 1024;
/// Fewer output tiles per image than this and the convolution stays direct: at 7x7 (16 tiles)
/// the transformed weights (16/9 of the direct ones) are read for too few rows.
constexpr int64_t kWinogradMinTiles = 49;

int64_t ceilDiv(int64_t x, int64_t d) { return (x + d - 1) / d; }
int64_t roundUp(int64_t x, int64_t multiple) { return ceilDiv(x, multiple) * multiple; }

int64_t outputTiles(const ConvParams &p) { return ceilDiv(p.oh, 2) * ceilDiv(p.ow, 2); }

class WinogradEmitter {
public:
  WinogradEmitter(llvm::IRBuilderBase &b, const CpuTarget &target, const ConvParams &p,
                  const ConvTiling &tiling, Value *input, Value *weights, Value *output,
                  const ConvEpilogue &epilogue)
      : b(b), target(target), tiles(microTilesFor(target)), p(p), tiling(tiling), input(input),
        weights(weights), output(output), epilogue(epilogue), f32(b.getFloatTy()),
        lanes(std::max(1u, target.f32Lanes())), vecTy(llvm::FixedVectorType::get(f32, lanes)) {}

  void emit(Value *images, Value *tileBegin, Value *tileEnd);

private:
  Value *i64(int64_t v) { return b.getInt64(v); }
  Value *min(Value *x, Value *y) { return b.CreateSelect(b.CreateICmpSLT(x, y), x, y); }
  Value *gep(Value *base, Value *index) { return b.CreateInBoundsGEP(f32, base, index); }
  Value *load(Value *ptr) { return b.CreateAlignedLoad(vecTy, ptr, llvm::Align(4)); }
  void store(Value *value, Value *ptr) { b.CreateAlignedStore(value, ptr, llvm::Align(4)); }

  /// The output coordinates (oh0, ow0) of tile `first + i`'s top-left output.
  std::pair<Value *, Value *> tileOrigin(Value *first, Value *i) {
    const int64_t tilesW = ceilDiv(p.ow, 2);
    Value *tile = b.CreateAdd(first, i);
    return {b.CreateMul(b.CreateUDiv(tile, i64(tilesW)), i64(2)),
            b.CreateMul(b.CreateURem(tile, i64(tilesW)), i64(2))};
  }
  /// `rows` tiles from tile `first` of one image, output channels [n0, n0 + ncur).
  void emitRowGroup(Value *image, Value *first, Value *rows, Value *n0, Value *ncur);
  void emitInputTransform(Value *rows, Value *k0, Value *kcur);
  void emitProducts(Value *rows, Value *k0, Value *kcur, Value *n0, Value *ncur);
  void emitOutputTransform(Value *image, Value *first, Value *rows, Value *n0, Value *ncur);

  llvm::IRBuilderBase &b;
  const CpuTarget &target;
  MicroTiles tiles;
  const ConvParams &p;
  const ConvTiling &tiling;
  Value *input, *weights, *output;
  const ConvEpilogue &epilogue;
  llvm::Type *f32;
  unsigned lanes;
  llvm::FixedVectorType *vecTy;
  // Frame buffers: the 16 input taps of each tile of a row group (pointers, a zero row for
  // padding), the transformed inputs [16][MR][K block], the micro-kernel's row pointers into
  // them, and the products [16][MR][nc].
  llvm::AllocaInst *taps = nullptr, *zeroRow = nullptr, *transformed = nullptr, *aRows = nullptr,
                   *products = nullptr;
};

void WinogradEmitter::emitInputTransform(Value *rows, Value *k0, Value *kcur) {
  emitFor(b, i64(0), rows, 1, "wino.in", [&](Value *i) {
    std::array<Value *, 16> base;
    for (int64_t j = 0; j < 16; ++j) {
      Value *slot = b.CreateAdd(b.CreateMul(i, i64(16)), i64(j));
      Value *tap = b.CreateAlignedLoad(b.getPtrTy(), b.CreateInBoundsGEP(b.getPtrTy(), taps, slot),
                                       llvm::Align(8));
      base[size_t(j)] = gep(tap, k0);
    }
    emitFor(b, i64(0), kcur, lanes, "wino.in.c", [&](Value *c) {
      std::array<Value *, 16> d;
      for (size_t j = 0; j < 16; ++j)
        d[j] = load(gep(base[j], c));
      // B^T d (over the patch's rows, per column), then the same over the columns:
      // x0 - x2, x1 + x2, x2 - x1, x1 - x3.
      auto transform = [&](Value *x0, Value *x1, Value *x2, Value *x3) {
        return std::array<Value *, 4>{b.CreateFSub(x0, x2), b.CreateFAdd(x1, x2),
                                      b.CreateFSub(x2, x1), b.CreateFSub(x1, x3)};
      };
      std::array<Value *, 16> rowsDone;
      for (size_t col = 0; col < 4; ++col) {
        auto t = transform(d[col], d[4 + col], d[8 + col], d[12 + col]);
        for (size_t r = 0; r < 4; ++r)
          rowsDone[r * 4 + col] = t[r];
      }
      for (size_t r = 0; r < 4; ++r) {
        auto v = transform(rowsDone[r * 4], rowsDone[r * 4 + 1], rowsDone[r * 4 + 2],
                           rowsDone[r * 4 + 3]);
        for (size_t s = 0; s < 4; ++s) {
          // transformed[xi][i][c] with xi = 4 r + s.
          Value *row = b.CreateAdd(i64(int64_t(r * 4 + s) * tiles.mr), i);
          store(v[s], gep(transformed, b.CreateAdd(b.CreateMul(row, i64(kWinogradKBlock)), c)));
        }
      }
    });
  });
}

void WinogradEmitter::emitProducts(Value *rows, Value *k0, Value *kcur, Value *n0, Value *ncur) {
  Value *stripsPerCall = emitStripsFor(b, tiles, rows);
  Value *colsPerCall = b.CreateMul(stripsPerCall, i64(kPackStrip));
  Value *calls = b.CreateUDiv(b.CreateAdd(ncur, b.CreateSub(colsPerCall, i64(1))), colsPerCall);
  const int64_t pointSize = packedGemmBSize(p.c, p.oc);
  emitFor(b, i64(0), i64(16), 1, "wino.xi", [&](Value *xi) {
    Value *pointWeights = gep(weights, b.CreateMul(xi, i64(pointSize)));
    emitFor(b, i64(0), calls, 1, "wino.jr", [&](Value *call) {
      Value *jr = b.CreateMul(call, colsPerCall); // within the task's channels
      Value *cols = min(colsPerCall, b.CreateSub(ncur, jr));
      MicroKernelArgs args;
      args.rows = b.CreateInBoundsGEP(b.getPtrTy(), aRows, b.CreateMul(xi, i64(tiles.mr)));
      args.segments = i64(1);
      args.kseg = kcur;
      Value *strip = b.CreateUDiv(b.CreateAdd(n0, jr), i64(kPackStrip));
      args.b = gep(pointWeights, b.CreateAdd(b.CreateMul(strip, i64(p.c * kPackStrip)),
                                             b.CreateMul(k0, i64(kPackStrip))));
      args.bStripStride = i64(p.c * kPackStrip);
      args.c = gep(products, b.CreateAdd(b.CreateMul(xi, i64(tiles.mr * tiling.nc)), jr));
      args.cRowStride = i64(tiling.nc);
      args.cStripStride = i64(kPackStrip);
      args.cols = cols;
      args.accumulate = b.CreateICmpNE(k0, i64(0));
      emitMicroKernelCall(b, target, rows,
                          b.CreateUDiv(b.CreateAdd(cols, i64(kPackStrip - 1)), i64(kPackStrip)),
                          args);
    });
  });
}

void WinogradEmitter::emitOutputTransform(Value *image, Value *first, Value *rows, Value *n0,
                                          Value *ncur) {
  Value *outputImage = gep(output, b.CreateMul(image, i64(p.oh * p.ow * p.oc)));
  emitFor(b, i64(0), rows, 1, "wino.out", [&](Value *i) {
    auto [oh0, ow0] = tileOrigin(first, i);
    // The second row and column exist unless the output's size is odd and this is its last tile.
    Value *secondRow = p.oh % 2 ? b.CreateICmpSLT(b.CreateAdd(oh0, i64(1)), i64(p.oh)) : nullptr;
    Value *secondCol = p.ow % 2 ? b.CreateICmpSLT(b.CreateAdd(ow0, i64(1)), i64(p.ow)) : nullptr;
    emitFor(b, i64(0), ncur, lanes, "wino.out.c", [&](Value *c) {
      std::array<Value *, 16> m;
      for (int64_t xi = 0; xi < 16; ++xi) {
        Value *row = b.CreateAdd(i64(xi * tiles.mr), i);
        m[size_t(xi)] = load(gep(products, b.CreateAdd(b.CreateMul(row, i64(tiling.nc)), c)));
      }
      // A^T m over the rows (per column), then over the columns: x0 + x1 + x2, x1 - x2 - x3.
      auto transform = [&](Value *x0, Value *x1, Value *x2, Value *x3) {
        return std::array<Value *, 2>{b.CreateFAdd(b.CreateFAdd(x0, x1), x2),
                                      b.CreateFSub(b.CreateFSub(x1, x2), x3)};
      };
      std::array<Value *, 8> half; // [2][4]
      for (size_t col = 0; col < 4; ++col) {
        auto t = transform(m[col], m[4 + col], m[8 + col], m[12 + col]);
        half[col] = t[0];
        half[4 + col] = t[1];
      }
      Value *channel = b.CreateAdd(n0, c);
      for (int64_t dy = 0; dy < 2; ++dy) {
        auto y = transform(half[size_t(dy * 4)], half[size_t(dy * 4 + 1)], half[size_t(dy * 4 + 2)],
                           half[size_t(dy * 4 + 3)]);
        for (int64_t dx = 0; dx < 2; ++dx) {
          auto write = [&] {
            Value *pixel = b.CreateAdd(b.CreateMul(b.CreateAdd(oh0, i64(dy)), i64(p.ow)),
                                       b.CreateAdd(ow0, i64(dx)));
            Value *value = y[size_t(dx)];
            if (epilogue)
              value = epilogue(b, value, image, pixel, channel);
            store(value, gep(outputImage, b.CreateAdd(b.CreateMul(pixel, i64(p.oc)), channel)));
          };
          Value *exists = nullptr;
          if (dy && secondRow)
            exists = secondRow;
          if (dx && secondCol)
            exists = exists ? b.CreateAnd(exists, secondCol) : secondCol;
          if (exists)
            emitIf(b, exists, "wino.out.edge", write);
          else
            write();
        }
      }
    });
  });
}

void WinogradEmitter::emitRowGroup(Value *image, Value *first, Value *rows, Value *n0,
                                   Value *ncur) {
  Value *inputImage = gep(input, b.CreateMul(image, i64(p.h * p.w * p.c)));
  emitFor(b, i64(0), rows, 1, "wino.taps", [&](Value *i) {
    auto [oh0, ow0] = tileOrigin(first, i);
    Value *ih0 = b.CreateSub(oh0, i64(p.padTop)), *iw0 = b.CreateSub(ow0, i64(p.padLeft));
    for (int64_t r = 0; r < 4; ++r) {
      Value *ih = b.CreateAdd(ih0, i64(r));
      Value *rowInside = b.CreateICmpULT(ih, i64(p.h)); // unsigned: negative rows too
      for (int64_t s = 0; s < 4; ++s) {
        Value *iw = b.CreateAdd(iw0, i64(s));
        Value *inside = b.CreateAnd(rowInside, b.CreateICmpULT(iw, i64(p.w)));
        Value *offset = b.CreateMul(b.CreateAdd(b.CreateMul(ih, i64(p.w)), iw), i64(p.c));
        Value *ptr = b.CreateSelect(inside, gep(inputImage, offset), zeroRow);
        Value *slot = b.CreateAdd(b.CreateMul(i, i64(16)), i64(r * 4 + s));
        b.CreateAlignedStore(ptr, b.CreateInBoundsGEP(b.getPtrTy(), taps, slot), llvm::Align(8));
      }
    }
  });
  emitFor(b, i64(0), i64(p.c), kWinogradKBlock, "wino.k", [&](Value *k0) {
    Value *kcur = min(i64(kWinogradKBlock), b.CreateSub(i64(p.c), k0));
    emitInputTransform(rows, k0, kcur);
    emitProducts(rows, k0, kcur, n0, ncur);
  });
  emitOutputTransform(image, first, rows, n0, ncur);
}

void WinogradEmitter::emit(Value *images, Value *tileBegin, Value *tileEnd) {
  const int64_t count = outputTiles(p);
  const int64_t tilesM = ceilDiv(count, tiling.mc), tilesN = ceilDiv(p.oc, tiling.nc);
  const int64_t perImage = tilesM * tilesN;
  Value *taskCount = b.CreateMul(images, i64(perImage));
  const int64_t mr = tiles.mr;

  // About 100 KiB of frame on AVX-512: probe it page by page rather than jump past a guard page.
  b.GetInsertBlock()->getParent()->addFnAttr("probe-stack", "inline-asm");
  taps = emitEntryAlloca(b, llvm::ArrayType::get(b.getPtrTy(), uint64_t(16 * mr)), "wino.taps");
  zeroRow = emitEntryAlloca(b, llvm::ArrayType::get(f32, uint64_t(p.c)), "wino.zero");
  transformed = emitEntryAlloca(b, llvm::ArrayType::get(f32, uint64_t(16 * mr * kWinogradKBlock)),
                                "wino.transformed");
  aRows = emitEntryAlloca(b, llvm::ArrayType::get(b.getPtrTy(), uint64_t(16 * mr)), "wino.arows");
  products =
      emitEntryAlloca(b, llvm::ArrayType::get(f32, uint64_t(16 * mr * tiling.nc)), "wino.products");
  emitFor(b, i64(0), i64(p.c), 1, "wino.zero", [&](Value *i) {
    b.CreateAlignedStore(llvm::ConstantFP::getZero(f32), gep(zeroRow, i), llvm::Align(4));
  });
  // Row j of the products' A operand (point j / MR, tile j % MR) is a row of the transformed
  // inputs, the same for every row group.
  emitFor(b, i64(0), i64(16 * mr), 1, "wino.arows", [&](Value *j) {
    b.CreateAlignedStore(gep(transformed, b.CreateMul(j, i64(kWinogradKBlock))),
                         b.CreateInBoundsGEP(b.getPtrTy(), aRows, j), llvm::Align(8));
  });

  emitFor(b, tileBegin, min(tileEnd, taskCount), 1, "wino.task", [&](Value *t) {
    Value *image = b.CreateUDiv(t, i64(perImage));
    Value *rest = b.CreateURem(t, i64(perImage));
    Value *first = b.CreateMul(b.CreateURem(rest, i64(tilesM)), i64(tiling.mc));
    Value *n0 = b.CreateMul(b.CreateUDiv(rest, i64(tilesM)), i64(tiling.nc));
    Value *mcur = min(i64(tiling.mc), b.CreateSub(i64(count), first));
    Value *ncur = min(i64(tiling.nc), b.CreateSub(i64(p.oc), n0));
    // Balanced row groups, as the direct kernel's.
    Value *groups = emitCeilDiv(b, mcur, mr);
    Value *base = b.CreateUDiv(mcur, groups), *extra = b.CreateURem(mcur, groups);
    emitFor(b, i64(0), groups, 1, "wino.group", [&](Value *q) {
      Value *bigger = b.CreateICmpULT(q, extra);
      Value *rows = b.CreateAdd(base, b.CreateZExt(bigger, b.getInt64Ty()));
      Value *start = b.CreateAdd(b.CreateMul(q, base), min(q, extra));
      emitRowGroup(image, b.CreateAdd(first, start), rows, n0, ncur);
    });
  });
}

} // namespace

bool winogradFits(const ConvParams &p) {
  return p.layout == ActivationLayout::NHWC && p.groups == 1 && p.kh == 3 && p.kw == 3 &&
         p.strideH == 1 && p.strideW == 1 && p.dilationH == 1 && p.dilationW == 1 &&
         p.c % 16 == 0 && p.oc % 16 == 0 && p.c >= 16 && p.c <= kWinogradMaxChannels &&
         p.oc >= 16 && outputTiles(p) >= kWinogradMinTiles;
}

ConvTiling chooseWinogradTiling(const ConvParams &p, int threads) {
  ConvTiling t;
  const int64_t count = outputTiles(p);
  t.nc = std::min(p.oc, kWinogradMaxNc);
  t.mc = std::min<int64_t>(roundUp(count, 12), 240);
  auto tasks = [&] { return ceilDiv(count, t.mc) * ceilDiv(p.oc, t.nc); };
  while (threads > 1 && tasks() < 3 * int64_t(threads) && t.mc > 12)
    t.mc = roundUp(t.mc / 2, 12);
  // Blocks of equal size (49 tiles: 10 + 10 + 10 + 10 + 9, not 12 + 12 + 12 + 12 + 1, whose last
  // block reads every weight for one row): 14x14 layers 3-4% faster at one thread.
  t.mc = ceilDiv(count, ceilDiv(count, t.mc));
  return t;
}

bool winogradTilingFits(const ConvParams &p, const ConvTiling &t) {
  return winogradFits(p) && t.mc >= 1 && t.nc >= 16 && t.nc % 16 == 0 && t.nc <= kWinogradMaxNc;
}

Value *emitWinogradTaskCount(llvm::IRBuilderBase &b, const ConvParams &p, const ConvTiling &tiling,
                             Value *images) {
  const int64_t perImage = ceilDiv(outputTiles(p), tiling.mc) * ceilDiv(p.oc, tiling.nc);
  return b.CreateMul(images, b.getInt64(perImage));
}

void emitWinogradTiles(llvm::IRBuilderBase &b, const CpuTarget &target, const ConvParams &params,
                       const ConvTiling &tiling, Value *images, Value *input, Value *packedWeights,
                       Value *output, Value *tileBegin, Value *tileEnd,
                       const ConvEpilogue &epilogue) {
  InsertionSplit split(b);
  WinogradEmitter(b, target, params, tiling, input, packedWeights, output, epilogue)
      .emit(images, tileBegin, tileEnd);
  split.finish();
}

} // namespace tensorc::cpu
