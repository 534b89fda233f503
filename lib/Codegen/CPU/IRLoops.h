// Structured control flow for IR generators (counted loops with loop-carried values, ifs) and the
// small helpers they share (ceiling division, scratch in the entry block).
#pragma once

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/STLFunctionalExtras.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/Twine.h>

#include <cstdint>

namespace llvm {
class AllocaInst;
class BasicBlock;
class BranchInst;
class Type;
class IRBuilderBase;
class Value;
} // namespace llvm

namespace tensorc::cpu {

using CarriedValues = llvm::SmallVector<llvm::Value *, 32>;

/// Emits `for (iv = begin; iv < end; iv = next)` (i64, signed compare, entered only when
/// begin < end): `step(iv)` emits the body and returns `next`. Returns the loop's back edge, with
/// the builder after the loop.
llvm::BranchInst *emitSteppedLoop(llvm::IRBuilderBase &b, llvm::Value *begin, llvm::Value *end,
                                  const llvm::Twine &name,
                                  llvm::function_ref<llvm::Value *(llvm::Value *iv)> step);

/// Emits `for (iv = begin; iv < end; iv += step)` (i64, signed compare) carrying `init` through
/// the iterations: body(iv, carried) returns the next carried values, in the same order and
/// types. Returns the carried values after the loop (`init` when it runs zero times) with the
/// builder after the loop. `keepRolled` forbids the optimizer to unroll it (a body that is already
/// as large as the registers allow).
CarriedValues
emitLoop(llvm::IRBuilderBase &b, llvm::Value *begin, llvm::Value *end, int64_t step,
         llvm::ArrayRef<llvm::Value *> init, const llvm::Twine &name,
         llvm::function_ref<CarriedValues(llvm::Value *iv, llvm::ArrayRef<llvm::Value *>)> body,
         bool keepRolled = false);

/// emitLoop without carried values.
void emitFor(llvm::IRBuilderBase &b, llvm::Value *begin, llvm::Value *end, int64_t step,
             const llvm::Twine &name, llvm::function_ref<void(llvm::Value *iv)> body);

/// `if (cond) thenBody(); else elseBody();` (elseBody may be null), builder after the join.
void emitIf(llvm::IRBuilderBase &b, llvm::Value *cond, const llvm::Twine &name,
            llvm::function_ref<void()> thenBody, llvm::function_ref<void()> elseBody = nullptr);

/// `if (cond) values = thenBody();` for SSA values: returns, after the join, the values thenBody
/// returned (same order and types) when `cond` held, else `values`.
CarriedValues emitIfValues(llvm::IRBuilderBase &b, llvm::Value *cond, const llvm::Twine &name,
                           llvm::ArrayRef<llvm::Value *> values,
                           llvm::function_ref<CarriedValues()> thenBody);

/// ceil(x / d) for a non-negative i64 `x` and a positive constant `d`.
llvm::Value *emitCeilDiv(llvm::IRBuilderBase &b, llvm::Value *x, int64_t d);

/// A 64-byte aligned alloca of `type` at the start of the function's entry block: part of the
/// frame (no stack adjustment inside loops, no allocator), private to each call (thread-safe).
llvm::AllocaInst *emitEntryAlloca(llvm::IRBuilderBase &b, llvm::Type *type,
                                  const llvm::Twine &name);

/// Splits the insertion block at the insertion point when it is inside one, so a generator can
/// emit control flow there; call the returned function afterwards to continue in the rest.
class InsertionSplit {
public:
  explicit InsertionSplit(llvm::IRBuilderBase &b);
  /// Branches from wherever the builder is to the rest of the original block and continues there.
  void finish();

private:
  llvm::IRBuilderBase &b;
  llvm::BasicBlock *rest = nullptr;
};

} // namespace tensorc::cpu
