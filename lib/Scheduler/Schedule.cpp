// Fusion (vertical, horizontal, reduction + pointwise rows, GEMM epilogues), kernel naming and the
// lifetime-based buffer plan. Every fusion decision and rejection is logged under `schedule`.
#include "tensorc/Scheduler/Schedule.h"

#include "tensorc/IR/Type.h"
#include "tensorc/Lowering/ExprVisitor.h"
#include "tensorc/Support/Log.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <climits>
#include <functional>
#include <map>
#include <set>

namespace tensorc::sched {

using loop::Buffer;
using loop::ExprKind;
using loop::ExprRef;
using loop::LoopNode;
using loop::LoopProgram;
using loop::printDims;

namespace {

/// ceil(x / d) for x >= 0, d > 0, without overflowing near INT64_MAX.
int64_t ceilDiv(int64_t x, int64_t d) { return x / d + (x % d != 0); }

} // namespace

GemmTaskTile gemmTaskTile(const loop::LoopNode::Gemm &gemm) {
  GemmTaskTile tile;
  auto n = gemm.n.constant();
  if (!gemm.packedB || !n || *n < 1)
    return tile;
  // A symbolic M or batch counts as one tile of rows / one batch: the fewest tasks it can have.
  auto m = gemm.m.constant();
  int64_t batch = std::max<int64_t>(1, gemm.batch.constant().value_or(1));
  int64_t k = std::max<int64_t>(1, gemm.k.constant().value_or(1));
  // In floating point: a hostile model's extents must not overflow the products.
  auto tasks = [&](const GemmTaskTile &t) {
    return double(batch) * double(m ? ceilDiv(*m, t.rows) : 1) * double(ceilDiv(*n, t.cols));
  };
  auto worth = [&](const GemmTaskTile &t) {
    double macs = double(std::min(m.value_or(t.rows), t.rows)) * double(std::min(*n, t.cols));
    return macs * double(k) >= double(kGemmMinTaskMacs);
  };
  while (tasks(tile) < double(kGemmMinTasks)) {
    // Halve a side only while that makes more tiles of it.
    GemmTaskTile next = tile;
    if (tile.cols > kGemmMinTileN && tile.cols / 2 < *n)
      next.cols = tile.cols / 2;
    else if (m && tile.rows > kGemmMinTileM && tile.rows / 2 < *m)
      next.rows = tile.rows / 2;
    else
      break;
    if (!worth(next))
      break;
    tile = next;
  }
  return tile;
}

SymInt gemmTileCount(const loop::LoopNode::Gemm &gemm) {
  GemmTaskTile tile = gemmTaskTile(gemm);
  SymInt tilesM = SymInt::floorDiv(gemm.m + SymInt(tile.rows - 1), tile.rows);
  SymInt tilesN = SymInt::floorDiv(gemm.n + SymInt(tile.cols - 1), tile.cols);
  return gemm.batch * tilesM * tilesN;
}

SymInt convTileCount(const loop::LoopNode::Conv &conv) {
  if (conv.packedWeights) { // the CPU's channels-last tiles, chosen when the weights were packed
    if (conv.depthwise() || conv.channelwise)
      return conv.n * SymInt(ceilDiv(conv.oh, conv.tileM) * ceilDiv(conv.c, conv.tileN));
    if (conv.winograd) // tiles of 2 x 2 outputs
      return conv.n * SymInt(ceilDiv(ceilDiv(conv.oh, 2) * ceilDiv(conv.ow, 2), conv.tileM) *
                             ceilDiv(conv.oc, conv.tileN));
    return conv.n * SymInt(conv.groups * ceilDiv(conv.oh * conv.ow, conv.tileM) *
                           ceilDiv(conv.oc / conv.groups, conv.tileN));
  }
  int64_t rows = conv.oc / conv.groups, cols = conv.oh * conv.ow;
  int64_t tiles = (rows + kGemmTileM - 1) / kGemmTileM * ((cols + kGemmTileN - 1) / kGemmTileN);
  return conv.n * SymInt(conv.groups * tiles);
}

SymInt templateTileCount(const loop::LoopNode &node) {
  switch (node.templateKind) {
  case LoopNode::TemplateKind::Gemm:
    return gemmTileCount(node.gemm);
  case LoopNode::TemplateKind::Conv2d:
    return convTileCount(node.conv);
  case LoopNode::TemplateKind::Attention:
    return node.attention.batch * node.attention.l; // query rows
  }
  return SymInt(0);
}

std::optional<std::vector<SymInt>> permutedStrides(const SymInt &index,
                                                   const std::vector<SymInt> &ranges) {
  std::map<std::string, SymInt> zero;
  for (size_t i = 0; i < ranges.size(); ++i)
    zero[loop::loopVar(i)] = SymInt(0);
  if (index.substitute(zero) != SymInt(0))
    return std::nullopt;
  // Each variable's coefficient; the index must be exactly their sum (affine, no products).
  std::vector<SymInt> strides(ranges.size(), SymInt(0));
  SymInt rebuilt(0);
  for (size_t i = 0; i < ranges.size(); ++i) {
    std::map<std::string, SymInt> unit = zero;
    unit[loop::loopVar(i)] = SymInt(1);
    strides[i] = index.substitute(unit);
    rebuilt = rebuilt + strides[i] * SymInt::symbol(loop::loopVar(i));
  }
  if (rebuilt != index)
    return std::nullopt;
  // Dense in some dim order: the innermost dim has stride 1, each next the product of the
  // extents inside it.
  std::vector<bool> placed(ranges.size(), false);
  size_t left = 0;
  for (size_t i = 0; i < ranges.size(); ++i) {
    placed[i] = ranges[i].constant() == std::optional<int64_t>(1);
    if (placed[i])
      strides[i] = SymInt(0);
    else
      ++left;
  }
  SymInt expected(1);
  for (; left > 0; --left) {
    size_t found = ranges.size();
    for (size_t i = 0; i < ranges.size() && found == ranges.size(); ++i)
      if (!placed[i] && strides[i] == expected)
        found = i;
    if (found == ranges.size())
      return std::nullopt;
    placed[found] = true;
    expected = expected * ranges[found];
  }
  return strides;
}

const char *fusionKindName(FusionDecision::Kind kind) {
  switch (kind) {
  case FusionDecision::Kind::Pointwise:
    return "pointwise";
  case FusionDecision::Kind::Reduction:
    return "reduction";
  case FusionDecision::Kind::Epilogue:
    return "epilogue";
  }
  return "?";
}

SymInt rowMajorFlat(const std::vector<SymInt> &ranges, size_t count) {
  SymInt flat(0), stride(1);
  for (size_t i = ranges.size(); i-- > 0;) {
    if (i < count)
      flat = flat + SymInt::symbol(loop::loopVar(i)) * stride;
    stride = stride * ranges[i];
  }
  return flat;
}

namespace {

/// Every Load and IndirectLoad of `body` with its index (an IndirectLoad reads its buffer
/// anywhere: its index is only the affine part).
void collectLoads(const ExprRef &body, std::vector<const loop::Expr *> &loads) {
  loop::forEachExpr(body, [&](const loop::Expr &expr) {
    if (expr.kind == ExprKind::Load || expr.kind == ExprKind::IndirectLoad)
      loads.push_back(&expr);
  });
}

/// The distinct expression nodes of `body` (a DAG).
size_t exprNodeCount(const ExprRef &body) {
  std::set<const loop::Expr *> seen;
  std::vector<const loop::Expr *> stack{body.get()};
  while (!stack.empty()) {
    const loop::Expr *expr = stack.back();
    stack.pop_back();
    if (!expr || !seen.insert(expr).second)
      continue;
    for (const ExprRef &operand : expr->operands)
      stack.push_back(operand.get());
  }
  return seen.size();
}

std::vector<SymInt> withoutUnitDims(const std::vector<SymInt> &shape) {
  std::vector<SymInt> kept;
  for (const SymInt &dim : shape)
    if (dim.constant() != std::optional<int64_t>(1))
      kept.push_back(dim);
  return kept;
}

bool mentionsOuterVar(const SymInt &value, size_t outerCount) {
  std::set<std::string> symbols;
  value.collectSymbols(symbols);
  for (size_t i = 0; i < outerCount; ++i)
    if (symbols.count(loop::loopVar(i)))
      return true;
  return false;
}

/// a >= b for all values of the symbols (which are sizes, so >= 0): a - b is a polynomial in
/// plain symbols with no negative coefficient.
bool provablyAtLeast(const SymInt &a, const SymInt &b) {
  for (const auto &[atoms, coefficient] : (a - b).termList()) {
    if (coefficient < 0)
      return false;
    for (const SymInt::AtomPtr &atom : atoms)
      if (atom->kind != SymInt::Atom::Kind::Symbol)
        return false;
  }
  return true;
}

class Scheduler {
public:
  Scheduler(const LoopProgram &program, const ScheduleOptions &options)
      : program_(program), options_(options) {
    for (const LoopNode &node : program.nodes) {
      for (int buffer : node.reads())
        readers_[buffer].push_back(node.id);
      if (node.kind == LoopNode::Kind::Extern)
        for (int buffer : node.externOutputs)
          producer_[buffer] = node.id;
      else
        producer_[node.output] = node.id;
    }
    for (int output : program.outputs)
      isOutput_.insert(output);
  }

