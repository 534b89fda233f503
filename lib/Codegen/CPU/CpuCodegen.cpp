// CPU kernels from the schedule: the kernel entry and loop nests (vectorized innermost dims with
// scalar tails), emitted as LLVM IR (templates: CpuTemplateKernels.cpp; modules, optimization and
// linking: CpuModules.cpp).
#include "tensorc/Codegen/CPU/CpuCodegen.h"

#include "ExprEmitter.h"
#include "IRLoops.h"
#include "KernelEmitter.h"
#include "ObjectLinker.h"
#include "tensorc/Codegen/CPU/Conv.h"
#include "tensorc/Codegen/CPU/Gemm.h"
#include "tensorc/Codegen/CPU/PackGemmWeights.h"
#include "tensorc/Codegen/CPU/PackedGemm.h"
#include "tensorc/Codegen/Common/KernelWalker.h"
#include "tensorc/Codegen/Common/Legalize.h"
#include "tensorc/Lowering/ExprVisitor.h"
#include "tensorc/Lowering/IndexSplit.h"
#include "tensorc/Support/Parallel.h"
#include "tensorc/Support/StrCat.h"
#include "tensorc/Support/Timing.h"

#include <llvm/ADT/STLFunctionalExtras.h>
#include <llvm/Analysis/VectorUtils.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalAlias.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <array>
#include <atomic>
#include <functional>
#include <set>
#include <unordered_map>

namespace tensorc::cpu {

using llvm::BasicBlock;
using llvm::Value;
using loop::LoopNode;
using loop::ReduceOp;

void KernelEmitter::setAttributes(llvm::Function *function) {
  function->addFnAttr(llvm::Attribute::NoUnwind);
  // Keeps loop idioms from becoming memset/memcpy calls: the .so links against nothing.
  function->addFnAttr("no-builtins");
  function->addFnAttr("target-cpu", target.cpu);
  function->addFnAttr("target-features", target.features);
}

void KernelEmitter::createFunctions() {
  llvm::LLVMContext &ctx = module.getContext();
  llvm::Type *ptr = b.getPtrTy();
  llvm::Type *i64Ty = b.getInt64Ty();
  auto *entryType = llvm::FunctionType::get(b.getVoidTy(), {ptr, ptr, i64Ty, i64Ty}, false);
  llvm::Function *entry =
      llvm::Function::Create(entryType, llvm::Function::ExternalLinkage, kernel.name, module);
  setAttributes(entry);

  size_t argCount = kernel.args.size(), symCount = program.symbols.size();
  std::vector<llvm::Type *> params(argCount, ptr);
  params.insert(params.end(), symCount + 2, i64Ty);
  body = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), params, false),
                                llvm::Function::InternalLinkage, kernel.name + ".body", module);
  setAttributes(body);
  body->addFnAttr(llvm::Attribute::AlwaysInline);
  for (size_t i = 0; i < argCount; ++i)
    body->addParamAttr(unsigned(i), llvm::Attribute::NoAlias);

  // Entry: load every buffer pointer and symbol once, then run the body.
  b.SetInsertPoint(BasicBlock::Create(ctx, "entry", entry));
  std::vector<Value *> callArgs;
  Value *args = entry->getArg(0), *syms = entry->getArg(1);
  for (size_t i = 0; i < argCount; ++i)
    callArgs.push_back(b.CreateAlignedLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, args, i),
                                           llvm::Align(8), "arg" + std::to_string(i)));
  for (size_t j = 0; j < symCount; ++j)
    callArgs.push_back(b.CreateAlignedLoad(i64Ty, b.CreateConstInBoundsGEP1_64(i64Ty, syms, j),
                                           llvm::Align(8), program.symbols[j]));
  callArgs.push_back(entry->getArg(2));
  callArgs.push_back(entry->getArg(3));
  b.CreateCall(body, callArgs);
  b.CreateRetVoid();

  b.SetInsertPoint(BasicBlock::Create(ctx, "entry", body));
  std::vector<Value *> buffers(program.buffers.size(), nullptr);
  for (size_t i = 0; i < argCount; ++i) {
    buffers[size_t(kernel.args[i])] = body->getArg(unsigned(i));
    body->getArg(unsigned(i))->setName(program.buffers[size_t(kernel.args[i])].name);
  }
  for (size_t j = 0; j < symCount; ++j) {
    Value *value = body->getArg(unsigned(argCount + j));
    value->setName(program.symbols[j]);
    symbols.vars[program.symbols[j]] = value;
  }
  begin = body->getArg(unsigned(argCount + symCount));
  end = body->getArg(unsigned(argCount + symCount + 1));
  bufferPtrs = buffers;
  ex = std::make_unique<ExprEmitter>(b, program, std::move(buffers));
}

