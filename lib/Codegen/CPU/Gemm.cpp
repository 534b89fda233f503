// BLIS-style f32 GEMM emitted as LLVM IR: stack-packed panels of A and B, a register-blocked
// MR x NR micro-kernel with the K loop innermost, and the epilogue fused into the final store of C.
#include "tensorc/Codegen/CPU/Gemm.h"

#include "IRLoops.h"

#include <llvm/ADT/STLFunctionalExtras.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/IR/BasicBlock.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>

#include <algorithm>

namespace tensorc::cpu {

using llvm::BasicBlock;
using llvm::IRBuilderBase;
using llvm::Value;

namespace {

/// Register blocking of one target: the micro-kernel keeps mr x nr accumulators (nr / lanes
/// vectors per row) in registers, and kc is the depth of the packed panels.
struct Blocking {
  unsigned lanes = 8;
  unsigned mr = 6, nr = 16;
  int64_t kc = 256;
  unsigned vectorsPerRow() const { return nr / lanes; }
};

Blocking blockingFor(const CpuTarget &target) {
  unsigned lanes = std::max(1u, target.f32Lanes());
  // Accumulators + B vectors + a broadcast must fit the register file, and the kc x nr micro-panel
  // of B (12-24 KiB) must stay in a 32 KiB L1D while the A strips stream past it from L2.
  if (lanes == 16) // AVX-512: 24 accumulators + 2 B + broadcasts of 32 zmm
    return {16, 12, 32, 192};
  if (lanes == 8) // AVX2: 12 accumulators + 2 B + 1 broadcast of 16 ymm
    return {8, 6, 16, 256};
  if (lanes == 4) // NEON: 24 accumulators + 3 B + broadcasts of 32 q registers
    return {4, 8, 12, 256};
  return {lanes, 4, 2 * lanes, 256};
}

int64_t roundUp(int64_t x, int64_t multiple) { return (x + multiple - 1) / multiple * multiple; }

/// Emits the loops of one GEMM; holds the builder, the operands and the scratch buffers.
class GemmEmitter {
public:
  GemmEmitter(IRBuilderBase &b, const Blocking &blocking, const GemmTiling &tiling,
              const GemmOperands &ops, const GemmEpilogue &epilogue)
      : b(b), blk(blocking), mc(tiling.mc), nc(tiling.nc), ops(ops), epilogue(epilogue),
        f32(b.getFloatTy()), vecTy(llvm::FixedVectorType::get(f32, blocking.lanes)) {}

  void emit(Value *tileBegin, Value *tileEnd);

private:
  Value *i64(int64_t v) { return b.getInt64(v); }
  Value *min(Value *x, Value *y) { return b.CreateSelect(b.CreateICmpSLT(x, y), x, y); }
  Value *ceilDiv(Value *x, int64_t d) { return emitCeilDiv(b, x, d); }
  Value *gep(Value *base, Value *index) { return b.CreateInBoundsGEP(f32, base, index); }
  Value *gep(Value *base, int64_t index) { return gep(base, i64(index)); }
  llvm::Align vecAlign() const { return llvm::Align(4 * blk.lanes); }

  void emitFor(Value *begin, Value *end, int64_t step, const llvm::Twine &name,
               llvm::function_ref<void(Value *)> body) {
    cpu::emitFor(b, begin, end, step, name, body);
  }
  void emitIf(Value *cond, const llvm::Twine &name, llvm::function_ref<void()> thenBody,
              llvm::function_ref<void()> elseBody) {
    cpu::emitIf(b, cond, name, thenBody, elseBody);
  }
  void allocateScratch();

  void packB(Value *col0, Value *ncur, Value *p0, Value *kcur);
  void packImplicitB(Value *col0, Value *ncur, Value *p0, Value *kcur);
  void packA(Value *row0, Value *mcur, Value *p0, Value *kcur);
  llvm::SmallVector<Value *> emitMicroKernel(Value *pa, Value *pb, Value *kcur);
  void finish(Value *acc, Value *ptr, llvm::Align align, Value *first, Value *row, Value *col,
              bool applyEpilogue);
  void storeTile(llvm::ArrayRef<Value *> accs, Value *row, Value *col, Value *mr, Value *nr,
                 Value *first, Value *last);
  void storeFullTile(llvm::ArrayRef<Value *> accs, Value *row, Value *col, Value *first,
                     bool applyEpilogue);
  void storeEdgeTile(Value *row, Value *col, Value *mr, Value *nr, Value *first,
                     bool applyEpilogue);

