// Convolution drivers over the shared micro-kernel: per tile, row groups of output pixels whose
// taps are gathered into an indirection of row pointers (zero row for padding), each swept across
// the tile's strips of packed weights; 1x1 stride-1 convolutions go to the packed GEMM directly.
#include "tensorc/Codegen/CPU/Conv.h"

#include "IRLoops.h"
#include "MicroKernel.h"
#include "tensorc/Codegen/CPU/PackedGemm.h"
#include "tensorc/Codegen/CPU/WeightPacking.h"

#include <llvm/Analysis/VectorUtils.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>

#include <algorithm>

namespace tensorc::cpu {

using llvm::Value;

namespace {

int64_t ceilDiv(int64_t x, int64_t d) { return (x + d - 1) / d; }
int64_t roundUp(int64_t x, int64_t multiple) { return ceilDiv(x, multiple) * multiple; }

/// The K block of a 1x1 stride-1 NHWC convolution's packed GEMM: all of Cg up to 384 (C written
/// once), else 256.
int64_t pointwiseKBlock(const ConvParams &p) {
  return p.cg() > 384 ? 256 : std::max<int64_t>(1, p.cg());
}

/// Elements of one image of an activation with `channels` channels of `h` x `w`.
int64_t imageSize(ActivationLayout layout, int64_t channels, int64_t h, int64_t w) {
  switch (layout) {
  case ActivationLayout::NHWC:
    return channels * h * w;
  case ActivationLayout::NCHW16c:
    return roundUp(channels, 16) * h * w;
  }
  return 0;
}

/// Segments of K per output pixel: one per tap (NHWC: the tap's channels are contiguous), or one
/// per tap and block of 16 channels (NCHW16c).
int64_t segmentsOf(const ConvParams &p) {
  switch (p.layout) {
  case ActivationLayout::NHWC:
    return p.taps();
  case ActivationLayout::NCHW16c:
    return p.taps() * (p.cg() / 16);
  }
  return 0;
}

class ConvEmitter {
public:
  ConvEmitter(llvm::IRBuilderBase &b, const CpuTarget &target, const ConvParams &p,
              const ConvTiling &tiling, Value *input, Value *weights, Value *output,
              const ConvEpilogue &epilogue)
      : b(b), target(target), tiles(microTilesFor(target)), p(p), tiling(tiling), input(input),
        weights(weights), output(output), epilogue(epilogue), f32(b.getFloatTy()) {}

  void emit(Value *images, Value *tileBegin, Value *tileEnd);

private:
  Value *i64(int64_t v) { return b.getInt64(v); }
  Value *min(Value *x, Value *y) { return b.CreateSelect(b.CreateICmpSLT(x, y), x, y); }
  Value *gep(Value *base, Value *index) { return b.CreateInBoundsGEP(f32, base, index); }

  /// The input coordinates (ih0, iw0) of the top-left tap of output pixel `pixel`'s window
  /// (negative inside the padding).
  std::pair<Value *, Value *> windowOrigin(Value *pixel) {
    Value *oh = b.CreateUDiv(pixel, i64(p.ow)), *ow = b.CreateURem(pixel, i64(p.ow));
    Value *ih0 = b.CreateSub(b.CreateMul(oh, i64(p.strideH)), i64(p.padTop));
    Value *iw0 = b.CreateSub(b.CreateMul(ow, i64(p.strideW)), i64(p.padLeft));
    return {ih0, iw0};
  }
  /// Stores `ptr` as entry `row` of indirection segment `segment` (segments of `rows` entries).
  void storeIndirection(Value *ptr, int64_t segment, Value *rows, Value *row) {
    Value *slot = b.CreateAdd(b.CreateMul(i64(segment), rows), row);
    b.CreateAlignedStore(ptr, b.CreateInBoundsGEP(b.getPtrTy(), indirection, slot), llvm::Align(8));
  }
  /// Fills the indirection for `rows` pixels from `pixel0` of one image and group: a segment per
  /// tap (NHWC) or per tap and block of 16 channels (NCHW16c).
  void emitIndirection(Value *inputImage, Value *group, Value *pixel0, Value *rows);
  /// Whether a kernel row's KW taps are one contiguous run of KW * C floats (NHWC, one group, no
  /// horizontal dilation): then pixels whose whole window row is inside the width take a segment
  /// per kernel row (a 7x7 stem on 3 channels: 7 segments of 21, not 49 of 3).
  bool hasRowSegments() const {
    return p.layout == ActivationLayout::NHWC && p.groups == 1 && p.dilationW == 1 && p.kw > 1;
  }
  /// For `rows` pixels from `pixel0`: whether every window row is inside the width.
  Value *emitRowsInside(Value *pixel0, Value *rows);
  /// The indirection with a segment per kernel row (hasRowSegments, emitRowsInside held).
  void emitRowIndirection(Value *inputImage, Value *pixel0, Value *rows);
  /// Output element (pixel, channel) of one image: its offset from the image's start.
  Value *outputOffset(Value *pixel, Value *channel);
  void emitRowGroup(Value *image, Value *group, Value *pixel0, Value *rows, Value *n0, Value *ncur);

