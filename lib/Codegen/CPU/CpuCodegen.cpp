// CPU kernels from the schedule: loop nests (vectorized innermost dims with scalar tails) and GEMM
// templates with fused epilogues, emitted as LLVM IR (modules, optimization and linking:
// CpuModules.cpp).
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
#include "tensorc/Support/Parallel.h"
#include "tensorc/Support/StrCat.h"
#include "tensorc/Support/Timing.h"

#include <llvm/ADT/STLFunctionalExtras.h>
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

namespace {

unsigned lanesOf(Value *value) {
  if (auto *vector = llvm::dyn_cast<llvm::FixedVectorType>(value->getType()))
    return vector->getNumElements();
  return 1;
}

/// Emits one Loop or Template kernel: an exported entry that unpacks the argument arrays and an
/// always-inlined body whose buffer parameters are noalias (a kernel's buffers are distinct).
class KernelEmitter : public codegen::KernelVisitor {
public:
  KernelEmitter(llvm::Module &module, const loop::LoopProgram &program, const CpuTarget &target,
                const sched::Kernel &kernel)
      : module(module), program(program), target(target), kernel(kernel), b(module.getContext()),
        lanes(std::max(1u, target.f32Lanes())) {}

  Status emit();

  Status loopKernel(const codegen::LoopKernel &loopKernel) override;
  Status gemmKernel(const codegen::TemplateKernel &t) override;
  Status convKernel(const codegen::TemplateKernel &t) override;
  Status channelsLastConvKernel(const codegen::TemplateKernel &t);
  Status attentionKernel(const codegen::TemplateKernel &t) override;

private:
  Value *i64(int64_t v) { return b.getInt64(v); }
  Value *smin(Value *x, Value *y) { return b.CreateSelect(b.CreateICmpSLT(x, y), x, y); }
  Value *smax(Value *x, Value *y) { return b.CreateSelect(b.CreateICmpSGT(x, y), x, y); }
  void setAttributes(llvm::Function *function);
  void createFunctions();

  /// `for (iv = begin; iv < end; iv = body(iv))`: the body returns the next value.
  void emitLoop(Value *begin, Value *end, const llvm::Twine &name,
                llvm::function_ref<Value *(Value *)> body);
  void emitFor(Value *begin, Value *end, int64_t step, const llvm::Twine &name,
               llvm::function_ref<void(Value *)> body);
  /// Runs `body` for `var` in [lo, hi): lanes wide while a whole vector fits, then one at a time.
  void emitVectorized(const EmitScope &scope, const std::string &var, Value *lo, Value *hi,
                      bool vectorize, llvm::function_ref<void(const EmitScope &)> body);
  /// Runs `body` for `var` in [lo, hi) `widths[0]` lanes at a time while that many are left, then
  /// `widths[1]` lanes, and so on (widths descending, the last 1).
  void emitWidths(const EmitScope &scope, const std::string &var, Value *lo, Value *hi,
                  llvm::ArrayRef<unsigned> widths,
                  llvm::function_ref<void(const EmitScope &)> body);
  /// Walks [begin, end) of the outer elements a segment of one row of the last outer dim at a
  /// time: `body(scope, lo, hi, rowBase)` with the other outer dims bound in `scope`, the last one
  /// to run over [lo, hi) and rowBase the flat index of the row's first element.
  void emitRowSegments(llvm::function_ref<void(const EmitScope &, Value *, Value *, Value *)> body);
  /// A kernel of reductions over dims that are not the innermost (an NHWC tensor's H and W): the
  /// last outer dim runs vectors wide across its contiguous elements, each lane its own reduction.
  bool reducesAcrossColumns(const codegen::LoopKernel &loopKernel) const;
  void emitColumnKernel(const codegen::LoopKernel &loopKernel);
  /// Binds x0..x(n-1) to the row-major decomposition of `flat` over `ranges`.
  void decompose(Value *flat, const std::vector<Value *> &ranges, size_t count, EmitScope &scope);

