// LoopProgram invariants: buffers, node order and writes, body dtypes, index variables and, with
// static extents, index bounds of loads and template views.
#include "tensorc/Lowering/LoopVerifier.h"

#include "tensorc/IR/Type.h"
#include "tensorc/Lowering/ExprVisitor.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace tensorc::loop {

namespace {

struct Interval {
  int64_t lo = 0, hi = 0;
};

std::optional<int64_t> mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

std::optional<Interval> times(Interval a, Interval b) {
  std::optional<int64_t> c[4] = {mul(a.lo, b.lo), mul(a.lo, b.hi), mul(a.hi, b.lo),
                                 mul(a.hi, b.hi)};
  Interval r{INT64_MAX, INT64_MIN};
  for (const auto &v : c) {
    if (!v)
      return std::nullopt;
    r.lo = std::min(r.lo, *v);
    r.hi = std::max(r.hi, *v);
  }
  return r;
}

std::optional<Interval> plus(Interval a, Interval b) {
  Interval r;
  if (__builtin_add_overflow(a.lo, b.lo, &r.lo) || __builtin_add_overflow(a.hi, b.hi, &r.hi))
    return std::nullopt;
  return r;
}

/// The values `value` takes with each variable of `extents` in [0, extent): nullopt when a symbol
/// has no static extent (a shape symbol) or the arithmetic overflows.
std::optional<Interval> rangeOf(const SymInt &value,
                                const std::map<std::string, int64_t> &extents) {
  Interval total{0, 0};
  for (const auto &[atoms, coefficient] : value.termList()) {
    Interval term{coefficient, coefficient};
    for (const SymInt::AtomPtr &atom : atoms) {
      Interval factor;
      switch (atom->kind) {
      case SymInt::Atom::Kind::Symbol: {
        auto it = extents.find(atom->name);
        if (it == extents.end() || it->second < 1)
          return std::nullopt;
        factor = {0, it->second - 1};
        break;
      }
      case SymInt::Atom::Kind::FloorDiv:
      case SymInt::Atom::Kind::Mod: {
        std::optional<Interval> inner = rangeOf(atom->numerator, extents);
        if (!inner)
          return std::nullopt;
        int64_t d = atom->denominator;
        if (atom->kind == SymInt::Atom::Kind::FloorDiv)
          factor = {floorDivInt(inner->lo, d), floorDivInt(inner->hi, d)};
        else if (inner->lo >= 0 && inner->hi < d)
          factor = *inner;
        else
          factor = {0, d - 1};
        break;
      }
      }
      std::optional<Interval> product = times(term, factor);
      if (!product)
        return std::nullopt;
      term = *product;
    }
    std::optional<Interval> sum = plus(total, term);
    if (!sum)
      return std::nullopt;
    total = *sum;
  }
  return total;
}

class Verifier {
public:
  explicit Verifier(const LoopProgram &program) : program_(program) {}

  Status run() {
    TC_RETURN_IF_ERROR(checkBuffers());
    std::set<int> written;
    for (const LoopNode &node : program_.nodes) {
      Status status = checkNode(node, written);
      if (!status)
        return makeError("loop IR: node ", node.id, " (", node.name, "): ", status.message());
    }
    for (int output : program_.outputs) {
      TC_RETURN_IF_ERROR(checkBuffer(output, "program output"));
      if (!available(output, written))
        return makeError("loop IR: output ", bufferName(output), " is never written");
    }
    std::vector<std::string> fallbacks;
    for (const LoopNode &node : program_.nodes)
      if (node.kind == LoopNode::Kind::Extern &&
          std::find(fallbacks.begin(), fallbacks.end(), node.externOp) == fallbacks.end())
        fallbacks.push_back(node.externOp);
    if (fallbacks != program_.fallbacks)
      return makeError("loop IR: the fallbacks list (", join(program_.fallbacks, ", "),
                       ") is not the extern nodes' ops in order (", join(fallbacks, ", "), ")");
    return Status::ok();
  }

private:
  std::string bufferName(int id) const {
    return id >= 0 && size_t(id) < program_.buffers.size() ? program_.buffers[size_t(id)].name
                                                           : "#" + std::to_string(id);
  }

