// What lowering rules work with: the program being built, how each graph value is available
// (a loader, maybe a buffer), and the helpers every rule family shares.
#pragma once

#include "tensorc/IR/Graph.h"
#include "tensorc/Lowering/Lower.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

namespace tensorc::loop {

using Index = std::vector<SymInt>;

/// The value of a tensor at a multi-dim index. Loaders capture the loaders of their operands, so
/// copies share the function instead of cloning the whole chain behind it (a deep copy per node
/// made lowering quadratic in the length of a pointwise chain).
class Loader {
public:
  using Fn = std::function<ExprRef(const Index &)>;
  Loader() = default;
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, Loader>>>
  Loader(F fn) : fn_(std::make_shared<const Fn>(std::move(fn))) {}
  ExprRef operator()(const Index &index) const { return (*fn_)(index); }

private:
  std::shared_ptr<const Fn> fn_;
};

/// How a graph value is available to its users.
struct Lowered {
  Loader load;
  int buffer = -1;            // when realized
  int cost = 0;               // ops recomputed per element when inlined
  bool readsTemplate = false; // the body loads a GEMM result directly (an epilogue candidate)
};

/// Row-major flat index of `index` in a dense buffer of `shape`.
SymInt flatten(const Index &index, const std::vector<SymInt> &shape);
/// x0, x1, ... for `rank` dims.
Index loopIndex(size_t rank);
bool isOne(const SymInt &dim);
/// Loop ranges of a dense buffer of `shape`: size-1 dims are dropped (their index is always 0, so
/// the flat index is unchanged); `index` gets x variables for the rest and 0 for them.
std::vector<SymInt> rangesWithoutUnitDims(const std::vector<SymInt> &shape, Index &index);
/// Short op name for kernel names: "aten.add" -> "add".
std::string shortName(const OpDef &op);

/// The state of one lowering and the operations rules compose: values become lazy loaders
/// (pointwise ops, views) or buffers written by nodes (reductions, templates, fallbacks).
class LowerContext {
public:
  LowerContext(const Graph &graph, const LowerOptions &options);

  const LowerOptions &options() const { return options_; }
  LoopProgram &program() { return program_; }

  /// How `value` is available; every rule's operands are lowered before it runs.
  const Lowered &value(const Value *value) const { return values_.at(value); }
  /// Makes `value` available through `lowered` (a view's loader, a split's part) with the
  /// origins kernel names will list.
  void setValue(const Value *value, Lowered lowered, std::vector<std::string> origins);
  const std::vector<std::string> &origins(const Value *value) { return origins_[value]; }
  void setOrigins(const Value *value, std::vector<std::string> origins) {
    origins_[value] = std::move(origins);
  }

  int addBuffer(const std::string &name, Buffer::Kind kind, const TensorType &type);
  /// `value` lives in buffer `id` (dense, row-major).
  void setBuffer(const Value *value, int id);
  /// Gives `value` a dense buffer, computing it with a pointwise node if it has none.
  int realize(const Value *value);
  /// Computes `value` into a buffer of the layout its loads suggest (TorchInductor's
  /// FlexibleLayout): under channelsLastConv, a 4-D value reading a channels-last buffer of its
  /// shape is stored channels-last ([N, H, W, C]) and stays a view of that buffer (a loader at
  /// the NHWC address); otherwise realize().
  void materialize(const Value *value);
  /// A dense buffer holding `value` with its dims in `order` (the i-th stored dim is the value's
  /// dim order[i]), written by a pointwise node.
  int realizePermuted(const Value *value, const std::vector<size_t> &order,
                      const std::string &name);
  /// `value` ([N, C, H, W]) as a dense NHWC buffer ([N, H, W, C]): the buffer a channels-last
  /// view reads, else a copy made once (later users of a computed value read the copy).
  int channelsLastBuffer(const Value *value);
  /// `value` is the NHWC buffer `id` ([N, H, W, C] of the value's [N, C, H, W]), read in place.
  void setChannelsLastView(const Value *value, int id);
  /// `value` is buffer `id` read in place, whose i-th dim is the value's dim order[i].
  void setPermutedView(const Value *value, int id, const std::vector<size_t> &order);
  /// Whether `load`, over an index of `shape` (4-D, C > 1, H * W > 1, static but for N), reads
  /// some buffer through NHWC strides: C contiguous, then W, then H (or, under
  /// channelsLastWindows, C contiguous at a position that moves with the pixel).
  bool loadsChannelsLast(const Loader &load, const std::vector<SymInt> &shape) const;
  /// The nodes reading `value` (nullptr: it is a graph output).
  const std::vector<const Node *> &users(const Value *value) const;
  void addNode(LoopNode node);
  /// Adds template `node` writing a new buffer `bufferName` of `type`, which GEMM epilogues may
  /// then read; returns the buffer.
  int addTemplate(LoopNode node, const std::string &bufferName, const TensorType &type);
  /// A name no buffer has yet, from `hint`.
  std::string uniqueBufferName(const std::string &hint) const;

