// Partitioning a joint graph into forward and backward: what to save, what to recompute
// (AOTAutograd's default and min-cut rematerialization partitioners).
#include "tensorc/Autodiff/Autodiff.h"

#include "tensorc/IR/Rewriter.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <set>

namespace tensorc::autodiff {

namespace {

constexpr int64_t kInfinity = std::numeric_limits<int64_t>::max() / 4;

/// Ops cheap enough to run again in the backward instead of saving their results: elementwise
/// math, casts and views. Everything else (GEMMs, convolutions, reductions, indexing) is saved.
bool isRecomputable(OpId id) {
  static const std::set<OpId> cheap = {
      OpId::Constant, OpId::Full, OpId::FullLike, OpId::ZerosLike, OpId::Arange,
      OpId::Neg, OpId::Abs, OpId::Exp, OpId::Log, OpId::Sqrt, OpId::Rsqrt, OpId::Reciprocal,
      OpId::Tanh, OpId::Sigmoid, OpId::Erf, OpId::Sin, OpId::Cos, OpId::Relu, OpId::Gelu,
      OpId::Silu, OpId::Sign, OpId::Floor, OpId::Ceil, OpId::Round, OpId::LogicalNot,
      OpId::IsNan, OpId::Clamp, OpId::ConvertElementType, OpId::Add, OpId::Sub, OpId::Mul,
      OpId::Div, OpId::Pow, OpId::Maximum, OpId::Minimum, OpId::Eq, OpId::Ne, OpId::Lt,
      OpId::Le, OpId::Gt, OpId::Ge, OpId::LogicalAnd, OpId::LogicalOr, OpId::Where,
      OpId::View, OpId::Reshape, OpId::Permute, OpId::Transpose, OpId::T, OpId::Expand,
      OpId::Squeeze, OpId::Unsqueeze, OpId::Slice, OpId::Clone};
  return cheap.count(id) != 0;
}

/// Nodes with no tensor inputs (constants, fills): free to have on either side.
bool isFree(const Node &node) {
  for (const Value *input : node.inputs())
    if (input)
      return false;
  return true;
}

int64_t bytesAt(const TensorType &type, int64_t symbolHint) {
  int64_t count = 1;
  for (const SymInt &dim : type.shape) {
    std::optional<int64_t> size = dim.constant();
    count *= size ? *size : symbolHint;
  }
  return count * int64_t(dtypeSize(type.dtype));
}

/// Dinic's max flow on a small graph, then the source side of the min cut.
class MinCut {
public:
  explicit MinCut(size_t vertices) : adjacency_(vertices), level_(vertices), next_(vertices) {}

  void addEdge(size_t from, size_t to, int64_t capacity) {
    adjacency_[from].push_back(edges_.size());
    edges_.push_back({to, capacity});
    adjacency_[to].push_back(edges_.size());
    edges_.push_back({from, 0});
  }

  /// Vertices reachable from `source` in the residual graph after a max flow to `sink`.
  std::vector<bool> sourceSide(size_t source, size_t sink) {
    while (levels(source, sink)) {
      std::fill(next_.begin(), next_.end(), 0);
      while (push(source, sink, kInfinity) > 0) {
      }
    }
    levels(source, sink);
    std::vector<bool> side(adjacency_.size());
    for (size_t v = 0; v < side.size(); ++v)
      side[v] = level_[v] >= 0;
    return side;
  }

private:
  struct Edge {
    size_t to;
    int64_t capacity;
  };

  bool levels(size_t source, size_t sink) {
    std::fill(level_.begin(), level_.end(), -1);
    std::deque<size_t> queue{source};
    level_[source] = 0;
    while (!queue.empty()) {
      size_t v = queue.front();
      queue.pop_front();
      for (size_t e : adjacency_[v])
        if (edges_[e].capacity > 0 && level_[edges_[e].to] < 0) {
          level_[edges_[e].to] = level_[v] + 1;
          queue.push_back(edges_[e].to);
        }
    }
    return level_[sink] >= 0;
  }

  int64_t push(size_t v, size_t sink, int64_t limit) {
    if (v == sink)
      return limit;
    for (size_t &i = next_[v]; i < adjacency_[v].size(); ++i) {
      Edge &edge = edges_[adjacency_[v][i]];
      if (edge.capacity <= 0 || level_[edge.to] != level_[v] + 1)
        continue;
      int64_t pushed = push(edge.to, sink, std::min(limit, edge.capacity));
      if (pushed > 0) {
        edge.capacity -= pushed;
        edges_[adjacency_[v][i] ^ 1].capacity += pushed;
        return pushed;
      }
    }
    return 0;
  }