void KernelEmitter::emitLoop(Value *first, Value *last, const llvm::Twine &name,
                             llvm::function_ref<Value *(Value *)> step) {
  emitSteppedLoop(b, first, last, name, step);
}

void KernelEmitter::emitFor(Value *first, Value *last, int64_t step, const llvm::Twine &name,
                            llvm::function_ref<void(Value *)> loopBody) {
  emitLoop(first, last, name, [&](Value *iv) {
    loopBody(iv);
    return b.CreateAdd(iv, i64(step), "", /*HasNUW=*/false, /*HasNSW=*/true);
  });
}

void KernelEmitter::emitVectorized(const EmitScope &scope, const std::string &var, Value *lo,
                                   Value *hi, bool vectorize,
                                   llvm::function_ref<void(const EmitScope &)> loopBody) {
  if (vectorize && lanes > 1) {
    Value *count = b.CreateSub(hi, lo);
    Value *vectorEnd = b.CreateAdd(lo, b.CreateAnd(count, i64(~int64_t(lanes - 1))));
    emitFor(lo, vectorEnd, lanes, var + ".vec", [&](Value *iv) {
      EmitScope inner = scope;
      inner.vars[var] = iv;
      inner.vectorVar = var;
      inner.lanes = lanes;
      loopBody(inner);
    });
    lo = vectorEnd;
  }
  emitFor(lo, hi, 1, var, [&](Value *iv) {
    EmitScope inner = scope;
    inner.vars[var] = iv;
    loopBody(inner);
  });
}

void KernelEmitter::emitWidths(const EmitScope &scope, const std::string &var, Value *lo, Value *hi,
                               llvm::ArrayRef<unsigned> widths,
                               llvm::function_ref<void(const EmitScope &)> loopBody) {
  for (unsigned width : widths) {
    // The last width (1) runs to hi; a wider one while a whole vector is left.
    Value *stop = width == 1 ? hi : b.CreateSub(hi, i64(width - 1));
    emitLoop(lo, stop, var + ".w" + llvm::Twine(width), [&](Value *iv) {
      EmitScope inner = scope;
      inner.vars[var] = iv;
      if (width > 1) {
        inner.vectorVar = var;
        inner.lanes = width;
      }
      loopBody(inner);
      return b.CreateAdd(iv, i64(width), "", /*HasNUW=*/false, /*HasNSW=*/true);
    });
    if (width == 1)
      break;
    // Where the loop stopped: lo plus the whole vectors that fitted.
    Value *count = smax(b.CreateSub(hi, lo), i64(0));
    lo = b.CreateAdd(lo, b.CreateMul(b.CreateUDiv(count, i64(width)), i64(width)));
  }
}

void KernelEmitter::decompose(Value *flat, const std::vector<Value *> &ranges, size_t count,
                              EmitScope &scope) {
  // Loop variables are never negative, so unsigned division is exact and cheaper.
  Value *rest = flat;
  for (size_t i = count; i-- > 1;) {
    scope.vars[loop::loopVar(i)] = b.CreateURem(rest, ranges[i]);
    rest = b.CreateUDiv(rest, ranges[i]);
  }
  if (count > 0)
    scope.vars[loop::loopVar(0)] = rest;
}

llvm::AllocaInst *KernelEmitter::entryAlloca(llvm::Type *type, const llvm::Twine &name) {
  BasicBlock &entry = body->getEntryBlock();
  llvm::IRBuilder<> entryBuilder(&entry, entry.getFirstInsertionPt());
  return entryBuilder.CreateAlloca(type, nullptr, name);
}

// ---- Loop kernels -----------------------------------------------------------------------------