  /// Rewrites every Load/Index index of `body` with the loop variables' bounds known, so view
  /// arithmetic (reshape's flatten-then-split) folds back to plain strides; structurally equal
  /// subexpressions become one node.
  ExprRef simplifyBody(const ExprRef &body, const std::vector<SymInt> &ranges,
                       const std::vector<SymInt> &reductionRanges);

  /// A loader for `value` read at an index of `outShape`, broadcasting (numpy rules), cast to
  /// `dtype`.
  Loader broadcastLoader(const Value *value, const std::vector<SymInt> &outShape, DType dtype);
  /// Users of `value` that read all of it (not slices or gathers; a graph output counts).
  size_t wholeReaders(const Value *value) const;
  /// How many distinct buffers with as many elements as `value` its inlined body loads.
  size_t fullSizeReads(const Value *value) const;
  /// Records a pointwise (lazy) value; `users` > 1 with a costly body realizes it right away.
  void setPointwise(const Value *value, Loader load, int cost, bool readsTemplate,
                    std::vector<std::string> origins);
  /// `value` is `constant` at every index (a scalar or a fill): it fuses into its users.
  void setConstant(const Value *value, ExprRef constant) {
    setPointwise(value, [constant](const Index &) { return constant; }, 0, false, {});
  }
  /// `value` is the one element of `data` at every index (a one-element constant or weight).
  void setConstant(const Value *value, const Tensor &data) {
    DType dtype = data.dtype();
    setConstant(value, isFloating(dtype) ? makeConstant(data.getDouble(0), dtype)
                                         : makeIntConstant(data.getInt(0), dtype));
  }
  /// The origins of `node`'s inlined inputs, then its own op.
  std::vector<std::string> mergedOrigins(const Node &node);
  /// Ops per element its inlined inputs recompute.
  int inputCost(const Node &node) const;
  /// Whether an input reads a template's result directly (so `node` may join its epilogue).
  bool inputsReadTemplate(const Node &node) const;

  /// `value` as a strided view of a buffer: its loader must be one Load whose index is affine in
  /// the loop variables. Realizes the value when it is not.
  StridedView stridedView(const Value *value);
  /// A constant GEMM operand read through non-unit strides (the transposed weight of a Linear)
  /// is transposed once, at compile time, so every run reads it row-major.
  /// With `kMajor`, the weight is stored with its last two dims swapped instead (a [K][N] GEMM
  /// operand as [N][K]) and the view returned reads it K-contiguous.
  StridedView contiguousWeight(const StridedView &view, const std::vector<SymInt> &shape,
                               bool kMajor = false);

  /// Runs `node` on its reference kernel (an Extern node), for `reason`; an error naming the
  /// node and op instead under --fallback=error.
  Status fallback(const Node &node, const std::string &reason);

private:
  bool onlyPointwiseUsers(const Value *value) const;
  /// Whether `value` or a view of it (reshapes, permutes, slices, splits, expands) is an operand
  /// that `isOperand(user, input index)` accepts.
  bool viewsFeed(const Value *value,
                 const std::function<bool(const Node &, size_t)> &isOperand) const;
  /// ... a q, k or v operand of an attention.
  bool viewsFeedAttention(const Value *value) const;
  /// ... an operand of a matrix product (mm, bmm), which reads its operands from memory.
  bool viewsFeedGemm(const Value *value) const;
  /// Whether `value` (4-D, C > 1, H * W > 1) loads some buffer through NHWC strides of its own
  /// index: C contiguous, then W, then H.
  bool readsChannelsLast(const Value *value);
  /// `value` as a strided view when its loader is one affine Load.
  std::optional<StridedView> viewOf(const Value *value);

  LowerOptions options_;
  std::map<const Value *, std::vector<const Node *>> users_;
  std::map<const Value *, Lowered> values_;
  std::map<const Value *, std::vector<std::string>> origins_;
  std::set<int> templateOutputs_;
  std::map<std::string, int> denseWeights_; // transposed weight copies, by source and strides
  std::set<const Value *> channelsLast_;    // values that are views of NHWC buffers
  std::map<const Value *, int> nhwcCopies_; // NHWC copies of values that have a buffer
  LoopProgram program_;
};

} // namespace tensorc::loop