  Expected<Schedule> run() {
    for (const LoopNode &node : program_.nodes) {
      switch (node.kind) {
      case LoopNode::Kind::Pointwise:
        if (options_.fuse && !rowReductionFollows(node) && tryEpilogue(node))
          break;
        [[fallthrough]];
      case LoopNode::Kind::Reduction:
        if (!(options_.fuse && tryAppend(node)))
          startLoopKernel(node);
        break;
      case LoopNode::Kind::Template:
      case LoopNode::Kind::Extern: {
        Kernel kernel;
        kernel.kind = node.kind == LoopNode::Kind::Template ? Kernel::Kind::Template
                                                            : Kernel::Kind::Extern;
        kernel.nodes = {node.id};
        addKernel(std::move(kernel));
        break;
      }
      }
    }
    for (size_t i = 0; i < schedule_.kernels.size(); ++i)
      finishKernel(schedule_.kernels[i], i);
    planBuffers();
    return std::move(schedule_);
  }

private:
  void addKernel(Kernel kernel) {
    for (int id : kernel.nodes)
      kernelOf_[id] = schedule_.kernels.size();
    schedule_.kernels.push_back(std::move(kernel));
  }

  void startLoopKernel(const LoopNode &node) {
    Kernel kernel;
    kernel.kind = Kernel::Kind::Loop;
    // Every dim of a pointwise kernel is parallel (codegen vectorizes the last one per row
    // segment); a reduction appended later narrows the rows to its own (tryAppend).
    kernel.outerRanges = node.ranges;
    kernel.nodes = {node.id};
    addKernel(std::move(kernel));
  }

