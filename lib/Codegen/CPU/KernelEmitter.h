// One CPU kernel's LLVM IR: the KernelEmitter (its entry and loop kernels in CpuCodegen.cpp, its
// template kernels in CpuTemplateKernels.cpp) and emitKernel, for the module splitting and linking
// of CpuModules.cpp.
#pragma once

#include "ExprEmitter.h"
#include "tensorc/Codegen/CPU/CpuCodegen.h"
#include "tensorc/Codegen/CPU/Gemm.h"
#include "tensorc/Codegen/Common/KernelWalker.h"
#include "tensorc/Lowering/LoopIR.h"
#include "tensorc/Scheduler/Schedule.h"
#include "tensorc/Support/Status.h"

#include <llvm/ADT/STLFunctionalExtras.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace tensorc::cpu {

/// Emits `kernel` of the legalized program `legal` into `module` as a function of its name.
Status emitKernel(llvm::Module &module, const loop::LoopProgram &legal, const CpuTarget &target,
                  const sched::Kernel &kernel);

/// The number of lanes of a vector value (1 for a scalar).
inline unsigned lanesOf(llvm::Value *value) {
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
  llvm::Value *i64(int64_t v) { return b.getInt64(v); }
  llvm::Value *smin(llvm::Value *x, llvm::Value *y) {
    return b.CreateSelect(b.CreateICmpSLT(x, y), x, y);
  }
  llvm::Value *smax(llvm::Value *x, llvm::Value *y) {
    return b.CreateSelect(b.CreateICmpSGT(x, y), x, y);
  }
  void setAttributes(llvm::Function *function);
  void createFunctions();

  /// `for (iv = begin; iv < end; iv = body(iv))`: the body returns the next value.
  void emitLoop(llvm::Value *begin, llvm::Value *end, const llvm::Twine &name,
                llvm::function_ref<llvm::Value *(llvm::Value *)> body);
  void emitFor(llvm::Value *begin, llvm::Value *end, int64_t step, const llvm::Twine &name,
               llvm::function_ref<void(llvm::Value *)> body);
  /// Runs `body` for `var` in [lo, hi): lanes wide while a whole vector fits, then one at a time.
  void emitVectorized(const EmitScope &scope, const std::string &var, llvm::Value *lo,
                      llvm::Value *hi, bool vectorize,
                      llvm::function_ref<void(const EmitScope &)> body);
  /// Runs `body` for `var` in [lo, hi) `widths[0]` lanes at a time while that many are left, then
  /// `widths[1]` lanes, and so on (widths descending, the last 1).
  void emitWidths(const EmitScope &scope, const std::string &var, llvm::Value *lo, llvm::Value *hi,
                  llvm::ArrayRef<unsigned> widths,
                  llvm::function_ref<void(const EmitScope &)> body);
  /// Walks [first, last) of the outer elements a segment of one row of the last outer dim at a
  /// time: `body(scope, lo, hi, rowBase)` with the other outer dims bound in `scope`, the last one
  /// to run over [lo, hi) and rowBase the flat index of the row's first element.
  void emitRowSegments(
      llvm::Value *first, llvm::Value *last,
      llvm::function_ref<void(const EmitScope &, llvm::Value *, llvm::Value *, llvm::Value *)>
          body);
  /// An elementwise kernel whose last outer dim is a short constant C (2-4, fewer than the
  /// vector lanes: an NCHW -> NHWC copy of 3-channel images) and whose loads all run contiguously
  /// along the dim before it (W): rows of W x C elements, lanes values of W per vector for each c,
  /// the C vectors interleaved into C x lanes contiguous outputs and stored at once. False (and
  /// nothing emitted) for other kernels.
  bool emitInterleavedRows(const codegen::LoopKernel &loopKernel);
  /// A kernel of reductions over dims that are not the innermost (an NHWC tensor's H and W): the
  /// last outer dim runs vectors wide across its contiguous elements, each lane its own reduction.
  bool reducesAcrossColumns(const codegen::LoopKernel &loopKernel) const;
  void emitColumnKernel(const codegen::LoopKernel &loopKernel);
  /// Binds x0..x(n-1) to the row-major decomposition of `flat` over `ranges`.
  void decompose(llvm::Value *flat, const std::vector<llvm::Value *> &ranges, size_t count,
                 EmitScope &scope);

  void emitPointwiseStage(const loop::LoopNode &node, const EmitScope &outer, llvm::Value *o);
  /// The reduction of the outer element(s) `outer` binds, stored at `o`: one element, vectorized
  /// along the innermost reduced dim when its loads allow; or, when `outer` is a vector scope (a
  /// column kernel), outer.lanes elements, each lane reducing on its own.
  void emitReductionStage(const loop::LoopNode &node, const EmitScope &outer, llvm::Value *o);
  /// Template buffers must be f32 kernel arguments (the CPU GEMM is f32-only).
  Status checkTemplateBuffers(const codegen::TemplateKernel &t, std::vector<int> buffers);
  /// The epilogue callback of a template whose output element (outer, rowBase + row, col) is at
  /// `outer` over the dims before the row dim and `col` over the last `columnDims` dims.
  GemmEpilogue templateEpilogue(const loop::LoopNode &templateNode,
                                const loop::LoopNode &epilogueNode, size_t columnDims,
                                llvm::Value *outer, llvm::Value *rowBase);

  // Reductions (codegen::reductionIdentity and friends): values are register form (scalar or
  // vector), indices i64 alike.
  llvm::Value *identity(loop::ReduceOp op, DType dtype, unsigned width);
  llvm::Value *combine(loop::ReduceOp op, DType dtype, llvm::Value *acc, llvm::Value *value);
  llvm::Value *argBetter(loop::ReduceOp op, DType dtype, llvm::Value *value, llvm::Value *index,
                         llvm::Value *best, llvm::Value *bestIndex, bool tieBreak);
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
  llvm::Value *begin = nullptr, *end = nullptr;
  std::vector<llvm::Value *> outerRanges;
  std::vector<llvm::Value *> bufferPtrs; // by buffer id; null for buffers the kernel does not touch
};

} // namespace tensorc::cpu
