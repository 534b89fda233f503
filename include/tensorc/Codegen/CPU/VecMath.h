// Vector math in LLVM IR: exp, log, tanh, erf, sigmoid, written once as polynomials so kernels
// call no libm. Each function accepts a float scalar or a fixed vector of float (any width) and
// returns a value of the same type, emitted at the builder's insertion point.
#pragma once

namespace llvm {
class IRBuilderBase;
class Value;
} // namespace llvm

namespace tensorc::cpu {

// Accuracy against double-precision libm, in ulps of the exact result (denormal ulps below
// FLT_MIN): every 257th f32 bit pattern of both signs through the JIT (VecMathTest, disabled by
// default) gives exp 0.97, log 0.78, tanh 1.25, erf 0.94, sigmoid 2.31; every 7th pattern through
// a scalar model of the same arithmetic gave exp 1.02, log 0.79, tanh 1.33, erf 0.97, sigmoid 2.33.
// The tests assert exp/log 1.5, tanh/erf 2, sigmoid 2.5.
// Special values: exp overflows to +inf (x > 88.72), underflows gradually through the denormals
// to 0 (x < -103.97), exp(+-inf) = +inf/0; log(+-0) = -inf, log(x < 0) = NaN, log(+inf) = +inf,
// denormal inputs are rescaled and as accurate as normal ones; tanh, erf saturate to +-1 and keep
// -0; sigmoid(+-inf) = 1/0 and tiny results for very negative x stay denormal rather than flushing.
// NaN in -> NaN out.
llvm::Value *emitExp(llvm::IRBuilderBase &b, llvm::Value *x);
llvm::Value *emitLog(llvm::IRBuilderBase &b, llvm::Value *x);
llvm::Value *emitTanh(llvm::IRBuilderBase &b, llvm::Value *x);
llvm::Value *emitErf(llvm::IRBuilderBase &b, llvm::Value *x);
llvm::Value *emitSigmoid(llvm::IRBuilderBase &b, llvm::Value *x);

} // namespace tensorc::cpu