  static std::vector<SymInt> outerOf(const LoopNode &node, size_t count) {
    return std::vector<SymInt>(node.ranges.begin(),
                               node.ranges.begin() + std::min(count, node.ranges.size()));
  }

  /// Whether `load` (a Load in `reader`'s body of what `source` writes) stays within the row of
  /// the first `outerCount` dims it is written in: with the inner variables at 0 its index is
  /// the source's row start, and the inner variables alone stay within the row.
  static bool withinRow(const LoopNode &reader, const loop::Expr &load, const LoopNode &source,
                        size_t outerCount) {
    std::map<std::string, SymInt> zero;
    for (size_t i = outerCount; i < reader.ranges.size(); ++i)
      zero[loop::loopVar(i)] = SymInt(0);
    for (size_t i = 0; i < reader.reductionRanges.size(); ++i)
      zero[loop::reductionVar(i)] = SymInt(0);
    SymInt rowStart = load.index.substitute(zero);
    return rowStart == rowMajorFlat(source.ranges, outerCount) &&
           !mentionsOuterVar(load.index - rowStart, outerCount);
  }

  /// Appends `node` to the last kernel when it runs over the same rows and reads what that kernel
  /// writes only within the same row.
  bool tryAppend(const LoopNode &node) {
    FusionDecision::Kind kind = node.kind == LoopNode::Kind::Reduction
                                    ? FusionDecision::Kind::Reduction
                                    : FusionDecision::Kind::Pointwise;
    auto reject = [&](const std::string &why) {
      log::debug("schedule", "not fusing " + node.name + ": " + why);
      schedule_.decisions.push_back({kind, node.id, false, why});
      return false;
    };
    if (schedule_.kernels.empty())
      return false;
    Kernel &kernel = schedule_.kernels.back();
    if (kernel.kind != Kernel::Kind::Loop)
      return reject("the previous kernel is not a loop kernel");
    std::vector<SymInt> outer = kernel.outerRanges;
    if (outer.empty())
      return reject("the previous kernel has no parallel dims");
    // A reduction over fewer dims than a pointwise-only kernel's rows narrows the rows to its
    // own, when they are a prefix (the pointwise stages then loop over the rest).
    bool onlyPointwise = true;
    for (int id : kernel.nodes)
      onlyPointwise &= program_.nodes[size_t(id)].kind == LoopNode::Kind::Pointwise;
    if (node.kind == LoopNode::Kind::Reduction && onlyPointwise && !node.ranges.empty() &&
        node.ranges.size() < outer.size() && outerOf(node, node.ranges.size()) ==
            std::vector<SymInt>(outer.begin(), outer.begin() + node.ranges.size()))
      outer.resize(node.ranges.size());
    if (node.ranges.size() < outer.size() || outerOf(node, outer.size()) != outer)
      return reject("ranges " + printDims(node.ranges) + " do not start with the kernel's rows " +
                    printDims(outer));
    if (node.kind == LoopNode::Kind::Reduction && node.ranges.size() != outer.size())
      return reject("a reduction over more dims than the kernel's rows");
    size_t exprNodes = 0;
    for (int id : kernel.nodes)
      exprNodes += exprNodeCount(program_.nodes[size_t(id)].body);
    if (exprNodes + exprNodeCount(node.body) > options_.maxKernelExprNodes)
      return reject(strCat("the kernel already holds ", exprNodes, " expression nodes (at most ",
                           options_.maxKernelExprNodes, " per kernel keep compile times linear)"));
    std::vector<const loop::Expr *> loads;
    collectLoads(node.body, loads);
    for (const loop::Expr *load : loads) {
      auto producer = producer_.find(load->buffer);
      if (producer == producer_.end() || kernelOf_.count(producer->second) == 0 ||
          kernelOf_.at(producer->second) != schedule_.kernels.size() - 1)
        continue;
      if (load->kind == ExprKind::IndirectLoad)
        return reject("reads " + program_.buffers[size_t(load->buffer)].name +
                      " at positions known only at run time (a gather)");
      if (!withinRow(node, *load, program_.nodes[size_t(producer->second)], outer.size()))
        return reject("reads " + program_.buffers[size_t(load->buffer)].name +
                      " outside the row it is written in (index " + load->index.str() + ")");
    }
    if (std::optional<std::string> limit = fusionLimit(kind))
      return reject(*limit);
    kernel.outerRanges = outer;
    kernel.nodes.push_back(node.id);
    kernelOf_[node.id] = schedule_.kernels.size() - 1;
    std::string reason = "fused " + node.name + " into rows " + printDims(outer);
    kernel.reason += (kernel.reason.empty() ? "" : "; ") + reason;
    log::debug("schedule", reason);
    schedule_.decisions.push_back({kind, node.id, true, reason});
    return true;
  }