  Status checkBuffer(int id, const char *what) const {
    if (id < 0 || size_t(id) >= program_.buffers.size())
      return makeError(what, " names buffer #", id, ", which does not exist");
    return Status::ok();
  }

  bool available(int id, const std::set<int> &written) const {
    return program_.buffers[size_t(id)].kind != Buffer::Kind::Intermediate || written.count(id);
  }

  Status checkBuffers() {
    std::set<std::string> names;
    int64_t inputs = 0;
    for (size_t i = 0; i < program_.buffers.size(); ++i) {
      const Buffer &buffer = program_.buffers[i];
      if (buffer.id != int(i))
        return makeError("loop IR: buffer ", buffer.name, " has id ", buffer.id, " at position ",
                         i);
      if (buffer.name.empty() || !names.insert(buffer.name).second)
        return makeError("loop IR: buffer #", i, " has an empty or repeated name '", buffer.name,
                         "'");
      for (const SymInt &dim : buffer.shape)
        if (dim.constant() && *dim.constant() < 0)
          return makeError("loop IR: buffer ", buffer.name, " has a negative dim ",
                           printDims(buffer.shape));
      int64_t expected = buffer.kind == Buffer::Kind::Input ? inputs++ : -1;
      if (buffer.inputIndex != expected)
        return makeError("loop IR: buffer ", buffer.name, " has input index ", buffer.inputIndex,
                         ", expected ", expected);
    }
    for (const auto &[name, tensor] : program_.weights) {
      // (a lambda may not capture a structured binding before C++20 in clang 14, the fuzz build's)
      const std::string &weightName = name;
      auto it = std::find_if(program_.buffers.begin(), program_.buffers.end(),
                             [&](const Buffer &b) { return b.name == weightName; });
      if (it == program_.buffers.end() || it->kind != Buffer::Kind::Weight)
        return makeError("loop IR: weight data '", name, "' has no weight buffer");
      std::vector<SymInt> shape(tensor.shape().begin(), tensor.shape().end());
      if (tensor.dtype() != it->dtype || shape != it->shape)
        return makeError("loop IR: weight ", name, " is ",
                         describeShape(tensor.dtype(), tensor.shape()), " but its buffer is ",
                         dtypeName(it->dtype), printDims(it->shape));
    }
    if (!std::is_sorted(program_.symbols.begin(), program_.symbols.end()) ||
        std::adjacent_find(program_.symbols.begin(), program_.symbols.end()) !=
            program_.symbols.end())
      return makeError("loop IR: shape symbols are not sorted and unique");
    return Status::ok();
  }

  Status checkWrite(int id, std::set<int> &written) {
    TC_RETURN_IF_ERROR(checkBuffer(id, "the output"));
    if (program_.buffers[size_t(id)].kind != Buffer::Kind::Intermediate)
      return makeError("writes ", bufferName(id), ", an input or weight");
    if (!written.insert(id).second)
      return makeError("writes ", bufferName(id), ", which an earlier node writes");
    return Status::ok();
  }

  Status checkNode(const LoopNode &node, std::set<int> &written) {
    if (node.id != int(&node - program_.nodes.data()))
      return makeError("has id ", node.id, " out of order");
    for (int read : node.reads()) {
      TC_RETURN_IF_ERROR(checkBuffer(read, "a read"));
      if (!available(read, written))
        return makeError("reads ", bufferName(read), " before any node writes it");
    }
    if (node.kind == LoopNode::Kind::Extern)
      return checkExtern(node, written);
    TC_RETURN_IF_ERROR(checkWrite(node.output, written));
    const Buffer &out = program_.buffers[size_t(node.output)];
    switch (node.kind) {
    case LoopNode::Kind::Pointwise:
    case LoopNode::Kind::Reduction:
      return checkLoop(node, out);
    case LoopNode::Kind::Template:
      if (node.ranges != out.shape)
        return makeError("template ranges ", printDims(node.ranges), " are not its output's shape ",
                         printDims(out.shape));
      return checkTemplate(node, out);
    case LoopNode::Kind::Extern:
      break;
    }
    return Status::ok();
  }