  IRBuilderBase &b;
  Blocking blk;
  int64_t mc, nc;
  const GemmOperands &ops;
  const GemmEpilogue &epilogue;
  llvm::Type *f32;
  llvm::FixedVectorType *vecTy;
  Value *packedA = nullptr, *packedB = nullptr, *edgeTile = nullptr;
};

// Fixed-size allocas in the entry block are folded into the frame (no dynamic stack adjustment
// inside loops) and keep the code free of any allocator call.
void GemmEmitter::allocateScratch() {
  BasicBlock &entry = b.GetInsertBlock()->getParent()->getEntryBlock();
  llvm::IRBuilder<> entryBuilder(&entry, entry.getFirstInsertionPt());
  auto allocate = [&](int64_t floats, const char *name) {
    llvm::AllocaInst *buffer =
        entryBuilder.CreateAlloca(llvm::ArrayType::get(f32, floats), nullptr, name);
    buffer->setAlignment(llvm::Align(64));
    return buffer;
  };
  packedA = allocate(blk.kc * roundUp(mc, blk.mr), "gemm.packed_a");
  packedB = allocate(blk.kc * roundUp(nc, blk.nr), "gemm.packed_b");
  edgeTile = allocate(int64_t(blk.mr) * blk.nr, "gemm.edge_tile");
}

// Packs B[p0 .. p0+kcur, col0 .. col0+ncur) into strips of nr columns: strip s holds row p at
// s*kcur*nr + p*nr, zero-padded past ncur so the micro-kernel never needs a column mask.
void GemmEmitter::packB(Value *col0, Value *ncur, Value *p0, Value *kcur) {
  if (ops.loadB)
    return packImplicitB(col0, ncur, p0, kcur);
  const unsigned nr = blk.nr;
  emitFor(i64(0), ncur, nr, "packb.strip", [&](Value *jr) {
    Value *dst = gep(packedB, b.CreateMul(jr, kcur));
    Value *cols = b.CreateSub(ncur, jr);
    Value *firstCol = b.CreateAdd(col0, jr);
    Value *full = b.CreateICmpSGE(cols, i64(nr));
    Value *unitStride = b.CreateICmpEQ(ops.bColStride, i64(1));
    auto srcRow = [&](Value *p) {
      return gep(ops.b, b.CreateMul(b.CreateAdd(p0, p), ops.bRowStride));
    };
    emitIf(
        b.CreateAnd(full, unitStride), "packb.contiguous",
        [&] {
          // Row-major B: each packed row is nr contiguous floats, copied a vector at a time.
          emitFor(i64(0), kcur, 1, "packb.vrow", [&](Value *p) {
            Value *src = gep(srcRow(p), firstCol);
            Value *row = gep(dst, b.CreateMul(p, i64(nr)));
            for (unsigned v = 0; v < blk.vectorsPerRow(); ++v) {
              Value *x = b.CreateAlignedLoad(vecTy, gep(src, v * blk.lanes), llvm::Align(4));
              b.CreateAlignedStore(x, gep(row, v * blk.lanes), vecAlign());
            }
          });
        },
        [&] {
          // Any other stride, or the last partial strip: element by element, clamping the column
          // so the load stays in bounds and selecting zero for the padding.
          emitFor(i64(0), kcur, 1, "packb.row", [&](Value *p) {
            Value *src = srcRow(p);
            Value *row = gep(dst, b.CreateMul(p, i64(nr)));
            Value *lastCol = b.CreateSub(cols, i64(1));
            for (unsigned j = 0; j < nr; ++j) {
              Value *inside = b.CreateICmpSLT(i64(j), cols);
              Value *col = b.CreateSelect(inside, i64(j), lastCol);
              Value *index = b.CreateMul(b.CreateAdd(firstCol, col), ops.bColStride);
              Value *x = b.CreateAlignedLoad(f32, gep(src, index), llvm::Align(4));
              x = b.CreateSelect(inside, x, llvm::ConstantFP::getZero(f32));
              b.CreateAlignedStore(x, gep(row, j), llvm::Align(4));
            }
          });
        });
  });
}

// packB for an implicit B: the same layout, each element from the loader. Columns past ncur load
// the last valid column (in bounds for the loader) and are zeroed. With loadBRow, a full strip row
// that the loader says is contiguous is copied a vector at a time instead.
void GemmEmitter::packImplicitB(Value *col0, Value *ncur, Value *p0, Value *kcur) {
  const unsigned nr = blk.nr;
  emitFor(i64(0), ncur, nr, "packb.strip", [&](Value *jr) {
    Value *dst = gep(packedB, b.CreateMul(jr, kcur));
    Value *cols = b.CreateSub(ncur, jr);
    Value *firstCol = b.CreateAdd(col0, jr);
    Value *lastCol = b.CreateSub(cols, i64(1));
    Value *full = b.CreateICmpSGE(cols, i64(nr));
    // Column indices do not depend on the row: computed once per strip.
    llvm::SmallVector<Value *> inside, colIndex;
    for (unsigned j = 0; j < nr; ++j) {
      inside.push_back(b.CreateICmpSLT(i64(j), cols));
      colIndex.push_back(b.CreateAdd(firstCol, b.CreateSelect(inside.back(), i64(j), lastCol)));
    }
    auto elementRow = [&](Value *k, Value *row) {
      for (unsigned j = 0; j < nr; ++j) {
        Value *x = ops.loadB(b, k, colIndex[j]);
        x = b.CreateSelect(inside[j], x, llvm::ConstantFP::getZero(f32));
        b.CreateAlignedStore(x, gep(row, j), llvm::Align(4));
      }
    };
    emitFor(i64(0), kcur, 1, "packb.irow", [&](Value *p) {
      Value *k = b.CreateAdd(p0, p);
      Value *row = gep(dst, b.CreateMul(p, i64(nr)));
      if (!ops.loadBRow)
        return elementRow(k, row);
      auto [source, contiguous] = ops.loadBRow(b, k, firstCol, nr);
      Value *src = source; // a lambda may not capture a structured binding (clang 14)
      emitIf(
          b.CreateAnd(full, contiguous), "packb.interior",
          [&] {
            for (unsigned v = 0; v < blk.vectorsPerRow(); ++v) {
              Value *x = b.CreateAlignedLoad(vecTy, gep(src, v * blk.lanes), llvm::Align(4));
              b.CreateAlignedStore(x, gep(row, v * blk.lanes), vecAlign());
            }
          },
          [&] { elementRow(k, row); });
    });
  });
}

// Packs A[row0 .. row0+mcur, p0 .. p0+kcur) into strips of mr rows: strip s holds column p at
// s*kcur*mr + p*mr (the mr values the micro-kernel broadcasts at step p), zero-padded past mcur.
void GemmEmitter::packA(Value *row0, Value *mcur, Value *p0, Value *kcur) {
  const unsigned mr = blk.mr;
  emitFor(i64(0), mcur, mr, "packa.strip", [&](Value *ir) {
    Value *dst = gep(packedA, b.CreateMul(ir, kcur));
    Value *rows = b.CreateSub(mcur, ir);
    Value *lastRow = b.CreateSub(rows, i64(1));
    Value *firstRow = b.CreateAdd(row0, ir);
    // Row offsets do not depend on p: computed once per strip, clamped for the last strip.
    llvm::SmallVector<Value *> rowBase, inside;
    for (unsigned i = 0; i < mr; ++i) {
      inside.push_back(b.CreateICmpSLT(i64(i), rows));
      Value *row = b.CreateAdd(firstRow, b.CreateSelect(inside.back(), i64(i), lastRow));
      rowBase.push_back(gep(ops.a, b.CreateMul(row, ops.aRowStride)));
    }
    emitFor(i64(0), kcur, 1, "packa.col", [&](Value *p) {
      Value *offset = b.CreateMul(b.CreateAdd(p0, p), ops.aColStride);
      Value *column = gep(dst, b.CreateMul(p, i64(mr)));
      for (unsigned i = 0; i < mr; ++i) {
        Value *x = b.CreateAlignedLoad(f32, gep(rowBase[i], offset), llvm::Align(4));
        x = b.CreateSelect(inside[i], x, llvm::ConstantFP::getZero(f32));
        b.CreateAlignedStore(x, gep(column, i), llvm::Align(4));
      }
    });
  });
}

// The K loop over one packed A strip and B strip, accumulators carried in phis so they stay in
// registers. Returns the mr x (nr/lanes) accumulator vectors, row-major; zero when kcur == 0.
llvm::SmallVector<Value *> GemmEmitter::emitMicroKernel(Value *pa, Value *pb, Value *kcur) {
  const unsigned nv = blk.vectorsPerRow();
  const unsigned count = blk.mr * nv;
  llvm::LLVMContext &ctx = b.getContext();
  llvm::Function *fn = b.GetInsertBlock()->getParent();
  BasicBlock *pre = b.GetInsertBlock();
  BasicBlock *loop = BasicBlock::Create(ctx, "ukernel.k", fn);
  BasicBlock *exit = BasicBlock::Create(ctx, "ukernel.done", fn);
  Value *zero = llvm::ConstantAggregateZero::get(vecTy);
  b.CreateCondBr(b.CreateICmpSGT(kcur, i64(0)), loop, exit);

  b.SetInsertPoint(loop);
  llvm::PHINode *p = b.CreatePHI(b.getInt64Ty(), 2, "p");
  p->addIncoming(i64(0), pre);
  llvm::SmallVector<llvm::PHINode *> accPhis;
  for (unsigned i = 0; i < count; ++i) {
    accPhis.push_back(b.CreatePHI(vecTy, 2, "acc"));
    accPhis.back()->addIncoming(zero, pre);
  }
  Value *aStep = gep(pa, b.CreateMul(p, i64(blk.mr)));
  Value *bStep = gep(pb, b.CreateMul(p, i64(blk.nr)));
  llvm::SmallVector<Value *> bVectors;
  for (unsigned v = 0; v < nv; ++v)
    bVectors.push_back(b.CreateAlignedLoad(vecTy, gep(bStep, v * blk.lanes), vecAlign()));
  llvm::SmallVector<Value *> next(count);
  for (unsigned i = 0; i < blk.mr; ++i) {
    Value *a = b.CreateAlignedLoad(f32, gep(aStep, i), llvm::Align(4));
    Value *aSplat = b.CreateVectorSplat(blk.lanes, a);
    for (unsigned v = 0; v < nv; ++v)
      next[i * nv + v] = b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vecTy},
                                           {aSplat, bVectors[v], accPhis[i * nv + v]});
  }
  Value *pNext = b.CreateAdd(p, i64(1), "p.next", /*HasNUW=*/true, /*HasNSW=*/true);
  p->addIncoming(pNext, loop);
  for (unsigned i = 0; i < count; ++i)
    accPhis[i]->addIncoming(next[i], loop);
  b.CreateCondBr(b.CreateICmpSLT(pNext, kcur), loop, exit);