  /// Whether the next node is a reduction over a prefix of `node`'s dims that reads its result
  /// within its rows and the result is read again after the next GEMM (a pre-norm residual stream:
  /// the layer norm, then the next residual add): `node` then starts the row kernel the reduction
  /// joins, which stores it and keeps it in registers for the norm, rather than becoming a matrix
  /// product's epilogue. With a generated GEMM that costs one more pass over the product (stored
  /// and read back, where an epilogue keeps it in registers); with a library GEMM (tuning gives
  /// the library nearly every transformer GEMM on a GPU) an epilogue is a kernel of its own
  /// reading an f32 scratch product, while the row kernel reads the product where the library
  /// wrote it. Either way the norm no longer recomputes the stream. A result read
  /// only by the norm (a bias add before it) stays the epilogue: the row kernel would store it
  /// for nobody.
  bool rowReductionFollows(const LoopNode &node) const {
    size_t next = size_t(node.id) + 1;
    // `node` must start the row kernel: after a loop kernel it might join that one's rows instead.
    if (next >= program_.nodes.size() || schedule_.kernels.empty() ||
        schedule_.kernels.back().kind == Kernel::Kind::Loop ||
        options_.disabledFusions.count(fusionKindName(FusionDecision::Kind::Reduction)))
      return false;
    const LoopNode &reduction = program_.nodes[next];
    if (reduction.kind != LoopNode::Kind::Reduction || reduction.ranges.empty() ||
        reduction.ranges.size() >= node.ranges.size() ||
        outerOf(node, reduction.ranges.size()) != reduction.ranges)
      return false;
    // It must be able to join the row kernel `node` would start (tryAppend's tests): every load
    // of `node`'s result within its row; otherwise the epilogue stays.
    std::vector<const loop::Expr *> loads;
    collectLoads(reduction.body, loads);
    bool reads = false;
    for (const loop::Expr *load : loads) {
      if (load->buffer != node.output)
        continue;
      if (load->kind == ExprKind::IndirectLoad ||
          !withinRow(reduction, *load, node, reduction.ranges.size()))
        return false;
      reads = true;
    }
    if (!reads ||
        exprNodeCount(node.body) + exprNodeCount(reduction.body) > options_.maxKernelExprNodes)
      return false;
    size_t nextTemplate = next;
    while (nextTemplate < program_.nodes.size() &&
           program_.nodes[nextTemplate].kind != LoopNode::Kind::Template &&
           program_.nodes[nextTemplate].kind != LoopNode::Kind::Extern)
      ++nextTemplate;
    bool readLater = isOutput_.count(node.output) != 0;
    for (int reader : readers_.at(node.output))
      readLater |= size_t(reader) > nextTemplate;
    if (!readLater)
      return false;
    // Only after matrix products: a convolution's epilogue stays (its consumers are pools and
    // squeeze-excite means over another layout's rows).
    for (size_t index : epilogueCandidates(node))
      if (program_.nodes[size_t(schedule_.kernels[index].nodes[0])].templateKind !=
          LoopNode::TemplateKind::Gemm)
        return false;
    return true;
  }

  /// The result a Template kernel stores: its last node's output (the template's own, or the
  /// last node of its epilogue chain).
  int templateResult(const Kernel &kernel) const {
    return program_.nodes[size_t(kernel.nodes.back())].output;
  }

  /// The Template kernels whose stored result `node` reads, latest first: where it may become
  /// (the next link of) the epilogue.
  std::vector<size_t> epilogueCandidates(const LoopNode &node) const {
    std::set<size_t, std::greater<size_t>> found;
    for (int buffer : node.reads()) {
      auto producer = producer_.find(buffer);
      if (producer == producer_.end())
        continue;
      auto kernel = kernelOf_.find(producer->second);
      if (kernel == kernelOf_.end())
        continue;
      const Kernel &candidate = schedule_.kernels[kernel->second];
      if (candidate.kind == Kernel::Kind::Template && candidate.nodes.back() == producer->second)
        found.insert(kernel->second);
    }
    return {found.begin(), found.end()};
  }

  /// Fuses a pointwise node into a GEMM/convolution kernel as (the next link of) its epilogue when
  /// it reads that kernel's stored result only at its own index and nothing else reads that
  /// result: the chain's intermediate results then stay in registers and are never stored. A
  /// result with readers outside the chain ends the chain there instead (it is stored, and the
  /// node becomes a loop kernel of its own): storing it from the epilogue too would need every
  /// backend's epilogue to write two buffers, for a case (a residual stream read twice) where the
  /// next node is a reduction anyway. The kernel need not be the last one scheduled (BERT's Q,
  /// K and V products come before their bias adds).
  bool tryEpilogue(const LoopNode &node) {
    std::vector<size_t> candidates = epilogueCandidates(node);
    if (candidates.empty())
      return false;
    std::string firstRefusal;
    for (size_t index : candidates) {
      std::optional<std::string> refusal = epilogueRefusal(node, index);
      if (!refusal)
        return true;
      if (firstRefusal.empty())
        firstRefusal = *refusal;
    }
    log::debug("schedule", "no epilogue " + node.name + ": " + firstRefusal);
    schedule_.decisions.push_back({FusionDecision::Kind::Epilogue, node.id, false, firstRefusal});
    return false;
  }