  llvm::IRBuilderBase &b;
  const CpuTarget &target;
  MicroTiles tiles;
  const ConvParams &p;
  const ConvTiling &tiling;
  Value *input, *weights, *output;
  const ConvEpilogue &epilogue;
  llvm::Type *f32;
  llvm::AllocaInst *indirection = nullptr, *zeroRow = nullptr, *scratch = nullptr;
};

void ConvEmitter::emitIndirection(Value *inputImage, Value *group, Value *pixel0, Value *rows) {
  const int64_t blocks = p.layout == ActivationLayout::NCHW16c ? p.cg() / 16 : 1;
  emitFor(b, i64(0), rows, 1, "ind.row", [&](Value *i) {
    auto [ih0, iw0] = windowOrigin(b.CreateAdd(pixel0, i));
    for (int64_t kh = 0; kh < p.kh; ++kh) {
      Value *ih = b.CreateAdd(ih0, i64(kh * p.dilationH));
      // Unsigned compares reject negative coordinates too.
      Value *rowInside = b.CreateICmpULT(ih, i64(p.h));
      for (int64_t kw = 0; kw < p.kw; ++kw) {
        Value *iw = b.CreateAdd(iw0, i64(kw * p.dilationW));
        Value *inside = b.CreateAnd(rowInside, b.CreateICmpULT(iw, i64(p.w)));
        Value *position = b.CreateAdd(b.CreateMul(ih, i64(p.w)), iw);
        for (int64_t cb = 0; cb < blocks; ++cb) {
          Value *offset = nullptr;
          switch (p.layout) {
          case ActivationLayout::NHWC:
            offset = b.CreateAdd(b.CreateMul(position, i64(p.c)), b.CreateMul(group, i64(p.cg())));
            break;
          case ActivationLayout::NCHW16c: {
            Value *block = b.CreateAdd(b.CreateMul(group, i64(blocks)), i64(cb));
            offset =
                b.CreateMul(b.CreateAdd(b.CreateMul(block, i64(p.h * p.w)), position), i64(16));
            break;
          }
          }
          Value *ptr = b.CreateSelect(inside, gep(inputImage, offset), zeroRow);
          storeIndirection(ptr, (kh * p.kw + kw) * blocks + cb, rows, i);
        }
      }
    }
  });
}

Value *ConvEmitter::emitRowsInside(Value *pixel0, Value *rows) {
  // Output columns with the whole window row inside: ow in [owLo, owHi].
  int64_t owLo = (p.padLeft + p.strideW - 1) / p.strideW;
  int64_t owHi = p.w - p.kw + p.padLeft >= 0 ? (p.w - p.kw + p.padLeft) / p.strideW : -1;
  if (owLo == 0 && owHi >= p.ow - 1)
    return b.getTrue(); // every column: no horizontal padding reaches a window
  // Otherwise the pixels must lie in one output row (a group across a row break holds its last
  // and first columns), inside [owLo, owHi].
  Value *last = b.CreateSub(b.CreateAdd(pixel0, rows), i64(1));
  Value *sameRow = b.CreateICmpEQ(b.CreateUDiv(pixel0, i64(p.ow)), b.CreateUDiv(last, i64(p.ow)));
  Value *firstOw = b.CreateURem(pixel0, i64(p.ow)), *lastOw = b.CreateURem(last, i64(p.ow));
  return b.CreateAnd(sameRow, b.CreateAnd(b.CreateICmpSGE(firstOw, i64(owLo)),
                                          b.CreateICmpSLE(lastOw, i64(owHi))));
}

void ConvEmitter::emitRowIndirection(Value *inputImage, Value *pixel0, Value *rows) {
  emitFor(b, i64(0), rows, 1, "ind.row", [&](Value *i) {
    auto [ih0, iw0] = windowOrigin(b.CreateAdd(pixel0, i));
    for (int64_t kh = 0; kh < p.kh; ++kh) {
      Value *ih = b.CreateAdd(ih0, i64(kh * p.dilationH));
      Value *offset = b.CreateMul(b.CreateAdd(b.CreateMul(ih, i64(p.w)), iw0), i64(p.c));
      Value *ptr = b.CreateSelect(b.CreateICmpULT(ih, i64(p.h)), gep(inputImage, offset), zeroRow);
      storeIndirection(ptr, kh, rows, i);
    }
  });
}

Value *ConvEmitter::outputOffset(Value *pixel, Value *channel) {
  switch (p.layout) {
  case ActivationLayout::NHWC:
    return b.CreateAdd(b.CreateMul(pixel, i64(p.oc)), channel);
  case ActivationLayout::NCHW16c:
    // The channel is a multiple of 16 here (tiles start on strips).
    return b.CreateMul(
        b.CreateAdd(b.CreateMul(b.CreateUDiv(channel, i64(16)), i64(p.oh * p.ow)), pixel), i64(16));
  }
  return nullptr;
}

void ConvEmitter::emitRowGroup(Value *image, Value *group, Value *pixel0, Value *rows, Value *n0,
                               Value *ncur) {
  Value *inputImage = gep(input, b.CreateMul(image, i64(imageSize(p.layout, p.c, p.h, p.w))));
  Value *outputImage = gep(output, b.CreateMul(image, i64(imageSize(p.layout, p.oc, p.oh, p.ow))));
  Value *segments = i64(segmentsOf(p));
  Value *kseg = i64(p.layout == ActivationLayout::NHWC ? p.cg() : 16);
  if (hasRowSegments()) {
    Value *rowsInside = emitRowsInside(pixel0, rows);
    emitIf(
        b, rowsInside, "conv.rowsegments", [&] { emitRowIndirection(inputImage, pixel0, rows); },
        [&] { emitIndirection(inputImage, group, pixel0, rows); });
    segments = b.CreateSelect(rowsInside, i64(p.kh), segments);
    kseg = b.CreateSelect(rowsInside, i64(p.kw * p.cg()), kseg);
  } else {
    emitIndirection(inputImage, group, pixel0, rows);
  }

  const int64_t k = p.taps() * p.cg();
  Value *groupWeights = gep(weights, b.CreateMul(group, i64(packedGemmBSize(k, p.ocg()))));
  Value *stripsPerCall = emitStripsFor(b, tiles, rows);
  Value *colsPerCall = b.CreateMul(stripsPerCall, i64(kPackStrip));
  Value *calls = b.CreateUDiv(b.CreateAdd(ncur, b.CreateSub(colsPerCall, i64(1))), colsPerCall);
  Value *rowStride = i64(p.layout == ActivationLayout::NHWC ? p.oc : 16);
  Value *stripStride = i64(p.layout == ActivationLayout::NHWC ? 16 : p.oh * p.ow * 16);
  emitFor(b, i64(0), calls, 1, "conv.jr", [&](Value *call) {
    Value *jr = b.CreateAdd(n0, b.CreateMul(call, colsPerCall)); // within the group
    Value *cols = min(colsPerCall, b.CreateSub(b.CreateAdd(n0, ncur), jr));
    Value *channel = b.CreateAdd(b.CreateMul(group, i64(p.ocg())), jr);
    MicroKernelArgs args;
    args.rows = indirection;
    args.segments = segments;
    args.kseg = kseg;
    args.b = gep(groupWeights, b.CreateMul(b.CreateUDiv(jr, i64(kPackStrip)), i64(k * 16)));
    args.bStripStride = i64(k * 16);
    TileView output{gep(outputImage, outputOffset(pixel0, channel)), rowStride, stripStride};
    args.c = output.base;
    args.cRowStride = rowStride;
    args.cStripStride = stripStride;
    if (epilogue) {
      // Through the scratch tile (MicroKernel.h): one K block always.
      args.c = scratch;
      args.cRowStride = colsPerCall;
      args.cStripStride = i64(kPackStrip);
    }
    args.cols = cols;
    args.accumulate = b.getFalse();
    emitMicroKernelCall(b, target, rows,
                        b.CreateUDiv(b.CreateAdd(cols, i64(kPackStrip - 1)), i64(kPackStrip)),
                        args);
    if (epilogue) {
      GemmEpilogue atImage = [&](llvm::IRBuilderBase &ir, Value *acc, Value *pixel,
                                 Value *outChannel) {
        return epilogue(ir, acc, image, pixel, outChannel);
      };
      emitEpilogue(b, target, atImage, {args.c, args.cRowStride, args.cStripStride}, output, rows,
                   cols, pixel0, channel);
    }
  });
}

void ConvEmitter::emit(Value *images, Value *tileBegin, Value *tileEnd) {
  const int64_t pixels = p.oh * p.ow;
  const int64_t tilesM = ceilDiv(pixels, tiling.mc), tilesN = ceilDiv(p.ocg(), tiling.nc);
  const int64_t perImage = p.groups * tilesM * tilesN;
  Value *tileCount = b.CreateMul(images, i64(perImage));

  if (p.isPointwise() && p.layout == ActivationLayout::NHWC) {
    // A GEMM per image and group on the input as it is: A = pixels x Cg with row stride C.
    PackedGemmTiling gemmTiling{tiling.mc, tiling.nc, pointwiseKBlock(p)};
    const int64_t gemmTiles = tilesM * tilesN;
    Value *first = b.CreateUDiv(tileBegin, i64(gemmTiles));
    Value *last =
        min(b.CreateMul(images, i64(p.groups)), emitCeilDiv(b, min(tileEnd, tileCount), gemmTiles));
    emitFor(b, first, last, 1, "conv.gemm", [&](Value *gi) {
      Value *image = b.CreateUDiv(gi, i64(p.groups)), *group = b.CreateURem(gi, i64(p.groups));
      Value *base = b.CreateMul(gi, i64(gemmTiles));
      PackedGemmOperands ops;
      ops.a = gep(input, b.CreateAdd(b.CreateMul(image, i64(p.c * p.h * p.w)),
                                     b.CreateMul(group, i64(p.cg()))));
      ops.aRowStride = i64(p.c);
      ops.aColStride = i64(1);
      ops.packedB = gep(weights, b.CreateMul(group, i64(packedGemmBSize(p.cg(), p.ocg()))));
      ops.c = gep(output, b.CreateAdd(b.CreateMul(image, i64(p.oc * pixels)),
                                      b.CreateMul(group, i64(p.ocg()))));
      ops.cRowStride = i64(p.oc);
      ops.m = i64(pixels);
      ops.n = i64(p.ocg());
      ops.k = i64(p.cg());
      GemmEpilogue gemmEpilogue;
      if (epilogue)
        gemmEpilogue = [&, image, group](llvm::IRBuilderBase &ir, Value *acc, Value *pixel,
                                         Value *col) {
          return epilogue(ir, acc, image, pixel,
                          ir.CreateAdd(ir.CreateMul(group, ir.getInt64(p.ocg())), col));
        };
      // This GEMM's share of [tileBegin, tileEnd): a range may start in an earlier GEMM and end
      // in a later one.
      Value *from = b.CreateSub(tileBegin, base), *to = b.CreateSub(min(tileEnd, tileCount), base);
      from = b.CreateSelect(b.CreateICmpSLT(from, i64(0)), i64(0), from);
      emitPackedGemmTiles(b, target, gemmTiling, ops, from, min(to, i64(gemmTiles)), gemmEpilogue);
    });
    return;
  }

  const int64_t segments = segmentsOf(p);
  indirection = emitEntryAlloca(
      b, llvm::ArrayType::get(b.getPtrTy(), uint64_t(segments) * tiles.mr), "conv.indirection");
  // The zero row stands for a padded tap (Cg floats) or a padded kernel row (KW * Cg).
  const int64_t zeroFloats =
      p.layout == ActivationLayout::NHWC ? std::max<int64_t>(p.kw * p.cg(), 16) : 16;
  zeroRow = emitEntryAlloca(b, llvm::ArrayType::get(f32, uint64_t(zeroFloats)), "conv.zero");
  if (epilogue)
    scratch = emitEpilogueScratch(b, tiles);
  emitFor(b, i64(0), i64(zeroFloats), 1, "conv.zero", [&](Value *i) {
    b.CreateAlignedStore(llvm::ConstantFP::getZero(f32), gep(zeroRow, i), llvm::Align(4));
  });
  const int64_t mr = tiles.mr;
  emitFor(b, tileBegin, min(tileEnd, tileCount), 1, "conv.tile", [&](Value *t) {
    Value *image = b.CreateUDiv(t, i64(perImage));
    Value *rest = b.CreateURem(t, i64(perImage));
    Value *group = b.CreateUDiv(rest, i64(tilesM * tilesN));
    rest = b.CreateURem(rest, i64(tilesM * tilesN));
    Value *pixel0 = b.CreateMul(b.CreateURem(rest, i64(tilesM)), i64(tiling.mc));
    Value *n0 = b.CreateMul(b.CreateUDiv(rest, i64(tilesM)), i64(tiling.nc));
    Value *mcur = min(i64(tiling.mc), b.CreateSub(i64(pixels), pixel0));
    Value *ncur = min(i64(tiling.nc), b.CreateSub(i64(p.ocg()), n0));
    // Balanced row groups (49 pixels: 10+10+10+10+9 rather than 12+12+12+12+1).
    Value *groups = emitCeilDiv(b, mcur, mr);
    Value *base = b.CreateUDiv(mcur, groups), *extra = b.CreateURem(mcur, groups);
    emitFor(b, i64(0), groups, 1, "conv.ir", [&](Value *q) {
      Value *bigger = b.CreateICmpULT(q, extra);
      Value *rows = b.CreateAdd(base, b.CreateZExt(bigger, b.getInt64Ty()));
      Value *start = b.CreateAdd(b.CreateMul(q, base), min(q, extra));
      emitRowGroup(image, group, b.CreateAdd(pixel0, start), rows, n0, ncur);
    });
  });
}

} // namespace

bool convWritesOutputOnce(const ConvParams &p) {
  return !(p.isPointwise() && p.layout == ActivationLayout::NHWC) || pointwiseKBlock(p) >= p.cg();
}

ConvTiling chooseConvTiling(const ConvParams &p, int threads) {
  // Whole micro-tiles on every target (multiples of 12 pixels and 64 channels), a weight block of
  // K x nc that stays in L2, and enough tiles for the threads. nc is as wide as a 256 KiB block
  // allows (at least 128 channels while K <= 1024): a tile whose nc is all of the output channels
  // writes whole NHWC pixels, one contiguous run of lines, where two half-width tiles each write
  // every other half of them, and reads its input rows once instead of once per tile. ResNet-50's
  // 56x56 pointwise convolutions (K = 64, 256 outputs) ran 5-13% faster at two threads with 256
  // than with 128 channels a tile (bench/layers.py).
  ConvTiling t;
  const int64_t pixels = p.oh * p.ow, k = p.taps() * p.cg();
  const int64_t fitsL2 = (256 << 10) / (4 * std::max<int64_t>(k, 1)) / 64 * 64;
  t.nc = std::min<int64_t>(roundUp(p.ocg(), 64),
                           std::max<int64_t>(fitsL2, k * 64 * 4 > (256 << 10) ? 64 : 128));
  t.mc = std::min<int64_t>(roundUp(pixels, 12), 240);
  auto count = [&] { return p.groups * ceilDiv(pixels, t.mc) * ceilDiv(p.ocg(), t.nc); };
  while (threads > 1 && count() < 3 * int64_t(threads)) {
    if (t.mc > 24)
      t.mc = roundUp(t.mc / 2, 12);
    else if (t.nc > 64)
      t.nc = roundUp(t.nc / 2, 64);
    else
      break;
  }
  return t;
}

Value *emitConvTileCount(llvm::IRBuilderBase &b, const ConvParams &p, const ConvTiling &tiling,
                         Value *images) {
  int64_t perImage = p.groups * ceilDiv(p.oh * p.ow, tiling.mc) * ceilDiv(p.ocg(), tiling.nc);
  return b.CreateMul(images, b.getInt64(perImage));
}

void emitConvTiles(llvm::IRBuilderBase &b, const CpuTarget &target, const ConvParams &params,
                   const ConvTiling &tiling, Value *images, Value *input, Value *packedWeights,
                   Value *output, Value *tileBegin, Value *tileEnd, const ConvEpilogue &epilogue) {
  InsertionSplit split(b);
  ConvEmitter(b, target, params, tiling, input, packedWeights, output, epilogue)
      .emit(images, tileBegin, tileEnd);
  split.finish();
}

// ---- Depthwise ---------------------------------------------------------------------------------

namespace {

/// Depthwise: a micro-tile is `pixels` consecutive outputs of one row x `vectors` vectors of
/// channels, accumulators in registers over the (unrolled) taps; each input vector is loaded once
/// per tap (from a zero row for padding) and each weight vector once per tap for all pixels.
/// Groups of G = C/groups = OC/groups channels (channelwiseFits, G > 1) run the same way: output
/// lane o sums, per tap, G products of the input channels of its group, each a permutation of the
/// input vector (lane o takes channel o - o % G + ci; one channel broadcast when G >= the lanes)
/// times a weight vector per tap and ci.
class DepthwiseEmitter {
public:
  DepthwiseEmitter(llvm::IRBuilderBase &b, const CpuTarget &target, const ConvParams &p,
                   const DepthwiseTiling &tiling, Value *input, Value *weights, Value *output,
                   const ConvEpilogue &epilogue)
      : b(b), target(target), p(p), tiling(tiling), input(input), weights(weights), output(output),
        epilogue(epilogue), f32(b.getFloatTy()), lanes(std::max(1u, target.f32Lanes())),
        vecTy(llvm::FixedVectorType::get(f32, lanes)) {
    MicroTiles tiles = microTilesFor(target);
    // 32 channels on AVX-512, 16 elsewhere; as many pixels as the accumulators allow (up to 8),
    // or down to half that when it wastes fewer pixels of a row (the last micro-tile of a row
    // overlaps the one before): 7 wide rows take one 7-pixel tile on AVX-512, 4+4 on AVX2.
    // Groups keep G weight vectors per vector of channels in registers too: 16 channels on
    // AVX-512, and fewer pixels.
    group = p.cg();
    vectors = lanes == 16 ? (group > 1 ? 1 : 2) : 16 / lanes;
    const int64_t registers =
        std::max<int64_t>(int64_t(tiles.accumulators) - (group > 1 ? group * vectors : 0), vectors);
    const int64_t most = std::min<int64_t>({registers / vectors, 8, p.ow});
    pixels = most;
    for (int64_t r = most; r >= (most + 1) / 2; --r)
      if (ceilDiv(p.ow, r) * r < ceilDiv(p.ow, pixels) * pixels)
        pixels = r;
  }

