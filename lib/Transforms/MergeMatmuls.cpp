// merge-parallel-matmuls: mm(x, W1), mm(x, W2), ... with constant weights become column slices of
// one mm(x, [W1 | W2 | ...]); when each product's one user adds a constant bias over its columns
// (a Linear layer's), the biases merge too: slices of mm(x, [W1 | W2 | ...]) + [b1 | b2 | ...],
// one tensor a GEMM epilogue writes and attention reads in place.
#include "tensorc/Transforms/MergeMatmuls.h"

#include "tensorc/IR/Rewriter.h"
#include "tensorc/Support/Log.h"
#include "tensorc/Support/StrCat.h"

#include <cstring>

namespace tensorc {

namespace {

/// A product's constant right operand: a 2-D constant [K, N], or the transpose of one [N, K]
/// (permute [1, 0], what decomposition makes of a linear layer's weight.t()).
struct Weight {
  const Value *value = nullptr; // the constant
  const Tensor *data = nullptr;
  bool transposed = false;
  int64_t k() const { return data->dim(transposed ? 1 : 0); }
  int64_t n() const { return data->dim(transposed ? 0 : 1); }
};

std::optional<Weight> constantWeight(const Graph &graph, const Value *operand) {
  Weight w{operand, constantData(graph, operand), false};
  if (!w.data && operand->producer() && operand->producer()->opId() == OpId::Permute &&
      operand->producer()->attr("dims").asInts() == std::vector<SymInt>{SymInt(1), SymInt(0)}) {
    w.value = operand->producer()->input(0);
    w.data = constantData(graph, w.value);
    w.transposed = true;
  }
  if (!w.data || w.data->rank() != 2)
    return std::nullopt;
  return w;
}

/// Products that read one operand by weights of one dtype, K and layout, in graph order, with
/// where each one's columns start in the merged product.
struct Group {
  std::vector<const Node *> members;
  std::vector<Weight> weights;
  std::vector<int64_t> offsets;
  int64_t columns = 0;
  std::vector<const Node *> biasAdds; // each member's bias add, when all have one
  std::vector<const Node *> views;    // the view between a member and its add, or nullptr
  std::vector<const Tensor *> biases;
  Value *merged = nullptr;            // the merged product, once emitted
  Value *mergedBiased = nullptr;      // plus the merged bias
};

/// `node` adding a constant 1-D bias of `product`'s columns' count and dtype to it, alpha 1:
/// that bias.
const Tensor *biasOf(const Graph &graph, const Node &node, const Value *product, int64_t columns) {
  if (node.opId() != OpId::Add || node.inputs().size() != 2)
    return nullptr;
  auto alpha = node.attrs().find("alpha");
  if (alpha != node.attrs().end() && !alpha->second.isNone() && alpha->second.asScalar() != 1.0)
    return nullptr;
  const Value *other = node.input(0) == product ? node.input(1) : node.input(0);
  const Tensor *bias = constantData(graph, other);
  if (!bias || bias->rank() != 1 || bias->dim(0) != columns ||
      bias->dtype() != product->type().dtype || node.output()->type() != product->type())
    return nullptr;
  return bias;
}

/// The members' biases side by side, [N1 + N2 + ...].
Expected<Tensor> mergeBiases(const Group &group) {
  TC_ASSIGN_OR_RETURN(Tensor merged, Tensor::zeros(group.biases[0]->dtype(), {group.columns}));
  size_t element = dtypeSize(merged.dtype());
  for (size_t i = 0; i < group.biases.size(); ++i)
    std::memcpy(merged.mutableDataAs<char>() + group.offsets[i] * element,
                group.biases[i]->dataAs<char>(), group.biases[i]->nbytes());
  return merged;
}

/// The weights side by side: [K, N1 + N2 + ...], or for transposed weights [N1 + N2 + ..., K]
/// (one after the other), which the merged product reads through the same transpose.
Expected<Tensor> mergeWeights(const Group &group) {
  const Weight &first = group.weights[0];
  bool transposed = first.transposed;
  int64_t k = first.k();
  size_t element = dtypeSize(first.data->dtype());
  std::vector<int64_t> shape =
      transposed ? std::vector<int64_t>{group.columns, k} : std::vector<int64_t>{k, group.columns};
  TC_ASSIGN_OR_RETURN(Tensor merged, Tensor::zeros(first.data->dtype(), shape));
  char *out = merged.mutableDataAs<char>();
  for (size_t i = 0; i < group.weights.size(); ++i) {
    const Weight &w = group.weights[i];
    const char *in = w.data->dataAs<char>();
    if (transposed) {
      std::memcpy(out + group.offsets[i] * k * element, in, w.data->nbytes());
      continue;
    }
    for (int64_t r = 0; r < k; ++r)
      std::memcpy(out + (r * group.columns + group.offsets[i]) * element, in + r * w.n() * element,
                  size_t(w.n()) * element);
  }
  return merged;
}

/// `data` as a new weight of `graph`, named after the group's first product and `suffix`.
Expected<Value *> addWeight(Graph &graph, const Group &group, const std::string &suffix,
                            Tensor data) {
  std::string name = graph.uniqueName(group.members[0]->name() + suffix);
  TC_ASSIGN_OR_RETURN(Value * weight,
                      graph.addInput(name, TensorType::fromStatic(data.dtype(), data.shape())));
  graph.weights()[name] = std::move(data);
  return weight;
}

} // namespace

Status mergeParallelMatmuls(Graph &graph, const PassContext &context) {
  std::map<std::tuple<const Value *, DType, int64_t, bool>, Group> groups;
  for (const auto &node : graph.nodes()) {
    if (node->opId() != OpId::Mm)
      continue;
    std::optional<Weight> weight = constantWeight(graph, node->input(1));
    if (!weight)
      continue;
    Group &group = groups[{node->input(0), weight->data->dtype(), weight->k(), weight->transposed}];
    group.members.push_back(node.get());
    group.weights.push_back(*weight);
    group.offsets.push_back(group.columns);
    group.columns += weight->n();
  }
  std::map<const Value *, std::vector<const Node *>> users = computeUsers(graph);
  // member or bias add -> (group, position)
  std::map<const Node *, std::pair<Group *, size_t>> planned;
  for (auto &entry : groups) {
    Group &group = entry.second;
    if (group.members.size() < 2)
      continue;
    for (size_t i = 0; i < group.members.size(); ++i) {
      planned[group.members[i]] = {&group, i};
      // The product's one user adds the bias, or views it (same last dim: [M, N] as
      // [B, S, N]) for one that does.
      const Value *product = group.members[i]->output();
      auto onlyUser = [&](const Value *value) {
        const std::vector<const Node *> &readers = users[value];
        return readers.size() == 1 ? readers[0] : nullptr;
      };
      const Node *user = onlyUser(product), *view = nullptr;
      if (user && (user->opId() == OpId::View || user->opId() == OpId::Reshape) &&
          user->output()->type().shape.back() == product->type().shape.back()) {
        view = user;
        user = onlyUser(view->output());
      }
      const Tensor *bias =
          user ? biasOf(graph, *user, view ? view->output() : product, group.weights[i].n())
               : nullptr;
      if (bias) {
        group.biasAdds.push_back(user);
        group.views.push_back(view);
        group.biases.push_back(bias);
      }
    }
    if (group.biases.size() != group.members.size()) {
      group.biasAdds.clear();
      group.views.clear();
      group.biases.clear();
    }
    for (size_t i = 0; i < group.biasAdds.size(); ++i)
      planned[group.biasAdds[i]] = {&group, i};
  }
  if (planned.empty())
    return Status::ok();

  const OpDef &mmOp = *context.registry.get(OpId::Mm);
  const OpDef &sliceOp = *context.registry.get(OpId::Slice);
  const OpDef &permuteOp = *context.registry.get(OpId::Permute);
  const OpDef &addOp = *context.registry.get(OpId::Add);
  auto rewrite = [&](RewriteContext &ctx) -> Expected<std::optional<std::vector<Value *>>> {
    auto found = planned.find(&ctx.node());
    if (found == planned.end())
      return std::optional<std::vector<Value *>>();
    Group &group = *found->second.first;
    size_t position = found->second.second;
    bool biasAdd = ctx.node().opId() != OpId::Mm;
    if (!group.merged) {
      TC_ASSIGN_OR_RETURN(Tensor data, mergeWeights(group));
      TC_ASSIGN_OR_RETURN(Value * weight, addWeight(ctx.graph(), group, "_merged_weight",
                                                    std::move(data)));
      if (group.weights[0].transposed) {
        TC_ASSIGN_OR_RETURN(weight, ctx.emit(permuteOp, {weight},
                                             {{"dims", Attribute(std::vector<int64_t>{1, 0})}}));
      }
      TC_ASSIGN_OR_RETURN(group.merged, ctx.emit(mmOp, {ctx.operand(0), weight}));
      std::vector<std::string> names;
      for (const Weight &w : group.weights)
        names.push_back(w.value->name());
      log::debug("merge-parallel-matmuls",
                 strCat("merged ", group.members.size(), " products of %",
                        group.members[0]->input(0)->name(), " by ", join(names, ", "),
                        group.biases.empty() ? "" : ", and their biases"));
    }
    if (biasAdd && !group.mergedBiased) {
      TC_ASSIGN_OR_RETURN(Tensor data, mergeBiases(group));
      TC_ASSIGN_OR_RETURN(Value * bias,
                          addWeight(ctx.graph(), group, "_merged_bias", std::move(data)));
      TC_ASSIGN_OR_RETURN(group.mergedBiased, ctx.emit(addOp, {group.merged, bias}));
    }
    int64_t start = group.offsets[position];
    int64_t end = start + group.weights[position].n();
    TC_ASSIGN_OR_RETURN(Value * slice,
                        ctx.emit(sliceOp, {biasAdd ? group.mergedBiased : group.merged},
                                 {{"dim", Attribute(int64_t(1))},
                                  {"start", Attribute(start)},
                                  {"end", Attribute(end)}}));
    if (biasAdd && group.views[position]) { // the add's shape, as the view gave it
      const Node &view = *group.views[position];
      TC_ASSIGN_OR_RETURN(slice, ctx.emit(view.op(), {slice}, view.attrs()));
    }
    return std::optional<std::vector<Value *>>(std::vector<Value *>{slice});
  };
  TC_ASSIGN_OR_RETURN(Graph rewritten, rewriteGraph(graph, rewrite));
  graph = std::move(rewritten);
  return Status::ok();
}

} // namespace tensorc