  /// Fuses `node` into the Template kernel at `index` and returns nullopt, or says why not.
  std::optional<std::string> epilogueRefusal(const LoopNode &node, size_t index) {
    const Kernel &kernel = schedule_.kernels[index];
    const LoopNode &gemm = program_.nodes[size_t(kernel.nodes[0])];
    if (gemm.templateKind == LoopNode::TemplateKind::Attention)
      return std::string("attention kernels take no epilogue yet");
    int result = templateResult(kernel);
    bool chained = kernel.nodes.size() > 1;
    std::string resultName = program_.buffers[size_t(result)].name;
    std::string what = chained ? "epilogue result " : "GEMM result ";
    // The template keeps every output dim while lowered pointwise nodes drop size-1 dims; both
    // index the same dense elements. Codegen maps either all dims or all but the size-1 ones;
    // the links of a chain share one set of loop variables (codegen substitutes each link's
    // body into the next), so they range alike.
    // A GEMM's first link may instead read the product at a permutation of its own index
    // (options_.permutedEpilogue): it then runs over the product's elements and stores at its
    // own index.
    std::vector<const loop::Expr *> loads;
    collectLoads(node.body, loads);
    // The epilogue's own identity: codegen binds its loop variables from the output element.
    SymInt identity = rowMajorFlat(node.ranges, node.ranges.size());
    bool permuted = false;
    if (!chained && options_.permutedEpilogue &&
        gemm.templateKind == LoopNode::TemplateKind::Gemm &&
        numel(node.ranges) == numel(gemm.ranges)) {
      permuted = true;
      for (const loop::Expr *load : loads)
        if (load->buffer == result)
          permuted &= load->kind == ExprKind::Load && load->index != identity &&
                      permutedStrides(load->index, node.ranges).has_value();
    }
    if (chained) {
      const LoopNode &first = program_.nodes[size_t(kernel.nodes[1])];
      if (node.ranges != first.ranges)
        return "ranges " + printDims(node.ranges) + " differ from the epilogue's " +
               printDims(first.ranges);
    } else if (!permuted && node.ranges != gemm.ranges &&
               node.ranges != withoutUnitDims(gemm.ranges)) {
      return "ranges " + printDims(node.ranges) + " differ from the template's " +
             printDims(gemm.ranges);
    }
    DType resultType = program_.buffers[size_t(node.output)].dtype;
    if (resultType != DType::F32 && !(options_.anyFloatEpilogue && isFloating(resultType)))
      return std::string("the epilogue's result is not f32");
    if (isOutput_.count(result) || readers_[result].size() != 1)
      return "the " + what + resultName + " has other readers";
    for (const loop::Expr *load : loads) {
      if (load->buffer != result || permuted)
        continue;
      if (load->kind == ExprKind::IndirectLoad)
        return "gathers from the " + what + "at positions known only at run time";
      if (load->index != identity)
        return "reads the " + what + "at " + load->index.str();
    }
    size_t exprNodes = exprNodeCount(node.body);
    for (size_t i = 1; i < kernel.nodes.size(); ++i)
      exprNodes += exprNodeCount(program_.nodes[size_t(kernel.nodes[i])].body);
    if (exprNodes > options_.maxKernelExprNodes)
      return strCat("the epilogue would hold ", exprNodes, " expression nodes (at most ",
                    options_.maxKernelExprNodes, " per kernel keep compile times linear)");
    // Where the fused kernel runs. Kernels scheduled after the template's may produce the
    // epilogue's other inputs, so: in place when all of them are ready before it (the kernels
    // in between keep their order, so later loop fusions with the last of them stay possible);
    // otherwise moved to the end, the epilogue's own position, which is always legal: every
    // buffer is written once, the template's inputs are still there, and nothing in between
    // reads what the kernel stores (the epilogue, not yet scheduled, is its only reader).
    std::string late;
    for (const loop::Expr *load : loads) {
      if (load->buffer == result)
        continue;
      auto producer = producer_.find(load->buffer);
      if (producer == producer_.end())
        continue; // an input or a constant
      size_t at = kernelOf_.at(producer->second);
      if (at == index)
        return "reads " + program_.buffers[size_t(load->buffer)].name +
               ", which the template kernel does not store";
      if (at > index && late.empty())
        late = program_.buffers[size_t(load->buffer)].name;
    }
    if (std::optional<std::string> limit = fusionLimit(FusionDecision::Kind::Epilogue))
      return limit;
    size_t after = schedule_.kernels.size() - 1 - index;
    std::string reason = "epilogue " + node.name + " fused into " + gemm.name;
    if (chained)
      reason += " after " + program_.nodes[size_t(kernel.nodes.back())].name;
    if (permuted)
      reason += " storing at a permutation of its elements";
    const char *kernels = after == 1 ? " later kernel" : " later kernels";
    if (after && late.empty())
      reason += strCat(" (kept in place ahead of ", after, kernels, ")");
    else if (after)
      reason += strCat(" (moved past ", after, kernels, ": it reads ", late, ")");
    if (after && !late.empty())
      index = moveKernelToEnd(index);
    Kernel &fused = schedule_.kernels[index];
    fused.nodes.push_back(node.id);
    kernelOf_[node.id] = index;
    fused.reason += (fused.reason.empty() ? "" : "; ") + reason;
    log::debug("schedule", reason);
    schedule_.decisions.push_back({FusionDecision::Kind::Epilogue, node.id, true, reason});
    return std::nullopt;
  }