Status KernelEmitter::loopKernel(const codegen::LoopKernel &loopKernel) {
  createFunctions();
  size_t k = kernel.outerRanges.size();
  for (const SymInt &range : kernel.outerRanges)
    outerRanges.push_back(ex->emitIndex(range, symbols));
  const std::vector<const LoopNode *> &stages = loopKernel.stages;
  bool rowMode = k > 0 && loopKernel.elementwise;

  if (!rowMode && reducesAcrossColumns(loopKernel)) {
    emitColumnKernel(loopKernel);
    return Status::ok();
  }
  if (!rowMode) {
    // Per outer index: each stage's own loop nest (a reduction, or inner pointwise dims).
    emitFor(begin, end, 1, "o", [&](Value *o) {
      EmitScope scope = symbols;
      decompose(o, outerRanges, k, scope);
      for (const LoopNode *node : stages) {
        if (node->kind == LoopNode::Kind::Reduction)
          emitReductionStage(*node, scope, o);
        else
          emitPointwiseStage(*node, scope, o);
      }
    });
    return Status::ok();
  }

  if (emitInterleavedRows(loopKernel))
    return Status::ok();
  // Purely elementwise over the outer dims: walk [begin, end) a row segment of the last dim at a
  // time, so the last dim is an inner loop that vectorizes even though it is a parallel dim.
  std::string last = loop::loopVar(k - 1);
  // A body that selects by comparing the last dim with constants (a concatenation along it, as
  // NHWC channels: DenseNet's layers read the concatenation of every earlier layer's output) runs
  // as one loop per piece of the row between those constants, each piece's body specialized to it
  // (loop::splitIndexRange): a plain vectorized copy of one input where the whole body took
  // per-element remainders and selects, scalar.
  std::map<std::string, int64_t> bounds;
  for (size_t d = 0; d + 1 < k; ++d)
    if (std::optional<int64_t> extent = kernel.outerRanges[d].constant())
      bounds[loop::loopVar(d)] = *extent;
  std::optional<int64_t> rowExtent = kernel.outerRanges[k - 1].constant();
  std::vector<std::vector<loop::IndexPiece>> pieces;
  for (const LoopNode *node : stages) {
    std::vector<loop::IndexPiece> split;
    if (rowExtent)
      split = loop::splitIndexRange(node->body, last, *rowExtent, bounds);
    if (split.empty())
      split.push_back({0, 0, node->body}); // the whole row, unshifted
    pieces.push_back(std::move(split));
  }
  emitRowSegments(begin, end, [&](const EmitScope &scope, Value *lo, Value *hi, Value *rowBase) {
    for (size_t s = 0; s < stages.size(); ++s) {
      const LoopNode &node = *stages[s];
      for (const loop::IndexPiece &piece : pieces[s]) {
        // The piece's body reads `last` rebased to the piece's start.
        bool whole = piece.hi == 0;
        Value *shift = i64(piece.lo);
        // Pieces outside the segment come out empty (emitVectorized needs from <= to).
        Value *from = whole ? lo : b.CreateSub(smax(lo, shift), shift);
        Value *to = whole ? hi : smax(from, b.CreateSub(smin(hi, i64(piece.hi)), shift));
        emitVectorized(
            scope, last, from, to, isVectorizable(piece.body, last), [&](const EmitScope &inner) {
              Value *value = ex->emitBody(piece.body, inner);
              Value *at = b.CreateAdd(rowBase, inner.vars.at(last));
              ex->store(node.output, node.body->dtype, value, whole ? at : b.CreateAdd(at, shift));
            });
      }
    }
  });
  return Status::ok();
}

