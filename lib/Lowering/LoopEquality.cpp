// Structural equality of LoopPrograms (what the printer/parser round trip is checked against).
#include "tensorc/Lowering/ExprVisitor.h"
#include "tensorc/Lowering/LoopParser.h"
#include "tensorc/Support/StrCat.h"

#include <bit>
#include <cmath>

namespace tensorc::loop {

namespace {

bool sameView(const StridedView &a, const StridedView &b) {
  return a.buffer == b.buffer && a.offset == b.offset && a.strides == b.strides;
}

bool sameScale(double a, double b) {
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b) ||
         (std::isnan(a) && std::isnan(b));
}

/// The first field in which two nodes differ, or "" when none does.
std::string nodeDifference(const LoopNode &a, const LoopNode &b) {
  if (a.kind != b.kind || a.id != b.id || a.name != b.name || a.output != b.output)
    return "kind, id, name or output";
  if (a.ranges != b.ranges || a.reductionRanges != b.reductionRanges)
    return "ranges";
  if (a.origins != b.origins)
    return "origins";
  switch (a.kind) {
  case LoopNode::Kind::Pointwise:
  case LoopNode::Kind::Reduction:
    if (a.kind == LoopNode::Kind::Reduction && a.reduceOp != b.reduceOp)
      return "reduction op";
    return equalExprs(a.body, b.body) ? "" : "body";
  case LoopNode::Kind::Template:
    if (a.templateKind != b.templateKind)
      return "template kind";
    switch (a.templateKind) {
    case LoopNode::TemplateKind::Gemm: {
      const LoopNode::Gemm &x = a.gemm, &y = b.gemm;
      return sameView(x.a, y.a) && sameView(x.b, y.b) && x.batch == y.batch && x.m == y.m &&
                     x.n == y.n && x.k == y.k && x.packedB == y.packedB
                 ? ""
                 : "gemm parameters";
    }
    case LoopNode::TemplateKind::Conv2d: {
      const LoopNode::Conv &x = a.conv, &y = b.conv;
      return x.input == y.input && sameView(x.weight, y.weight) && x.n == y.n && x.c == y.c &&
                     x.h == y.h && x.w == y.w && x.oc == y.oc && x.kh == y.kh && x.kw == y.kw &&
                     x.oh == y.oh && x.ow == y.ow && x.strideH == y.strideH &&
                     x.strideW == y.strideW && x.padH == y.padH && x.padW == y.padW &&
                     x.dilationH == y.dilationH && x.dilationW == y.dilationW &&
                     x.groups == y.groups && x.channelsLast == y.channelsLast &&
                     x.packedWeights == y.packedWeights && x.tileM == y.tileM &&
                     x.tileN == y.tileN && x.winograd == y.winograd &&
                     x.channelwise == y.channelwise
                 ? ""
                 : "conv parameters";
    }
    case LoopNode::TemplateKind::Attention: {
      const LoopNode::Attention &x = a.attention, &y = b.attention;
      return sameView(x.q, y.q) && sameView(x.k, y.k) && sameView(x.v, y.v) &&
                     x.outStrides == y.outStrides && x.batch == y.batch && x.l == y.l &&
                     x.s == y.s && x.e == y.e && x.ev == y.ev && sameScale(x.scale, y.scale) &&
                     x.safeSoftmax == y.safeSoftmax && x.batchDims == y.batchDims &&
                     sameView(x.mask, y.mask)
                 ? ""
                 : "attention parameters";
    }
    }
    return "";
  case LoopNode::Kind::Extern:
    return a.externOp == b.externOp && a.externGraph == b.externGraph &&
                   a.externReason == b.externReason && a.externInputs == b.externInputs &&
                   a.externOutputs == b.externOutputs
               ? ""
               : "extern op, graph, reason or buffers";
  }
  return "";
}

} // namespace

bool equalPrograms(const LoopProgram &a, const LoopProgram &b, std::string *difference) {
  auto differ = [&](const std::string &what) {
    if (difference)
      *difference = what;
    return false;
  };
  if (a.buffers.size() != b.buffers.size())
    return differ(strCat(a.buffers.size(), " buffers against ", b.buffers.size()));
  for (size_t i = 0; i < a.buffers.size(); ++i) {
    const Buffer &x = a.buffers[i], &y = b.buffers[i];
    if (x.id != y.id || x.name != y.name || x.kind != y.kind || x.dtype != y.dtype ||
        x.shape != y.shape || x.inputIndex != y.inputIndex)
      return differ(strCat("buffer #", i, " (", x.name, ", ", y.name, ")"));
  }
  if (a.weights.size() != b.weights.size())
    return differ("the set of weights with data");
  for (const auto &[name, tensor] : a.weights) {
    auto other = b.weights.find(name);
    if (other == b.weights.end() || !tensor.equals(other->second))
      return differ("weight " + name + "'s data");
  }
  if (a.nodes.size() != b.nodes.size())
    return differ(strCat(a.nodes.size(), " nodes against ", b.nodes.size()));
  for (size_t i = 0; i < a.nodes.size(); ++i)
    if (std::string field = nodeDifference(a.nodes[i], b.nodes[i]); !field.empty())
      return differ(strCat("node ", i, " (", a.nodes[i].name, "): ", field));
  if (a.outputs != b.outputs)
    return differ("outputs");
  if (a.symbols != b.symbols)
    return differ("symbols (" + join(a.symbols, ", ") + " against " + join(b.symbols, ", ") + ")");
  if (a.fallbacks != b.fallbacks)
    return differ("fallbacks");
  return true;
}

} // namespace tensorc::loop