  void emit(Value *images, Value *tileBegin, Value *tileEnd);

private:
  Value *i64(int64_t v) { return b.getInt64(v); }
  Value *min(Value *x, Value *y) { return b.CreateSelect(b.CreateICmpSLT(x, y), x, y); }
  Value *gep(Value *base, Value *index) { return b.CreateInBoundsGEP(f32, base, index); }
  int64_t channelsPerTile() const { return int64_t(vectors) * lanes; }

  /// Offset of (h, w, channel c0 + v * lanes) in an image of `height` x `width`: NHWC, or
  /// NCHW16c (c0 is a multiple of 16, a vector stays inside a block).
  Value *offset(Value *h, Value *w, int64_t height, int64_t width, int64_t channels, Value *c0,
                unsigned v);
  /// One micro-tile at output row `oh`, column `ow0`, channels [c0, c0 + valid).
  /// One micro-tile of `count` vectors of channels (masked: the last one partly past C);
  /// `interior`: every tap of every pixel is inside the image's width (no column checks).
  void emitMicroTile(Value *image, Value *inputImage, Value *outputImage, Value *oh, Value *ow0,
                     Value *c0, Value *valid, unsigned count, bool masked, bool interior);

  llvm::IRBuilderBase &b;
  const CpuTarget &target;
  const ConvParams &p;
  const DepthwiseTiling &tiling;
  Value *input, *weights, *output;
  const ConvEpilogue &epilogue;
  llvm::Type *f32;
  unsigned lanes;
  llvm::FixedVectorType *vecTy;
  unsigned vectors = 1;
  int64_t pixels = 1;
  int64_t group = 1; // channels per group, in and out (1: depthwise)
  llvm::AllocaInst *zeroRow = nullptr;
};

Value *DepthwiseEmitter::offset(Value *h, Value *w, int64_t height, int64_t width, int64_t channels,
                                Value *c0, unsigned v) {
  Value *position = b.CreateAdd(b.CreateMul(h, i64(width)), w);
  Value *c = b.CreateAdd(c0, i64(int64_t(v) * lanes));
  switch (p.layout) {
  case ActivationLayout::NHWC:
    return b.CreateAdd(b.CreateMul(position, i64(channels)), c);
  case ActivationLayout::NCHW16c:
    return b.CreateAdd(
        b.CreateMul(
            b.CreateAdd(b.CreateMul(b.CreateUDiv(c, i64(16)), i64(height * width)), position),
            i64(16)),
        b.CreateURem(c, i64(16)));
  }
  return nullptr;
}

void DepthwiseEmitter::emitMicroTile(Value *image, Value *inputImage, Value *outputImage, Value *oh,
                                     Value *ow0, Value *c0, Value *valid, unsigned count,
                                     bool masked, bool interior) {
  llvm::SmallVector<Value *, 4> masks;
  if (masked) {
    llvm::SmallVector<llvm::Constant *, 16> laneIndex;
    for (unsigned j = 0; j < lanes; ++j)
      laneIndex.push_back(b.getInt64(j));
    Value *index = llvm::ConstantVector::get(laneIndex);
    for (unsigned v = 0; v < count; ++v)
      masks.push_back(
          b.CreateICmpSLT(b.CreateAdd(index, b.CreateVectorSplat(lanes, i64(int64_t(v) * lanes))),
                          b.CreateVectorSplat(lanes, valid)));
  }
  auto load = [&](Value *ptr, unsigned v) -> Value * {
    if (masked)
      return b.CreateMaskedLoad(vecTy, ptr, llvm::Align(4), masks[v],
                                llvm::Constant::getNullValue(vecTy));
    return b.CreateAlignedLoad(vecTy, ptr, llvm::Align(4));
  };
  CarriedValues accs(size_t(pixels) * count, llvm::Constant::getNullValue(vecTy));
  // Packed weights: channel c, tap t (and input channel ci of its group) at
  // (c / 16) * taps * G * 16 + (t * G + ci) * 16 + c % 16.
  llvm::SmallVector<Value *, 4> weightBase;
  for (unsigned v = 0; v < count; ++v) {
    Value *c = b.CreateAdd(c0, i64(int64_t(v) * lanes));
    weightBase.push_back(
        gep(weights, b.CreateAdd(b.CreateMul(b.CreateUDiv(c, i64(16)), i64(p.taps() * group * 16)),
                                 b.CreateURem(c, i64(16)))));
  }
  // The input of output lane l for input channel ci of its group: lane l - l % G + ci of the
  // vector (G < lanes), or channel ci of the group the whole vector lies in (G >= lanes).
  auto groupInput = [&](Value *ptr, unsigned v, int64_t ci) -> Value * {
    if (group >= int64_t(lanes)) {
      // The vector's first channel is c0 + v * lanes; its group starts (v * lanes) % G before.
      Value *at = gep(ptr, i64(ci - int64_t(v) * lanes % group));
      return b.CreateVectorSplat(lanes, b.CreateAlignedLoad(f32, at, llvm::Align(4)));
    }
    llvm::SmallVector<int, 16> mask;
    for (int64_t l = 0; l < int64_t(lanes); ++l)
      mask.push_back(int(l - l % group + ci));
    return b.CreateShuffleVector(load(ptr, v), mask);
  };
  // The kernel rows inside the image: [khLo, khHi); the others contribute nothing.
  Value *ih0 = b.CreateSub(b.CreateMul(oh, i64(p.strideH)), i64(p.padTop));
  Value *above = b.CreateSub(i64(0), ih0);
  Value *khLo = b.CreateSelect(
      b.CreateICmpSGT(above, i64(0)),
      min(i64(p.kh), b.CreateUDiv(b.CreateAdd(above, i64(p.dilationH - 1)), i64(p.dilationH))),
      i64(0));
  Value *left = b.CreateSub(i64(p.h), ih0);
  Value *khHi = b.CreateSelect(
      b.CreateICmpSGT(left, i64(0)),
      min(i64(p.kh), b.CreateUDiv(b.CreateAdd(left, i64(p.dilationH - 1)), i64(p.dilationH))),
      i64(0));
  Value *iw0 = b.CreateSub(b.CreateMul(ow0, i64(p.strideW)), i64(p.padLeft));
  accs = emitLoop(b, khLo, khHi, 1, accs, "dw.kh", [&](Value *kh, llvm::ArrayRef<Value *> in) {
    Value *ih = b.CreateAdd(ih0, b.CreateMul(kh, i64(p.dilationH)));
    return emitLoop(
        b, i64(0), i64(p.kw), 1, in, "dw.kw",
        [&](Value *kw, llvm::ArrayRef<Value *> carried) {
          CarriedValues next(carried.begin(), carried.end());
          Value *tap = b.CreateAdd(b.CreateMul(kh, i64(p.kw)), kw);
          llvm::SmallVector<Value *, 16> w; // [v][ci]
          for (unsigned v = 0; v < count; ++v)
            for (int64_t ci = 0; ci < group; ++ci)
              w.push_back(load(
                  gep(weightBase[v],
                      b.CreateMul(b.CreateAdd(b.CreateMul(tap, i64(group)), i64(ci)), i64(16))),
                  v));
          Value *iwTap = b.CreateAdd(iw0, b.CreateMul(kw, i64(p.dilationW)));
          for (int64_t i = 0; i < pixels; ++i) {
            // Unsigned compare: also false left of the image. Interior tiles need
            // no check.
            Value *iw = b.CreateAdd(iwTap, i64(i * p.strideW));
            Value *inside = interior ? nullptr : b.CreateICmpULT(iw, i64(p.w));
            for (unsigned v = 0; v < count; ++v) {
              Value *ptr = gep(inputImage, offset(ih, iw, p.h, p.w, p.c, c0, v));
              if (inside)
                ptr = b.CreateSelect(inside, ptr, gep(zeroRow, i64(int64_t(v) * lanes)));
              size_t index = size_t(i) * count + v;
              if (group == 1) {
                next[index] = b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vecTy},
                                                {load(ptr, v), w[v], next[index]});
                continue;
              }
              for (int64_t ci = 0; ci < group; ++ci)
                next[index] = b.CreateIntrinsic(
                    llvm::Intrinsic::fmuladd, {vecTy},
                    {groupInput(ptr, v, ci), w[size_t(v * group + ci)], next[index]});
            }
          }
          return next;
        },
        // Stride 1: unrolled, neighbouring pixels share the loads of overlapping
        // taps. Wider strides share fewer, and the optimizer spills what it keeps.
        /*keepRolled=*/p.strideW > 1);
  });
  for (int64_t i = 0; i < pixels; ++i) {
    Value *ow = b.CreateAdd(ow0, i64(i));
    Value *pixel = b.CreateAdd(b.CreateMul(oh, i64(p.ow)), ow);
    if (!masked && epilogue && count > 1) {
      // The pixel's channel vectors (adjacent channels) through the epilogue as one wide vector:
      // its operations come out side by side, so the vectors' dependency chains overlap.
      llvm::SmallVector<Value *, 4> parts(accs.begin() + i * count,
                                          accs.begin() + (i + 1) * int64_t(count));
      Value *wide = epilogue(b, llvm::concatenateVectors(b, parts), image, pixel, c0);
      for (unsigned v = 0; v < count; ++v) {
        llvm::SmallVector<int, 16> lane;
        for (int64_t l = 0; l < lanes; ++l)
          lane.push_back(int(int64_t(v) * lanes + l));
        b.CreateAlignedStore(b.CreateShuffleVector(wide, lane),
                             gep(outputImage, offset(oh, ow, p.oh, p.ow, p.oc, c0, v)),
                             llvm::Align(4));
      }
      continue;
    }
    for (unsigned v = 0; v < count; ++v) {
      Value *ptr = gep(outputImage, offset(oh, ow, p.oh, p.ow, p.oc, c0, v));
      Value *value = accs[size_t(i) * count + v];
      if (!masked) {
        if (epilogue)
          value = epilogue(b, value, image, pixel, b.CreateAdd(c0, i64(int64_t(v) * lanes)));
        b.CreateAlignedStore(value, ptr, llvm::Align(4));
        continue;
      }
      b.CreateMaskedStore(value, ptr, llvm::Align(4), masks[v]);
    }
    if (masked && epilogue) {
      // The partial channel block: the epilogue in place, whole vectors then scalars.
      GemmEpilogue atImage = [&](llvm::IRBuilderBase &ir, Value *acc, Value *row, Value *col) {
        return epilogue(ir, acc, image, row, col);
      };
      Value *first = gep(outputImage, offset(oh, ow, p.oh, p.ow, p.oc, c0, 0));
      Value *stripStride = i64(p.layout == ActivationLayout::NHWC ? 16 : p.oh * p.ow * 16);
      emitEpilogueInPlace(b, target, atImage, first, i64(0), stripStride, i64(1), valid, pixel, c0);
    }
  }
}

