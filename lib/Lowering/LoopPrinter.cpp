// The LoopIR text form (the `lower` stage of `tensorc inspect`), complete enough for
// parseProgram to read back: buffers with weight data or digests, every node field, extern graphs.
#include "tensorc/Lowering/ExprVisitor.h"
#include "tensorc/Lowering/LoopParser.h"

#include "LoopText.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <optional>

namespace tensorc::loop {

std::string formatDouble(double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value < 0 ? "-inf" : "inf";
  char text[64];
  auto result = std::to_chars(text, text + sizeof text, value); // shortest exact round trip
  return std::string(text, result.ptr);
}

bool impliedOperandType(ExprKind kind, UnaryOp unary, BinaryOp binary, bool otherIsLiteral) {
  if (kind == ExprKind::Select)
    return true; // a bool condition, then the line's dtype
  if (kind == ExprKind::Unary)
    return unary != UnaryOp::IsNan && unary != UnaryOp::LogicalNot;
  // Arithmetic has its operands' dtype; a comparison's literal takes the other operand's. Casts
  // and gather offsets (whose suffix marks the number as the offset) always say it.
  return kind == ExprKind::Binary &&
         (binaryResultType(binary, DType::F32) == DType::F32 || !otherIsLiteral);
}

std::optional<DType> impliedRootType(const LoopProgram &program, const LoopNode &node) {
  if (node.kind == LoopNode::Kind::Reduction &&
      (node.reduceOp == ReduceOp::ArgMax || node.reduceOp == ReduceOp::ArgMin))
    return std::nullopt; // the body has the input's dtype
  return program.buffers[size_t(node.output)].dtype;
}

std::string tensorDigest(const Tensor &tensor) {
  // FNV-1a over dtype, shape and bytes: names the data, not a security property.
  uint64_t hash = 0xcbf29ce484222325ull;
  auto mix = [&](const void *data, size_t size) {
    for (size_t i = 0; i < size; ++i) {
      hash ^= static_cast<const unsigned char *>(data)[i];
      hash *= 0x100000001b3ull;
    }
  };
  std::string_view name = dtypeName(tensor.dtype());
  mix(name.data(), name.size());
  for (int64_t dim : tensor.shape())
    mix(&dim, sizeof dim);
  if (tensor.nbytes() > 0)
    mix(tensor.data(), tensor.nbytes());
  char text[32];
  std::snprintf(text, sizeof text, "fnv1a64:%016llx", static_cast<unsigned long long>(hash));
  return text;
}

namespace {

std::string constantText(const Expr &expr) {
  if (isFloating(expr.dtype))
    return formatDouble(expr.value);
  if (expr.dtype == DType::Bool)
    return expr.intValue != 0 || expr.value != 0 ? "1" : "0";
  return std::to_string(expr.intValue);
}

/// `rootType`: the dtype a literal root has without saying it (none: it always says it).
std::string printBody(const ExprRef &body, const LoopProgram &program,
                      std::optional<DType> rootType) {
  std::string lines;
  size_t count = 0;
  auto bufferName = [&](int id) { return program.buffers[size_t(id)].name; };
  auto print = [&](const Expr &expr, const std::vector<const std::string *> &texts) {
    if (expr.kind == ExprKind::Constant)
      return constantText(expr);
    std::vector<std::string> operands;
    for (size_t i = 0; i < texts.size(); ++i) {
      const Expr &operand = *expr.operands[i];
      bool otherIsLiteral = texts.size() == 2 && expr.operands[1 - i]->kind == ExprKind::Constant;
      bool typed = operand.kind == ExprKind::Constant &&
                   !impliedOperandType(expr.kind, expr.unary, expr.binary, otherIsLiteral);
      operands.push_back(*texts[i] + (typed ? ":" + std::string(dtypeName(operand.dtype)) : ""));
    }
    std::string text;
    switch (expr.kind) {
    case ExprKind::Constant:
      break;
    case ExprKind::Load:
      text = "load(" + bufferName(expr.buffer) + ", " + expr.index.str() + ")";
      break;
    case ExprKind::IndirectLoad: {
      // load(emb, x1 + t2): the affine part, then the runtime offset's temporary.
      std::string affine = expr.index == SymInt(0) ? "" : expr.index.str() + " + ";
      text = "load(" + bufferName(expr.buffer) + ", " + affine + operands[0] + ")";
      break;
    }
    case ExprKind::Index:
      text = "index(" + expr.index.str() + ")";
      break;
    case ExprKind::Unary:
      text = std::string(unaryName(expr.unary)) + "(" + operands[0] + ")";
      break;
    case ExprKind::Binary:
      text = std::string(binaryName(expr.binary)) + "(" + operands[0] + ", " + operands[1] + ")";
      break;
    case ExprKind::Select:
      text = "where(" + operands[0] + ", " + operands[1] + ", " + operands[2] + ")";
      break;
    case ExprKind::Cast:
      text = "cast(" + operands[0] + ")";
      break;
    }
    std::string name = "t" + std::to_string(count++);
    lines += "      " + name + " : " + std::string(dtypeName(expr.dtype)) + " = " + text + "\n";
    return name;
  };
  std::string result = foldExpr<std::string>(body, print);
  if (body->kind == ExprKind::Constant && rootType != body->dtype)
    result += ":" + std::string(dtypeName(body->dtype));
  return lines + "      -> " + result;
}

const char *bufferKindName(Buffer::Kind kind) {
  static constexpr const char *kNames[] = {"input", "weight", "buffer"}; // Buffer::Kind order
  return kNames[size_t(kind)];
}

/// ` data=[...]` for small weights (exact values), ` data=fnv1a64:...` for the others.
std::string weightData(const Tensor &tensor) {
  constexpr int64_t kMaxInlineElements = 8;
  if (tensor.numel() > kMaxInlineElements)
    return " data=" + tensorDigest(tensor);
  std::string out = " data=[";
  for (int64_t i = 0; i < tensor.numel(); ++i)
    out += (i ? ", " : "") + (isFloating(tensor.dtype()) ? formatDouble(tensor.getDouble(i))
                                                         : std::to_string(tensor.getInt(i)));
  return out + "]";
}

std::string view(const LoopProgram &program, const StridedView &v) {
  return program.buffers[size_t(v.buffer)].name + " offset " + v.offset.str() + " strides " +
         printDims(v.strides);
}

std::string names(const LoopProgram &program, const std::vector<int> &ids) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i)
    out += (i ? ", " : "") + program.buffers[size_t(ids[i])].name;
  return out;
}