  b.SetInsertPoint(exit);
  llvm::SmallVector<Value *> result;
  for (unsigned i = 0; i < count; ++i) {
    llvm::PHINode *acc = b.CreatePHI(vecTy, 2, "acc.final");
    acc->addIncoming(zero, pre);
    acc->addIncoming(next[i], loop);
    result.push_back(acc);
  }
  return result;
}

// Adds what earlier K blocks left in C (unless this is the first block, which overwrites, so C
// need not be zeroed), applies the epilogue on the last block, and stores. `acc` is a vector or,
// in column tails, a scalar.
void GemmEmitter::finish(Value *acc, Value *ptr, llvm::Align align, Value *first, Value *row,
                         Value *col, bool applyEpilogue) {
  llvm::Type *type = acc->getType();
  // Loading C on the first block too keeps this branch-free; the select discards whatever is there.
  Value *old = b.CreateAlignedLoad(type, ptr, align);
  Value *sum = b.CreateFAdd(acc, b.CreateSelect(first, llvm::Constant::getNullValue(type), old));
  if (applyEpilogue)
    sum = epilogue(b, sum, row, col);
  b.CreateAlignedStore(sum, ptr, align);
}

void GemmEmitter::storeFullTile(llvm::ArrayRef<Value *> accs, Value *row, Value *col, Value *first,
                                bool applyEpilogue) {
  const unsigned nv = blk.vectorsPerRow();
  for (unsigned i = 0; i < blk.mr; ++i) {
    Value *rowIndex = b.CreateAdd(row, i64(i));
    Value *rowPtr = gep(ops.c, b.CreateAdd(b.CreateMul(rowIndex, ops.cRowStride), col));
    for (unsigned v = 0; v < nv; ++v)
      finish(accs[i * nv + v], gep(rowPtr, v * blk.lanes), llvm::Align(4), first, rowIndex,
             b.CreateAdd(col, i64(v * blk.lanes)), applyEpilogue);
  }
}

