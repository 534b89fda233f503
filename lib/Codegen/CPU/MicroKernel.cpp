// The R x S f32 micro-kernels: accumulators in registers across every segment of K, A broadcast
// one element per row and K step, B loaded as strips, the tile stored (or added) once at the end.
#include "MicroKernel.h"

#include "IRLoops.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace tensorc::cpu {

using llvm::Value;

unsigned MicroTiles::stripsFor(unsigned rows) const {
  return std::clamp(accumulators / (rows * vectorsPerStrip()), 1u, maxStrips);
}

MicroTiles microTilesFor(const CpuTarget &target) {
  switch (std::max(1u, target.f32Lanes())) {
  case 16: // AVX-512: 24 accumulators (12 x 32), 2 B vectors, broadcasts folded into the FMAs
    return {16, 12, 24, 4};
  case 8: // AVX2: 12 accumulators (6 x 16), 2 B vectors, 1 broadcast of 16 ymm
    return {8, 6, 12, 4};
  default: // NEON: 24 accumulators (6 x 16), 4 B vectors, broadcasts of 32 q registers
    return {4, 6, 24, 4};
  }
}

namespace {

/// K steps unrolled per iteration of the main K loop.
constexpr int64_t kUnroll = 4;

/// How far ahead (in K steps, a 64-byte line of each strip per step) the main K loop prefetches
/// B. The first row group of a tile to read a block of B fetches it from memory (a model's
/// weights at batch 1 are not in cache), where the hardware's stream prefetch runs too short a
/// distance ahead of a micro-kernel consuming two lines every 12 cycles; 2 KiB ahead per strip,
/// ResNet-50's 7x7 stage on a 2-core VM ran 12-13% faster at one and two threads (its weights
/// are 60 of the model's 100 MB), the 14x14 stage 3-5%, the model 3.5-5% (bench/layers.py), with
/// no change on GEMMs whose B stays in cache (1024^3).
constexpr int64_t kPrefetchSteps = 32;

class MicroKernelEmitter {
public:
  MicroKernelEmitter(llvm::Function *fn, const MicroTiles &tiles, unsigned rows, unsigned strips)
      : fn(fn), b(llvm::BasicBlock::Create(fn->getContext(), "entry", fn)), tiles(tiles),
        rowCount(rows), stripCount(strips), f32(b.getFloatTy()),
        vecTy(llvm::FixedVectorType::get(f32, tiles.lanes)) {}

  void emit();

private:
  Value *arg(unsigned i) { return fn->getArg(i); }
  Value *i64(int64_t v) { return b.getInt64(v); }
  Value *gep(Value *base, Value *index) { return b.CreateInBoundsGEP(f32, base, index); }
  Value *gep(Value *base, int64_t index) { return gep(base, i64(index)); }
  unsigned vectorsPerRow() const { return stripCount * tiles.vectorsPerStrip(); }

  /// One K step at offset `p` of the rows and `bp` into the strips: returns the accumulators.
  CarriedValues step(llvm::ArrayRef<Value *> rowPtrs, Value *p, Value *bp, Value *bStripStride,
                     llvm::ArrayRef<Value *> accs);
  void store(llvm::ArrayRef<Value *> accs);
  /// Prefetches the lines of B that `steps` K steps kPrefetchSteps ahead of `bp` read (each
  /// strip's), into L1; past the end of a strip they are the next strip's first lines.
  void emitPrefetchB(Value *bp, Value *bStripStride, int64_t steps);

  llvm::Function *fn;
  llvm::IRBuilder<> b;
  MicroTiles tiles;
  unsigned rowCount, stripCount;
  llvm::Type *f32;
  llvm::FixedVectorType *vecTy;
};

CarriedValues MicroKernelEmitter::step(llvm::ArrayRef<Value *> rowPtrs, Value *p, Value *bp,
                                       Value *bStripStride, llvm::ArrayRef<Value *> accs) {
  const unsigned vps = tiles.vectorsPerStrip();
  llvm::SmallVector<Value *, 8> bVectors;
  for (unsigned s = 0; s < stripCount; ++s) {
    Value *strip = s ? gep(bp, b.CreateMul(bStripStride, i64(s))) : bp;
    for (unsigned v = 0; v < vps; ++v)
      bVectors.push_back(
          b.CreateAlignedLoad(vecTy, gep(strip, int64_t(v * tiles.lanes)), llvm::Align(4)));
  }
  CarriedValues next(accs.begin(), accs.end());
  for (unsigned i = 0; i < rowCount; ++i) {
    Value *a = b.CreateAlignedLoad(f32, gep(rowPtrs[i], p), llvm::Align(4));
    Value *splat = b.CreateVectorSplat(tiles.lanes, a);
    for (unsigned v = 0; v < vectorsPerRow(); ++v) {
      unsigned index = i * vectorsPerRow() + v;
      next[index] =
          b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vecTy}, {splat, bVectors[v], accs[index]});
    }
  }
  return next;
}