bool KernelEmitter::emitInterleavedRows(const codegen::LoopKernel &loopKernel) {
  size_t k = kernel.outerRanges.size();
  std::optional<int64_t> channels = k >= 2 ? kernel.outerRanges[k - 1].constant() : std::nullopt;
  if (lanes < 2 || !channels || *channels < 2 || *channels > 4 || *channels >= int64_t(lanes))
    return false;
  const std::string wVar = loop::loopVar(k - 2), cVar = loop::loopVar(k - 1);
  for (const LoopNode *node : loopKernel.stages)
    if (!isVectorizable(node->body, wVar))
      return false;
  const int64_t c = *channels, block = c * int64_t(lanes);
  // Output j of a block is channel j % C of pixel j / C: element (j % C) * lanes + j / C of the
  // channel vectors laid end to end.
  llvm::SmallVector<int, 64> interleave;
  for (int64_t j = 0; j < block; ++j)
    interleave.push_back(int((j % c) * int64_t(lanes) + j / c));
  // Rows of W x C elements (the dims before W bound per row), walked a segment at a time.
  Value *rowLength = b.CreateMul(outerRanges[k - 2], i64(c));
  auto scalar = [&](const EmitScope &scope, Value *rowBase, Value *j) {
    EmitScope at = scope;
    at.vars[wVar] = b.CreateUDiv(j, i64(c));
    at.vars[cVar] = b.CreateURem(j, i64(c));
    for (const LoopNode *node : loopKernel.stages)
      ex->store(node->output, node->body->dtype, ex->emitBody(node->body, at),
                b.CreateAdd(rowBase, j));
  };
  emitLoop(begin, end, "irow", [&](Value *o) {
    Value *lo = b.CreateURem(o, rowLength);
    EmitScope scope = symbols;
    decompose(b.CreateUDiv(o, rowLength), outerRanges, k - 2, scope);
    Value *hi = b.CreateAdd(lo, smin(b.CreateSub(rowLength, lo), b.CreateSub(end, o)));
    Value *rowBase = b.CreateSub(o, lo);
    // Scalars up to the first whole block, whole blocks, scalars after the last.
    Value *first = smin(hi, b.CreateMul(emitCeilDiv(b, lo, block), i64(block)));
    Value *last = smax(first, b.CreateMul(b.CreateUDiv(hi, i64(block)), i64(block)));
    emitFor(lo, first, 1, "irow.head", [&](Value *j) { scalar(scope, rowBase, j); });
    emitFor(first, last, block, "irow.block", [&](Value *j) {
      EmitScope at = scope;
      at.vars[wVar] = b.CreateUDiv(j, i64(c));
      at.vectorVar = wVar;
      at.lanes = lanes;
      for (const LoopNode *node : loopKernel.stages) {
        llvm::SmallVector<Value *, 4> perChannel;
        for (int64_t ch = 0; ch < c; ++ch) {
          at.vars[cVar] = i64(ch);
          perChannel.push_back(ex->emitBody(node->body, at));
        }
        Value *values = b.CreateShuffleVector(llvm::concatenateVectors(b, perChannel), interleave);
        ex->store(node->output, node->body->dtype, values, b.CreateAdd(rowBase, j));
      }
    });
    emitFor(last, hi, 1, "irow.tail", [&](Value *j) { scalar(scope, rowBase, j); });
    return b.CreateAdd(o, b.CreateSub(hi, lo));
  });
  return true;
}

void KernelEmitter::emitRowSegments(
    Value *first, Value *last,
    llvm::function_ref<void(const EmitScope &, Value *, Value *, Value *)> body) {
  size_t k = kernel.outerRanges.size();
  emitLoop(first, last, "row", [&](Value *o) {
    Value *rowLength = outerRanges[k - 1];
    Value *lo = b.CreateURem(o, rowLength);
    EmitScope scope = symbols;
    decompose(b.CreateUDiv(o, rowLength), outerRanges, k - 1, scope);
    Value *count = smin(b.CreateSub(rowLength, lo), b.CreateSub(last, o));
    body(scope, lo, b.CreateAdd(lo, count), b.CreateSub(o, lo));
    return b.CreateAdd(o, count);
  });
}

bool KernelEmitter::reducesAcrossColumns(const codegen::LoopKernel &loopKernel) const {
  size_t k = kernel.outerRanges.size();
  if (k == 0 || lanes == 1)
    return false;
  std::string last = loop::loopVar(k - 1);
  bool stridedReduction = false;
  for (const LoopNode *node : loopKernel.stages) {
    // Every stage is one element per outer index (no inner pointwise dims) and reads the last
    // outer dim contiguously or not at all; some reduction reads its innermost reduced dim with
    // a stride (else the usual vectorization along it applies).
    if (node->ranges.size() != k || !isVectorizable(node->body, last))
      return false;
    size_t q = node->reductionRanges.size();
    if (node->kind == LoopNode::Kind::Reduction && q > 0 &&
        !isVectorizable(node->body, loop::reductionVar(q - 1)))
      stridedReduction = true;
  }
  return stridedReduction;
}