  /// Moves the kernel at `index` after every other one; returns its new index.
  size_t moveKernelToEnd(size_t index) {
    std::vector<Kernel> &kernels = schedule_.kernels;
    std::rotate(kernels.begin() + std::ptrdiff_t(index),
                kernels.begin() + std::ptrdiff_t(index) + 1, kernels.end());
    for (size_t k = index; k < kernels.size(); ++k)
      for (int id : kernels[k].nodes)
        kernelOf_[id] = k;
    return kernels.size() - 1;
  }

  /// Why a fusion of `kind` that qualifies is not made (the debugging limits), or nullopt.
  std::optional<std::string> fusionLimit(FusionDecision::Kind kind) {
    if (options_.disabledFusions.count(fusionKindName(kind)))
      return std::string(fusionKindName(kind)) + " fusion is disabled";
    if (options_.maxFusions >= 0 && fusionsMade_ >= options_.maxFusions)
      return "--max-fusions " + std::to_string(options_.maxFusions) + " reached";
    ++fusionsMade_;
    return std::nullopt;
  }

  std::string originsName(const Kernel &kernel) {
    std::vector<std::string> origins;
    for (int id : kernel.nodes)
      for (const std::string &origin : program_.nodes[size_t(id)].origins)
        if (std::find(origins.begin(), origins.end(), origin) == origins.end())
          origins.push_back(origin);
    if (origins.size() > 4)
      origins.resize(4);
    std::string name;
    for (const std::string &origin : origins)
      name += "_" + origin;
    return name;
  }

  void finishKernel(Kernel &kernel, size_t index) {
    std::set<int> args;
    bool reduction = false, pointwise = false;
    for (int id : kernel.nodes) {
      const LoopNode &node = program_.nodes[size_t(id)];
      for (int buffer : node.reads())
        args.insert(buffer);
      if (node.kind == LoopNode::Kind::Extern)
        args.insert(node.externOutputs.begin(), node.externOutputs.end());
      else
        args.insert(node.output);
      reduction |= node.kind == LoopNode::Kind::Reduction;
      pointwise |= node.kind == LoopNode::Kind::Pointwise;
    }
    // A GEMM with an epilogue never stores its own result (the epilogue reads the accumulator),
    // nor the intermediate results of its epilogue chain (each link reads the one before it in
    // registers), so those buffers need no memory.
    if (kernel.kind == Kernel::Kind::Template)
      for (size_t i = 0; i + 1 < kernel.nodes.size(); ++i)
        args.erase(program_.nodes[size_t(kernel.nodes[i])].output);
    kernel.args.assign(args.begin(), args.end());
    if (kernel.kind == Kernel::Kind::Loop) {
      // Work per iteration of the rows: every stage's inner and reduction extents (a symbolic
      // extent counts as large, so such kernels keep grain 1).
      int64_t work = 0;
      bool symbolic = false;
      for (int id : kernel.nodes) {
        const LoopNode &node = program_.nodes[size_t(id)];
        int64_t stage = 1;
        auto scale = [&](const SymInt &extent) {
          auto value = extent.constant();
          if (!value)
            symbolic = true;
          else
            stage = std::min<int64_t>(stage * std::max<int64_t>(*value, 1), kMinTaskElements);
        };
        for (size_t d = kernel.outerRanges.size(); d < node.ranges.size(); ++d)
          scale(node.ranges[d]);
        for (const SymInt &extent : node.reductionRanges)
          scale(extent);
        work += stage;
      }
      kernel.grain = symbolic ? 1 : std::max<int64_t>(1, kMinTaskElements / std::max<int64_t>(work, 1));
    }
    std::string suffix = "_" + std::to_string(index);
    switch (kernel.kind) {
    case Kernel::Kind::Loop:
      kernel.name = std::string(reduction ? (pointwise ? "per_fused" : "red_fused") : "poi_fused") +
                    originsName(kernel) + suffix;
      break;
    case Kernel::Kind::Template: {
      // The template's origin, then the epilogue chain's (each once, in chain order).
      const std::string &first = program_.nodes[size_t(kernel.nodes[0])].origins[0];
      std::vector<std::string> epilogue;
      for (size_t i = 1; i < kernel.nodes.size(); ++i)
        for (const std::string &origin : program_.nodes[size_t(kernel.nodes[i])].origins)
          if (origin != "mm" && origin != "bmm" && origin != first &&
              std::find(epilogue.begin(), epilogue.end(), origin) == epilogue.end())
            epilogue.push_back(origin);
      kernel.name = "tem_" + first;
      for (const std::string &origin : epilogue)
        kernel.name += "_" + origin;
      kernel.name += suffix;
      break;
    }
    case Kernel::Kind::Extern:
      kernel.name = "ext_" + program_.nodes[size_t(kernel.nodes[0])].origins[0] + suffix;
      break;
    }
    // Buffers written here and read by no other kernel and not returned.
    for (int buffer : kernel.args) {
      auto producer = producer_.find(buffer);
      if (producer == producer_.end() || kernelOf_.at(producer->second) != index ||
          isOutput_.count(buffer))
        continue;
      bool usedElsewhere = false;
      for (int reader : readers_[buffer])
        usedElsewhere |= kernelOf_.at(reader) != index;
      if (!usedElsewhere)
        kernel.internal.push_back(buffer);
    }
  }