void MicroKernelEmitter::emitPrefetchB(Value *bp, Value *bStripStride, int64_t steps) {
  for (unsigned s = 0; s < stripCount; ++s) {
    Value *strip = s ? gep(bp, b.CreateMul(bStripStride, i64(s))) : bp;
    for (int64_t u = 0; u < steps; ++u)
      // Not inbounds: near the end of B the address is past it (a prefetch never faults).
      b.CreateIntrinsic(llvm::Intrinsic::prefetch, {b.getPtrTy()},
                        {b.CreateGEP(f32, strip, i64((kPrefetchSteps + u) * 16)),
                         b.getInt32(0) /*read*/, b.getInt32(3) /*to L1*/, b.getInt32(1) /*data*/});
  }
}

void MicroKernelEmitter::store(llvm::ArrayRef<Value *> accs) {
  Value *c = arg(5), *cRowStride = arg(6), *cStripStride = arg(7), *cols = arg(8);
  Value *accumulate = arg(9);
  const unsigned vps = tiles.vectorsPerStrip();
  auto vectorPtr = [&](unsigned i, unsigned v) {
    unsigned strip = v / vps, lane0 = (v % vps) * tiles.lanes;
    Value *offset = b.CreateAdd(b.CreateMul(i64(i), cRowStride),
                                b.CreateAdd(b.CreateMul(i64(strip), cStripStride), i64(lane0)));
    return gep(c, offset);
  };
  auto storeAll = [&](bool add, bool masked) {
    llvm::SmallVector<Value *, 8> masks;
    if (masked) {
      llvm::SmallVector<llvm::Constant *, 16> laneIndex;
      for (unsigned j = 0; j < tiles.lanes; ++j)
        laneIndex.push_back(b.getInt64(j));
      Value *lanes = llvm::ConstantVector::get(laneIndex);
      Value *limit = b.CreateVectorSplat(tiles.lanes, cols);
      for (unsigned v = 0; v < vectorsPerRow(); ++v) {
        Value *first = b.CreateVectorSplat(tiles.lanes, i64(int64_t(v) * tiles.lanes));
        masks.push_back(b.CreateICmpSLT(b.CreateAdd(first, lanes), limit));
      }
    }
    for (unsigned i = 0; i < rowCount; ++i)
      for (unsigned v = 0; v < vectorsPerRow(); ++v) {
        Value *ptr = vectorPtr(i, v);
        Value *value = accs[i * vectorsPerRow() + v];
        if (masked) {
          if (add)
            value = b.CreateFAdd(value, b.CreateMaskedLoad(vecTy, ptr, llvm::Align(4), masks[v],
                                                           llvm::Constant::getNullValue(vecTy)));
          b.CreateMaskedStore(value, ptr, llvm::Align(4), masks[v]);
        } else {
          if (add)
            value = b.CreateFAdd(value, b.CreateAlignedLoad(vecTy, ptr, llvm::Align(4)));
          b.CreateAlignedStore(value, ptr, llvm::Align(4));
        }
      }
  };
  Value *full = b.CreateICmpEQ(cols, i64(int64_t(stripCount) * 16));
  emitIf(
      b, full, "full",
      [&] {
        emitIf(
            b, accumulate, "add", [&] { storeAll(true, false); }, [&] { storeAll(false, false); });
      },
      [&] {
        emitIf(
            b, accumulate, "add", [&] { storeAll(true, true); }, [&] { storeAll(false, true); });
      });
}

