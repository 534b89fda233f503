// The packed-B GEMM driver: per tile, K blocks; per K block, MR-row groups of A (read in place
// through row pointers, so a strip of A stays in L1) swept across the tile's strips of B (streamed
// from L2), each pair one micro-kernel call; the epilogue follows each micro-tile's last K block.
#include "tensorc/Codegen/CPU/PackedGemm.h"

#include "IRLoops.h"
#include "MicroKernel.h"
#include "tensorc/Codegen/CPU/WeightPacking.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>

#include <algorithm>

namespace tensorc::cpu {

using llvm::Value;

namespace {

int64_t roundUp(int64_t x, int64_t multiple) { return (x + multiple - 1) / multiple * multiple; }
int64_t ceilDiv(int64_t x, int64_t d) { return (x + d - 1) / d; }

/// Rows and columns every tile is a multiple of (but the last): whole micro-tiles on every target.
constexpr int64_t kRowQuantum = 12, kColQuantum = 64;

} // namespace

PackedGemmTiling choosePackedGemmTiling(int64_t m, int64_t n, int64_t k, int threads) {
  PackedGemmTiling t;
  // kc: 12 rows x kc of A fit next to B's stream in a 32 KiB L1D; one block when K is small, so
  // C is written once. nc: a kc x nc block of B (256 KiB) stays in L2 while the row groups pass.
  t.kc = packedGemmKBlock(k);
  t.nc = n > 0 ? std::min<int64_t>(roundUp(n, kColQuantum), 256) : 256;
  t.mc = m > 0 ? std::min<int64_t>(roundUp(m, kRowQuantum), 240) : 96;
  if (m <= 0 || n <= 0 || threads <= 1)
    return t;
  // Enough tiles to balance `threads` threads, shrinking the larger side (in micro-tiles) first,
  // down to 2 x 2 micro-tiles of AVX-512.
  auto tiles = [&] { return ceilDiv(m, t.mc) * ceilDiv(n, t.nc); };
  while (tiles() < 3 * int64_t(threads)) {
    bool canM = t.mc > 2 * kRowQuantum, canN = t.nc > kColQuantum;
    if (!canM && !canN)
      break;
    if (canN && (!canM || t.nc / kColQuantum >= t.mc / kRowQuantum))
      t.nc = roundUp(t.nc / 2, kColQuantum);
    else
      t.mc = roundUp(t.mc / 2, kRowQuantum);
  }
  return t;
}

Value *emitPackedGemmTileCount(llvm::IRBuilderBase &b, const PackedGemmTiling &tiling, Value *m,
                               Value *n) {
  return b.CreateMul(emitCeilDiv(b, m, tiling.mc), emitCeilDiv(b, n, tiling.nc));
}

namespace {

class PackedGemmEmitter {
public:
  /// Tiles of mc x nc (i64 values: multiples of 12 and 16) of C, K blocks of kc.
  PackedGemmEmitter(llvm::IRBuilderBase &b, const CpuTarget &target, Value *mc, Value *nc,
                    int64_t kc, const PackedGemmOperands &ops, const GemmEpilogue &epilogue)
      : b(b), target(target), tiles(microTilesFor(target)), mc(mc), nc(nc), kc(kc), ops(ops),
        epilogue(epilogue), f32(b.getFloatTy()) {}

  void emit(Value *tileBegin, Value *tileEnd);

private:
  Value *i64(int64_t v) { return b.getInt64(v); }
  Value *min(Value *x, Value *y) { return b.CreateSelect(b.CreateICmpSLT(x, y), x, y); }
  Value *gep(Value *base, Value *index) { return b.CreateInBoundsGEP(f32, base, index); }

  /// One row group (rows: a constant MR, or the runtime remainder) of one K block.
  void emitRowGroup(Value *rows, Value *row, Value *col0, Value *ncur, Value *p0, Value *kcur,
                    Value *first, Value *last);

