// The lowering context: buffers and nodes of the program being built, loaders of graph values,
// when a value gets a buffer, and the view and weight helpers rules share.
#include "LowerContext.h"

#include "Rules/Rules.h"
#include "tensorc/IR/Rewriter.h"
#include "tensorc/Lowering/ExprVisitor.h"

#include <algorithm>
#include <bit>

namespace tensorc::loop {

SymInt flatten(const Index &index, const std::vector<SymInt> &shape) {
  std::vector<SymInt> strides = contiguousStrides(shape);
  SymInt flat(0);
  for (size_t i = 0; i < index.size(); ++i)
    flat = flat + index[i] * strides[i];
  return flat;
}

Index loopIndex(size_t rank) {
  Index index;
  for (size_t i = 0; i < rank; ++i)
    index.push_back(SymInt::symbol(loopVar(i)));
  return index;
}

bool isOne(const SymInt &dim) { return dim.constant() == std::optional<int64_t>(1); }

std::vector<SymInt> rangesWithoutUnitDims(const std::vector<SymInt> &shape, Index &index) {
  std::vector<SymInt> ranges;
  index.clear();
  for (const SymInt &dim : shape) {
    if (isOne(dim)) {
      index.push_back(SymInt(0));
    } else {
      index.push_back(SymInt::symbol(loopVar(ranges.size())));
      ranges.push_back(dim);
    }
  }
  return ranges;
}

std::string shortName(const OpDef &op) {
  size_t dot = op.name.rfind('.');
  return dot == std::string::npos ? op.name : op.name.substr(dot + 1);
}

LowerContext::LowerContext(const Graph &graph, const LowerOptions &options)
    : options_(options), users_(computeUsers(graph)) {}

void LowerContext::setValue(const Value *value, Lowered lowered, std::vector<std::string> origins) {
  values_[value] = std::move(lowered);
  origins_[value] = std::move(origins);
}

int LowerContext::addBuffer(const std::string &name, Buffer::Kind kind, const TensorType &type) {
  Buffer buffer;
  buffer.id = int(program_.buffers.size());
  buffer.name = name;
  buffer.kind = kind;
  buffer.dtype = type.dtype;
  buffer.shape = type.shape;
  program_.buffers.push_back(std::move(buffer));
  return program_.buffers.back().id;
}

void LowerContext::setBuffer(const Value *value, int id) {
  const Buffer &buffer = program_.buffers[size_t(id)];
  DType dtype = buffer.dtype;
  std::vector<SymInt> shape = buffer.shape;
  Lowered lowered;
  lowered.buffer = id;
  lowered.load = [id, dtype, shape](const Index &index) {
    return makeLoad(id, dtype, flatten(index, shape));
  };
  values_[value] = std::move(lowered);
}

int LowerContext::realize(const Value *value) {
  Lowered &lowered = values_.at(value);
  if (lowered.buffer >= 0)
    return lowered.buffer;
  int id = addBuffer(value->name(), Buffer::Kind::Intermediate, value->type());
  LoopNode node;
  node.kind = LoopNode::Kind::Pointwise;
  node.name = value->name();
  node.output = id;
  Index index;
  node.ranges = rangesWithoutUnitDims(value->type().shape, index);
  node.body = simplifyBody(lowered.load(index), node.ranges, {});
  node.origins = origins_[value];
  addNode(std::move(node));
  setBuffer(value, id);
  return id;
}

void LowerContext::materialize(const Value *value) {
  const Lowered &lowered = values_.at(value);
  if (lowered.buffer >= 0 || channelsLast_.count(value))
    return;
  if (!options_.channelsLastConv || value->type().rank() != 4 || !readsChannelsLast(value)) {
    realize(value);
    return;
  }
  // A plain view of an NHWC buffer (a convolution's result) is read in place.
  if (lowered.cost == 0 && lowered.load(loopIndex(4))->kind == ExprKind::Load) {
    channelsLast_.insert(value);
    return;
  }
  setChannelsLastView(value, realizePermuted(value, {0, 2, 3, 1}, value->name() + "_nhwc"));
}

int LowerContext::realizePermuted(const Value *value, const std::vector<size_t> &order,
                                  const std::string &name) {
  const TensorType &type = value->type();
  std::vector<SymInt> shape;
  for (size_t d : order)
    shape.push_back(type.shape[d]);
  int id =
      addBuffer(uniqueBufferName(name), Buffer::Kind::Intermediate, TensorType(type.dtype, shape));
  LoopNode node;
  node.kind = LoopNode::Kind::Pointwise;
  node.name = program_.buffers[size_t(id)].name;
  node.output = id;
  Index stored;
  node.ranges = rangesWithoutUnitDims(shape, stored);
  Index logical(order.size());
  for (size_t i = 0; i < order.size(); ++i)
    logical[order[i]] = stored[i];
  node.body = simplifyBody(values_.at(value).load(logical), node.ranges, {});
  node.origins = values_.at(value).buffer >= 0 ? std::vector<std::string>{} : origins_[value];
  node.origins.push_back("channels_last");
  addNode(std::move(node));
  return id;
}

int LowerContext::channelsLastBuffer(const Value *value) {
  const std::vector<SymInt> &shape = value->type().shape;
  std::vector<SymInt> nhwc = {shape[0], shape[2], shape[3], shape[1]};
  if (std::optional<StridedView> view = viewOf(value)) {
    std::vector<SymInt> dense = contiguousStrides(nhwc);
    std::vector<SymInt> want = {dense[0], dense[3], dense[1], dense[2]}; // per [N, C, H, W] dim
    bool matches =
        view->offset == SymInt(0) && program_.buffers[size_t(view->buffer)].shape == nhwc;
    for (size_t d = 0; d < 4 && matches; ++d)
      matches = isOne(shape[d]) || view->strides[d] == want[d];
    if (matches)
      return view->buffer;
  }
  if (auto cached = nhwcCopies_.find(value); cached != nhwcCopies_.end())
    return cached->second;
  int id = realizePermuted(value, {0, 2, 3, 1}, value->name() + "_nhwc");
  if (values_.at(value).buffer >= 0)
    nhwcCopies_[value] = id; // keeps its dense buffer for users that need one
  else
    setChannelsLastView(value, id);
  return id;
}

void LowerContext::setChannelsLastView(const Value *value, int id) {
  setPermutedView(value, id, {0, 2, 3, 1});
  channelsLast_.insert(value);
}

void LowerContext::setPermutedView(const Value *value, int id, const std::vector<size_t> &order) {
  const Buffer &buffer = program_.buffers[size_t(id)];
  DType dtype = buffer.dtype;
  std::vector<SymInt> shape = buffer.shape;
  Lowered lowered;
  lowered.load = [id, dtype, shape, order](const Index &i) {
    Index stored;
    for (size_t d : order)
      stored.push_back(i[d]);
    return makeLoad(id, dtype, flatten(stored, shape));
  };
  values_[value] = std::move(lowered);
  origins_[value] = {};
}

const std::vector<const Node *> &LowerContext::users(const Value *value) const {
  static const std::vector<const Node *> none;
  auto found = users_.find(value);
  return found == users_.end() ? none : found->second;
}

bool LowerContext::readsChannelsLast(const Value *value) {
  return loadsChannelsLast(values_.at(value).load, value->type().shape);
}

bool LowerContext::loadsChannelsLast(const Loader &load, const std::vector<SymInt> &shape) const {
  if (shape.size() != 4)
    return false;
  std::optional<int64_t> c = shape[1].constant(), h = shape[2].constant(), w = shape[3].constant();
  if (!c || !h || !w || *c <= 1 || *h * *w <= 1)
    return false;
  std::map<std::string, int64_t> bounds;
  for (size_t i = 0; i < 4; ++i)
    if (auto extent = shape[i].constant())
      bounds[loopVar(i)] = *extent;
  std::map<std::string, SymInt> zero;
  for (size_t i = 0; i < 4; ++i)
    zero[loopVar(i)] = SymInt(0);
  bool found = false;
  forEachExpr(load(loopIndex(4)), [&](const Expr &expr) {
    if (found || expr.kind != ExprKind::Load)
      return;
    SymInt flat = expr.index.simplify(bounds), base = flat.substitute(zero);
    auto stride = [&](size_t dim) {
      std::map<std::string, SymInt> unit = zero;
      unit[loopVar(dim)] = SymInt(1);
      return flat.substitute(unit) - base;
    };
    found = stride(1) == SymInt(1) && (*w == 1 || stride(3) == SymInt(*c)) &&
            (*h == 1 || stride(2) == SymInt(*w * *c));
    // A window over an NHWC buffer (a max_pool's padded taps wrap the spatial index) still
    // reads its channels contiguously at each pixel: stored NHWC it needs no transpose either.
    // (A per-channel operand, such as a bias, does not move with the pixel: it says nothing.)
    found = found || (options_.channelsLastWindows && stride(1) == SymInt(1) &&
                      (stride(2) != SymInt(0) || stride(3) != SymInt(0)));
  });
  return found;
}

void LowerContext::addNode(LoopNode node) {
  node.id = int(program_.nodes.size());
  program_.nodes.push_back(std::move(node));
}

int LowerContext::addTemplate(LoopNode node, const std::string &bufferName,
                              const TensorType &type) {
  node.kind = LoopNode::Kind::Template;
  node.name = bufferName;
  node.ranges = type.shape; // all dims kept: the epilogue's (row, col) are the last two
  int id = addBuffer(bufferName, Buffer::Kind::Intermediate, type);
  node.output = id;
  addNode(std::move(node));
  templateOutputs_.insert(id);
  return id;
}

std::string LowerContext::uniqueBufferName(const std::string &hint) const {
  std::set<std::string> taken;
  for (const Buffer &buffer : program_.buffers)
    taken.insert(buffer.name);
  std::string name = hint;
  for (int i = 1; taken.count(name); ++i)
    name = hint + "_" + std::to_string(i);
  return name;
}

ExprRef LowerContext::simplifyBody(const ExprRef &body, const std::vector<SymInt> &ranges,
                                   const std::vector<SymInt> &reductionRanges) {
  std::map<std::string, int64_t> bounds;
  for (size_t i = 0; i < ranges.size(); ++i)
    if (auto extent = ranges[i].constant())
      bounds[loopVar(i)] = *extent;
  for (size_t i = 0; i < reductionRanges.size(); ++i)
    if (auto extent = reductionRanges[i].constant())
      bounds[reductionVar(i)] = *extent;
  // Structurally equal subexpressions (a value inlined into several users) become one node.
  std::map<std::string, ExprRef> unique;
  return mutateWith(body, [&](const ExprRef &expr) {
    ExprRef simplified = expr;
    if (expr->kind == ExprKind::Load || expr->kind == ExprKind::IndirectLoad ||
        expr->kind == ExprKind::Index)
      simplified = withIndex(expr, expr->index.simplify(bounds));
    const Expr &e = *simplified;
    std::string key = std::to_string(int(e.kind)) + "|" + std::to_string(int(e.dtype)) + "|" +
                      std::to_string(int(e.unary)) + "|" + std::to_string(int(e.binary)) + "|" +
                      std::to_string(std::bit_cast<uint64_t>(e.value)) + "|" +
                      std::to_string(e.intValue) + "|" + std::to_string(e.buffer) + "|" +
                      e.index.str();
    for (const ExprRef &operand : e.operands)
      key += "|" + std::to_string(reinterpret_cast<uintptr_t>(operand.get()));
    return unique.emplace(key, simplified).first->second;
  });
}

Loader LowerContext::broadcastLoader(const Value *value, const std::vector<SymInt> &outShape,
                                     DType dtype) {
  const Lowered &lowered = values_.at(value);
  std::vector<SymInt> shape = value->type().shape;
  Loader inner = lowered.load;
  size_t offset = outShape.size() - shape.size();
  return [inner, shape, offset, dtype, outShape](const Index &index) {
    Index mapped;
    for (size_t i = 0; i < shape.size(); ++i)
      mapped.push_back(isOne(shape[i]) && !isOne(outShape[i + offset]) ? SymInt(0)
                                                                       : index[i + offset]);
    return makeCast(inner(mapped), dtype);
  };
}

void LowerContext::setPointwise(const Value *value, Loader load, int cost, bool readsTemplate,
                                std::vector<std::string> origins) {
  Lowered lowered;
  lowered.load = std::move(load);
  lowered.cost = cost;
  lowered.readsTemplate = readsTemplate;
  values_[value] = std::move(lowered);
  origins_[value] = std::move(origins);
  size_t users = users_.count(value) ? users_.at(value).size() : 0;
  // A GEMM result read by something other than pointwise ops gets a buffer here, written by
  // the GEMM's epilogue; one only feeding pointwise ops stays inline so the whole chain can
  // become the epilogue.
  // So does one whose views are an attention's operands (a Q/K/V projection split into heads):
  // the attention then reads the heads in place.
  // And one with several users of which one, through views, is a matrix product's operand: the
  // product reads its operands from memory anyway, so the others read that buffer too instead
  // of each recomputing the value from its inputs (a LayerNorm's output feeding the next
  // projection and the residual add: materialized as the reshaped view alone, the residual
  // recomputed it from the saved statistics and an f32 copy of x - mean).
  // And one with several users that read all of it whose body reads more than a few buffers of
  // its own size (a pre-norm transformer's residual stream: each layer norm and residual add
  // would re-read every product added to it since the last buffer; a norm's statistics and
  // weights do not count, nor do slices and gathers, which read a part each: Swin's patch
  // merging reads four quarters).
  if ((users > 1 && (cost >= options_.realizeCostThreshold ||
                     (readsTemplate && !onlyPointwiseUsers(value)) || viewsFeedGemm(value) ||
                     (wholeReaders(value) > 1 &&
                      fullSizeReads(value) > size_t(options_.realizeReadsThreshold)))) ||
      cost >= options_.maxInlineCost || (readsTemplate && viewsFeedAttention(value)))
    materialize(value);
}

size_t LowerContext::wholeReaders(const Value *value) const {
  // Distinct users: users_ lists a node once per operand (x * x is one reader).
  std::set<const Node *> readers;
  for (const Node *user : users_.at(value)) {
    if (user) {
      switch (user->opId()) {
      case OpId::Slice:
      case OpId::Gather:
      case OpId::GatherNd:
      case OpId::IndexSelect:
      case OpId::Embedding:
        continue;
      default:
        break;
      }
    }
    readers.insert(user); // null: a graph output
  }
  return readers.size();
}

size_t LowerContext::fullSizeReads(const Value *value) const {
  SymInt elements = value->type().numel();
  std::set<int> buffers;
  loop::forEachExpr(values_.at(value).load(loopIndex(value->type().rank())), [&](const Expr &expr) {
    if ((expr.kind == ExprKind::Load || expr.kind == ExprKind::IndirectLoad) &&
        program_.buffers[size_t(expr.buffer)].numel() == elements)
      buffers.insert(expr.buffer);
  });
  return buffers.size();
}

bool LowerContext::viewsFeed(const Value *value,
                             const std::function<bool(const Node &, size_t)> &isOperand) const {
  std::vector<const Value *> work = {value};
  std::set<const Value *> seen;
  while (!work.empty()) {
    const Value *at = work.back();
    work.pop_back();
    if (!seen.insert(at).second || !users_.count(at))
      continue;
    for (const Node *user : users_.at(at)) {
      if (!user)
        continue;
      switch (user->opId()) {
      case OpId::View:
      case OpId::Reshape:
      case OpId::Permute:
      case OpId::Squeeze:
      case OpId::Unsqueeze:
      case OpId::Slice:
      case OpId::Split:
      case OpId::Expand:
        for (const Value *output : user->outputs())
          work.push_back(output);
        break;
      default:
        for (size_t i = 0; i < user->inputs().size(); ++i)
          if (user->input(i) == at && isOperand(*user, i))
            return true;
        break;
      }
    }
  }
  return false;
}

bool LowerContext::viewsFeedAttention(const Value *value) const {
  return viewsFeed(value, [](const Node &user, size_t input) {
    return user.opId() == OpId::ScaledDotProductAttention && input < 3;
  });
}

bool LowerContext::viewsFeedGemm(const Value *value) const {
  return viewsFeed(value, [](const Node &user, size_t input) {
    return (user.opId() == OpId::Mm || user.opId() == OpId::Bmm) && input < 2;
  });
}

bool LowerContext::onlyPointwiseUsers(const Value *value) const {
  for (const Node *user : users_.at(value))
    if (!user || !isPointwiseOp(user->opId())) // no user: a graph output
      return false;
  return true;
}

std::vector<std::string> LowerContext::mergedOrigins(const Node &node) {
  std::vector<std::string> origins;
  for (const Value *input : node.inputs())
    if (input && values_.at(input).buffer < 0) // a realized input is its own kernel's
      for (const std::string &origin : origins_[input])
        if (std::find(origins.begin(), origins.end(), origin) == origins.end())
          origins.push_back(origin);
  std::string self = shortName(node.op());
  if (std::find(origins.begin(), origins.end(), self) == origins.end())
    origins.push_back(self);
  return origins;
}

int LowerContext::inputCost(const Node &node) const {
  int cost = 0;
  for (const Value *input : node.inputs())
    if (input && values_.at(input).buffer < 0)
      cost += values_.at(input).cost;
  return cost;
}

bool LowerContext::inputsReadTemplate(const Node &node) const {
  for (const Value *input : node.inputs())
    if (input) {
      const Lowered &lowered = values_.at(input);
      if (lowered.buffer >= 0 ? templateOutputs_.count(lowered.buffer) != 0 : lowered.readsTemplate)
        return true;
    }
  return false;
}

std::optional<StridedView> LowerContext::viewOf(const Value *value) {
  size_t rank = value->type().rank();
  Index index = loopIndex(rank);
  std::map<std::string, int64_t> bounds;
  for (size_t i = 0; i < rank; ++i)
    if (auto extent = value->type().shape[i].constant())
      bounds[loopVar(i)] = *extent;
  ExprRef expr = values_.at(value).load(index);
  if (expr->kind != ExprKind::Load)
    return std::nullopt;
  SymInt flat = expr->index.simplify(bounds);
  std::map<std::string, SymInt> zero;
  for (size_t i = 0; i < rank; ++i)
    zero[loopVar(i)] = SymInt(0);
  StridedView view;
  view.buffer = expr->buffer;
  view.offset = flat.substitute(zero);
  SymInt rebuilt = view.offset;
  for (size_t i = 0; i < rank; ++i) {
    std::map<std::string, SymInt> unit = zero;
    unit[loopVar(i)] = SymInt(1);
    view.strides.push_back(flat.substitute(unit) - view.offset);
    rebuilt = rebuilt + view.strides.back() * index[i];
  }
  if (rebuilt != flat)
    return std::nullopt;
  return view;
}

StridedView LowerContext::stridedView(const Value *value) {
  if (std::optional<StridedView> view = viewOf(value))
    return *view;
  materialize(value); // channels-last when its loads are: then a view of that buffer
  if (channelsLast_.count(value))
    if (std::optional<StridedView> view = viewOf(value))
      return *view;
  StridedView view;
  view.buffer = realize(value);
  view.offset = SymInt(0);
  view.strides = contiguousStrides(value->type().shape);
  return view;
}

StridedView LowerContext::contiguousWeight(const StridedView &view,
                                           const std::vector<SymInt> &shape, bool kMajor) {
  const Buffer &buffer = program_.buffers[size_t(view.buffer)];
  kMajor = kMajor && shape.size() >= 2;
  // The stored order of the dims: the view's, or with the last two swapped.
  std::vector<SymInt> storedShape = shape;
  StridedView stored = view;
  if (kMajor) {
    std::swap(storedShape[shape.size() - 2], storedShape[shape.size() - 1]);
    std::swap(stored.strides[shape.size() - 2], stored.strides[shape.size() - 1]);
  }
  std::vector<SymInt> dense = contiguousStrides(storedShape);
  // The view of the stored weight, in the view's dim order.
  auto result = [&](int id) {
    StridedView out{id, SymInt(0), dense};
    if (kMajor)
      std::swap(out.strides[shape.size() - 2], out.strides[shape.size() - 1]);
    return out;
  };
  auto data = program_.weights.find(buffer.name);
  if (buffer.kind != Buffer::Kind::Weight || data == program_.weights.end())
    return view;
  if (stored.strides == dense && view.offset == SymInt(0))
    return result(view.buffer);
  std::vector<int64_t> dims, strides;
  for (size_t i = 0; i < storedShape.size(); ++i) {
    auto dim = storedShape[i].constant();
    auto stride = stored.strides[i].constant();
    if (!dim || !stride)
      return view;
    dims.push_back(*dim);
    strides.push_back(*stride);
  }
  auto offset = view.offset.constant();
  if (!offset)
    return view;
  std::string key = buffer.name + "|" + view.offset.str();
  for (const SymInt &stride : stored.strides)
    key += "|" + stride.str();
  for (int64_t dim : dims) // a view of fewer elements is another copy
    key += "|" + std::to_string(dim);
  auto cached = denseWeights_.find(key);
  if (cached == denseWeights_.end()) {
    Expected<Tensor> copy = Tensor::zeros(buffer.dtype, dims);
    if (!copy)
      return view;
    const Tensor &source = data->second;
    int64_t numel = copy->numel();
    std::vector<int64_t> index(dims.size(), 0);
    for (int64_t flat = 0; flat < numel; ++flat) {
      int64_t at = *offset;
      for (size_t d = 0; d < dims.size(); ++d)
        at += index[d] * strides[d];
      copy->setDouble(flat, source.getDouble(at));
      for (size_t d = dims.size(); d-- > 0;) {
        if (++index[d] < dims[d])
          break;
        index[d] = 0;
      }
    }
    std::string name = uniqueBufferName(buffer.name + (kMajor ? "_kmajor" : "_dense"));
    TensorType type(buffer.dtype, storedShape);
    int id = addBuffer(name, Buffer::Kind::Weight, type);
    program_.weights[name] = std::move(*copy);
    cached = denseWeights_.emplace(key, id).first;
  }
  return result(cached->second);
}

} // namespace tensorc::loop
