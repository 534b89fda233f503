// TEMPORARY (issue 18): the testing-only bug knob, applied to the loop IR before code generation.
// It exists to prove that `tensorc bisect` and `tensorc minify` find a planted bug; nothing but
// tests and their documentation should set TENSORC_INJECT_BUG.
#include "InjectBug.h"

#include "tensorc/Support/Log.h"
#include "tensorc/Support/StrCat.h"

#include <cstdlib>
#include <map>
#include <optional>

namespace tensorc {

namespace {

using loop::ExprKind;
using loop::ExprRef;
using loop::UnaryOp;

std::optional<UnaryOp> unaryByName(const std::string &name) {
#define TENSORC_MATCH(e, n)                                                                        \
  if (name == n)                                                                                   \
    return UnaryOp::e;
  TENSORC_FOR_EACH_UNARY(TENSORC_MATCH)
#undef TENSORC_MATCH
  return std::nullopt;
}

bool computes(const ExprRef &expr, UnaryOp op) {
  if (!expr)
    return false;
  if (expr->kind == ExprKind::Unary && expr->unary == op)
    return true;
  for (const ExprRef &operand : expr->operands)
    if (computes(operand, op))
      return true;
  return false;
}

/// `expr` with every float OP(x) replaced by `replace(OP(x))`; shared subexpressions stay shared.
template <typename Fn>
ExprRef rewrite(const ExprRef &expr, UnaryOp op, Fn &replace,
                std::map<const loop::Expr *, ExprRef> &done) {
  if (!expr)
    return expr;
  if (auto it = done.find(expr.get()); it != done.end())
    return it->second;
  auto copy = std::make_shared<loop::Expr>(*expr);
  for (ExprRef &operand : copy->operands)
    operand = rewrite(operand, op, replace, done);
  ExprRef result = copy;
  if (expr->kind == ExprKind::Unary && expr->unary == op && isFloating(expr->dtype))
    result = replace(result);
  done[expr.get()] = result;
  return result;
}

} // namespace

Status injectBugForTesting(loop::LoopProgram &program, const sched::Schedule &schedule) {
  const char *env = std::getenv("TENSORC_INJECT_BUG");
  if (!env || !*env)
    return Status::ok();
  std::string spec = env;
  size_t colon = spec.find(':');
  std::optional<UnaryOp> op =
      colon == std::string::npos ? std::nullopt : unaryByName(spec.substr(0, colon));
  std::string mode = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (!op || (mode != "compile-error" && mode != "crash" && mode != "accuracy"))
    return makeError("TENSORC_INJECT_BUG='", spec,
                     "': expected OP:compile-error|crash|accuracy with OP a loop IR unary op "
                     "(relu, erf, exp...)");
  log::warn(strCat("TENSORC_INJECT_BUG=", spec, " is set: kernels computing ",
                   spec.substr(0, colon),
                   " are deliberately broken (testing only: unset it for real builds)"));
  if (mode == "compile-error") {
    for (const sched::Kernel &kernel : schedule.kernels)
      for (int id : kernel.nodes)
        if (computes(program.nodes[size_t(id)].body, *op))
          return makeError("code generation of kernel ", kernel.name,
                           " failed: injected bug (TENSORC_INJECT_BUG=", spec, ")");
    return Status::ok();
  }
  for (loop::LoopNode &node : program.nodes) {
    std::map<const loop::Expr *, ExprRef> done;
    int output = node.output;
    auto replace = [&](const ExprRef &value) -> ExprRef {
      if (mode == "accuracy")
        return loop::makeBinary(loop::BinaryOp::Add, value, loop::makeConstant(1.0, value->dtype));
      // crash: also read the kernel's own output 2^40 elements past its start.
      ExprRef far = loop::makeIndirectLoad(output, program.buffers[size_t(output)].dtype, SymInt(0),
                                           loop::makeIntConstant(int64_t(1) << 40, DType::I64));
      ExprRef zero = loop::makeBinary(loop::BinaryOp::Mul, loop::makeCast(far, value->dtype),
                                      loop::makeConstant(0.0, value->dtype));
      return loop::makeBinary(loop::BinaryOp::Add, value, zero);
    };
    node.body = rewrite(node.body, *op, replace, done);
  }
  return Status::ok();
}

} // namespace tensorc