void MicroKernelEmitter::emit() {
  Value *rows = arg(0), *segments = arg(1), *kseg = arg(2), *bStart = arg(3);
  Value *bStripStride = arg(4);
  llvm::Type *ptrTy = b.getPtrTy();
  CarriedValues init(size_t(rowCount) * vectorsPerRow(), llvm::Constant::getNullValue(vecTy));
  init.push_back(bStart);
  Value *mainSteps = b.CreateAnd(kseg, i64(~(kUnroll - 1)));
  CarriedValues done = emitLoop(
      b, i64(0), segments, 1, init, "seg", [&](Value *seg, llvm::ArrayRef<Value *> carried) {
        llvm::SmallVector<Value *, 16> rowPtrs;
        Value *first = b.CreateMul(seg, i64(rowCount));
        for (unsigned i = 0; i < rowCount; ++i)
          rowPtrs.push_back(b.CreateAlignedLoad(
              ptrTy, b.CreateInBoundsGEP(ptrTy, rows, b.CreateAdd(first, i64(i))), llvm::Align(8)));
        // Main loop: kUnroll steps per iteration; then the remaining steps one at a time.
        auto steps = [&](Value *begin, Value *end, int64_t unroll, llvm::ArrayRef<Value *> in) {
          return emitLoop(b, begin, end, unroll, in, unroll > 1 ? "k" : "ktail",
                          [&](Value *p, llvm::ArrayRef<Value *> accs) {
                            CarriedValues state(accs.drop_back());
                            Value *bp = accs.back();
                            if (unroll > 1)
                              emitPrefetchB(bp, bStripStride, unroll);
                            for (int64_t u = 0; u < unroll; ++u)
                              state = step(rowPtrs, b.CreateAdd(p, i64(u)), gep(bp, u * 16),
                                           bStripStride, state);
                            state.push_back(gep(bp, unroll * 16));
                            return state;
                          });
        };
        CarriedValues state = steps(i64(0), mainSteps, kUnroll, carried);
        return steps(mainSteps, kseg, 1, state);
      });
  done.pop_back();
  store(done);
  b.CreateRetVoid();
}

constexpr const char *kMicroKernelPrefix = "tensorc.ukernel.";

std::string kernelName(const CpuTarget &target, unsigned rows, unsigned strips) {
  return kMicroKernelPrefix + target.name + "." + std::to_string(rows) + "x" +
         std::to_string(strips);
}

} // namespace

namespace {

/// Every R x S shape of `target`'s micro-kernels.
std::vector<std::pair<unsigned, unsigned>> allShapes(const CpuTarget &target) {
  MicroTiles tiles = microTilesFor(target);
  std::vector<std::pair<unsigned, unsigned>> shapes;
  for (unsigned rows = 1; rows <= tiles.mr; ++rows)
    for (unsigned strips = 1; strips <= tiles.stripsFor(rows); ++strips)
      shapes.emplace_back(rows, strips);
  return shapes;
}

/// The micro-kernel's function without a body: its signature and the attributes callers may rely
/// on (it writes memory only through C, reads only through its pointers, never frees or throws).
llvm::Function *createMicroKernel(llvm::Module &module, const CpuTarget &target, unsigned rows,
                                  unsigned strips, llvm::GlobalValue::LinkageTypes linkage) {
  llvm::LLVMContext &ctx = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(ctx);
  llvm::Type *i64 = llvm::Type::getInt64Ty(ctx);
  llvm::Type *i1 = llvm::Type::getInt1Ty(ctx);
  auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx),
                                       {ptr, i64, i64, ptr, i64, ptr, i64, i64, i64, i1}, false);
  auto *fn = llvm::Function::Create(type, linkage, kernelName(target, rows, strips), module);
  if (linkage != llvm::GlobalValue::InternalLinkage)
    fn->setVisibility(llvm::GlobalValue::HiddenVisibility);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  fn->addFnAttr(llvm::Attribute::NoFree);
  fn->addFnAttr(llvm::Attribute::NoSync);
  fn->setMemoryEffects(llvm::MemoryEffects::readOnly() |
                       llvm::MemoryEffects::argMemOnly(llvm::ModRefInfo::ModRef));
  fn->addFnAttr(llvm::Attribute::NoInline); // one copy shared by every kernel
  fn->addFnAttr("no-builtins");
  fn->addFnAttr("target-cpu", target.cpu);
  fn->addFnAttr("target-features", target.features);
  for (unsigned i : {0u, 3u, 5u}) {
    fn->addParamAttr(i, llvm::Attribute::NoAlias);
    fn->addParamAttr(i, llvm::Attribute::NoCapture);
  }
  for (unsigned i : {0u, 3u})
    fn->addParamAttr(i, llvm::Attribute::ReadOnly);
  return fn;
}

} // namespace

