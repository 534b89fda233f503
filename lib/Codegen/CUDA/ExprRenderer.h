// LoopIR expressions as CUDA C++ statements: one local per expression node, with the same dtype
// rules as the CPU backend (f16/bf16 computed in float and rounded on cast, torch's NaN rules).
#pragma once

#include "tensorc/Codegen/Common/OpEmitter.h"
#include "tensorc/Lowering/LoopIR.h"
#include "tensorc/Support/Status.h"

#include <map>
#include <string>
#include <vector>

namespace tensorc::cuda {

/// Loop variables and shape symbols visible to an expression: name -> C expression (a local).
using Scope = std::map<std::string, std::string>;

/// The C type an expression of `dtype` is computed in (f16/bf16 -> float, bool -> bool).
const char *registerType(DType dtype);
/// The C type of a buffer element of `dtype` (f16/bf16 as their 16-bit patterns).
const char *memoryType(DType dtype);

/// A buffer element in memory form (`b3[i]`) as its register value: f16/bf16 widened to float,
/// bool tested against zero.
std::string fromMemory(DType dtype, const std::string &raw);
/// A value of `dtype`'s register type in memory form (f16/bf16 narrowed, bool as a byte).
std::string toMemory(DType dtype, const std::string &value);

/// The device helpers rendered kernels call (conversions, NaN-propagating max/min, integer
/// division without traps, Python-style floor division of indices).
const std::string &prelude();

/// Renders a legalized program's expressions (codegen::legalize): plain operations as C++.
class ExprRenderer : public codegen::OpEmitter<std::string> {
public:
  /// `bufferNames[id]` is the kernel parameter holding buffer `id`, empty when not an argument.
  ExprRenderer(const loop::LoopProgram &program, std::vector<std::string> bufferNames);

  /// Renders `index` as an int64 C expression over `scope`. Inside body(), operands of floor
  /// divisions and remainders nested kMaxIndexDepth deep are named by locals (`ti<N>`).
  std::string index(const SymInt &index, const Scope &scope);
  /// How deeply rendered index operands may nest before body() names them: NVRTC recurses per
  /// level of nesting and overflows on expressions thousands deep (every computed value of a
  /// body already has its own local, so indices are the only nesting left).
  static constexpr int kMaxIndexDepth = 8;
  /// Appends the statements computing `body` to `out` (indented by `indent`) and returns the
  /// local holding the result, in registerType(body->dtype). Loads of `overrideBuffer` read
  /// `overrideValue` (a float expression) instead: the GEMM accumulator in epilogues.
  std::string body(const loop::ExprRef &body, const Scope &scope, std::string &out,
                   const std::string &indent, int overrideBuffer = -1,
                   const std::string &overrideValue = "");
  /// Loads of `buffer` at exactly `index` read `value` instead (an expression in the register
  /// type of the buffer's dtype): elements a vectorized kernel already loaded or computed.
  /// Cleared by clearLoadOverrides().
  void overrideLoad(int buffer, const SymInt &index, const std::string &value) {
    loadOverrides_[buffer] = {index, value};
  }
  void clearLoadOverrides() { loadOverrides_.clear(); }
  /// `value` (of `from`) converted to `to`, as an expression.
  std::string convert(const std::string &value, DType from, DType to);
  /// `value` (of `from`) in the memory form of `to`: what a store of it writes.
  std::string storedValue(const std::string &value, DType from, DType to);
  /// A statement storing `value` (of dtype `from`) at element `index` of `buffer`.
  std::string store(int buffer, DType from, const std::string &value, const std::string &index);
  /// The first error met while rendering (unsupported op/dtype, unknown variable).
  Status status() const { return status_; }

  // Plain operations (codegen::OpEmitter), in the scope of the body being rendered.
  std::string constant(const loop::Expr &expr) override;
  std::string load(const loop::Expr &expr) override;
  std::string indirectLoad(const loop::Expr &expr, std::string offset) override;
  std::string index(const loop::Expr &expr) override;
  std::string unary(loop::UnaryOp op, DType type, std::string x) override;
  std::string binary(loop::BinaryOp op, DType type, std::string x, std::string y) override;
  std::string select(DType type, std::string cond, std::string x, std::string y) override;
  std::string cast(DType from, DType to, std::string x) override;
  std::string bind(const loop::Expr &expr, std::string value) override;
  std::string group(std::string value) override { return "(" + value + ")"; }

private:
  /// index() that also says how deeply the result nests (`depth`, in parentheses).
  std::string index(const SymInt &index, const Scope &scope, int &depth);
  std::string notPlain(loop::UnaryOp op, DType dtype);
  std::string notPlain(loop::BinaryOp op, DType dtype);
  std::string fail(const std::string &message);

  const loop::LoopProgram &program_;
  std::vector<std::string> bufferNames_;
  // State of the body being rendered.
  const Scope *scope_ = nullptr;
  std::string *out_ = nullptr;
  std::string indent_;
  std::unordered_map<const loop::Expr *, std::string> memo_;
  int overrideBuffer_ = -1;
  std::map<int, std::pair<SymInt, std::string>> loadOverrides_;
  std::string overrideValue_;
  int counter_ = 0;
  int indexCounter_ = 0;
  Status status_;
};

} // namespace tensorc::cuda