void DepthwiseEmitter::emit(Value *images, Value *tileBegin, Value *tileEnd) {
  const int64_t rowBlocks = ceilDiv(p.oh, tiling.rows);
  const int64_t channelBlocks = ceilDiv(p.c, tiling.channels);
  const int64_t perImage = rowBlocks * channelBlocks;
  zeroRow = emitEntryAlloca(b, llvm::ArrayType::get(f32, uint64_t(channelsPerTile())), "dw.zero");
  emitFor(b, i64(0), i64(channelsPerTile()), 1, "dw.zero", [&](Value *i) {
    b.CreateAlignedStore(llvm::ConstantFP::getZero(f32), gep(zeroRow, i), llvm::Align(4));
  });
  // Whole micro-tiles along a row, then one more ending at the row's end (overlapping the one
  // before: the same values are stored twice) when the width is not a multiple.
  const int64_t starts = ceilDiv(p.ow, pixels);
  Value *tileCount = b.CreateMul(images, i64(perImage));
  emitFor(b, tileBegin, min(tileEnd, tileCount), 1, "dw.tile", [&](Value *t) {
    Value *image = b.CreateUDiv(t, i64(perImage));
    Value *rest = b.CreateURem(t, i64(perImage));
    Value *channel0 = b.CreateMul(b.CreateUDiv(rest, i64(rowBlocks)), i64(tiling.channels));
    Value *row0 = b.CreateMul(b.CreateURem(rest, i64(rowBlocks)), i64(tiling.rows));
    Value *inputImage = gep(input, b.CreateMul(image, i64(imageSize(p.layout, p.c, p.h, p.w))));
    Value *outputImage =
        gep(output, b.CreateMul(image, i64(imageSize(p.layout, p.oc, p.oh, p.ow))));
    Value *channelEnd = min(b.CreateAdd(channel0, i64(tiling.channels)), i64(p.c));
    Value *rowEnd = min(b.CreateAdd(row0, i64(tiling.rows)), i64(p.oh));
    // Channels innermost: a micro-tile's input window (KH rows x its columns) stays in L1 while
    // every channel block of the pixels is computed from it.
    emitFor(b, row0, rowEnd, 1, "dw.oh", [&](Value *oh) {
      emitFor(b, i64(0), i64(starts), 1, "dw.ow", [&](Value *step) {
        Value *ow0 = min(b.CreateMul(step, i64(pixels)), i64(p.ow - pixels));
        Value *left = b.CreateSub(b.CreateMul(ow0, i64(p.strideW)), i64(p.padLeft));
        Value *right = b.CreateAdd(left, i64((pixels - 1) * p.strideW + (p.kw - 1) * p.dilationW));
        Value *interior =
            b.CreateAnd(b.CreateICmpSGE(left, i64(0)), b.CreateICmpSLT(right, i64(p.w)));
        // The last block of channels when C is not a multiple: only the vectors it needs (C = 72
        // on AVX-512: one half-masked vector, not two).
        const int64_t tailValid = p.c % channelsPerTile();
        const unsigned tailCount = unsigned(ceilDiv(tailValid, lanes));
        emitFor(b, channel0, channelEnd, channelsPerTile(), "dw.c", [&](Value *c0) {
          Value *valid = b.CreateSub(i64(p.c), c0);
          Value *full = b.CreateICmpSGE(valid, i64(channelsPerTile()));
          auto tile = [&](unsigned count, bool masked) {
            emitIf(
                b, interior, "dw.interior",
                [&] {
                  emitMicroTile(image, inputImage, outputImage, oh, ow0, c0, valid, count, masked,
                                true);
                },
                [&] {
                  emitMicroTile(image, inputImage, outputImage, oh, ow0, c0, valid, count, masked,
                                false);
                });
          };
          if (tailValid == 0)
            return tile(vectors, false);
          emitIf(
              b, full, "dw.full", [&] { tile(vectors, false); },
              [&] { tile(tailCount, tailValid % lanes != 0); });
        });
      });
    });
  });
}

} // namespace