llvm::Function *getMicroKernel(llvm::Module &module, const CpuTarget &target, unsigned rows,
                               unsigned strips) {
  if (llvm::Function *existing = module.getFunction(kernelName(target, rows, strips)))
    return existing;
  llvm::Function *fn =
      createMicroKernel(module, target, rows, strips, llvm::Function::InternalLinkage);
  MicroKernelEmitter(fn, microTilesFor(target), rows, strips).emit();
  return fn;
}

void declareMicroKernels(llvm::Module &module, const CpuTarget &target) {
  for (auto [rows, strips] : allShapes(target))
    if (!module.getFunction(kernelName(target, rows, strips)))
      createMicroKernel(module, target, rows, strips, llvm::Function::ExternalLinkage);
}

std::vector<std::pair<unsigned, unsigned>> usedMicroKernels(llvm::Module &module,
                                                            const CpuTarget &target) {
  std::vector<std::pair<unsigned, unsigned>> used;
  for (auto [rows, strips] : allShapes(target)) {
    llvm::Function *fn = module.getFunction(kernelName(target, rows, strips));
    if (!fn || !fn->isDeclaration())
      continue;
    if (fn->use_empty())
      fn->eraseFromParent();
    else
      used.emplace_back(rows, strips);
  }
  return used;
}

std::vector<std::string>
defineMicroKernels(llvm::Module &module, const CpuTarget &target,
                   const std::vector<std::pair<unsigned, unsigned>> &shapes) {
  std::vector<std::string> names;
  for (auto [rows, strips] : shapes) {
    llvm::Function *fn =
        createMicroKernel(module, target, rows, strips, llvm::Function::ExternalLinkage);
    MicroKernelEmitter(fn, microTilesFor(target), rows, strips).emit();
    names.push_back(fn->getName().str());
  }
  return names;
}

bool isMicroKernelDeclaration(const llvm::Function &function) {
  return function.isDeclaration() && function.getName().starts_with(kMicroKernelPrefix);
}

namespace {

void emitCall(llvm::IRBuilderBase &b, llvm::Function *fn, const MicroKernelArgs &a) {
  b.CreateCall(fn, {a.rows, a.segments, a.kseg, a.b, a.bStripStride, a.c, a.cRowStride,
                    a.cStripStride, a.cols, a.accumulate});
}

/// switch (value) { case 1..count: caseBody(n) }, nothing for other values.
void emitSwitch(llvm::IRBuilderBase &b, Value *value, unsigned count, const llvm::Twine &name,
                llvm::function_ref<void(unsigned)> caseBody) {
  llvm::Function *fn = b.GetInsertBlock()->getParent();
  llvm::LLVMContext &ctx = b.getContext();
  llvm::BasicBlock *join = llvm::BasicBlock::Create(ctx, name + ".join", fn);
  llvm::SwitchInst *sw = b.CreateSwitch(value, join, count);
  for (unsigned n = 1; n <= count; ++n) {
    llvm::BasicBlock *block = llvm::BasicBlock::Create(ctx, name + "." + llvm::Twine(n), fn);
    sw->addCase(b.getInt64(n), block);
    b.SetInsertPoint(block);
    caseBody(n);
    b.CreateBr(join);
  }
  join->moveAfter(&fn->back());
  b.SetInsertPoint(join);
}

} // namespace

void emitMicroKernelCall(llvm::IRBuilderBase &b, const CpuTarget &target, unsigned rows,
                         Value *strips, const MicroKernelArgs &args) {
  llvm::Module &module = *b.GetInsertBlock()->getModule();
  unsigned maxStrips = microTilesFor(target).stripsFor(rows);
  if (auto *constant = llvm::dyn_cast<llvm::ConstantInt>(strips)) {
    emitCall(b, getMicroKernel(module, target, rows, unsigned(constant->getZExtValue())), args);
    return;
  }
  emitSwitch(b, strips, maxStrips, "ustrips",
             [&](unsigned s) { emitCall(b, getMicroKernel(module, target, rows, s), args); });
}