std::string templateHeader(const LoopProgram &program, const LoopNode &node,
                           const std::string &output, std::string &detail) {
  switch (node.templateKind) {
  case LoopNode::TemplateKind::Gemm: {
    const LoopNode::Gemm &g = node.gemm;
    detail = "      a = " + view(program, g.a) + "\n      b = " + view(program, g.b) +
             (g.packedB ? ", layout=packed16" : "") + "\n";
    return "template gemm " + output + " batch=" + g.batch.str() + " m=" + g.m.str() +
           " n=" + g.n.str() + " k=" + g.k.str();
  }
  case LoopNode::TemplateKind::Conv2d: {
    const LoopNode::Conv &c = node.conv;
    auto pair = [](int64_t a, int64_t b) {
      return "[" + std::to_string(a) + ", " + std::to_string(b) + "]";
    };
    detail = "      input = " + program.buffers[size_t(c.input)].name +
             "\n      weight = " + view(program, c.weight) + "\n";
    return "template conv2d " + output + " n=" + c.n.str() + " c=" + std::to_string(c.c) +
           " h=" + std::to_string(c.h) + " w=" + std::to_string(c.w) +
           " oc=" + std::to_string(c.oc) + " kernel=" + pair(c.kh, c.kw) +
           " out=" + pair(c.oh, c.ow) + " stride=" + pair(c.strideH, c.strideW) +
           " padding=" + pair(c.padH, c.padW) + " dilation=" + pair(c.dilationH, c.dilationW) +
           " groups=" + std::to_string(c.groups) + (c.channelsLast ? " layout=nhwc" : "") +
           (c.packedWeights ? " tiles=" + pair(c.tileM, c.tileN) : "") +
           (c.winograd ? " winograd" : "") + (c.channelwise ? " channelwise" : "");
  }
  case LoopNode::TemplateKind::Attention: {
    const LoopNode::Attention &a = node.attention;
    // A dense operand by its buffer's name alone.
    auto operand = [&](const StridedView &v, const std::vector<SymInt> &dims) {
      return v.offset == SymInt(0) && v.strides == contiguousStrides(dims)
                 ? program.buffers[size_t(v.buffer)].name
                 : view(program, v);
    };
    detail = "      q = " + operand(a.q, a.dims(a.l, a.e)) +
             ", k = " + operand(a.k, a.dims(a.s, a.e)) + ", v = " + operand(a.v, a.dims(a.s, a.ev));
    if (a.mask.buffer >= 0)
      detail += ", mask = " + view(program, a.mask);
    if (!a.outStrides.empty())
      detail += ", out strides " + printDims(a.outStrides);
    detail += "\n";
    return "template attention " + output + " batch=" + a.batch.str() + " l=" + a.l.str() +
           " s=" + a.s.str() + " e=" + std::to_string(a.e) + " ev=" + std::to_string(a.ev) +
           " scale=" + formatDouble(a.scale) + (a.safeSoftmax ? " safe_softmax" : "") +
           " batch_dims=" + printDims(a.batchDims);
  }
  }
  return "";
}

