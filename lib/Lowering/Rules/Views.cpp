// Views and data movement: a view maps its output index to its input's (no data moves, no
// kernel); split's results are views at offsets; cat selects among its inputs per element; pad
// (Pad.cpp) remaps its output index into its input's.
#include "Sampling.h"

#include <algorithm>

namespace tensorc::loop {

namespace {

using IndexMap = std::function<Index(const Index &)>;

/// `output` reads `input` at `map(index)`: a view, inlined wherever it is read.
void setView(LowerContext &context, const Value *output, const Value *input, IndexMap map) {
  const Lowered &source = context.value(input);
  Loader inner = source.load;
  Lowered lowered;
  lowered.load = [inner, map](const Index &index) { return inner(map(index)); };
  lowered.cost = source.buffer >= 0 ? 0 : source.cost;
  lowered.readsTemplate = source.buffer >= 0 ? false : source.readsTemplate;
  std::vector<std::string> origins = context.origins(input);
  context.setValue(output, std::move(lowered), std::move(origins));
}

/// view and reshape: flatten the output index, split it by the input's shape.
Status lowerReshape(LowerContext &context, const Node &node) {
  const std::vector<SymInt> &outShape = node.output()->type().shape;
  const std::vector<SymInt> &inShape = node.input(0)->type().shape;
  // A shared leading prefix (the symbolic batch, typically) maps one to one. Of the rest, all
  // but the first dim on each side must be static, so the flatten-and-split arithmetic has
  // constant strides ([128*s0, 768] <-> [s0, 128, 768] qualifies: the first dim's size never
  // enters the arithmetic).
  size_t prefix = 0;
  while (prefix < inShape.size() && prefix < outShape.size() && inShape[prefix] == outShape[prefix])
    ++prefix;
  std::vector<SymInt> inRest(inShape.begin() + long(prefix), inShape.end());
  std::vector<SymInt> outRest(outShape.begin() + long(prefix), outShape.end());
  for (size_t i = 1; i < inRest.size(); ++i)
    if (!inRest[i].isConstant())
      return context.fallback(node, "symbolic dims after the first that differ between shapes");
  for (size_t i = 1; i < outRest.size(); ++i)
    if (!outRest[i].isConstant())
      return context.fallback(node, "symbolic dims after the first that differ between shapes");
  setView(context, node.output(), node.input(0), [prefix, inRest, outRest](const Index &index) {
    Index mapped(index.begin(), index.begin() + long(prefix));
    SymInt flat = flatten(Index(index.begin() + long(prefix), index.end()), outRest);
    std::vector<SymInt> strides = contiguousStrides(inRest);
    for (size_t i = 0; i < inRest.size(); ++i) {
      SymInt q = SymInt::floorDiv(flat, *strides[i].constant());
      mapped.push_back(i == 0 ? q : SymInt::mod(q, *inRest[i].constant()));
    }
    return mapped;
  });
  return Status::ok();
}

Status lowerPermute(LowerContext &context, const Node &node) {
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> dims, AttrReader(node.attrs()).getStaticInts("dims"));
  int64_t rank = int64_t(dims.size());
  for (int64_t &dim : dims)
    dim = dim < 0 ? dim + rank : dim;
  setView(context, node.output(), node.input(0), [dims](const Index &index) {
    Index mapped(index.size());
    for (size_t i = 0; i < dims.size(); ++i)
      mapped[size_t(dims[i])] = index[i];
    return mapped;
  });
  return Status::ok();
}

Status lowerExpand(LowerContext &context, const Node &node) {
  const std::vector<SymInt> &outShape = node.output()->type().shape;
  const std::vector<SymInt> &inShape = node.input(0)->type().shape;
  size_t offset = outShape.size() - inShape.size();
  setView(context, node.output(), node.input(0), [inShape, outShape, offset](const Index &index) {
    Index mapped;
    for (size_t i = 0; i < inShape.size(); ++i)
      mapped.push_back(isOne(inShape[i]) && !isOne(outShape[i + offset]) ? SymInt(0)
                                                                         : index[i + offset]);
    return mapped;
  });
  return Status::ok();
}

/// squeeze and unsqueeze: source[i] is the output dim input dim i reads, or -1 for a removed
/// size-1 dim (index 0).
Status lowerSqueeze(LowerContext &context, const Node &node) {
  const std::vector<SymInt> &outShape = node.output()->type().shape;
  const std::vector<SymInt> &inShape = node.input(0)->type().shape;
  AttrReader attrs(node.attrs());
  std::vector<int64_t> source;
  if (node.opId() == OpId::Unsqueeze) {
    int64_t newDim = attrs.getInt("dim");
    if (newDim < 0)
      newDim += int64_t(outShape.size());
    for (int64_t i = 0; i < int64_t(inShape.size()); ++i)
      source.push_back(i < newDim ? i : i + 1);
  } else {
    TC_ASSIGN_OR_RETURN(std::vector<int64_t> dims, attrs.getStaticInts("dim"));
    std::set<int64_t> removed;
    for (size_t i = 0; i < inShape.size(); ++i)
      if (isOne(inShape[i]) &&
          (dims.empty() || std::count(dims.begin(), dims.end(), int64_t(i)) ||
           std::count(dims.begin(), dims.end(), int64_t(i) - int64_t(inShape.size()))))
        removed.insert(int64_t(i));
    int64_t out = 0;
    for (int64_t i = 0; i < int64_t(inShape.size()); ++i)
      source.push_back(removed.count(i) ? -1 : out++);
    if (out != int64_t(outShape.size()))
      return context.fallback(node, "the dims removed do not match the result's rank");
  }
  setView(context, node.output(), node.input(0), [source](const Index &index) {
    Index mapped;
    for (int64_t dim : source)
      mapped.push_back(dim < 0 ? SymInt(0) : index[size_t(dim)]);
    return mapped;
  });
  return Status::ok();
}

Status lowerSlice(LowerContext &context, const Node &node) {
  const std::vector<SymInt> &inShape = node.input(0)->type().shape;
  AttrReader attrs(node.attrs());
  int64_t dim = attrs.getInt("dim");
  if (dim < 0)
    dim += int64_t(inShape.size());
  int64_t step = attrs.getInt("step");
  auto extent = inShape[size_t(dim)].constant();
  if (step <= 0 || !extent)
    return context.fallback(node, "a slice of a symbolic dim or with a step below 1");
  int64_t start = attrs.isNone("start") ? 0 : attrs.getInt("start");
  if (start < 0)
    start += *extent;
  start = std::clamp<int64_t>(start, 0, *extent);
  setView(context, node.output(), node.input(0), [dim, start, step](const Index &index) {
    Index mapped = index;
    mapped[size_t(dim)] = SymInt(start) + index[size_t(dim)] * SymInt(step);
    return mapped;
  });
  return Status::ok();
}

/// Each result of split_with_sizes is a view of the input along `dim`, starting at the sum of
/// the sizes before it (symbolic sizes give a symbolic offset); no kernel of its own.
Status lowerSplit(LowerContext &context, const Node &node) {
  const std::vector<SymInt> &inShape = node.input(0)->type().shape;
  int64_t dim = AttrReader(node.attrs()).getInt("dim");
  if (dim < 0)
    dim += int64_t(inShape.size());
  if (dim < 0 || dim >= int64_t(inShape.size()))
    return context.fallback(node, "a split along a dim the input does not have");
  SymInt start(0);
  for (size_t k = 0; k < node.numOutputs(); ++k) {
    const Value *output = node.output(k);
    setView(context, output, node.input(0), [dim, start](const Index &index) {
      Index mapped = index;
      mapped[size_t(dim)] = start + index[size_t(dim)];
      return mapped;
    });
    start = start + output->type().shape[size_t(dim)];
  }
  return Status::ok();
}

/// More inputs than this and every element's selects and loads would cost more than a copy.
constexpr size_t kMaxInlineCatParts = 16;

/// One input of a cat: its loader and its range [start, start + size) along the cat dim.
struct CatPart {
  Loader load;
  int64_t start, size;
};

/// The parts as one pointwise loader: a chain of selects over the parts' ranges along `dim`. A
/// select computes both sides, so each part is read at its index wrapped into its own range
/// (equal to `i - start` where it is chosen, in bounds everywhere else).
Loader selectAmong(std::vector<CatPart> parts, size_t dim, DType dtype) {
  return [parts, dim, dtype](const Index &index) {
    const SymInt &at = index[dim];
    ExprRef result;
    for (size_t k = parts.size(); k-- > 0;) {
      const CatPart &part = parts[k];
      Index mapped = index;
      // (at + shift) mod size == at - start where at is in the part; shift >= 0 keeps it so
      // under any remainder convention.
      int64_t shift = (part.size - part.start % part.size) % part.size;
      mapped[dim] = parts.size() == 1 ? at : SymInt::mod(at + SymInt(shift), part.size);
      ExprRef value = makeCast(part.load(mapped), dtype);
      if (!result) {
        result = value;
        continue;
      }
      ExprRef inside = makeBinary(BinaryOp::Lt, makeIndex(at, DType::I64),
                                  makeIntConstant(part.start + part.size, DType::I64));
      result = makeSelect(inside, value, result);
    }
    return result;
  };
}

/// A cat of many parts: runs of kMaxInlineCatParts consecutive parts are each copied into a
/// buffer by one pointwise kernel (a slice of the result), until few enough parts remain for
/// one select chain; every element then computes a bounded number of loads.
std::vector<CatPart> groupCatParts(LowerContext &context, const Node &node,
                                   std::vector<CatPart> parts, size_t dim) {
  const TensorType &outType = node.output()->type();
  while (parts.size() > kMaxInlineCatParts) {
    std::vector<CatPart> grouped;
    for (size_t first = 0; first < parts.size(); first += kMaxInlineCatParts) {
      size_t end = std::min(parts.size(), first + kMaxInlineCatParts);
      if (end - first == 1) {
        grouped.push_back(parts[first]);
        continue;
      }
      int64_t start = parts[first].start;
      std::vector<CatPart> members(parts.begin() + long(first), parts.begin() + long(end));
      for (CatPart &member : members)
        member.start -= start;
      int64_t size = members.back().start + members.back().size;
      std::vector<SymInt> shape = outType.shape;
      shape[dim] = SymInt(size);
      Loader select = selectAmong(members, dim, outType.dtype);
      // The buffer's dims in stored order: a concatenation of channels-last values (DenseNet's
      // features) is stored channels-last too, so that each member is a contiguous run of every
      // pixel's channels and the consumer reads it as it reads the other parts, not transposed:
      // when members holding at least half the channels read an NHWC buffer.
      std::vector<size_t> order = {0, 1, 2, 3};
      if (dim == 1 && shape.size() == 4 && context.options().channelsLastConv) {
        int64_t nhwcChannels = 0;
        for (const CatPart &member : members) {
          std::vector<SymInt> own = shape;
          own[1] = SymInt(member.size);
          if (context.loadsChannelsLast(member.load, own))
            nhwcChannels += member.size;
        }
        if (2 * nhwcChannels >= size)
          order = {0, 2, 3, 1};
      }
      order.resize(shape.size());
      for (size_t d = 4; d < shape.size(); ++d)
        order[d] = d;
      std::vector<SymInt> stored;
      for (size_t d : order)
        stored.push_back(shape[d]);
      std::string name = context.uniqueBufferName(node.output()->name() + "_part");
      int id =
          context.addBuffer(name, Buffer::Kind::Intermediate, TensorType(outType.dtype, stored));
      LoopNode loop;
      loop.kind = LoopNode::Kind::Pointwise;
      loop.name = name;
      loop.output = id;
      Index storedIndex;
      loop.ranges = rangesWithoutUnitDims(stored, storedIndex);
      Index index(order.size());
      for (size_t i = 0; i < order.size(); ++i)
        index[order[i]] = storedIndex[i];
      loop.body = context.simplifyBody(select(index), loop.ranges, {});
      loop.origins = context.mergedOrigins(node);
      context.addNode(std::move(loop));
      DType dtype = outType.dtype;
      Loader load = [id, dtype, stored, order](const Index &at) {
        Index permuted;
        for (size_t d : order)
          permuted.push_back(at[d]);
        return makeLoad(id, dtype, flatten(permuted, stored));
      };
      grouped.push_back({load, start, size});
    }
    parts = std::move(grouped);
  }
  return parts;
}

/// cat as a pointwise select over the inputs' ranges along `dim` (grouped into copies first when
/// there are many). Static sizes along `dim` only; else the reference kernel.
Status lowerCat(LowerContext &context, const Node &node) {
  const TensorType &outType = node.output()->type();
  if (outType.rank() == 0)
    return context.fallback(node, "a cat of scalars");
  int64_t dim = AttrReader(node.attrs()).getInt("dim");
  if (dim < 0)
    dim += int64_t(outType.rank());
  if (dim < 0 || dim >= int64_t(outType.rank()))
    return context.fallback(node, "a cat along a dim the result does not have");
  std::vector<CatPart> parts;
  int64_t start = 0;
  for (const Value *input : node.inputs()) {
    const std::vector<SymInt> &shape = input->type().shape;
    if (shape.size() == 1 && shape[0] == SymInt(0))
      continue; // a legacy empty tensor, skipped whatever the others' rank
    if (shape.size() != outType.rank())
      return context.fallback(node, "inputs of different ranks");
    std::optional<int64_t> size = shape[size_t(dim)].constant();
    if (!size)
      return context.fallback(node, "an input of symbolic size along the cat dim");
    if (*size == 0)
      continue;
    // Every part is computed for every element (the selects keep one): a costly inline part
    // gets a buffer first.
    if (context.value(input).buffer < 0 &&
        context.value(input).cost >= context.options().realizeCostThreshold)
      context.realize(input);
    parts.push_back({context.value(input).load, start, *size});
    start += *size;
  }
  if (parts.empty())
    return context.fallback(node, "no input with elements");
  int cost = context.inputCost(node) + int(parts.size());
  bool readsTemplate = context.inputsReadTemplate(node);
  if (parts.size() > kMaxInlineCatParts) {
    parts = groupCatParts(context, node, std::move(parts), size_t(dim));
    cost = int(parts.size());
    readsTemplate = false;
  }
  context.setPointwise(node.output(), selectAmong(std::move(parts), size_t(dim), outType.dtype),
                       cost, readsTemplate, context.mergedOrigins(node));
  return Status::ok();
}

} // namespace

void addViewRules(RuleTable &table) {
  table.add({OpId::View, OpId::Reshape}, lowerReshape);
  table.add({OpId::Permute}, lowerPermute);
  table.add({OpId::Expand}, lowerExpand);
  table.add({OpId::Squeeze, OpId::Unsqueeze}, lowerSqueeze);
  table.add({OpId::Slice}, lowerSlice);
  table.add({OpId::Split}, lowerSplit);
  table.add({OpId::Cat}, lowerCat);
  table.fallback({OpId::Transpose, OpId::T}, "decomposed before lowering; this case was not");
  table.add({OpId::Pad}, lowerPad);
}

} // namespace tensorc::loop
