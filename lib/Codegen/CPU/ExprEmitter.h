// LoopIR expressions and SymInt index arithmetic as LLVM IR, one lane or a fixed vector wide.
#pragma once

#include "tensorc/Codegen/Common/OpEmitter.h"
#include "tensorc/Lowering/LoopIR.h"
#include "tensorc/Support/Status.h"

#include <llvm/IR/IRBuilder.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tensorc::cpu {

/// The loop variables and shape symbols in scope, as i64 values. With lanes > 1, `vectorVar` runs
/// over lanes consecutive values starting at its entry in `vars`.
struct EmitScope {
  std::map<std::string, llvm::Value *> vars;
  std::string vectorVar;
  unsigned lanes = 1;
};

/// How an index depends on one variable: not at all, as `coefficient * var` plus terms free of it,
/// or any other way (inside a floor division, times a symbol, squared).
struct VarUse {
  enum class Kind { None, Linear, Other } kind = Kind::None;
  int64_t coefficient = 0;
};
VarUse analyzeVarUse(const SymInt &index, const std::string &var);

/// True when `body` can run lanes-wide along `var`: every load is contiguous (coefficient 1) or
/// invariant in it, every Index expression and indirect load's affine part is linear or
/// invariant in it (indirect loads that vary along `var` become gathers).
bool isVectorizable(const loop::ExprRef &body, const std::string &var);

/// Emits expressions of one legalized program (codegen::legalize): the plain operations as LLVM
/// IR. Values are in register form: f16/bf16 as float, bool as i1, vectors of scope.lanes
/// elements in vector mode. The first unsupported construct is recorded in status() and
/// emission continues with poison so callers check once at the end.
class ExprEmitter : public codegen::OpEmitter<llvm::Value *> {
public:
  /// `buffers` holds the base pointer of each buffer id (null for buffers the kernel lacks).
  ExprEmitter(llvm::IRBuilderBase &b, const loop::LoopProgram &program,
              std::vector<llvm::Value *> buffers);

  /// Evaluates an index as a scalar i64 with the scope's variables (the vector var at lane 0).
  llvm::Value *emitIndex(const SymInt &index, const EmitScope &scope);
  /// Emits one loop body: a fresh memo table, then the DAG rooted at `expr`.
  llvm::Value *emitBody(const loop::ExprRef &expr, const EmitScope &scope);

  llvm::Type *registerType(DType dtype, unsigned lanes);
  /// Converts a register value between dtypes (the Cast semantics of LoopIR).
  llvm::Value *convert(llvm::Value *value, DType from, DType to);
  /// Loads `lanes` consecutive elements of `buffer` from a scalar i64 index.
  llvm::Value *load(int buffer, llvm::Value *index, unsigned lanes);
  /// Loads one element of `buffer` per lane of a vector of i64 indices (llvm.masked.gather).
  llvm::Value *gather(int buffer, llvm::Value *indices);
  /// Stores a register value of dtype `from` at `index` (lanes consecutive elements for vectors).
  void store(int buffer, DType from, llvm::Value *value, llvm::Value *index);

  /// Replaces loads of `buffer` by `value` (the GEMM accumulator in an epilogue); -1 clears it.
  void setLoadOverride(int buffer, llvm::Value *value) {
    overrideBuffer_ = buffer;
    overrideValue_ = value;
  }
  const loop::LoopProgram &program() const { return program_; }
  Status status() const { return error_ ? Status(*error_) : Status::ok(); }
  void fail(Error error) {
    if (!error_)
      error_ = std::move(error);
  }

  // Plain operations (codegen::OpEmitter), in the scope of the body being emitted.
  llvm::Value *constant(const loop::Expr &expr) override;
  llvm::Value *load(const loop::Expr &expr) override;
  llvm::Value *indirectLoad(const loop::Expr &expr, llvm::Value *offset) override;
  llvm::Value *index(const loop::Expr &expr) override;
  llvm::Value *unary(loop::UnaryOp op, DType type, llvm::Value *x) override;
  llvm::Value *binary(loop::BinaryOp op, DType type, llvm::Value *x, llvm::Value *y) override;
  llvm::Value *select(DType type, llvm::Value *cond, llvm::Value *x, llvm::Value *y) override;
  llvm::Value *cast(DType from, DType to, llvm::Value *x) override;
  /// Constants are splat to this many lanes (the vector width of the body being emitted).
  unsigned lanes() const { return scope_ ? scope_->lanes : 1; }
  /// The scope constants and loads use outside emitBody (reduction accumulators).
  void setScope(const EmitScope *scope) { scope_ = scope; }

private:
  /// `index` in every lane: a vector of i64 in vector mode, a scalar otherwise.
  llvm::Value *emitLaneIndices(const SymInt &index, const EmitScope &scope);
  /// The kernel argument holding `buffer`; nullptr, after an error saying it is `access`ed ("read",
  /// "written") but not an argument, when there is none.
  llvm::Value *bufferArgument(int buffer, const char *access);
  /// The value in memory form `raw` (of `dtype`) in register form.
  llvm::Value *fromMemory(llvm::Value *raw, DType dtype);
  llvm::Value *emitFmod(llvm::Value *x, llvm::Value *y);
  llvm::Value *emitFloorDiv(llvm::Value *numerator, int64_t denominator, bool remainder);
  /// Per-lane scalar evaluation for indices that are neither contiguous nor invariant.
  llvm::Value *gatherLanes(const EmitScope &scope,
                           const std::function<llvm::Value *(const EmitScope &)> &lane);
  llvm::Value *roundToHalf(llvm::Value *value, DType dtype);
  llvm::Value *unsupported(DType dtype, const std::string &what);

  llvm::IRBuilderBase &b;
  const loop::LoopProgram &program_;
  std::vector<llvm::Value *> buffers_;
  std::unordered_map<const loop::Expr *, llvm::Value *> memo_;
  const EmitScope *scope_ = nullptr;
  int overrideBuffer_ = -1;
  llvm::Value *overrideValue_ = nullptr;
  std::optional<Error> error_;
};

} // namespace tensorc::cpu