bool channelwiseFits(const ConvParams &p) {
  const int64_t g = p.cg();
  bool strided = p.strideH > 1 || p.strideW > 1;
  return p.layout == ActivationLayout::NHWC && p.groups > 1 && p.c == p.oc && p.c % 16 == 0 &&
         (g == 2 || g == 4 || g == 8 || (g == 16 && strided));
}

DepthwiseTiling chooseDepthwiseTiling(const ConvParams &p, int threads) {
  // Channel blocks of 64 (whole micro-tiles everywhere), a few rows per tile (at least ~16K
  // multiply-adds), and enough tiles for the threads.
  DepthwiseTiling t;
  t.channels = std::min<int64_t>(roundUp(p.c, 64), 64);
  const int64_t rowWork = p.ow * t.channels * p.taps() * p.cg();
  t.rows = std::clamp<int64_t>(ceilDiv(16384, std::max<int64_t>(rowWork, 1)), 1, p.oh);
  auto count = [&] { return ceilDiv(p.oh, t.rows) * ceilDiv(p.c, t.channels); };
  while (t.rows > 1 && count() < 4 * int64_t(std::max(threads, 1)))
    t.rows = ceilDiv(t.rows, 2);
  return t;
}

Value *emitDepthwiseTileCount(llvm::IRBuilderBase &b, const ConvParams &p,
                              const DepthwiseTiling &tiling, Value *images) {
  return b.CreateMul(images,
                     b.getInt64(ceilDiv(p.oh, tiling.rows) * ceilDiv(p.c, tiling.channels)));
}

void emitDepthwiseTiles(llvm::IRBuilderBase &b, const CpuTarget &target, const ConvParams &params,
                        const DepthwiseTiling &tiling, Value *images, Value *input,
                        Value *packedWeights, Value *output, Value *tileBegin, Value *tileEnd,
                        const ConvEpilogue &epilogue) {
  InsertionSplit split(b);
  DepthwiseEmitter(b, target, params, tiling, input, packedWeights, output, epilogue)
      .emit(images, tileBegin, tileEnd);
  split.finish();
}

} // namespace tensorc::cpu