  std::vector<Edge> edges_;
  std::vector<std::vector<size_t>> adjacency_;
  std::vector<int> level_;
  std::vector<size_t> next_;
};

/// Copies `nodes` (in order) into `target`; operands come from `mapped`, which each copy's
/// results join. `suffix` renames single-result copies ("y" -> "y_recompute").
Status copyNodes(Graph &target, const std::vector<const Node *> &nodes,
                 std::map<const Value *, Value *> &mapped, const std::string &suffix) {
  for (const Node *node : nodes) {
    std::vector<Value *> operands;
    for (const Value *input : node->inputs()) {
      if (!input) {
        operands.push_back(nullptr);
        continue;
      }
      auto it = mapped.find(input);
      if (it == mapped.end())
        return makeError("internal: partition: %", input->name(), " is not available to ",
                         node->describe());
      operands.push_back(it->second);
    }
    TC_ASSIGN_OR_RETURN(Node * copy, copyNode(target, *node, std::move(operands)));
    if (!suffix.empty() && copy->numOutputs() == 1) {
      TC_RETURN_IF_ERROR(
          target.renameValue(copy->output(), target.uniqueName(node->output()->name() + suffix)));
    }
    for (size_t i = 0; i < node->numOutputs(); ++i)
      mapped[node->output(i)] = copy->output(i);
  }
  return Status::ok();
}

/// The nodes of `candidates` (in order) that `roots` depend on through them.
std::vector<const Node *> liveNodes(const std::vector<const Node *> &candidates,
                                    const std::vector<const Value *> &roots) {
  std::set<const Node *> inSet(candidates.begin(), candidates.end()), live;
  std::vector<const Value *> work(roots.begin(), roots.end());
  while (!work.empty()) {
    const Value *value = work.back();
    work.pop_back();
    const Node *producer = value ? value->producer() : nullptr;
    if (!producer || !inSet.count(producer) || !live.insert(producer).second)
      continue;
    for (const Value *input : producer->inputs())
      work.push_back(input);
  }
  std::vector<const Node *> result;
  for (const Node *node : candidates)
    if (live.count(node))
      result.push_back(node);
  return result;
}

/// The copies of `values` that `mapped` records, in order.
std::vector<Value *> mappedValues(const std::vector<const Value *> &values,
                                  const std::map<const Value *, Value *> &mapped) {
  std::vector<Value *> copies;
  for (const Value *value : values)
    copies.push_back(mapped.at(value));
  return copies;
}

} // namespace

Expected<PartitionKind> parsePartitionKind(const std::string &name) {
  if (name == "default")
    return PartitionKind::Default;
  if (name == "min-cut")
    return PartitionKind::MinCut;
  return makeError("unknown partitioner '", name, "' (expected default or min-cut)");
}

Expected<Partition> partitionJoint(const JointGraph &joint, PartitionKind kind,
                                   int64_t symbolHint) {
  const Graph &graph = joint.graph;
  size_t numForward = joint.numForwardNodes;
  std::map<const Node *, size_t> index;
  std::vector<const Node *> forwardNodes, backwardNodes;
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    const Node *node = graph.nodes()[i].get();
    index[node] = i;
    (i < numForward ? forwardNodes : backwardNodes).push_back(node);
  }
  auto isForwardValue = [&](const Value *value) {
    return value && value->producer() && index.at(value->producer()) < numForward;
  };

  // Forward values the backward reads, in forward order (joint outputs after the forward's
  // count are gradients; one that is a forward value is read too).
  std::set<std::pair<size_t, size_t>> readKeys;
  auto noteRead = [&](const Value *value) {
    if (isForwardValue(value))
      readKeys.insert({index.at(value->producer()), value->resultIndex()});
  };
  for (const Node *node : backwardNodes)
    for (const Value *input : node->inputs())
      noteRead(input);
  for (size_t i = joint.numForwardOutputs; i < graph.outputs().size(); ++i)
    noteRead(graph.outputs()[i]);

  // Which forward nodes the backward computes again.
  std::set<const Node *> recompute;
  if (kind == PartitionKind::MinCut) {
    // Vertices: source 0, sink 1, then (in, out) per forward node. Cutting in->out saves the
    // node's results; a node whose `in` lands on the sink side is recomputed.
    MinCut cut(2 + 2 * numForward);
    auto in = [](size_t i) { return 2 + 2 * i; };
    auto out = [](size_t i) { return 3 + 2 * i; };
    for (size_t i = 0; i < numForward; ++i) {
      const Node &node = *forwardNodes[i];
      int64_t bytes = 0;
      for (const Value *output : node.outputs())
        bytes += bytesAt(output->type(), symbolHint);
      bool free = isFree(node);
      // +1: among equal sizes prefer fewer saved tensors.
      cut.addEdge(in(i), out(i), free ? 0 : bytes + 1);
      if (!isRecomputable(node.opId()))
        cut.addEdge(0, in(i), kInfinity);
      for (const Value *input : node.inputs())
        if (isForwardValue(input))
          cut.addEdge(out(index.at(input->producer())), in(i), kInfinity);
    }
    for (const auto &[node, result] : readKeys)
      cut.addEdge(out(node), 1, kInfinity);
    std::vector<bool> sourceSide = cut.sourceSide(0, 1);
    for (size_t i = 0; i < numForward; ++i)
      if (!sourceSide[in(i)] || isFree(*forwardNodes[i]))
        recompute.insert(forwardNodes[i]);
  } else {
    for (const Node *node : forwardNodes)
      if (isFree(*node))
        recompute.insert(node);
  }