  Status checkExtern(const LoopNode &node, std::set<int> &written) {
    if (node.externOp.empty() || node.externGraph.empty())
      return makeError("extern node without its op or graph");
    for (int id : node.externOutputs)
      TC_RETURN_IF_ERROR(checkWrite(id, written));
    int first = node.externOutputs.empty() ? -1 : node.externOutputs[0];
    if (node.output != first)
      return makeError("extern output ", bufferName(node.output), " is not its first result ",
                       bufferName(first));
    return Status::ok();
  }

  Status checkLoop(const LoopNode &node, const Buffer &out) {
    if (!node.body)
      return makeError("has no body");
    if (tensorc::numel(node.ranges) != tensorc::numel(out.shape))
      return makeError("ranges ", printDims(node.ranges), " do not cover its output ", out.name,
                       printDims(out.shape));
    bool reduction = node.kind == LoopNode::Kind::Reduction;
    if (!reduction && !node.reductionRanges.empty())
      return makeError("a pointwise node with reduction ranges");
    bool arg =
        reduction && (node.reduceOp == ReduceOp::ArgMax || node.reduceOp == ReduceOp::ArgMin);
    if (arg ? out.dtype != DType::I64 : node.body->dtype != out.dtype)
      return makeError("body of dtype ", dtypeName(node.body->dtype), " for an output of ",
                       dtypeName(out.dtype));
    // Each variable's extent, static ones for bounds; shape symbols are in scope, unbounded.
    std::map<std::string, int64_t> extents;
    std::set<std::string> scope(program_.symbols.begin(), program_.symbols.end());
    auto declare = [&](const std::string &var, const SymInt &extent) {
      scope.insert(var);
      if (auto value = extent.constant())
        extents[var] = *value;
    };
    for (size_t i = 0; i < node.ranges.size(); ++i)
      declare(loopVar(i), node.ranges[i]);
    for (size_t i = 0; i < node.reductionRanges.size(); ++i)
      declare(reductionVar(i), node.reductionRanges[i]);
    Status status = Status::ok();
    forEachExpr(node.body, [&](const Expr &expr) {
      if (status)
        status = checkExpr(expr, scope, extents);
    });
    return status;
  }

  Status checkIndex(const SymInt &index, const std::set<std::string> &scope) {
    std::set<std::string> symbols;
    index.collectSymbols(symbols);
    for (const std::string &symbol : symbols)
      if (!scope.count(symbol))
        return makeError("index ", index.str(), " uses '", symbol,
                         "', which is not a loop variable of the node or a shape symbol");
    return Status::ok();
  }