  llvm::IRBuilderBase &b;
  const CpuTarget &target;
  MicroTiles tiles;
  Value *mc, *nc;
  int64_t kc;
  const PackedGemmOperands &ops;
  const GemmEpilogue &epilogue;
  llvm::Type *f32;
  llvm::AllocaInst *rowPtrs = nullptr, *packedA = nullptr, *scratch = nullptr;
  Value *unitColumns = nullptr;
};

void PackedGemmEmitter::emitRowGroup(Value *rows, Value *row, Value *col0, Value *ncur, Value *p0,
                                     Value *kcur, Value *first, Value *last) {
  Value *stripsPerCall =
      llvm::isa<llvm::ConstantInt>(rows)
          ? i64(tiles.stripsFor(unsigned(llvm::cast<llvm::ConstantInt>(rows)->getZExtValue())))
          : emitStripsFor(b, tiles, rows);
  Value *colsPerCall = b.CreateMul(stripsPerCall, i64(kPackStrip));
  Value *calls = b.CreateUDiv(b.CreateAdd(ncur, b.CreateSub(colsPerCall, i64(1))), colsPerCall);

  // Row pointers at column p0 of A's rows, or at a packed copy: for a non-unit column stride, and
  // when several calls reuse a strip whose rows are a multiple of 2 KiB apart (as in any K that
  // is a multiple of 512: 12 rows then fall in at most 2 of the 64 sets of a 32 KiB 8-way L1
  // and evict each other). Otherwise A is read in place.
  llvm::Type *ptrTy = b.getPtrTy();
  Value *aliasing = b.CreateAnd(b.CreateICmpUGT(calls, i64(1)),
                                b.CreateICmpEQ(b.CreateURem(ops.aRowStride, i64(512)), i64(0)));
  Value *direct = b.CreateAnd(unitColumns, b.CreateNot(aliasing));
  emitIf(
      b, direct, "a.direct",
      [&] {
        emitFor(b, i64(0), rows, 1, "a.row", [&](Value *i) {
          Value *offset = b.CreateAdd(b.CreateMul(b.CreateAdd(row, i), ops.aRowStride), p0);
          b.CreateAlignedStore(gep(ops.a, offset), b.CreateInBoundsGEP(ptrTy, rowPtrs, i),
                               llvm::Align(8));
        });
      },
      [&] {
        emitFor(b, i64(0), rows, 1, "a.pack", [&](Value *i) {
          Value *src = gep(ops.a, b.CreateMul(b.CreateAdd(row, i), ops.aRowStride));
          Value *dst = gep(packedA, b.CreateMul(i, i64(kc)));
          emitIf(
              b, unitColumns, "a.contiguous",
              [&] {
                Value *from = gep(src, p0);
                emitFor(b, i64(0), kcur, 1, "a.copy", [&](Value *p) {
                  b.CreateAlignedStore(b.CreateAlignedLoad(f32, gep(from, p), llvm::Align(4)),
                                       gep(dst, p), llvm::Align(4));
                });
              },
              [&] {
                emitFor(b, i64(0), kcur, 1, "a.gather", [&](Value *p) {
                  Value *index = b.CreateMul(b.CreateAdd(p0, p), ops.aColStride);
                  b.CreateAlignedStore(b.CreateAlignedLoad(f32, gep(src, index), llvm::Align(4)),
                                       gep(dst, p), llvm::Align(4));
                });
              });
          b.CreateAlignedStore(dst, b.CreateInBoundsGEP(ptrTy, rowPtrs, i), llvm::Align(8));
        });
      });

  Value *bStripStride = b.CreateMul(ops.k, i64(kPackStrip));
  Value *accumulate = b.CreateNot(first);
  // A tile with an epilogue and one K block goes through the scratch tile (MicroKernel.h); with
  // several, C holds the partial sums and the last block's epilogue runs in place.
  Value *viaScratch = epilogue ? b.CreateAnd(first, last) : b.getFalse();
  emitFor(b, i64(0), calls, 1, "gemm.jr", [&](Value *call) {
    Value *jr = b.CreateMul(call, colsPerCall);
    Value *cols = min(colsPerCall, b.CreateSub(ncur, jr));
    Value *strips = b.CreateUDiv(b.CreateAdd(cols, i64(kPackStrip - 1)), i64(kPackStrip));
    Value *col = b.CreateAdd(col0, jr);
    MicroKernelArgs args;
    args.rows = rowPtrs;
    args.segments = i64(1);
    args.kseg = kcur;
    // col is a multiple of 16: tiles and calls start on strip boundaries.
    args.b =
        gep(ops.packedB, b.CreateAdd(b.CreateMul(b.CreateUDiv(col, i64(kPackStrip)), bStripStride),
                                     b.CreateMul(p0, i64(kPackStrip))));
    args.bStripStride = bStripStride;
    TileView output{gep(ops.c, b.CreateAdd(b.CreateMul(row, ops.cRowStride), col)), ops.cRowStride,
                    i64(kPackStrip)};
    args.c = output.base;
    args.cRowStride = output.rowStride;
    if (epilogue) {
      args.c = b.CreateSelect(viaScratch, scratch, output.base);
      args.cRowStride = b.CreateSelect(viaScratch, colsPerCall, output.rowStride);
    }
    args.cStripStride = i64(kPackStrip);
    args.cols = cols;
    args.accumulate = accumulate;
    emitMicroKernelCall(b, target, rows, strips, args);
    if (epilogue)
      emitIf(b, last, "gemm.epilogue", [&] {
        emitEpilogue(b, target, epilogue, {args.c, args.cRowStride, args.cStripStride}, output,
                     rows, cols, row, col);
      });
  });
}

void PackedGemmEmitter::emit(Value *tileBegin, Value *tileEnd) {
  rowPtrs = emitEntryAlloca(b, llvm::ArrayType::get(b.getPtrTy(), tiles.mr), "gemm.rows");
  packedA = emitEntryAlloca(b, llvm::ArrayType::get(f32, uint64_t(tiles.mr) * uint64_t(kc)),
                            "gemm.packed_a");
  if (epilogue)
    scratch = emitEpilogueScratch(b, tiles);
  unitColumns = b.CreateICmpEQ(ops.aColStride, i64(1));
  auto ceilDivBy = [&](Value *x, Value *d) {
    return b.CreateUDiv(b.CreateAdd(x, b.CreateSub(d, i64(1))), d);
  };
  Value *tilesM = ceilDivBy(ops.m, mc);
  Value *tileCount = b.CreateMul(tilesM, ceilDivBy(ops.n, nc));
  // K == 0 still runs one (empty) block so that every element gets epilogue(0).
  Value *kBlocks =
      b.CreateSelect(b.CreateICmpSGT(ops.k, i64(0)), emitCeilDiv(b, ops.k, kc), i64(1));
  const int64_t mr = tiles.mr;
  emitFor(b, tileBegin, min(tileEnd, tileCount), 1, "gemm.tile", [&](Value *t) {
    Value *row0 = b.CreateMul(b.CreateURem(t, tilesM), mc);
    Value *col0 = b.CreateMul(b.CreateUDiv(t, tilesM), nc);
    Value *mcur = min(mc, b.CreateSub(ops.m, row0));
    Value *ncur = min(nc, b.CreateSub(ops.n, col0));
    // Whole groups of MR rows, then the rest: a rest under MR / 2 rows joins the last whole
    // group and the two are split evenly (13 rows: 7 + 6, not 12 + 1; a 1-row call streams all of
    // B's tile for one row).
    Value *whole = b.CreateUDiv(mcur, i64(mr));
    Value *tail = b.CreateURem(mcur, i64(mr));
    Value *merge = b.CreateAnd(b.CreateICmpUGT(whole, i64(0)),
                               b.CreateAnd(b.CreateICmpNE(tail, i64(0)),
                                           b.CreateICmpULT(tail, i64(mr / 2))));
    Value *groups = b.CreateSub(whole, b.CreateZExt(merge, b.getInt64Ty()));
    Value *rest = b.CreateSub(mcur, b.CreateMul(groups, i64(mr)));
    emitFor(b, i64(0), kBlocks, 1, "gemm.kblock", [&](Value *kb) {
      Value *p0 = b.CreateMul(kb, i64(kc));
      Value *kcur = min(i64(kc), b.CreateSub(ops.k, p0));
      Value *first = b.CreateICmpEQ(kb, i64(0));
      Value *last = b.CreateICmpEQ(kb, b.CreateSub(kBlocks, i64(1)));
      emitFor(b, i64(0), groups, 1, "gemm.ir", [&](Value *g) {
        Value *row = b.CreateAdd(row0, b.CreateMul(g, i64(mr)));
        emitRowGroup(i64(mr), row, col0, ncur, p0, kcur, first, last);
      });
      emitIf(b, b.CreateICmpNE(rest, i64(0)), "gemm.tailrows", [&] {
        Value *row = b.CreateAdd(row0, b.CreateMul(groups, i64(mr)));
        // rest <= MR: one group; otherwise (a merged tail) two of ceil and floor half.
        Value *firstRows = b.CreateSelect(b.CreateICmpUGT(rest, i64(mr)),
                                          b.CreateLShr(b.CreateAdd(rest, i64(1)), i64(1)), rest);
        emitRowGroup(firstRows, row, col0, ncur, p0, kcur, first, last);
        Value *secondRows = b.CreateSub(rest, firstRows);
        emitIf(b, b.CreateICmpNE(secondRows, i64(0)), "gemm.tailrows2", [&] {
          emitRowGroup(secondRows, b.CreateAdd(row, firstRows), col0, ncur, p0, kcur, first,
                       last);
        });
      });
    });
  });
}

} // namespace

void emitPackedGemmTiles(llvm::IRBuilderBase &b, const CpuTarget &target,
                         const PackedGemmTiling &tiling, const PackedGemmOperands &ops,
                         Value *tileBegin, Value *tileEnd, const GemmEpilogue &epilogue) {
  InsertionSplit split(b);
  PackedGemmEmitter(b, target, b.getInt64(tiling.mc), b.getInt64(tiling.nc), tiling.kc, ops,
                    epilogue)
      .emit(tileBegin, tileEnd);
  split.finish();
}

int64_t packedGemmKBlock(int64_t k) { return k > 0 && k <= 384 ? k : 256; }

void emitPackedGemmGrid(llvm::IRBuilderBase &b, const CpuTarget &target, int64_t kc,
                        const PackedGemmOperands &ops, Value *rowTasks, Value *colTasks,
                        Value *taskBegin, Value *taskEnd, const GemmEpilogue &epilogue) {
  InsertionSplit split(b);
  // Equal shares of M in whole 12-row micro-tiles, of N in whole 16-column strips; their counts
  // never exceed rowTasks and colTasks. Empty matrices divide by 1 and have no tiles.
  auto share = [&](Value *extent, Value *tasks, int64_t quantum) {
    Value *safe = b.CreateSelect(b.CreateICmpSGT(tasks, b.getInt64(0)), tasks, b.getInt64(1));
    Value *each = b.CreateUDiv(b.CreateAdd(extent, b.CreateSub(safe, b.getInt64(1))), safe);
    Value *rounded = b.CreateMul(emitCeilDiv(b, each, quantum), b.getInt64(quantum));
    return b.CreateSelect(b.CreateICmpSGT(rounded, b.getInt64(0)), rounded, b.getInt64(quantum));
  };
  Value *mc = share(ops.m, rowTasks, kRowQuantum);
  Value *nc = share(ops.n, colTasks, kPackStrip);
  PackedGemmEmitter(b, target, mc, nc, kc, ops, epilogue).emit(taskBegin, taskEnd);
  split.finish();
}

} // namespace tensorc::cpu