  void emitPointwiseStage(const LoopNode &node, const EmitScope &outer, Value *o);
  /// The reduction of the outer element(s) `outer` binds, stored at `o`: one element, vectorized
  /// along the innermost reduced dim when its loads allow; or, when `outer` is a vector scope (a
  /// column kernel), outer.lanes elements, each lane reducing on its own.
  void emitReductionStage(const LoopNode &node, const EmitScope &outer, Value *o);
  /// Template buffers must be f32 kernel arguments (the CPU GEMM is f32-only).
  Status checkTemplateBuffers(const codegen::TemplateKernel &t, std::vector<int> buffers);
  /// The epilogue callback of a template whose output element (outer, rowBase + row, col) is at
  /// `outer` over the dims before the row dim and `col` over the last `columnDims` dims.
  GemmEpilogue templateEpilogue(const LoopNode &templateNode, const LoopNode &epilogueNode,
                                size_t columnDims, Value *outer, Value *rowBase);

  // Reductions (codegen::reductionIdentity and friends): values are register form (scalar or
  // vector), indices i64 alike.
  Value *identity(ReduceOp op, DType dtype, unsigned width);
  Value *combine(ReduceOp op, DType dtype, Value *acc, Value *value);
  Value *argBetter(ReduceOp op, DType dtype, Value *value, Value *index, Value *best,
                   Value *bestIndex, bool tieBreak);
  llvm::AllocaInst *entryAlloca(llvm::Type *type, const llvm::Twine &name);

  llvm::Module &module;
  const loop::LoopProgram &program;
  const CpuTarget &target;
  const sched::Kernel &kernel;
  llvm::IRBuilder<> b;
  unsigned lanes;
  llvm::Function *body = nullptr;
  std::unique_ptr<ExprEmitter> ex;
  EmitScope symbols; // shape symbols only
  Value *begin = nullptr, *end = nullptr;
  std::vector<Value *> outerRanges;
  std::vector<Value *> bufferPtrs; // by buffer id; null for buffers the kernel does not touch
};

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
  llvm::LLVMContext &ctx = b.getContext();
  llvm::Function *fn = b.GetInsertBlock()->getParent();
  BasicBlock *pre = b.GetInsertBlock();
  BasicBlock *loopBlock = BasicBlock::Create(ctx, name + ".body", fn);
  BasicBlock *exit = BasicBlock::Create(ctx, name + ".exit");
  b.CreateCondBr(b.CreateICmpSLT(first, last), loopBlock, exit);
  b.SetInsertPoint(loopBlock);
  llvm::PHINode *iv = b.CreatePHI(b.getInt64Ty(), 2, name);
  iv->addIncoming(first, pre);
  Value *next = step(iv);
  iv->addIncoming(next, b.GetInsertBlock());
  b.CreateCondBr(b.CreateICmpSLT(next, last), loopBlock, exit);
  exit->insertInto(fn);
  b.SetInsertPoint(exit);
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

  // Purely elementwise over the outer dims: walk [begin, end) a row segment of the last dim at a
  // time, so the last dim is an inner loop that vectorizes even though it is a parallel dim.
  std::string last = loop::loopVar(k - 1);
  std::vector<bool> vectorize;
  for (const LoopNode *node : stages)
    vectorize.push_back(isVectorizable(node->body, last));
  emitRowSegments([&](const EmitScope &scope, Value *lo, Value *hi, Value *rowBase) {
    for (size_t s = 0; s < stages.size(); ++s) {
      const LoopNode &node = *stages[s];
      emitVectorized(scope, last, lo, hi, vectorize[s], [&](const EmitScope &inner) {
        Value *value = ex->emitBody(node.body, inner);
        ex->store(node.output, node.body->dtype, value, b.CreateAdd(rowBase, inner.vars.at(last)));
      });
    }
  });
  return Status::ok();
}