  // The backward's own nodes: recomputed forward nodes it needs, then the backward nodes.
  std::vector<const Value *> gradOutputs(graph.outputs().begin() + joint.numForwardOutputs,
                                         graph.outputs().end());
  std::vector<const Node *> backwardCandidates;
  for (const Node *node : forwardNodes)
    if (recompute.count(node))
      backwardCandidates.push_back(node);
  backwardCandidates.insert(backwardCandidates.end(), backwardNodes.begin(), backwardNodes.end());
  std::vector<const Node *> backwardLive = liveNodes(backwardCandidates, gradOutputs);
  std::set<const Node *> backwardSet(backwardLive.begin(), backwardLive.end());

  Partition partition;
  partition.kind = kind;
  // Saved: forward values (not recomputed) that the backward's live nodes or outputs read.
  std::set<std::pair<size_t, size_t>> savedKeys;
  auto noteSaved = [&](const Value *value) {
    if (isForwardValue(value) && !backwardSet.count(value->producer()))
      savedKeys.insert({index.at(value->producer()), value->resultIndex()});
  };
  for (const Node *node : backwardLive)
    for (const Value *input : node->inputs())
      noteSaved(input);
  for (const Value *output : gradOutputs)
    noteSaved(output);
  std::vector<const Value *> saved;
  for (const auto &[node, result] : savedKeys) {
    const Value *value = graph.nodes()[node]->output(result);
    saved.push_back(value);
    partition.saved.push_back(value->name());
    partition.savedBytes += bytesAt(value->type(), symbolHint);
  }
  for (const Node *node : backwardLive)
    if (index.at(node) < numForward)
      partition.recomputed.push_back(node->name());

  std::set<std::string> tangents(joint.tangents.begin(), joint.tangents.end());

  // Forward graph: primals -> forward outputs and saved values.
  {
    Graph &forward = partition.forward;
    std::map<const Value *, Value *> mapped;
    for (const auto &input : graph.inputs()) {
      if (tangents.count(input->name()))
        continue;
      TC_ASSIGN_OR_RETURN(mapped[input.get()], forward.addInput(input->name(), input->type()));
    }
    forward.weights() = graph.weights();
    std::vector<const Value *> roots(graph.outputs().begin(),
                                     graph.outputs().begin() + joint.numForwardOutputs);
    roots.insert(roots.end(), saved.begin(), saved.end());
    TC_RETURN_IF_ERROR(copyNodes(forward, liveNodes(forwardNodes, roots), mapped, ""));
    forward.setOutputs(mappedValues(roots, mapped));
  }

  // Backward graph: saved values, tangents and the primals it reads -> gradients.
  {
    Graph &backward = partition.backward;
    std::map<const Value *, Value *> mapped;
    for (const Value *value : saved) {
      TC_ASSIGN_OR_RETURN(mapped[value], backward.addInput(value->name(), value->type()));
    }
    std::set<const Value *> primalsRead;
    for (const Node *node : backwardLive)
      for (const Value *input : node->inputs())
        if (input && input->isGraphInput())
          primalsRead.insert(input);
    for (const Value *output : gradOutputs)
      if (output->isGraphInput())
        primalsRead.insert(output);
    for (const auto &input : graph.inputs())
      if (primalsRead.count(input.get()) || tangents.count(input->name())) {
        TC_ASSIGN_OR_RETURN(mapped[input.get()],
                            backward.addInput(input->name(), input->type()));
      }
    for (const auto &[name, tensor] : graph.weights())
      if (backward.findValue(name))
        backward.weights()[name] = tensor;
    TC_RETURN_IF_ERROR(copyNodes(backward, backwardLive, mapped, ""));
    backward.setOutputs(mappedValues(gradOutputs, mapped));
  }

  // The rebuilt joint graph: the forward, then the backward reading recomputed copies.
  {
    Graph &rebuilt = partition.joint;
    std::map<const Value *, Value *> mapped;
    for (const auto &input : graph.inputs()) {
      TC_ASSIGN_OR_RETURN(mapped[input.get()], rebuilt.addInput(input->name(), input->type()));
    }
    rebuilt.weights() = graph.weights();
    TC_RETURN_IF_ERROR(copyNodes(rebuilt, forwardNodes, mapped, ""));
    std::map<const Value *, Value *> forwardMapped = mapped;
    std::vector<const Node *> recomputedNodes, rest;
    for (const Node *node : backwardLive)
      (index.at(node) < numForward ? recomputedNodes : rest).push_back(node);
    TC_RETURN_IF_ERROR(copyNodes(rebuilt, recomputedNodes, mapped, "_recompute"));
    TC_RETURN_IF_ERROR(copyNodes(rebuilt, rest, mapped, ""));
    std::vector<Value *> outputs;
    for (size_t i = 0; i < graph.outputs().size(); ++i)
      outputs.push_back(i < joint.numForwardOutputs ? forwardMapped.at(graph.outputs()[i])
                                                    : mapped.at(graph.outputs()[i]));
    rebuilt.setOutputs(std::move(outputs));
  }
  return partition;
}

} // namespace tensorc::autodiff
