// Gathers (index_select, embedding, gather): pointwise values whose load position along one dim
// comes from an index tensor at run time; gather_nd, scatter_nd (IndexingNd.cpp) and resize
// (Resize.cpp) are registered here; scatter has no generated kernel yet.
#include "Sampling.h"

namespace tensorc::loop {

namespace {

using IndexMap = std::function<Index(const Index &)>;

/// Each output element loads `self` (a strided view of a buffer, realized when it is none) at
/// dim `dim` picked by the index tensor read at `indexAt(i)`, the other dims from `selfAt(i)`.
/// Negative indices count from the end (index + size); indices still outside [0, size) are
/// clamped into it, as compiled code cannot report them (the reference kernels error instead).
Status setGather(LowerContext &context, const Node &node, size_t d, const IndexMap &indexAt,
                 const IndexMap &selfAt) {
  const Value *self = node.input(0), *positions = node.input(1);
  const std::vector<SymInt> &selfShape = self->type().shape;
  StridedView view = context.stridedView(self);
  Loader index = context.value(positions).load;
  const SymInt size = selfShape[d];
  auto i64 = [](const SymInt &value) {
    if (auto constant = value.constant())
      return makeIntConstant(*constant, DType::I64);
    return makeIndex(value, DType::I64);
  };
  ExprRef zero = makeIntConstant(0, DType::I64), extent = i64(size), last = i64(size - SymInt(1));
  ExprRef stride = i64(view.strides[d]);
  DType dtype = self->type().dtype;
  context.setPointwise(
      node.output(),
      [=](const Index &i) {
        ExprRef position = makeCast(index(indexAt(i)), DType::I64);
        ExprRef wrapped = makeSelect(makeBinary(BinaryOp::Lt, position, zero),
                                     makeBinary(BinaryOp::Add, position, extent), position);
        ExprRef clamped =
            makeBinary(BinaryOp::Minimum, makeBinary(BinaryOp::Maximum, wrapped, zero), last);
        Index at = selfAt(i);
        SymInt affine = view.offset;
        for (size_t k = 0; k < at.size(); ++k)
          if (k != d)
            affine = affine + at[k] * view.strides[k];
        ExprRef offset =
            view.strides[d] == SymInt(1) ? clamped : makeBinary(BinaryOp::Mul, clamped, stride);
        return makeIndirectLoad(view.buffer, dtype, affine, offset);
      },
      context.inputCost(node) + 5, false, context.mergedOrigins(node));
  return Status::ok();
}

/// The gathered dim of `self`, or nullopt when there is nothing to read from (the reference
/// kernel reports it).
std::optional<size_t> gatherDim(const Node &node, int64_t dim) {
  const std::vector<SymInt> &selfShape = node.input(0)->type().shape;
  size_t rank = selfShape.size();
  if (dim < 0)
    dim += int64_t(rank);
  if (rank == 0 || dim < 0 || size_t(dim) >= rank ||
      selfShape[size_t(dim)].constant() == std::optional<int64_t>(0))
    return std::nullopt;
  return size_t(dim);
}

constexpr const char *kNothingToRead = "a gather from an empty or missing dim";

/// index_select keeps self's dims in place; the index (a vector) picks along `dim`.
Status lowerIndexSelect(LowerContext &context, const Node &node) {
  std::optional<size_t> d = gatherDim(node, AttrReader(node.attrs()).getInt("dim"));
  if (!d)
    return context.fallback(node, kNothingToRead);
  size_t dim = *d, indexRank = node.input(1)->type().rank();
  return setGather(
      context, node, dim,
      [dim, indexRank](const Index &i) { return indexRank ? Index{i[dim]} : Index{}; },
      [](const Index &i) { return i; });
}

/// embedding's row is picked by all leading dims; its last dim is the weight's columns.
Status lowerEmbedding(LowerContext &context, const Node &node) {
  std::optional<size_t> d = gatherDim(node, 0);
  if (!d)
    return context.fallback(node, kNothingToRead);
  size_t indexRank = node.input(1)->type().rank();
  return setGather(
      context, node, *d,
      [indexRank](const Index &i) { return Index(i.begin(), i.begin() + long(indexRank)); },
      [indexRank](const Index &i) {
        return Index{SymInt(0), i[indexRank]};
      });
}

/// gather: the index has the output's shape.
Status lowerGatherElements(LowerContext &context, const Node &node) {
  std::optional<size_t> d = gatherDim(node, AttrReader(node.attrs()).getInt("dim"));
  if (!d)
    return context.fallback(node, kNothingToRead);
  return setGather(
      context, node, *d, [](const Index &i) { return i; }, [](const Index &i) { return i; });
}

} // namespace

void addIndexingRules(RuleTable &table) {
  table.add({OpId::IndexSelect}, lowerIndexSelect);
  table.add({OpId::Embedding}, lowerEmbedding);
  table.add({OpId::Gather}, lowerGatherElements);
  table.add({OpId::GatherNd}, lowerGatherNd);
  table.add({OpId::ScatterNd}, lowerScatterNd);
  table.add({OpId::Resize}, lowerResize);
  table.fallback({OpId::Scatter}, "no lowering rule yet");
}

} // namespace tensorc::loop