// A partial tile goes through the stack copy in edgeTile: whole vectors while they fit in the
// valid columns, then scalars, so nothing outside the mr x nr corner of C is touched.
void GemmEmitter::storeEdgeTile(Value *row, Value *col, Value *mr, Value *nr, Value *first,
                                bool applyEpilogue) {
  const int64_t lanes = blk.lanes;
  Value *vectorCols = b.CreateAnd(nr, i64(~(lanes - 1)));
  emitFor(i64(0), mr, 1, "edge.row", [&](Value *i) {
    Value *rowIndex = b.CreateAdd(row, i);
    Value *rowPtr = gep(ops.c, b.CreateAdd(b.CreateMul(rowIndex, ops.cRowStride), col));
    Value *tileRow = gep(edgeTile, b.CreateMul(i, i64(blk.nr)));
    emitFor(i64(0), vectorCols, lanes, "edge.vec", [&](Value *j) {
      Value *acc = b.CreateAlignedLoad(vecTy, gep(tileRow, j), vecAlign());
      finish(acc, gep(rowPtr, j), llvm::Align(4), first, rowIndex, b.CreateAdd(col, j),
             applyEpilogue);
    });
    emitFor(vectorCols, nr, 1, "edge.scalar", [&](Value *j) {
      Value *acc = b.CreateAlignedLoad(f32, gep(tileRow, j), llvm::Align(4));
      finish(acc, gep(rowPtr, j), llvm::Align(4), first, rowIndex, b.CreateAdd(col, j),
             applyEpilogue);
    });
  });
}