  Status checkExpr(const Expr &expr, const std::set<std::string> &scope,
                   const std::map<std::string, int64_t> &extents) {
    auto operandType = [&](size_t i) { return expr.operands[i]->dtype; };
    size_t arity = 0;
    switch (expr.kind) {
    case ExprKind::Constant:
      break;
    case ExprKind::Load:
    case ExprKind::IndirectLoad: {
      arity = expr.kind == ExprKind::Load ? 0 : 1;
      TC_RETURN_IF_ERROR(checkBuffer(expr.buffer, "a load"));
      const Buffer &buffer = program_.buffers[size_t(expr.buffer)];
      if (expr.dtype != buffer.dtype)
        return makeError("loads ", buffer.name, " (", dtypeName(buffer.dtype), ") as ",
                         dtypeName(expr.dtype));
      TC_RETURN_IF_ERROR(checkIndex(expr.index, scope));
      if (expr.kind == ExprKind::IndirectLoad) {
        if (expr.operands.size() == 1 && operandType(0) != DType::I64)
          return makeError("an indirect load of ", buffer.name, " with a ",
                           dtypeName(operandType(0)), " offset (i64 expected)");
        break; // the runtime offset decides where it reads (lowering clamps it)
      }
      std::optional<int64_t> numel = tensorc::numel(buffer.shape).constant();
      std::optional<Interval> range = rangeOf(expr.index, extents);
      if (numel && range && (range->lo < 0 || range->hi >= *numel))
        return makeError("loads ", buffer.name, " at ", expr.index.str(), ", in [", range->lo, ", ",
                         range->hi, "], outside its ", *numel, " elements");
      break;
    }
    case ExprKind::Index:
      TC_RETURN_IF_ERROR(checkIndex(expr.index, scope));
      break;
    case ExprKind::Unary: {
      arity = 1;
      if (expr.operands.size() != 1)
        break;
      bool boolean = expr.unary == UnaryOp::IsNan || expr.unary == UnaryOp::LogicalNot;
      if (expr.dtype != (boolean ? DType::Bool : operandType(0)))
        return makeError(unaryName(expr.unary), " of ", dtypeName(operandType(0)), " typed ",
                         dtypeName(expr.dtype));
      break;
    }
    case ExprKind::Binary:
      arity = 2;
      if (expr.operands.size() != 2)
        break;
      if (operandType(0) != operandType(1) ||
          expr.dtype != binaryResultType(expr.binary, operandType(0)))
        return makeError(binaryName(expr.binary), " of ", dtypeName(operandType(0)), " and ",
                         dtypeName(operandType(1)), " typed ", dtypeName(expr.dtype));
      break;
    case ExprKind::Select:
      arity = 3;
      if (expr.operands.size() != 3)
        break;
      if (operandType(0) != DType::Bool || operandType(1) != operandType(2) ||
          expr.dtype != operandType(1))
        return makeError("where(", dtypeName(operandType(0)), ", ", dtypeName(operandType(1)), ", ",
                         dtypeName(operandType(2)), ") typed ", dtypeName(expr.dtype));
      break;
    case ExprKind::Cast:
      arity = 1;
      break;
    }
    if (expr.operands.size() != arity)
      return makeError("an expression with ", expr.operands.size(), " operands (", arity,
                       " expected)");
    return Status::ok();
  }

  /// `view` over `extents` (one per stride) stays inside its buffer where everything is static.
  Status checkView(const StridedView &view, const std::vector<SymInt> &extents, const char *what) {
    TC_RETURN_IF_ERROR(checkBuffer(view.buffer, what));
    if (view.strides.size() != extents.size())
      return makeError(what, " has ", view.strides.size(), " strides for ", extents.size(),
                       " dims");
    SymInt last = view.offset;
    std::map<std::string, int64_t> ranges;
    for (size_t i = 0; i < extents.size(); ++i) {
      last = last + view.strides[i] * SymInt::symbol(loopVar(i));
      if (auto extent = extents[i].constant())
        ranges[loopVar(i)] = *extent;
    }
    const Buffer &buffer = program_.buffers[size_t(view.buffer)];
    std::optional<int64_t> numel = tensorc::numel(buffer.shape).constant();
    std::optional<Interval> range = rangeOf(last, ranges);
    if (numel && range && *numel > 0 && (range->lo < 0 || range->hi >= *numel))
      return makeError(what, " reads ", buffer.name, " in [", range->lo, ", ", range->hi,
                       "], outside its ", *numel, " elements");
    return Status::ok();
  }