  /// For a template kernel with an epilogue, when its template is one whose output the code
  /// writes once (ScheduleOptions::writesOutputOnce): a buffer the output may take the memory of.
  /// It was written by an earlier kernel, is last used here, is read here only by the epilogue's
  /// links and only at each link's own element, and has the output's dtype and element count.
  std::optional<int> inPlaceInput(const Kernel &kernel, size_t index,
                                  const std::vector<int64_t> &first,
                                  const std::vector<int64_t> &last) const {
    if (kernel.kind != Kernel::Kind::Template || kernel.nodes.size() < 2 ||
        !options_.writesOutputOnce)
      return std::nullopt;
    const LoopNode &templ = program_.nodes[size_t(kernel.nodes[0])];
    if (!options_.writesOutputOnce(templ))
      return std::nullopt;
    const LoopNode &tail = program_.nodes[size_t(kernel.nodes.back())];
    const Buffer &out = program_.buffers[size_t(tail.output)];
    // Per buffer the links load: whether every load of it is at the link's own element.
    std::map<int, bool> ownElement;
    for (size_t i = 1; i < kernel.nodes.size(); ++i) {
      const LoopNode &link = program_.nodes[size_t(kernel.nodes[i])];
      SymInt identity = rowMajorFlat(link.ranges, link.ranges.size());
      bool sameSize = numel(link.ranges) == out.numel();
      std::vector<const loop::Expr *> loads;
      collectLoads(link.body, loads);
      for (const loop::Expr *load : loads) {
        bool own = sameSize && load->kind == ExprKind::Load && load->index == identity;
        auto [it, inserted] = ownElement.emplace(load->buffer, own);
        it->second = it->second && own;
      }
    }
    std::vector<int> templateReads = templ.reads();
    for (const auto &[buffer, own] : ownElement) {
      const Buffer &candidate = program_.buffers[size_t(buffer)];
      if (own && first[size_t(buffer)] < int64_t(index) && last[size_t(buffer)] == int64_t(index) &&
          candidate.kind == Buffer::Kind::Intermediate && !isOutput_.count(buffer) &&
          candidate.dtype == out.dtype && candidate.numel() == out.numel() &&
          std::find(templateReads.begin(), templateReads.end(), buffer) == templateReads.end())
        return buffer;
    }
    return std::nullopt;
  }