void GemmEmitter::storeTile(llvm::ArrayRef<Value *> accs, Value *row, Value *col, Value *mr,
                            Value *nr, Value *first, Value *last) {
  // Both store paths are emitted with and without the epilogue; `last` picks one per micro-tile
  // so the epilogue runs exactly once per element, after the whole K sum.
  auto withEpilogue = [&](llvm::function_ref<void(bool)> store) {
    if (!epilogue)
      return store(false);
    emitIf(
        last, "gemm.last", [&] { store(true); }, [&] { store(false); });
  };
  Value *full = b.CreateAnd(b.CreateICmpEQ(mr, i64(blk.mr)), b.CreateICmpEQ(nr, i64(blk.nr)));
  emitIf(
      full, "gemm.full",
      [&] { withEpilogue([&](bool apply) { storeFullTile(accs, row, col, first, apply); }); },
      [&] {
        const unsigned nv = blk.vectorsPerRow();
        for (unsigned i = 0; i < blk.mr; ++i)
          for (unsigned v = 0; v < nv; ++v)
            b.CreateAlignedStore(accs[i * nv + v], gep(edgeTile, i * blk.nr + v * blk.lanes),
                                 vecAlign());
        withEpilogue([&](bool apply) { storeEdgeTile(row, col, mr, nr, first, apply); });
      });
}

