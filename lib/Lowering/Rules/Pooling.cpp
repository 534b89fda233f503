// Pooling: max_pool, avg_pool and max_pool_with_indices as pointwise kernels over the output whose
// body unrolls the window (masked taps: padding reads -inf for max and is counted or not for avg;
// ceil_mode's last windows are clipped by the same masks), or as a reduction over the window when
// it is too large to unroll (global pooling written as a pool).
#include "Sampling.h"

namespace tensorc::loop {

namespace {

/// Windows up to this many taps are unrolled into one pointwise body; larger ones reduce.
constexpr int64_t kMaxUnrolledTaps = 64;

/// One pooling op's geometry over the last `kernel.size()` dims of its input (all static).
struct Pool {
  std::vector<int64_t> kernel, stride, padBegin, dilation, inSize, outSize;
  size_t first = 0; // the first spatial dim
  int64_t taps() const {
    int64_t n = 1;
    for (int64_t k : kernel)
      n *= k;
    return n;
  }
};

/// A spatial list attribute: one entry for every dim, or one for all; empty gives `fallback`.
Expected<std::vector<int64_t>> spatialList(const AttrReader &attrs, const char *name, size_t dims,
                                           const std::vector<int64_t> &fallback) {
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> values, attrs.getStaticInts(name));
  if (values.empty())
    return fallback;
  if (values.size() == 1)
    values.assign(dims, values[0]);
  return values;
}

/// The pool of `node`, or a reason it is not lowered.
Expected<Pool> readPool(const Node &node, bool onnxPadding) {
  AttrReader attrs(node.attrs());
  Pool pool;
  TC_ASSIGN_OR_RETURN(pool.kernel, attrs.getStaticInts("kernel_size"));
  size_t dims = pool.kernel.size();
  TC_ASSIGN_OR_RETURN(pool.stride, spatialList(attrs, "stride", dims, pool.kernel));
  TC_ASSIGN_OR_RETURN(pool.padBegin, spatialList(attrs, "padding", dims, {}));
  if (pool.padBegin.empty())
    pool.padBegin.assign(dims, 0);
  if (onnxPadding) // [begin..., end...]: the output shape already holds the ends
    pool.padBegin.resize(dims);
  pool.dilation.assign(dims, 1);
  if (node.opId() != OpId::AvgPool) {
    TC_ASSIGN_OR_RETURN(pool.dilation, spatialList(attrs, "dilation", dims, pool.dilation));
  }
  const std::vector<SymInt> &in = node.input(0)->type().shape;
  const std::vector<SymInt> &out = node.output()->type().shape;
  if (dims == 0 || in.size() < dims || out.size() != in.size() || pool.stride.size() != dims ||
      pool.padBegin.size() != dims || pool.dilation.size() != dims)
    return makeError("attributes that do not fit the input");
  pool.first = in.size() - dims;
  for (size_t d = 0; d < dims; ++d) {
    std::optional<int64_t> i = in[pool.first + d].constant(), o = out[pool.first + d].constant();
    if (!i || !o)
      return makeError("symbolic spatial dims");
    pool.inSize.push_back(*i);
    pool.outSize.push_back(*o);
  }
  return pool;
}

/// One tap of the window at output `index`: where it reads the input (wrapped in bounds), and
/// whether that is a real element (null: always).
struct Tap {
  Index at;      // the input index to load (in bounds)
  Index raw;     // the unwrapped spatial positions
  ExprRef valid; // null when always inside
};

/// The tap at window offset `offset` (one entry per spatial dim, a constant or a reduction
/// variable with `offsetMax` its largest value).
Tap tapAt(const Pool &pool, const Index &index, const Index &offset,
          const std::vector<int64_t> &offsetMax) {
  Tap tap{index, {}, nullptr};
  for (size_t d = 0; d < pool.kernel.size(); ++d) {
    size_t dim = pool.first + d;
    SymInt pos = index[dim] * SymInt(pool.stride[d]) - SymInt(pool.padBegin[d]) +
                 offset[d] * SymInt(pool.dilation[d]);
    int64_t lowest = -pool.padBegin[d];
    if (std::optional<int64_t> k = offset[d].constant())
      lowest += *k * pool.dilation[d];
    int64_t highest =
        (pool.outSize[d] - 1) * pool.stride[d] - pool.padBegin[d] + offsetMax[d] * pool.dilation[d];
    ExprRef inside = insideMask(pos, pool.inSize[d], lowest, highest);
    tap.raw.push_back(pos);
    tap.at[dim] =
        inside ? wrapInto(pos, pool.inSize[d], pool.padBegin[d]) : pos; // in bounds unmasked
    if (inside)
      tap.valid = allOf(tap.valid, inside);
  }
  return tap;
}

/// Every window offset, row-major (the reference kernels' order).
std::vector<Index> windowOffsets(const Pool &pool) {
  std::vector<Index> offsets{{}};
  for (int64_t k : pool.kernel) {
    std::vector<Index> next;
    for (const Index &prefix : offsets)
      for (int64_t i = 0; i < k; ++i) {
        Index offset = prefix;
        offset.push_back(SymInt(i));
        next.push_back(offset);
      }
    offsets = std::move(next);
  }
  return offsets;
}

std::vector<int64_t> lastOffsets(const Pool &pool) {
  std::vector<int64_t> last;
  for (int64_t k : pool.kernel)
    last.push_back(k - 1);
  return last;
}

/// The input as the window reads it, `taps` times per output element: a producer whose body
/// costs less than a buffer round trip over all taps (a relu) is recomputed per tap, a costlier
/// one computed once into a buffer.
Loader windowSource(LowerContext &context, const Value *input, int64_t taps) {
  const Lowered &lowered = context.value(input);
  if (lowered.buffer < 0 && lowered.cost * taps >= context.options().realizeCostThreshold) {
    if (context.options().channelsLastWindows)
      context.materialize(input);
    else
      context.realize(input);
  }
  return context.value(input).load;
}

/// avg_pool's divisor at output `index`: divisor_override, or the window's size clipped to the
/// padded input (count_include_pad) or to the input itself, as an expression of `type`.
ExprRef avgDivisor(std::optional<int64_t> divisorOverride, bool includePad, const Pool &pool,
                   const Index &index, DType type) {
  if (divisorOverride)
    return makeConstant(double(*divisorOverride), type);
  ExprRef count;
  int64_t constantCount = 1;
  for (size_t d = 0; d < pool.kernel.size(); ++d) {
    int64_t in = pool.inSize[d], pad = pool.padBegin[d], k = pool.kernel[d], s = pool.stride[d];
    int64_t lastStart = (pool.outSize[d] - 1) * s - pad;
    bool clipsBelow = !includePad && pad > 0;
    bool clipsAbove = lastStart + k > (includePad ? in + pad : in);
    if (!clipsBelow && !clipsAbove) {
      constantCount *= k;
      continue;
    }
    ExprRef start = indexExpr(index[pool.first + d] * SymInt(s) - SymInt(pad));
    ExprRef end = makeBinary(BinaryOp::Add, start, i64Constant(k));
    end = makeBinary(BinaryOp::Minimum, end, i64Constant(includePad ? in + pad : in));
    if (!includePad)
      start = makeBinary(BinaryOp::Maximum, start, i64Constant(0));
    ExprRef size = makeBinary(BinaryOp::Maximum, makeBinary(BinaryOp::Sub, end, start),
                              i64Constant(1)); // never 0: a window always holds an element
    count = count ? makeBinary(BinaryOp::Mul, count, size) : size;
  }
  if (!count)
    return makeConstant(double(constantCount), type);
  if (constantCount != 1)
    count = makeBinary(BinaryOp::Mul, count, i64Constant(constantCount));
  return makeCast(count, type);
}

/// A reduction node over the window (reduction variables as the offsets) writing a new buffer
/// of `type`, `tapValue` the masked value of one tap; returns a loader of that buffer.
Loader reduceWindow(LowerContext &context, const Node &node, const Pool &pool, ReduceOp op,
                    DType type, const std::function<ExprRef(const Tap &)> &tapValue) {
  const std::vector<SymInt> &outShape = node.output()->type().shape;
  LoopNode loop;
  loop.kind = LoopNode::Kind::Reduction;
  loop.reduceOp = op;
  Index index;
  loop.ranges = rangesWithoutUnitDims(outShape, index);
  Index offset;
  for (int64_t k : pool.kernel) {
    offset.push_back(SymInt::symbol(reductionVar(loop.reductionRanges.size())));
    loop.reductionRanges.push_back(SymInt(k));
  }
  loop.body = context.simplifyBody(tapValue(tapAt(pool, index, offset, lastOffsets(pool))),
                                   loop.ranges, loop.reductionRanges);
  loop.origins = context.mergedOrigins(node);
  std::string name = context.uniqueBufferName(node.output()->name() + "_window");
  int id = context.addBuffer(name, Buffer::Kind::Intermediate, TensorType(type, outShape));
  loop.name = name;
  loop.output = id;
  context.addNode(std::move(loop));
  return
      [id, type, outShape](const Index &at) { return makeLoad(id, type, flatten(at, outShape)); };
}

Status lowerMaxPool(LowerContext &context, const Node &node) {
  Expected<Pool> read = readPool(node, false);
  if (!read)
    return context.fallback(node, read.error().message());
  Pool pool = std::move(*read);
  DType dtype = node.output()->type().dtype;
  Loader source = windowSource(context, node.input(0), pool.taps());
  auto tapValue = [source, dtype](const Tap &tap) {
    ExprRef value = makeCast(source(tap.at), dtype);
    return tap.valid ? makeSelect(tap.valid, value, lowestValue(dtype)) : value;
  };
  if (pool.taps() > kMaxUnrolledTaps) {
    Loader window = reduceWindow(context, node, pool, ReduceOp::Max, dtype, tapValue);
    context.setPointwise(node.output(), window, 0, false, context.mergedOrigins(node));
    return Status::ok();
  }
  std::vector<Index> offsets = windowOffsets(pool);
  std::vector<int64_t> last = lastOffsets(pool);
  Loader load = [pool, offsets, last, tapValue](const Index &index) {
    ExprRef best;
    for (const Index &offset : offsets) {
      ExprRef value = tapValue(tapAt(pool, index, offset, last));
      best = best ? makeBinary(BinaryOp::Maximum, best, value) : value;
    }
    return best;
  };
  context.setPointwise(node.output(), load, context.inputCost(node) + 3 * int(offsets.size()),
                       false, context.mergedOrigins(node));
  return Status::ok();
}

Status lowerAvgPool(LowerContext &context, const Node &node) {
  Expected<Pool> read = readPool(node, false);
  if (!read)
    return context.fallback(node, read.error().message());
  Pool pool = std::move(*read);
  DType dtype = node.output()->type().dtype, type = computeType(dtype);
  Loader source = windowSource(context, node.input(0), pool.taps());
  auto tapValue = [source, type](const Tap &tap) {
    ExprRef value = makeCast(source(tap.at), type);
    return tap.valid ? makeSelect(tap.valid, value, makeConstant(0.0, type)) : value;
  };
  Loader sum;
  int cost = 0;
  if (pool.taps() > kMaxUnrolledTaps) {
    sum = reduceWindow(context, node, pool, ReduceOp::Sum, type, tapValue);
  } else {
    std::vector<Index> offsets = windowOffsets(pool);
    std::vector<int64_t> last = lastOffsets(pool);
    sum = [pool, offsets, last, tapValue](const Index &index) {
      ExprRef total;
      for (const Index &offset : offsets) {
        ExprRef value = tapValue(tapAt(pool, index, offset, last));
        total = total ? makeBinary(BinaryOp::Add, total, value) : value;
      }
      return total;
    };
    cost = context.inputCost(node) + 3 * int(offsets.size());
  }
  AttrReader attrs(node.attrs());
  std::optional<int64_t> divisorOverride;
  if (!attrs.isNone("divisor_override"))
    divisorOverride = attrs.getInt("divisor_override");
  bool includePad = attrs.getBool("count_include_pad");
  Loader load = [sum, pool, divisorOverride, includePad, dtype, type](const Index &index) {
    ExprRef divisor = avgDivisor(divisorOverride, includePad, pool, index, type);
    ExprRef mean = makeBinary(BinaryOp::Div, sum(index), divisor);
    return makeCast(mean, dtype);
  };
  context.setPointwise(node.output(), load, cost + 2, false, context.mergedOrigins(node));
  return Status::ok();
}

/// max_pool_with_indices (ONNX MaxPool with Indices): the first largest element of each window
/// and its flat index in the input (row-major, or column-major over the spatial dims with
/// storage_order=1); a window of padding only gives 0 and index 0, as the reference kernel.
Status lowerMaxPoolWithIndices(LowerContext &context, const Node &node) {
  Expected<Pool> read = readPool(node, true);
  if (!read)
    return context.fallback(node, read.error().message());
  Pool pool = std::move(*read);
  if (pool.first != 2)
    return context.fallback(node, "an input without batch and channel dims");
  if (pool.taps() > kMaxUnrolledTaps)
    return context.fallback(node, "a window too large to unroll (the index needs every tap)");
  const std::vector<SymInt> &inShape = node.input(0)->type().shape;
  DType dtype = node.output(0)->type().dtype;
  bool columnMajor = AttrReader(node.attrs()).getInt("storage_order") == 1;
  Loader source = windowSource(context, node.input(0), pool.taps());
  std::vector<Index> offsets = windowOffsets(pool);
  std::vector<int64_t> last = lastOffsets(pool);
  auto window = [=](const Index &index, bool wantIndex) {
    int64_t plane = 1;
    for (int64_t size : pool.inSize)
      plane *= size;
    SymInt planeStart = (index[0] * inShape[1] + index[1]) * SymInt(plane);
    ExprRef best, bestIndex, found;
    for (const Index &offset : offsets) {
      Tap tap = tapAt(pool, index, offset, last);
      ExprRef value = makeCast(source(tap.at), dtype);
      SymInt flat = planeStart, step(1);
      for (size_t d = pool.kernel.size(); d-- > 0;) {
        size_t k = columnMajor ? pool.kernel.size() - 1 - d : d;
        flat = flat + tap.raw[k] * step;
        step = step * SymInt(pool.inSize[k]);
      }
      ExprRef position = indexExpr(flat);
      if (!best) { // the first tap; `found` null: always found
        best = tap.valid ? makeSelect(tap.valid, value, makeConstant(0.0, dtype)) : value;
        bestIndex = tap.valid ? makeSelect(tap.valid, position, i64Constant(0)) : position;
        found = tap.valid;
        continue;
      }
      ExprRef take = makeBinary(BinaryOp::Gt, value, best);
      if (found)
        take = makeBinary(BinaryOp::LogicalOr, makeUnary(UnaryOp::LogicalNot, found), take);
      if (tap.valid)
        take = makeBinary(BinaryOp::LogicalAnd, tap.valid, take);
      best = makeSelect(take, value, best);
      bestIndex = makeSelect(take, position, bestIndex);
      if (found)
        found = tap.valid ? makeBinary(BinaryOp::LogicalOr, found, tap.valid) : nullptr;
    }
    return wantIndex ? bestIndex : best;
  };
  int cost = context.inputCost(node) + 6 * int(offsets.size());
  context.setPointwise(
      node.output(0), [window](const Index &index) { return window(index, false); }, cost, false,
      context.mergedOrigins(node));
  context.setPointwise(
      node.output(1), [window](const Index &index) { return window(index, true); }, cost, false,
      context.mergedOrigins(node));
  return Status::ok();
}

} // namespace

void addPoolingRules(RuleTable &table) {
  table.add({OpId::MaxPool}, lowerMaxPool);
  table.add({OpId::AvgPool}, lowerAvgPool);
  table.add({OpId::MaxPoolWithIndices}, lowerMaxPoolWithIndices);
}

} // namespace tensorc::loop