void KernelEmitter::emitColumnKernel(const codegen::LoopKernel &loopKernel) {
  // Row segments of the last outer dim, as in purely elementwise kernels; each stage sweeps the
  // segment in vectors of 4 x lanes (several independent accumulators per reduced row), lanes,
  // then single elements. A stage reads earlier stages' results only at its own elements, which
  // the earlier sweeps have stored.
  size_t k = kernel.outerRanges.size();
  std::string last = loop::loopVar(k - 1);
  bool hasArg = false;
  for (const LoopNode *node : loopKernel.stages)
    hasArg = hasArg || (node->kind == LoopNode::Kind::Reduction &&
                        (node->reduceOp == ReduceOp::ArgMax || node->reduceOp == ReduceOp::ArgMin));
  // Arg reductions carry an index vector per value vector: one vector of each at a time.
  std::vector<unsigned> widths = {4 * lanes, lanes, 1};
  if (hasArg)
    widths.erase(widths.begin());
  // The thread pool cuts the range into chunks that need not be whole vectors (32 columns on 2
  // threads: chunks of 4), which leaves a chunk's columns to the one-element sweep, a strided walk
  // over all the rows it reduces; and a chunk of one vector still walks every row for a single
  // cache line of it. Each chunk starts instead at its start rounded down to a multiple of the
  // widest sweep within its row (and ends where the next chunk starts): the rounding is the same
  // for every chunk and non-decreasing, and leaves 0 and the range's end (whole rows) in place, so
  // the chunks still cover the range once. A chunk may come out empty; a neighbour takes its
  // columns, and a range of one widest sweep runs on one thread.
  Value *rowLength = outerRanges[k - 1];
  auto alignDown = [&](Value *x) {
    return b.CreateSub(x, b.CreateURem(b.CreateURem(x, rowLength), i64(widths.front())));
  };
  Value *chunkBegin = alignDown(begin), *chunkEnd = alignDown(end);
  emitRowSegments(
      chunkBegin, chunkEnd, [&](const EmitScope &scope, Value *lo, Value *hi, Value *rowBase) {
        for (const LoopNode *node : loopKernel.stages)
          emitWidths(scope, last, lo, hi, widths, [&](const EmitScope &inner) {
            Value *at = b.CreateAdd(rowBase, inner.vars.at(last));
            if (node->kind == LoopNode::Kind::Reduction)
              emitReductionStage(*node, inner, at);
            else
              ex->store(node->output, node->body->dtype, ex->emitBody(node->body, inner), at);
          });
      });
}

void KernelEmitter::emitPointwiseStage(const LoopNode &node, const EmitScope &outer, Value *o) {
  size_t k = kernel.outerRanges.size(), m = node.ranges.size();
  if (m == k) {
    ex->store(node.output, node.body->dtype, ex->emitBody(node.body, outer), o);
    return;
  }
  std::vector<Value *> ranges;
  for (size_t d = 0; d < m; ++d)
    ranges.push_back(d < k ? nullptr : ex->emitIndex(node.ranges[d], symbols));
  // The output is dense row-major over node.ranges: the prefix offset is carried down the nest.
  std::function<void(size_t, const EmitScope &, Value *)> nest =
      [&](size_t d, const EmitScope &scope, Value *prefix) {
        std::string var = loop::loopVar(d);
        if (d + 1 == m) {
          emitVectorized(scope, var, i64(0), ranges[d], isVectorizable(node.body, var),
                         [&](const EmitScope &inner) {
                           Value *value = ex->emitBody(node.body, inner);
                           ex->store(node.output, node.body->dtype, value,
                                     b.CreateAdd(prefix, inner.vars.at(var)));
                         });
          return;
        }
        emitFor(i64(0), ranges[d], 1, var, [&](Value *x) {
          EmitScope inner = scope;
          inner.vars[var] = x;
          nest(d + 1, inner, b.CreateMul(b.CreateAdd(prefix, x), ranges[d + 1]));
        });
      };
  nest(k, outer, b.CreateMul(o, ranges[k]));
}

Value *KernelEmitter::identity(ReduceOp op, DType dtype, unsigned width) {
  EmitScope scope;
  scope.lanes = width;
  ex->setScope(&scope);
  Value *value = ex->constant(*codegen::reductionIdentity(op, dtype));
  ex->setScope(nullptr);
  return value;
}

Value *KernelEmitter::combine(ReduceOp op, DType dtype, Value *acc, Value *value) {
  return codegen::combineReduction<Value *>(*ex, op, dtype, acc, value);
}

