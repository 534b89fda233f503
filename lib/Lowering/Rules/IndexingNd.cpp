// gather_nd and scatter_nd (ONNX GatherND/ScatterND): gather_nd is a pointwise load at a run-time
// offset; scatter_nd, which loop IR cannot write as an indexed store, is a deterministic
// reduction over the index tuples per output element (the last matching tuple for plain
// updates, the sum/product/max/min of the matching updates otherwise), then a pointwise
// combination with the input. Indices wrap once (negative counts from the end) and are then
// clamped: compiled code cannot report an out-of-range index (the reference kernels do).
#include "Sampling.h"

#include "tensorc/Ops/ScatterReduce.h"

namespace tensorc::loop {

namespace {

/// Index tuple entries above this many (tuples times result elements) make scatter_nd's
/// quadratic kernel too slow; such scatters stay on the reference kernel.
constexpr int64_t kMaxScatterWork = int64_t(1) << 32;

/// `position` (any integer dtype) as an i64 in [0, size): negative counts from the end.
ExprRef resolvedIndex(const ExprRef &position, int64_t size) {
  ExprRef value = makeCast(position, DType::I64);
  ExprRef wrapped = makeSelect(makeBinary(BinaryOp::Lt, value, i64Constant(0)),
                               makeBinary(BinaryOp::Add, value, i64Constant(size)), value);
  return clampIndex(wrapped, size);
}

/// The reduction of a scatter's `reduce` attribute other than "none" (the registry's names).
std::optional<ReduceOp> scatterReduceOp(const std::string &reduce) {
  Expected<ops::ScatterReduce> parsed = ops::parseScatterReduce(reduce);
  if (!parsed)
    return std::nullopt;
  switch (*parsed) {
  case ops::ScatterReduce::None:
    return std::nullopt;
  case ops::ScatterReduce::Add:
    return ReduceOp::Sum;
  case ops::ScatterReduce::Mul:
    return ReduceOp::Prod;
  case ops::ScatterReduce::Max:
    return ReduceOp::Max;
  case ops::ScatterReduce::Min:
    return ReduceOp::Min;
  }
  return std::nullopt;
}

/// What `op` leaves unchanged: the value of a tuple that does not write the element.
ExprRef reduceIdentity(ReduceOp op, DType type) {
  bool floating = isFloating(type);
  switch (op) {
  case ReduceOp::Sum:
    return floating ? makeConstant(0.0, type) : makeIntConstant(0, type);
  case ReduceOp::Prod:
    return floating ? makeConstant(1.0, type) : makeIntConstant(1, type);
  case ReduceOp::Max:
    return lowestValue(type);
  case ReduceOp::Min: // the largest value: +inf, or the lowest integer's complement
    return floating ? makeConstant(std::numeric_limits<double>::infinity(), type)
                    : makeUnary(UnaryOp::BitwiseNot, lowestValue(type));
  case ReduceOp::ArgMax:
  case ReduceOp::ArgMin:
    break;
  }
  return nullptr;
}

/// The static sizes of `shape`, or nullopt.
std::optional<std::vector<int64_t>> staticSizes(const std::vector<SymInt> &shape) {
  std::vector<int64_t> sizes;
  for (const SymInt &dim : shape) {
    if (!dim.constant())
      return std::nullopt;
    sizes.push_back(*dim.constant());
  }
  return sizes;
}

} // namespace

/// out[batch..., tuple..., rest...] = data[batch..., index[batch..., tuple..., :], rest...].
Status lowerGatherNd(LowerContext &context, const Node &node) {
  const TensorType &dataType = node.input(0)->type(), &indexType = node.input(1)->type();
  size_t batchDims = size_t(AttrReader(node.attrs()).getInt("batch_dims"));
  size_t depth = size_t(*indexType.shape.back().constant());
  std::vector<int64_t> sizes;
  for (size_t m = 0; m < depth; ++m) {
    std::optional<int64_t> size = dataType.shape[batchDims + m].constant();
    if (!size || *size == 0)
      return context.fallback(node, "an indexed dim that is symbolic or empty");
    sizes.push_back(*size);
  }
  if (node.output()->type().numel().constant() == std::optional<int64_t>(0))
    return context.fallback(node, "an empty result");
  StridedView view = context.stridedView(node.input(0));
  Loader index = context.value(node.input(1)).load;
  DType dtype = dataType.dtype;
  size_t tupleEnd = indexType.rank() - 1; // output dims [batchDims, tupleEnd) are the tuple's
  size_t dataRank = dataType.rank();
  Loader load = [=](const Index &out) {
    Index at(out.begin(), out.begin() + long(batchDims));
    std::vector<ExprRef> dynamic(dataRank);
    Index tuple(out.begin(), out.begin() + long(tupleEnd));
    for (size_t m = 0; m < depth; ++m) {
      Index component = tuple;
      component.push_back(SymInt(int64_t(m)));
      at.push_back(SymInt(0));
      dynamic[batchDims + m] = resolvedIndex(index(component), sizes[m]);
    }
    at.insert(at.end(), out.begin() + long(tupleEnd), out.end());
    return loadAt(view, dtype, at, dynamic);
  };
  context.setPointwise(node.output(), load, context.inputCost(node) + 4 * int(depth), false,
                       context.mergedOrigins(node));
  return Status::ok();
}

/// out = self, then out[index[t, :], rest...] = reduce(out[...], updates[t, rest...]) for every
/// tuple t in order.
Status lowerScatterNd(LowerContext &context, const Node &node) {
  const Value *self = node.input(0), *indices = node.input(1), *updates = node.input(2);
  const TensorType &outType = node.output()->type();
  std::optional<std::vector<int64_t>> outSizes = staticSizes(outType.shape);
  std::vector<SymInt> tupleShape(indices->type().shape.begin(), indices->type().shape.end() - 1);
  std::optional<std::vector<int64_t>> tupleSizes = staticSizes(tupleShape);
  if (!outSizes || !tupleSizes)
    return context.fallback(node, "symbolic shapes");
  int64_t outCount = 1, tupleCount = 1;
  for (int64_t size : *outSizes)
    outCount *= size;
  for (int64_t size : *tupleSizes)
    tupleCount *= size;
  if (outCount == 0 || tupleCount == 0)
    return context.fallback(node, "an empty result or index");
  if (indices->type().shape.back() == SymInt(0))
    return context.fallback(node, "index tuples of length 0 (each replaces the whole input)");
  if (outCount > kMaxScatterWork / tupleCount)
    return context.fallback(node, "more tuples times elements than the deterministic kernel "
                                  "(a reduction over every tuple per element) handles quickly");
  const std::string &reduce = AttrReader(node.attrs()).getString("reduce");
  if (outType.dtype == DType::Bool && reduce != "none")
    return context.fallback(node, "a reduction of bools");
  size_t depth = size_t(*indices->type().shape.back().constant());
  DType dtype = outType.dtype, type = computeType(dtype);
  size_t restDims = outType.rank() - depth;
  int64_t sliceSize = 1;
  for (size_t d = depth; d < outType.rank(); ++d)
    sliceSize *= (*outSizes)[d];
  Loader index = context.value(indices).load;
  int updatesBuffer = context.realize(updates);

  LoopNode loop;
  loop.kind = LoopNode::Kind::Reduction;
  Index out;
  loop.ranges = rangesWithoutUnitDims(outType.shape, out);
  Index tuple;
  for (const SymInt &size : tupleShape) {
    tuple.push_back(SymInt::symbol(reductionVar(loop.reductionRanges.size())));
    loop.reductionRanges.push_back(size);
  }
  ExprRef match;
  for (size_t m = 0; m < depth; ++m) {
    Index component = tuple;
    component.push_back(SymInt(int64_t(m)));
    ExprRef position = resolvedIndex(index(component), (*outSizes)[m]);
    match = allOf(match, makeBinary(BinaryOp::Eq, position, indexExpr(out[m])));
  }
  SymInt flatTuple = flatten(tuple, tupleShape);
  SymInt rest =
      flatten(Index(out.end() - long(restDims), out.end()),
              std::vector<SymInt>(outType.shape.end() - long(restDims), outType.shape.end()));
  ExprRef body;
  DType resultType = type;
  if (reduce == "none") { // the last tuple that writes the element, or -1
    loop.reduceOp = ReduceOp::Max;
    resultType = DType::I64;
    body = makeSelect(match, indexExpr(flatTuple), i64Constant(-1));
  } else {
    std::optional<ReduceOp> op = scatterReduceOp(reduce);
    if (!op)
      return context.fallback(node, "reduce '" + reduce + "'");
    loop.reduceOp = *op;
    ExprRef update =
        makeCast(makeLoad(updatesBuffer, dtype, flatTuple * SymInt(sliceSize) + rest), type);
    body = makeSelect(match, update, reduceIdentity(*op, type));
  }
  loop.body = context.simplifyBody(body, loop.ranges, loop.reductionRanges);
  loop.origins = context.mergedOrigins(node);
  std::string name = context.uniqueBufferName(node.output()->name() + "_scattered");
  int reduced =
      context.addBuffer(name, Buffer::Kind::Intermediate, TensorType(resultType, outType.shape));
  loop.name = name;
  loop.output = reduced;
  ReduceOp op = loop.reduceOp;
  context.addNode(std::move(loop));

  Loader original = context.value(self).load;
  std::vector<SymInt> shape = outType.shape;
  bool replace = reduce == "none";
  Loader load = [=](const Index &at) {
    ExprRef current = makeCast(original(at), type);
    ExprRef found = makeLoad(reduced, resultType, flatten(at, shape));
    if (replace) {
      SymInt restAt = flatten(Index(at.end() - long(restDims), at.end()),
                              std::vector<SymInt>(shape.end() - long(restDims), shape.end()));
      ExprRef t = makeBinary(BinaryOp::Maximum, found, i64Constant(0));
      ExprRef update = makeIndirectLoad(updatesBuffer, dtype, restAt,
                                        makeBinary(BinaryOp::Mul, t, i64Constant(sliceSize)));
      return makeSelect(makeBinary(BinaryOp::Ge, found, i64Constant(0)), update,
                        makeCast(current, dtype));
    }
    BinaryOp combine = op == ReduceOp::Sum    ? BinaryOp::Add
                       : op == ReduceOp::Prod ? BinaryOp::Mul
                       : op == ReduceOp::Max  ? BinaryOp::Maximum
                                              : BinaryOp::Minimum;
    return makeCast(makeBinary(combine, current, found), dtype);
  };
  context.setPointwise(node.output(), load, context.inputCost(node) + 4, false,
                       context.mergedOrigins(node));
  return Status::ok();
}

} // namespace tensorc::loop