void KernelEmitter::emitRowSegments(
    llvm::function_ref<void(const EmitScope &, Value *, Value *, Value *)> body) {
  size_t k = kernel.outerRanges.size();
  emitLoop(begin, end, "row", [&](Value *o) {
    Value *rowLength = outerRanges[k - 1];
    Value *lo = b.CreateURem(o, rowLength);
    EmitScope scope = symbols;
    decompose(b.CreateUDiv(o, rowLength), outerRanges, k - 1, scope);
    Value *count = smin(b.CreateSub(rowLength, lo), b.CreateSub(end, o));
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
  emitRowSegments([&](const EmitScope &scope, Value *lo, Value *hi, Value *rowBase) {
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
  if (vectorize) {
    vectorAcc = entryAlloca(ex->registerType(dtype, lanes), "acc.vec");
    vectorIndex = entryAlloca(indexVecType, "acc.vec.index");
    b.CreateStore(identity(op, dtype, lanes), vectorAcc);
    b.CreateStore(llvm::Constant::getNullValue(indexVecType), vectorIndex);
  }

  auto update = [&](const EmitScope &scope, Value *flatIndex) {
    bool wide = vectorize && scope.lanes > 1;
    llvm::AllocaInst *accSlot = wide ? vectorAcc : scalarAcc;
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
          emitVectorized(scope, var, i64(0), ranges[d], vectorize, [&](const EmitScope &inner) {
            update(inner, b.CreateAdd(prefix, inner.vars.at(var)));
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

  Value *result = b.CreateLoad(scalarAcc->getAllocatedType(), scalarAcc);
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

// ---- Template (GEMM, convolution) kernels ---------------------------------------------------

GemmEpilogue KernelEmitter::templateEpilogue(const LoopNode &templateNode,
                                             const LoopNode &epilogueNode, size_t columnDims,
                                             Value *outer, Value *rowBase) {
  codegen::EpilogueLayout layout = codegen::epilogueLayout(templateNode, epilogueNode, columnDims);
  std::vector<Value *> outerRanges, columnRanges;
  for (const SymInt &range : layout.outerRanges)
    outerRanges.push_back(ex->emitIndex(range, symbols));
  for (const SymInt &range : layout.columnRanges)
    columnRanges.push_back(ex->emitIndex(range, symbols));
  const std::vector<std::string> &columnVars = layout.columnVars;
  const std::string &rowVar = layout.rowVar;
  EmitScope base = symbols;
  decompose(outer, outerRanges, layout.outerVars.size(), base);

  // Vector epilogues bind the column dims by their flat position (all but the last at 0, the last
  // to the column); that is exact when every index reads the column dims only through it.
  bool flatColumns = true;
  if (columnVars.size() > 1) {
    std::map<std::string, SymInt> flat;
    for (const std::string &name : columnVars)
      flat[name] = SymInt(0);
    SymInt position(0), stride(1);
    for (size_t i = columnVars.size(); i-- > 0;) {
      position = position + SymInt::symbol(columnVars[i]) * stride;
      stride = stride * layout.columnRanges[i];
    }
    flat[columnVars.back()] = position;
    loop::forEachExpr(epilogueNode.body, [&](const loop::Expr &expr) {
      if (expr.kind == loop::ExprKind::Load || expr.kind == loop::ExprKind::IndirectLoad ||
          expr.kind == loop::ExprKind::Index)
        flatColumns = flatColumns && expr.index.substitute(flat) == expr.index;
    });
  }

  int result = templateNode.output;
  const loop::ExprRef &body = epilogueNode.body;
  DType dtype = body->dtype;
  return [this, base, rowVar, rowBase, columnVars, columnRanges, flatColumns, result, body,
          dtype](llvm::IRBuilderBase &, Value *acc, Value *row, Value *col) -> Value * {
    EmitScope scope = base;
    if (!rowVar.empty())
      scope.vars[rowVar] = rowBase ? b.CreateAdd(rowBase, row) : row;
    unsigned width = lanesOf(acc);
    auto emitAt = [&](const EmitScope &at, Value *value) {
      ex->setLoadOverride(result, value);
      Value *out = ex->emitBody(body, at);
      ex->setLoadOverride(-1, nullptr);
      return ex->convert(out, dtype, DType::F32);
    };
    if (columnVars.empty() ? width == 1 : flatColumns) {
      for (size_t i = 0; i + 1 < columnVars.size(); ++i)
        scope.vars[columnVars[i]] = i64(0);
      if (!columnVars.empty()) {
        scope.vars[columnVars.back()] = col;
        if (width > 1) {
          scope.vectorVar = columnVars.back();
          scope.lanes = width;
        }
      }
      return emitAt(scope, acc);
    }
    // Column dims read some other way: one element at a time with its own coordinates.
    Value *outVector = llvm::PoisonValue::get(acc->getType());
    for (unsigned lane = 0; lane < width; ++lane) {
      EmitScope at = scope;
      Value *rest = b.CreateAdd(col, i64(lane));
      for (size_t i = columnVars.size(); i-- > 0;) {
        at.vars[columnVars[i]] = i ? b.CreateURem(rest, columnRanges[i]) : rest;
        if (i)
          rest = b.CreateUDiv(rest, columnRanges[i]);
      }
      Value *value = emitAt(at, width > 1 ? b.CreateExtractElement(acc, i64(lane)) : acc);
      if (width == 1)
        return value;
      outVector = b.CreateInsertElement(outVector, value, i64(lane));
    }
    return outVector;
  };
}

Status KernelEmitter::checkTemplateBuffers(const codegen::TemplateKernel &t,
                                           std::vector<int> buffers) {
  buffers.insert(buffers.begin(), t.output);
  for (int buffer : buffers) {
    const loop::Buffer &desc = program.buffers[size_t(buffer)];
    if (desc.dtype != DType::F32)
      return makeError("kernel ", kernel.name, ": template buffer ", desc.name, " is ",
                       dtypeName(desc.dtype), "; only f32 is supported");
    if (!bufferPtrs[size_t(buffer)])
      return makeError("kernel ", kernel.name, ": template buffer ", desc.name,
                       " is not among its args");
  }
  return Status::ok();
}

Status KernelEmitter::attentionKernel(const codegen::TemplateKernel &) {
  return makeError("kernel ", kernel.name,
                   ": attention templates exist for CUDA only "
                   "(--target cuda); CPU bundles run attention on its reference kernel");
}

Status KernelEmitter::gemmKernel(const codegen::TemplateKernel &t) {
  createFunctions();
  const LoopNode &gemmNode = *t.node;
  const LoopNode *epilogueNode = t.epilogue;
  int outBuffer = t.output;
  const LoopNode::Gemm &gemm = gemmNode.gemm;
  TC_RETURN_IF_ERROR(checkTemplateBuffers(t, {gemm.a.buffer, gemm.b.buffer}));

  auto eval = [&](const SymInt &value) { return ex->emitIndex(value, symbols); };
  Value *m = eval(gemm.m), *n = eval(gemm.n), *k = eval(gemm.k), *batch = eval(gemm.batch);
  // Each batch's tasks: tiles of C (for packed B, the grid's shares of them).
  sched::GemmTaskTile task = sched::gemmTaskTile(gemm);
  GemmTiling tiling{task.rows, task.cols};
  Value *tiles = emitGemmTileCount(b, tiling, m, n);
  // Empty matrices have no tiles; a divisor of 1 keeps the batch arithmetic defined.
  Value *safeTiles = smax(tiles, i64(1));
  Value *firstBatch = b.CreateUDiv(begin, safeTiles);
  Value *lastBatch =
      smin(batch, b.CreateUDiv(b.CreateAdd(end, b.CreateSub(safeTiles, i64(1))), safeTiles));
  auto viewStrides = [&](const loop::StridedView &view) {
    size_t base = view.strides.size() - 2;
    return std::array<Value *, 3>{base ? eval(view.strides[0]) : i64(0), eval(view.strides[base]),
                                  eval(view.strides[base + 1])};
  };
  std::array<Value *, 3> aStrides = viewStrides(gemm.a), bStrides = viewStrides(gemm.b);
  Value *aOffset = eval(gemm.a.offset), *bOffset = eval(gemm.b.offset);

  emitFor(firstBatch, lastBatch, 1, "batch", [&](Value *bi) {
    Value *tileBase = b.CreateMul(bi, tiles);
    Value *tileBegin = smax(b.CreateSub(begin, tileBase), i64(0));
    Value *tileEnd = smin(b.CreateSub(end, tileBase), tiles);
    llvm::Type *f32 = b.getFloatTy();
    GemmOperands ops;
    Value *aBase = b.CreateAdd(aOffset, b.CreateMul(bi, aStrides[0]));
    Value *bBase = b.CreateAdd(bOffset, b.CreateMul(bi, bStrides[0]));
    ops.a = b.CreateGEP(f32, bufferPtrs[size_t(gemm.a.buffer)], aBase);
    ops.aRowStride = aStrides[1];
    ops.aColStride = aStrides[2];
    ops.b = b.CreateGEP(f32, bufferPtrs[size_t(gemm.b.buffer)], bBase);
    ops.bRowStride = bStrides[1];
    ops.bColStride = bStrides[2];
    ops.c = b.CreateGEP(f32, bufferPtrs[size_t(outBuffer)], b.CreateMul(bi, b.CreateMul(m, n)));
    ops.cRowStride = n;
    ops.m = m;
    ops.n = n;
    ops.k = k;
    GemmEpilogue epilogue;
    if (epilogueNode)
      epilogue = templateEpilogue(gemmNode, *epilogueNode, 1, bi, nullptr);
    if (!gemm.packedB)
      return emitGemmTiles(b, target, tiling, ops, tileBegin, tileEnd, epilogue);
    // B packed at compile time (packGemmWeights): the micro-kernels read A in place and B's strips,
    // over the scheduler's task grid split into equal shares.
    PackedGemmOperands packed;
    packed.a = ops.a;
    packed.aRowStride = ops.aRowStride;
    packed.aColStride = ops.aColStride;
    packed.packedB =
        b.CreateGEP(f32, bufferPtrs[size_t(gemm.b.buffer)], b.CreateMul(bi, bStrides[0]));
    packed.c = ops.c;
    packed.cRowStride = n;
    packed.m = m;
    packed.n = n;
    packed.k = k;
    int64_t kc = packedGemmKBlock(gemm.k.constant().value_or(-1));
    emitPackedGemmGrid(b, target, kc, packed, emitCeilDiv(b, m, task.rows),
                       emitCeilDiv(b, n, task.cols), tileBegin, tileEnd, epilogue);
  });
  return Status::ok();
}

// Implicit GEMM: per image and group, C (OC/groups x OH*OW, rows of the dense NCHW output) is
// the group's weights (OC/groups x C/groups*KH*KW) times the patch matrix, which packing reads
// straight from the input through a loader (zero outside it), so no im2col buffer exists.
Status KernelEmitter::convKernel(const codegen::TemplateKernel &t) {
  if (t.node->conv.channelsLast)
    return channelsLastConvKernel(t);
  createFunctions();
  const LoopNode &convNode = *t.node;
  const LoopNode *epilogueNode = t.epilogue;
  int outBuffer = t.output;
  const LoopNode::Conv &cv = convNode.conv;
  TC_RETURN_IF_ERROR(checkTemplateBuffers(t, {cv.input, cv.weight.buffer}));
  int64_t cg = cv.c / cv.groups, ocg = cv.oc / cv.groups, taps = cv.kh * cv.kw;
  int64_t plane = cv.h * cv.w, positions = cv.oh * cv.ow;
  Value *images = ex->emitIndex(cv.n, symbols);
  GemmTiling tiling{sched::kGemmTileM, sched::kGemmTileN};
  Value *tiles = emitGemmTileCount(b, tiling, i64(ocg), i64(positions));
  Value *firstGemm = b.CreateUDiv(begin, tiles);
  Value *lastGemm = smin(b.CreateMul(images, i64(cv.groups)),
                         b.CreateUDiv(b.CreateAdd(end, b.CreateSub(tiles, i64(1))), tiles));
  Value *weightOffset = ex->emitIndex(cv.weight.offset, symbols);
  Value *ocStride = ex->emitIndex(cv.weight.strides[0], symbols);
  Value *kStride = ex->emitIndex(cv.weight.strides[3], symbols);
  llvm::Type *f32 = b.getFloatTy();

  emitFor(firstGemm, lastGemm, 1, "conv.gemm", [&](Value *gi) {
    Value *image = b.CreateUDiv(gi, i64(cv.groups));
    Value *group = b.CreateURem(gi, i64(cv.groups));
    Value *tileBase = b.CreateMul(gi, tiles);
    Value *tileBegin = smax(b.CreateSub(begin, tileBase), i64(0));
    Value *tileEnd = smin(b.CreateSub(end, tileBase), tiles);
    Value *firstChannel = b.CreateMul(group, i64(ocg));
    GemmOperands ops;
    ops.a = b.CreateGEP(f32, bufferPtrs[size_t(cv.weight.buffer)],
                        b.CreateAdd(weightOffset, b.CreateMul(firstChannel, ocStride)));
    ops.aRowStride = ocStride;
    ops.aColStride = kStride;
    ops.c = b.CreateGEP(f32, bufferPtrs[size_t(outBuffer)], b.CreateMul(gi, i64(ocg * positions)));
    ops.cRowStride = i64(positions);
    ops.m = i64(ocg);
    ops.n = i64(positions);
    ops.k = i64(cg * taps);
    // The group's input channels of this image; every patch element is inside this block.
    Value *input = b.CreateGEP(
        f32, bufferPtrs[size_t(cv.input)],
        b.CreateMul(b.CreateAdd(b.CreateMul(image, i64(cv.c)), b.CreateMul(group, i64(cg))),
                    i64(plane)));
    // Patch row k = (c, kh, kw), column n = (oh, ow): input (c, ih, iw) or 0 in the padding.
    auto coordinates = [&cv, taps](llvm::IRBuilderBase &ir, Value *k, Value *n) {
      Value *c = ir.CreateUDiv(k, ir.getInt64(taps));
      Value *tap = ir.CreateURem(k, ir.getInt64(taps));
      Value *kh = ir.CreateUDiv(tap, ir.getInt64(cv.kw));
      Value *kw = ir.CreateURem(tap, ir.getInt64(cv.kw));
      Value *oh = ir.CreateUDiv(n, ir.getInt64(cv.ow));
      Value *ow = ir.CreateURem(n, ir.getInt64(cv.ow));
      Value *ih = ir.CreateAdd(
          ir.CreateMul(oh, ir.getInt64(cv.strideH)),
          ir.CreateSub(ir.CreateMul(kh, ir.getInt64(cv.dilationH)), ir.getInt64(cv.padH)));
      Value *iw = ir.CreateAdd(
          ir.CreateMul(ow, ir.getInt64(cv.strideW)),
          ir.CreateSub(ir.CreateMul(kw, ir.getInt64(cv.dilationW)), ir.getInt64(cv.padW)));
      return std::array<Value *, 4>{c, ih, iw, ow};
    };
    ops.loadB = [&, input](llvm::IRBuilderBase &ir, Value *k, Value *n) -> Value * {
      auto [c, ih, iw, ow] = coordinates(ir, k, n);
      // Unsigned compares also reject negative coordinates.
      Value *inside = ir.CreateAnd(ir.CreateICmpULT(ih, ir.getInt64(cv.h)),
                                   ir.CreateICmpULT(iw, ir.getInt64(cv.w)));
      Value *index = ir.CreateAdd(ir.CreateMul(c, ir.getInt64(plane)),
                                  ir.CreateAdd(ir.CreateMul(ih, ir.getInt64(cv.w)), iw));
      index = ir.CreateSelect(inside, index, ir.getInt64(0));
      Value *x = ir.CreateAlignedLoad(f32, ir.CreateInBoundsGEP(f32, input, index), llvm::Align(4));
      return ir.CreateSelect(inside, x, llvm::ConstantFP::getZero(f32));
    };
    if (cv.strideW == 1)
      ops.loadBRow = [&, input](llvm::IRBuilderBase &ir, Value *k, Value *n0,
                                unsigned count) -> std::pair<Value *, Value *> {
        // Contiguous when the columns stay in one output row and the input row is inside.
        auto [c, ih, iw, ow] = coordinates(ir, k, n0);
        Value *last = ir.getInt64(count - 1);
        Value *ok = ir.CreateICmpULT(ih, ir.getInt64(cv.h));
        ok = ir.CreateAnd(ok, ir.CreateICmpSGE(iw, ir.getInt64(0)));
        ok = ir.CreateAnd(ok, ir.CreateICmpSLT(ir.CreateAdd(iw, last), ir.getInt64(cv.w)));
        ok = ir.CreateAnd(ok, ir.CreateICmpSLT(ir.CreateAdd(ow, last), ir.getInt64(cv.ow)));
        Value *index = ir.CreateAdd(ir.CreateMul(c, ir.getInt64(plane)),
                                    ir.CreateAdd(ir.CreateMul(ih, ir.getInt64(cv.w)), iw));
        return {ir.CreateGEP(f32, input, index), ok};
      };
    GemmEpilogue epilogue;
    if (epilogueNode)
      epilogue = templateEpilogue(convNode, *epilogueNode, 2, image, firstChannel);
    emitGemmTiles(b, target, tiling, ops, tileBegin, tileEnd, epilogue);
  });
  return Status::ok();
}

// Channels-last: the NHWC kernels of Conv.h on weights packed at compile time, over the tiles
// packConvTemplates chose (the launch range); the epilogue runs per stored vector, at the
// template's [N, OH, OW, OC] index of (image, pixel, channel).
Status KernelEmitter::channelsLastConvKernel(const codegen::TemplateKernel &t) {
  const LoopNode &convNode = *t.node;
  const LoopNode::Conv &cv = convNode.conv;
  if (!cv.packedWeights)
    return makeError("kernel ", convNode.name,
                     ": a channels-last convolution on the CPU needs its weights packed at "
                     "compile time (a constant weight, CPU-only inference)");
  createFunctions();
  TC_RETURN_IF_ERROR(checkTemplateBuffers(t, {cv.input, cv.weight.buffer}));
  const LoopNode *epilogueNode = t.epilogue;
  ConvParams params = convParamsOf(cv);
  Value *images = ex->emitIndex(cv.n, symbols);
  Value *input = bufferPtrs[size_t(cv.input)];
  Value *weights = bufferPtrs[size_t(cv.weight.buffer)];
  Value *output = bufferPtrs[size_t(t.output)];
  ConvEpilogue epilogue;
  if (epilogueNode)
    epilogue = [this, &convNode, epilogueNode, &cv](llvm::IRBuilderBase &ir, Value *acc,
                                                    Value *image, Value *pixel, Value *channel) {
      // Outer dims [N, OH], row OW, column OC.
      Value *oh = ir.CreateUDiv(pixel, i64(cv.ow)), *ow = ir.CreateURem(pixel, i64(cv.ow));
      Value *outer = ir.CreateAdd(ir.CreateMul(image, i64(cv.oh)), oh);
      GemmEpilogue at = templateEpilogue(convNode, *epilogueNode, 1, outer, nullptr);
      return at(ir, acc, ow, channel);
    };
  if (cv.depthwise()) {
    DepthwiseTiling tiling{cv.tileM, cv.tileN};
    emitDepthwiseTiles(b, target, params, tiling, images, input, weights, output, begin, end,
                       epilogue);
  } else {
    ConvTiling tiling{cv.tileM, cv.tileN};
    emitConvTiles(b, target, params, tiling, images, input, weights, output, begin, end, epilogue);
  }
  return Status::ok();
}

Status KernelEmitter::emit() {
  TC_RETURN_IF_ERROR(codegen::walkKernel(program, kernel, *this));
  TC_RETURN_IF_ERROR(ex->status());
  b.CreateRetVoid();
  return Status::ok();
}

} // namespace

Status emitKernel(llvm::Module &module, const loop::LoopProgram &legal, const CpuTarget &target,
                  const sched::Kernel &kernel) {
  return KernelEmitter(module, legal, target, kernel).emit();
}

} // namespace tensorc::cpu