// Tile t covers rows [tm*mc, ..) and columns [tn*nc, ..) with tm = t mod tilesM: consecutive
// tiles share columns of B. Inside a tile: for each kc block, pack B and A, then sweep nr strips
// of B (each stays in L1) across all mr strips of A (in L2).
void GemmEmitter::emit(Value *tileBegin, Value *tileEnd) {
  allocateScratch();
  Value *tilesM = ceilDiv(ops.m, mc);
  Value *tileCount = b.CreateMul(tilesM, ceilDiv(ops.n, nc));
  // K == 0 still runs one (empty) block so every element gets epilogue(0).
  Value *kBlocks = b.CreateSelect(b.CreateICmpSGT(ops.k, i64(0)), ceilDiv(ops.k, blk.kc), i64(1));
  emitFor(tileBegin, min(tileEnd, tileCount), 1, "gemm.tile", [&](Value *t) {
    Value *row0 = b.CreateMul(b.CreateURem(t, tilesM), i64(mc));
    Value *col0 = b.CreateMul(b.CreateUDiv(t, tilesM), i64(nc));
    Value *mcur = min(i64(mc), b.CreateSub(ops.m, row0));
    Value *ncur = min(i64(nc), b.CreateSub(ops.n, col0));
    emitFor(i64(0), kBlocks, 1, "gemm.kblock", [&](Value *kb) {
      Value *p0 = b.CreateMul(kb, i64(blk.kc));
      Value *kcur = min(i64(blk.kc), b.CreateSub(ops.k, p0));
      Value *first = b.CreateICmpEQ(kb, i64(0));
      Value *last = b.CreateICmpEQ(kb, b.CreateSub(kBlocks, i64(1)));
      packB(col0, ncur, p0, kcur);
      packA(row0, mcur, p0, kcur);
      emitFor(i64(0), ncur, blk.nr, "gemm.jr", [&](Value *jr) {
        Value *pb = gep(packedB, b.CreateMul(jr, kcur));
        Value *nr = min(i64(blk.nr), b.CreateSub(ncur, jr));
        emitFor(i64(0), mcur, blk.mr, "gemm.ir", [&](Value *ir) {
          Value *pa = gep(packedA, b.CreateMul(ir, kcur));
          Value *mr = min(i64(blk.mr), b.CreateSub(mcur, ir));
          llvm::SmallVector<Value *> accs = emitMicroKernel(pa, pb, kcur);
          storeTile(accs, b.CreateAdd(row0, ir), b.CreateAdd(col0, jr), mr, nr, first, last);
        });
      });
    });
  });
}

} // namespace

GemmTiling chooseGemmTiling(const CpuTarget &target) {
  Blocking blk = blockingFor(target);
  // mc x kc of packed A sits in L2 next to the kc x nc panel of B; both are multiples of the
  // micro-tile. Stack use is kc * (mc + nc) floats: 300 to 400 KiB. Not tuned beyond AVX2.
  switch (blk.lanes) {
  case 16:
    return {144, 256};
  case 8:
    return {144, 256};
  case 4:
    return {128, 240};
  default:
    return {int64_t(blk.mr) * 16, int64_t(blk.nr) * 8};
  }
}

Value *emitGemmTileCount(IRBuilderBase &b, const GemmTiling &tiling, Value *m, Value *n) {
  auto ceilDiv = [&](Value *x, int64_t d) {
    return b.CreateUDiv(b.CreateAdd(x, b.getInt64(d - 1)), b.getInt64(d));
  };
  return b.CreateMul(ceilDiv(m, tiling.mc), ceilDiv(n, tiling.nc));
}

void emitGemmTiles(IRBuilderBase &b, const CpuTarget &target, const GemmTiling &tiling,
                   const GemmOperands &ops, Value *tileBegin, Value *tileEnd,
                   const GemmEpilogue &epilogue) {
  // Emitting in the middle of a block: split it, emit between the halves, continue in the rest.
  BasicBlock *block = b.GetInsertBlock();
  BasicBlock *rest = nullptr;
  if (b.GetInsertPoint() != block->end()) {
    rest = block->splitBasicBlock(b.GetInsertPoint(), "gemm.cont");
    block->getTerminator()->eraseFromParent();
    b.SetInsertPoint(block);
  }
  GemmEmitter(b, blockingFor(target), tiling, ops, epilogue).emit(tileBegin, tileEnd);
  if (rest) {
    b.CreateBr(rest);
    b.SetInsertPoint(rest, rest->begin());
  }
}

} // namespace tensorc::cpu