  Status checkTemplate(const LoopNode &node, const Buffer &out) {
    switch (node.templateKind) {
    case LoopNode::TemplateKind::Gemm: {
      const LoopNode::Gemm &g = node.gemm;
      TC_RETURN_IF_ERROR(checkView(g.a, {g.batch, g.m, g.k}, "gemm operand a"));
      TC_RETURN_IF_ERROR(checkView(g.b, {g.batch, g.k, g.n}, "gemm operand b"));
      if (tensorc::numel(out.shape) != g.batch * g.m * g.n)
        return makeError("gemm of ", g.batch.str(), " x ", g.m.str(), " x ", g.n.str(), " writes ",
                         out.name, printDims(out.shape));
      return Status::ok();
    }
    case LoopNode::TemplateKind::Conv2d: {
      const LoopNode::Conv &c = node.conv;
      TC_RETURN_IF_ERROR(checkBuffer(c.input, "conv input"));
      if (c.groups < 1 || c.c % c.groups != 0 || c.oc % c.groups != 0)
        return makeError("conv with ", c.c, " channels, ", c.oc, " outputs and ", c.groups,
                         " groups");
      if (c.channelsLast) {
        TC_RETURN_IF_ERROR(
            checkView(c.weight, {SymInt(c.oc), SymInt(c.kh), SymInt(c.kw), SymInt(c.c / c.groups)},
                      "conv weight"));
        if (program_.buffers[size_t(c.input)].shape !=
                std::vector<SymInt>{c.n, SymInt(c.h), SymInt(c.w), SymInt(c.c)} ||
            out.shape != std::vector<SymInt>{c.n, SymInt(c.oh), SymInt(c.ow), SymInt(c.oc)})
          return makeError("channels-last conv input or output shape differs from its "
                           "parameters (NHWC)");
        return Status::ok();
      }
      TC_RETURN_IF_ERROR(
          checkView(c.weight, {SymInt(c.oc), SymInt(c.c / c.groups), SymInt(c.kh), SymInt(c.kw)},
                    "conv weight"));
      if (program_.buffers[size_t(c.input)].shape !=
              std::vector<SymInt>{c.n, SymInt(c.c), SymInt(c.h), SymInt(c.w)} ||
          out.shape != std::vector<SymInt>{c.n, SymInt(c.oc), SymInt(c.oh), SymInt(c.ow)})
        return makeError("conv input or output shape differs from its parameters");
      return Status::ok();
    }
    case LoopNode::TemplateKind::Attention: {
      const LoopNode::Attention &a = node.attention;
      if (tensorc::numel(a.batchDims) != a.batch)
        return makeError("attention batch ", a.batch.str(), " is not the product of its dims ",
                         printDims(a.batchDims));
      TC_RETURN_IF_ERROR(checkView(a.q, a.dims(a.l, a.e), "attention q"));
      TC_RETURN_IF_ERROR(checkView(a.k, a.dims(a.s, a.e), "attention k"));
      TC_RETURN_IF_ERROR(checkView(a.v, a.dims(a.s, a.ev), "attention v"));
      for (const StridedView *view : {&a.q, &a.k, &a.v})
        if (!(view->strides.back() == SymInt(1)))
          return makeError("attention operand ", program_.buffers[size_t(view->buffer)].name,
                           " is not contiguous along the head dim");
      if (!a.outStrides.empty())
        TC_RETURN_IF_ERROR(checkView({node.output, SymInt(0), a.outStrides}, a.dims(a.l, a.ev),
                                     "attention output"));
      if (a.mask.buffer >= 0) {
        std::vector<SymInt> extents = a.batchDims;
        extents.push_back(a.l);
        extents.push_back(a.s);
        TC_RETURN_IF_ERROR(checkView(a.mask, extents, "attention mask"));
      }
      return Status::ok();
    }
    }
    return Status::ok();
  }

  const LoopProgram &program_;
};

} // namespace

Status verifyProgram(const LoopProgram &program) { return Verifier(program).run(); }

} // namespace tensorc::loop