void emitMicroKernelCall(llvm::IRBuilderBase &b, const CpuTarget &target, Value *rows,
                         Value *strips, const MicroKernelArgs &args) {
  if (auto *constant = llvm::dyn_cast<llvm::ConstantInt>(rows))
    return emitMicroKernelCall(b, target, unsigned(constant->getZExtValue()), strips, args);
  emitSwitch(b, rows, microTilesFor(target).mr, "urows",
             [&](unsigned r) { emitMicroKernelCall(b, target, r, strips, args); });
}

Value *emitStripsFor(llvm::IRBuilderBase &b, const MicroTiles &tiles, Value *rows) {
  // A select chain over the row counts whose strip count differs from the previous one.
  Value *result = b.getInt64(tiles.stripsFor(tiles.mr));
  for (unsigned r = tiles.mr; r-- > 1;)
    if (tiles.stripsFor(r) != tiles.stripsFor(r + 1))
      result = b.CreateSelect(b.CreateICmpSLE(rows, b.getInt64(r)), b.getInt64(tiles.stripsFor(r)),
                              result);
  return result;
}

void emitEpilogue(llvm::IRBuilderBase &b, const CpuTarget &target, const GemmEpilogue &epilogue,
                  const TileView &from, const TileView &to, Value *rows, Value *cols, Value *row0,
                  Value *col0) {
  const int64_t lanes = std::max(1u, target.f32Lanes());
  llvm::Type *f32 = b.getFloatTy();
  auto *vecTy = llvm::FixedVectorType::get(f32, unsigned(lanes));
  // A strip's row (16 columns) at a time where the target's vectors are narrower: the epilogue's
  // operations on the row's vectors come out side by side (a <16 x float> operation is split
  // into adjacent vector instructions), so their dependency chains (an exp or a division takes a
  // few dozen dependent instructions) overlap instead of filling the scheduler one chain at a
  // time.
  auto *stripTy = llvm::FixedVectorType::get(f32, 16);
  Value *stripCols = b.CreateAnd(cols, b.getInt64(~int64_t(15)));
  Value *vectorCols = b.CreateAnd(cols, b.getInt64(~(lanes - 1)));
  emitFor(b, b.getInt64(0), rows, 1, "epi.row", [&](Value *i) {
    auto at = [&](const TileView &view, Value *j) {
      // 16 % lanes == 0 and j % lanes == 0: a vector never crosses a strip.
      Value *offset =
          b.CreateAdd(b.CreateMul(i, view.rowStride),
                      b.CreateAdd(b.CreateMul(b.CreateUDiv(j, b.getInt64(16)), view.stripStride),
                                  b.CreateURem(j, b.getInt64(16))));
      return b.CreateInBoundsGEP(f32, view.base, offset);
    };
    auto apply = [&](llvm::Type *type, Value *j) {
      Value *acc = b.CreateAlignedLoad(type, at(from, j), llvm::Align(4));
      Value *out = epilogue(b, acc, b.CreateAdd(row0, i), b.CreateAdd(col0, j));
      b.CreateAlignedStore(out, at(to, j), llvm::Align(4));
    };
    Value *vectorFrom = b.getInt64(0);
    if (lanes > 1 && lanes < 16) {
      emitFor(b, b.getInt64(0), stripCols, 16, "epi.strip", [&](Value *j) { apply(stripTy, j); });
      vectorFrom = stripCols;
    }
    emitFor(b, vectorFrom, vectorCols, lanes, "epi.vec", [&](Value *j) { apply(vecTy, j); });
    emitFor(b, vectorCols, cols, 1, "epi.scalar", [&](Value *j) { apply(f32, j); });
  });
}

void emitEpilogueInPlace(llvm::IRBuilderBase &b, const CpuTarget &target,
                         const GemmEpilogue &epilogue, Value *tile, Value *rowStride,
                         Value *stripStride, Value *rows, Value *cols, Value *row0, Value *col0) {
  TileView view{tile, rowStride, stripStride};
  emitEpilogue(b, target, epilogue, view, view, rows, cols, row0, col0);
}

llvm::AllocaInst *emitEpilogueScratch(llvm::IRBuilderBase &b, const MicroTiles &tiles) {
  // rows x strips never exceeds the accumulators over the vectors per strip.
  uint64_t elements = uint64_t(tiles.accumulators / tiles.vectorsPerStrip()) * 16;
  return emitEntryAlloca(b, llvm::ArrayType::get(b.getFloatTy(), elements), "epi.scratch");
}

} // namespace tensorc::cpu