/// ` name=...` when the node's name is not its output's, ` origins=[...]` when it has any, and
/// ` reason="..."`, why a fallback has no generated kernel.
std::string nodeSuffix(const LoopNode &node, const std::string &output) {
  std::string out;
  if (node.name != output)
    out += " name=" + node.name;
  if (!node.origins.empty()) {
    out += " origins=[";
    for (size_t i = 0; i < node.origins.size(); ++i)
      out += (i ? ", " : "") + node.origins[i];
    out += "]";
  }
  if (!node.externReason.empty()) {
    out += " reason=\"";
    for (char c : node.externReason)
      out += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
    out += "\"";
  }
  return out;
}

} // namespace

std::string printExpr(const ExprRef &expr, const LoopProgram &program) {
  return printBody(expr, program, expr->dtype);
}

std::string printProgram(const LoopProgram &program) {
  std::string out;
  for (const Buffer &buffer : program.buffers) {
    out += std::string(bufferKindName(buffer.kind)) + " " + buffer.name + " : " +
           std::string(dtypeName(buffer.dtype)) + printDims(buffer.shape);
    if (auto data = program.weights.find(buffer.name);
        buffer.kind == Buffer::Kind::Weight && data != program.weights.end())
      out += weightData(data->second);
    out += "\n";
  }
  for (const LoopNode &node : program.nodes) {
    std::string output = node.output >= 0 ? program.buffers[size_t(node.output)].name : "";
    std::string suffix = nodeSuffix(node, output);
    switch (node.kind) {
    case LoopNode::Kind::Pointwise:
    case LoopNode::Kind::Reduction: {
      bool reduction = node.kind == LoopNode::Kind::Reduction;
      out += std::string(reduction ? "reduction " : "pointwise ") + output + " over " +
             printDims(node.ranges);
      if (reduction)
        out +=
            " reducing " + printDims(node.reductionRanges) + " with " + reduceName(node.reduceOp);
      out += suffix + "\n" + printBody(node.body, program, impliedRootType(program, node)) + "\n";
      break;
    }
    case LoopNode::Kind::Template: {
      std::string detail;
      out += templateHeader(program, node, output, detail) + suffix + "\n" + detail;
      break;
    }
    case LoopNode::Kind::Extern: {
      out += "extern " + node.externOp + " (" + names(program, node.externInputs) + ") -> (" +
             names(program, node.externOutputs) + ")" + suffix + "\n";
      // The op as an FX-text graph, each line behind a bar.
      for (size_t start = 0; start < node.externGraph.size();) {
        size_t end = node.externGraph.find('\n', start);
        if (end == std::string::npos)
          end = node.externGraph.size();
        out += "      | " + node.externGraph.substr(start, end - start) + "\n";
        start = end + 1;
      }
      break;
    }
    }
  }
  return out + "outputs (" + names(program, program.outputs) + ")\n";
}

} // namespace tensorc::loop
