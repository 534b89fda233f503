// Counted loops with loop-carried values, if/else and shared helpers, emitted with IRBuilder.
#include "IRLoops.h"

#include <llvm/IR/BasicBlock.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Metadata.h>

namespace tensorc::cpu {

using llvm::BasicBlock;
using llvm::Value;

namespace {

/// Phis at the builder's block joining `first` (coming from `firstFrom`) with `second` (from
/// `secondFrom`), value by value.
CarriedValues joinValues(llvm::IRBuilderBase &b, llvm::ArrayRef<Value *> first,
                         BasicBlock *firstFrom, llvm::ArrayRef<Value *> second,
                         BasicBlock *secondFrom) {
  CarriedValues result;
  for (size_t i = 0; i < first.size(); ++i) {
    llvm::PHINode *phi = b.CreatePHI(first[i]->getType(), 2);
    phi->addIncoming(first[i], firstFrom);
    phi->addIncoming(second[i], secondFrom);
    result.push_back(phi);
  }
  return result;
}

} // namespace

llvm::BranchInst *emitSteppedLoop(llvm::IRBuilderBase &b, Value *begin, Value *end,
                                  const llvm::Twine &name,
                                  llvm::function_ref<Value *(Value *)> step) {
  llvm::LLVMContext &ctx = b.getContext();
  llvm::Function *fn = b.GetInsertBlock()->getParent();
  BasicBlock *pre = b.GetInsertBlock();
  BasicBlock *loop = BasicBlock::Create(ctx, name + ".body", fn);
  BasicBlock *exit = BasicBlock::Create(ctx, name + ".exit");
  b.CreateCondBr(b.CreateICmpSLT(begin, end), loop, exit);
  b.SetInsertPoint(loop);
  llvm::PHINode *iv = b.CreatePHI(b.getInt64Ty(), 2, name);
  iv->addIncoming(begin, pre);
  Value *next = step(iv);
  iv->addIncoming(next, b.GetInsertBlock());
  llvm::BranchInst *backedge = b.CreateCondBr(b.CreateICmpSLT(next, end), loop, exit);
  exit->insertInto(fn);
  b.SetInsertPoint(exit);
  return backedge;
}

CarriedValues emitLoop(llvm::IRBuilderBase &b, Value *begin, Value *end, int64_t step,
                       llvm::ArrayRef<Value *> init, const llvm::Twine &name,
                       llvm::function_ref<CarriedValues(Value *, llvm::ArrayRef<Value *>)> body,
                       bool keepRolled) {
  BasicBlock *pre = b.GetInsertBlock();
  BasicBlock *latch = nullptr;
  CarriedValues next;
  llvm::BranchInst *backedge = emitSteppedLoop(b, begin, end, name, [&](Value *iv) {
    llvm::SmallVector<llvm::PHINode *, 32> phis;
    CarriedValues carried;
    for (Value *value : init) {
      phis.push_back(b.CreatePHI(value->getType(), 2));
      phis.back()->addIncoming(value, pre);
      carried.push_back(phis.back());
    }
    next = body(iv, carried);
    Value *ivNext = b.CreateAdd(iv, b.getInt64(step), name + ".next", /*HasNUW=*/false,
                                /*HasNSW=*/true);
    latch = b.GetInsertBlock();
    for (size_t i = 0; i < phis.size(); ++i)
      phis[i]->addIncoming(next[i], latch);
    return ivNext;
  });
  if (keepRolled) {
    // !llvm.loop !{self, !{"llvm.loop.unroll.disable"}}
    llvm::LLVMContext &ctx = b.getContext();
    llvm::MDNode *disable =
        llvm::MDNode::get(ctx, llvm::MDString::get(ctx, "llvm.loop.unroll.disable"));
    llvm::MDNode *loopId = llvm::MDNode::getDistinct(ctx, {nullptr, disable});
    loopId->replaceOperandWith(0, loopId);
    backedge->setMetadata(llvm::LLVMContext::MD_loop, loopId);
  }
  return joinValues(b, init, pre, next, latch);
}

void emitFor(llvm::IRBuilderBase &b, Value *begin, Value *end, int64_t step,
             const llvm::Twine &name, llvm::function_ref<void(Value *)> body) {
  emitLoop(b, begin, end, step, {}, name, [&](Value *iv, llvm::ArrayRef<Value *>) {
    body(iv);
    return CarriedValues{};
  });
}

void emitIf(llvm::IRBuilderBase &b, Value *cond, const llvm::Twine &name,
            llvm::function_ref<void()> thenBody, llvm::function_ref<void()> elseBody) {
  llvm::LLVMContext &ctx = b.getContext();
  llvm::Function *fn = b.GetInsertBlock()->getParent();
  BasicBlock *thenBlock = BasicBlock::Create(ctx, name + ".then", fn);
  BasicBlock *join = BasicBlock::Create(ctx, name + ".join");
  BasicBlock *elseBlock = elseBody ? BasicBlock::Create(ctx, name + ".else") : join;
  b.CreateCondBr(cond, thenBlock, elseBlock);
  b.SetInsertPoint(thenBlock);
  thenBody();
  b.CreateBr(join);
  if (elseBody) {
    elseBlock->insertInto(fn);
    b.SetInsertPoint(elseBlock);
    elseBody();
    b.CreateBr(join);
  }
  join->insertInto(fn);
  b.SetInsertPoint(join);
}

CarriedValues emitIfValues(llvm::IRBuilderBase &b, Value *cond, const llvm::Twine &name,
                           llvm::ArrayRef<Value *> values,
                           llvm::function_ref<CarriedValues()> thenBody) {
  llvm::LLVMContext &ctx = b.getContext();
  llvm::Function *fn = b.GetInsertBlock()->getParent();
  BasicBlock *pre = b.GetInsertBlock();
  BasicBlock *thenBlock = BasicBlock::Create(ctx, name + ".then", fn);
  BasicBlock *join = BasicBlock::Create(ctx, name + ".join");
  b.CreateCondBr(cond, thenBlock, join);
  b.SetInsertPoint(thenBlock);
  CarriedValues updated = thenBody();
  BasicBlock *thenEnd = b.GetInsertBlock();
  b.CreateBr(join);
  join->insertInto(fn);
  b.SetInsertPoint(join);
  return joinValues(b, values, pre, updated, thenEnd);
}

Value *emitCeilDiv(llvm::IRBuilderBase &b, Value *x, int64_t d) {
  return b.CreateUDiv(b.CreateAdd(x, b.getInt64(d - 1)), b.getInt64(d));
}

llvm::AllocaInst *emitEntryAlloca(llvm::IRBuilderBase &b, llvm::Type *type,
                                  const llvm::Twine &name) {
  BasicBlock &entry = b.GetInsertBlock()->getParent()->getEntryBlock();
  llvm::IRBuilder<> entryBuilder(&entry, entry.getFirstInsertionPt());
  llvm::AllocaInst *alloca = entryBuilder.CreateAlloca(type, nullptr, name);
  alloca->setAlignment(llvm::Align(64));
  return alloca;
}

InsertionSplit::InsertionSplit(llvm::IRBuilderBase &b) : b(b) {
  BasicBlock *block = b.GetInsertBlock();
  if (b.GetInsertPoint() != block->end()) {
    rest = block->splitBasicBlock(b.GetInsertPoint(), "split.cont");
    block->getTerminator()->eraseFromParent();
    b.SetInsertPoint(block);
  }
}

void InsertionSplit::finish() {
  if (!rest)
    return;
  b.CreateBr(rest);
  b.SetInsertPoint(rest, rest->begin());
}

} // namespace tensorc::cpu