Value *KernelEmitter::argBetter(ReduceOp op, DType dtype, Value *value, Value *index, Value *best,
                                Value *bestIndex, bool tieBreak) {
  return codegen::argReductionBetter<Value *>(*ex, op, dtype, value, index, best, bestIndex,
                                              tieBreak);
}

void KernelEmitter::emitReductionStage(const LoopNode &node, const EmitScope &outer, Value *o) {
  ReduceOp op = node.reduceOp;
  DType dtype = node.body->dtype;
  bool isArg = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
  size_t q = node.reductionRanges.size();
  if (q == 0) { // a reduction over nothing is the body itself (index 0 for arg reductions)
    Value *value = ex->emitBody(node.body, outer);
    if (isArg)
      ex->store(node.output, DType::I64,
                outer.lanes > 1 ? llvm::Constant::getNullValue(
                                      llvm::FixedVectorType::get(b.getInt64Ty(), outer.lanes))
                                : i64(0),
                o);
    else
      ex->store(node.output, dtype, value, o);
    return;
  }
  std::vector<Value *> ranges;
  for (const SymInt &range : node.reductionRanges)
    ranges.push_back(ex->emitIndex(range, symbols));
  std::string innerVar = loop::reductionVar(q - 1);
  // Column kernels: `outer` is a vector of independent reductions, accumulated as one value.
  unsigned columns = outer.lanes;
  bool vectorize = columns == 1 && lanes > 1 && isVectorizable(node.body, innerVar);

  // Accumulators live in stack slots that SROA turns into loop-carried registers.
  llvm::Type *accIndexType = columns > 1 ? llvm::FixedVectorType::get(b.getInt64Ty(), columns)
                                         : static_cast<llvm::Type *>(b.getInt64Ty());
  llvm::AllocaInst *scalarAcc = entryAlloca(ex->registerType(dtype, columns), "acc");
  llvm::AllocaInst *scalarIndex = entryAlloca(accIndexType, "acc.index");
  llvm::AllocaInst *vectorAcc = nullptr, *vectorIndex = nullptr;
  llvm::Type *indexVecType = llvm::FixedVectorType::get(b.getInt64Ty(), lanes);
  b.CreateStore(identity(op, dtype, columns), scalarAcc);
  b.CreateStore(llvm::Constant::getNullValue(accIndexType), scalarIndex);
  // A column kernel's vector narrower than four registers' worth (one vector of lanes) adds
  // into its accumulator once per reduced element, a chain of dependent adds that bounds the
  // sweep at the add's latency: its innermost reduced dim then runs in steps of several
  // elements, each into its own accumulator, combined at the end.
  std::vector<llvm::AllocaInst *> partials = {scalarAcc};
  if (!isArg && columns > 1)
    for (unsigned p = 1; p < std::min(4u, 4 * lanes / columns); ++p) {
      partials.push_back(entryAlloca(scalarAcc->getAllocatedType(), "acc.part"));
      b.CreateStore(identity(op, dtype, columns), partials.back());
    }
  if (vectorize) {
    vectorAcc = entryAlloca(ex->registerType(dtype, lanes), "acc.vec");
    vectorIndex = entryAlloca(indexVecType, "acc.vec.index");
    b.CreateStore(identity(op, dtype, lanes), vectorAcc);
    b.CreateStore(llvm::Constant::getNullValue(indexVecType), vectorIndex);
  }

  auto update = [&](const EmitScope &scope, Value *flatIndex, llvm::AllocaInst *slot) {
    bool wide = vectorize && scope.lanes > 1;
    llvm::AllocaInst *accSlot = wide ? vectorAcc : slot;
    llvm::AllocaInst *indexSlot = wide ? vectorIndex : scalarIndex;
    Value *value = ex->emitBody(node.body, scope);
    Value *acc = b.CreateLoad(accSlot->getAllocatedType(), accSlot);
    if (!isArg) {
      b.CreateStore(combine(op, dtype, acc, value), accSlot);
      return;
    }
    Value *index = flatIndex;
    if (columns > 1)
      index = b.CreateVectorSplat(columns, flatIndex);
    if (wide) {
      std::vector<llvm::Constant *> steps;
      for (unsigned i = 0; i < lanes; ++i)
        steps.push_back(b.getInt64(i));
      index = b.CreateAdd(b.CreateVectorSplat(lanes, flatIndex), llvm::ConstantVector::get(steps));
    }
    Value *bestIndex = b.CreateLoad(indexSlot->getAllocatedType(), indexSlot);
    Value *better = argBetter(op, dtype, value, index, acc, bestIndex, /*tieBreak=*/false);
    b.CreateStore(b.CreateSelect(better, value, acc), accSlot);
    b.CreateStore(b.CreateSelect(better, index, bestIndex), indexSlot);
  };

  // r0 .. r(q-2) as scalar loops carrying the flat reduction index prefix; r(q-1) vectorized.
  std::function<void(size_t, const EmitScope &, Value *)> nest =
      [&](size_t d, const EmitScope &scope, Value *prefix) {
        std::string var = loop::reductionVar(d);
        if (d + 1 == q) {
          Value *first = i64(0);
          if (partials.size() > 1) {
            auto step = int64_t(partials.size());
            first = b.CreateMul(b.CreateUDiv(ranges[d], i64(step)), i64(step));
            emitFor(i64(0), first, step, var + ".parts", [&](Value *r) {
              for (size_t p = 0; p < partials.size(); ++p) {
                EmitScope inner = scope;
                inner.vars[var] = b.CreateAdd(r, i64(int64_t(p)));
                update(inner, b.CreateAdd(prefix, inner.vars.at(var)), partials[p]);
              }
            });
          }
          emitVectorized(scope, var, first, ranges[d], vectorize, [&](const EmitScope &inner) {
            update(inner, b.CreateAdd(prefix, inner.vars.at(var)), scalarAcc);
          });
          return;
        }
        emitFor(i64(0), ranges[d], 1, var, [&](Value *r) {
          EmitScope inner = scope;
          inner.vars[var] = r;
          nest(d + 1, inner, b.CreateMul(b.CreateAdd(prefix, r), ranges[d + 1]));
        });
      };
  nest(0, outer, i64(0));

  // The partial accumulators pairwise: (0 + 1) + (2 + 3).
  std::vector<Value *> parts;
  for (llvm::AllocaInst *slot : partials)
    parts.push_back(b.CreateLoad(slot->getAllocatedType(), slot));
  for (size_t stride = 1; stride < parts.size(); stride *= 2)
    for (size_t p = 0; p + stride < parts.size(); p += 2 * stride)
      parts[p] = combine(op, dtype, parts[p], parts[p + stride]);
  Value *result = parts[0];
  Value *resultIndex = b.CreateLoad(accIndexType, scalarIndex);
  if (vectorize) {
    Value *vec = b.CreateLoad(vectorAcc->getAllocatedType(), vectorAcc);
    if (!isArg) {
      // Halve the vector until one lane is left, then fold in the scalar tail.
      for (unsigned width = lanes; width > 1; width /= 2) {
        llvm::SmallVector<int> low, high;
        for (unsigned i = 0; i < width / 2; ++i) {
          low.push_back(int(i));
          high.push_back(int(i + width / 2));
        }
        vec = combine(op, dtype, b.CreateShuffleVector(vec, low), b.CreateShuffleVector(vec, high));
      }
      result = combine(op, dtype, b.CreateExtractElement(vec, i64(0)), result);
    } else {
      Value *indices = b.CreateLoad(indexVecType, vectorIndex);
      for (unsigned i = 0; i < lanes; ++i) {
        Value *value = b.CreateExtractElement(vec, i64(i));
        Value *index = b.CreateExtractElement(indices, i64(i));
        Value *better = argBetter(op, dtype, value, index, result, resultIndex, true);
        result = b.CreateSelect(better, value, result);
        resultIndex = b.CreateSelect(better, index, resultIndex);
      }
    }
  }
  if (isArg)
    ex->store(node.output, DType::I64, resultIndex, o);
  else
    ex->store(node.output, dtype, result, o);
}

Status KernelEmitter::emit() {
  TC_RETURN_IF_ERROR(codegen::walkKernel(program, kernel, *this));
  TC_RETURN_IF_ERROR(ex->status());
  b.CreateRetVoid();
  return Status::ok();
}

Status emitKernel(llvm::Module &module, const loop::LoopProgram &legal, const CpuTarget &target,
                  const sched::Kernel &kernel) {
  return KernelEmitter(module, legal, target, kernel).emit();
}

} // namespace tensorc::cpu