  /// Lifetime-based reuse: a buffer's memory is free after the last kernel that touches it; a new
  /// buffer takes a free slot of the same size (or a larger constant one), else a new slot.
  void planBuffers() {
    size_t numBuffers = program_.buffers.size();
    std::vector<int64_t> first(numBuffers, -1), last(numBuffers, -1);
    for (size_t k = 0; k < schedule_.kernels.size(); ++k)
      for (int buffer : schedule_.kernels[k].args) {
        if (first[size_t(buffer)] < 0)
          first[size_t(buffer)] = int64_t(k);
        last[size_t(buffer)] = int64_t(k);
      }
    auto planned = [&](size_t buffer) {
      return program_.buffers[buffer].kind == Buffer::Kind::Intermediate &&
             !isOutput_.count(int(buffer)) && first[buffer] >= 0;
    };
    auto bytesOf = [&](size_t buffer) {
      const Buffer &b = program_.buffers[buffer];
      SymInt bytes = b.numel() * SymInt(int64_t(dtypeSize(b.dtype)));
      if (SymInt::exactDiv(bytes, SymInt(64)))
        return bytes; // already a multiple of 64 for every value of the symbols
      return SymInt::floorDiv(bytes + SymInt(63), 64) * SymInt(64);
    };
    SymbolBindings example;
    for (const std::string &symbol : program_.symbols)
      example[symbol] = options_.exampleSymbolValue;
    auto exampleBytes = [&](const SymInt &bytes) {
      Expected<int64_t> value = bytes.evaluate(example);
      return value ? *value : INT64_MAX;
    };
    struct Slot {
      SymInt bytes;
      int64_t freeAfter = -1; // kernel index after which the slot is free again
    };
    std::vector<Slot> slots;
    std::vector<size_t> slotOf(numBuffers, 0);
    for (size_t k = 0; k < schedule_.kernels.size(); ++k) {
      const Kernel &kernel = schedule_.kernels[k];
      std::optional<int> over = inPlaceInput(kernel, k, first, last);
      for (int buffer : kernel.args) {
        size_t b = size_t(buffer);
        if (!planned(b) || first[b] != int64_t(k))
          continue;
        SymInt bytes = bytesOf(b);
        // The kernel's output over the input its epilogue reads last (inPlaceInput).
        if (over && planned(size_t(*over)) &&
            int(b) == program_.nodes[size_t(kernel.nodes.back())].output &&
            provablyAtLeast(slots[slotOf[size_t(*over)]].bytes, bytes)) {
          slotOf[b] = slotOf[size_t(*over)];
          slots[slotOf[b]].freeAfter = last[b];
          log::debug("schedule", "in place: " + program_.buffers[b].name + " over " +
                                     program_.buffers[size_t(*over)].name + " in " + kernel.name);
          continue;
        }
        // A free slot fits when it is at least as large for every value of the symbols; the
        // exact size wins, else the smallest that fits (at the example sizes).
        std::optional<size_t> best;
        for (size_t s = 0; s < slots.size(); ++s) {
          if (slots[s].freeAfter >= int64_t(k) || !provablyAtLeast(slots[s].bytes, bytes))
            continue;
          if (slots[s].bytes == bytes) {
            best = s;
            break;
          }
          if (!best || exampleBytes(slots[s].bytes) < exampleBytes(slots[*best].bytes))
            best = s;
        }
        if (!best) {
          slots.push_back({bytes, -1});
          best = slots.size() - 1;
        }
        slots[*best].freeAfter = last[b];
        slotOf[b] = *best;
      }
    }
    BufferPlan &plan = schedule_.plan;
    std::vector<SymInt> slotOffsets;
    SymInt offset(0);
    for (const Slot &slot : slots) {
      slotOffsets.push_back(offset);
      offset = offset + slot.bytes;
    }
    plan.arenaBytes = offset;
    plan.offsets.assign(numBuffers, SymInt(0));
    for (size_t b = 0; b < numBuffers; ++b) {
      if (!planned(b))
        continue;
      plan.offsets[b] = slotOffsets[slotOf[b]];
      if (auto bytes = bytesOf(b).evaluate(example))
        plan.naiveBytes += *bytes;
    }
    if (auto bytes = plan.arenaBytes.evaluate(example))
      plan.peakBytes = *bytes;
    log::debug("schedule", "buffer plan: " + std::to_string(slots.size()) + " slots, arena " +
                               plan.arenaBytes.str() + " bytes (" +
                               std::to_string(plan.peakBytes) + " at symbols = " +
                               std::to_string(options_.exampleSymbolValue) + "; " +
                               std::to_string(plan.naiveBytes) + " without reuse)");
  }

  const LoopProgram &program_;
  ScheduleOptions options_;
  std::map<int, std::vector<int>> readers_;
  std::map<int, int> producer_;
  std::set<int> isOutput_;
  std::map<int, size_t> kernelOf_;
  int64_t fusionsMade_ = 0;
  Schedule schedule_;
};

} // namespace

Expected<Schedule> schedule(const LoopProgram &program, const ScheduleOptions &options) {
  return Scheduler(program, options).run();
}

std::string printSchedule(const LoopProgram &program, const Schedule &schedule) {
  std::string out;
  for (const Kernel &kernel : schedule.kernels) {
    out += kernel.name;
    if (kernel.kind == Kernel::Kind::Loop)
      out += " rows " + printDims(kernel.outerRanges);
    out += " (";
    for (size_t i = 0; i < kernel.args.size(); ++i)
      out += (i ? ", " : "") + program.buffers[size_t(kernel.args[i])].name;
    out += ")\n";
    for (int id : kernel.nodes) {
      const LoopNode &node = program.nodes[size_t(id)];
      const char *kind = "pointwise";
      switch (node.kind) {
      case LoopNode::Kind::Pointwise: kind = "pointwise"; break;
      case LoopNode::Kind::Reduction: kind = "reduction"; break;
      case LoopNode::Kind::Template:
        kind = node.templateKind == LoopNode::TemplateKind::Conv2d      ? "conv2d"
               : node.templateKind == LoopNode::TemplateKind::Attention ? "attention"
                                                                        : "gemm";
        break;
      case LoopNode::Kind::Extern: kind = "extern"; break;
      }
      out += "  " + std::string(kind) + " " + node.name + " " + printDims(node.ranges);
      if (node.kind == LoopNode::Kind::Reduction)
        out += " reducing " + printDims(node.reductionRanges) + " with " +
               loop::reduceName(node.reduceOp);
      out += "\n";
    }
    if (!kernel.reason.empty())
      out += "  # " + kernel.reason + "\n";
  }
  out += "# " + std::to_string(schedule.kernels.size()) + " kernels, arena " +
         schedule.plan.arenaBytes.str() + " bytes (peak " + std::to_string(schedule.plan.peakBytes) +
         " at example sizes, " + std::to_string(schedule.plan.naiveBytes) + " without reuse)\n";
  return out;
}

} // namespace tensorc::sched
