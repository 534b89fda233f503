// Matrix products and convolutions: GEMM and implicit-GEMM conv2d templates over strided views of
// their operands; what follows them reads their result at its own index (an epilogue candidate).
#include "Rules.h"

#include "tensorc/Support/StrCat.h"

#include <array>

namespace tensorc::loop {

namespace {

/// mm and bmm of one float dtype: f32 always, f16/bf16 when halfPrecisionTemplates (CUDA alone).
Status lowerGemm(LowerContext &context, const Node &node) {
  const TensorType &outType = node.output()->type();
  DType dtype = outType.dtype;
  bool templated = dtype == DType::F32 || (context.options().halfPrecisionTemplates &&
                                           (dtype == DType::F16 || dtype == DType::BF16));
  if (!templated || node.input(0)->type().dtype != dtype || node.input(1)->type().dtype != dtype)
    return context.fallback(node, strCat("no ", dtypeName(dtype),
                                         " GEMM template for this target (f32, or f16/bf16 for "
                                         "CUDA alone)"));
  StridedView a = context.stridedView(node.input(0));
  // A constant B is stored dense at compile time, row-major [K][N] (a transposed Linear weight is
  // transposed once), or for f16/bf16 on CUDA alone K-major, [N][K]: the Hopper GEMM loads its
  // operands with TMA, which takes K-major ones alone (HopperGemm), and mma.sync reads either.
  bool kMajor = context.options().halfPrecisionTemplates && dtype != DType::F32;
  StridedView b = context.contiguousWeight(context.stridedView(node.input(1)),
                                           node.input(1)->type().shape, kMajor);
  // Each operand has a unit-stride matrix dim (a size-1 dim counts), else it is copied dense:
  // the CUDA GEMM reads operands as lines along one of them (views such as x[:, ::2] have none).
  auto unitStrided = [](const StridedView &view, const std::vector<SymInt> &shape) {
    size_t rows = shape.size() - 2;
    for (size_t d = rows; d < shape.size(); ++d)
      if (isOne(view.strides[d]) || isOne(shape[d]))
        return true;
    return false;
  };
  for (size_t i = 0; i < 2; ++i) {
    StridedView &view = i == 0 ? a : b;
    const std::vector<SymInt> &shape = node.input(i)->type().shape;
    if (!unitStrided(view, shape))
      view = {context.realize(node.input(i)), SymInt(0), contiguousStrides(shape)};
  }
  LoopNode loop;
  LoopNode::Gemm &gemm = loop.gemm;
  const std::vector<SymInt> &aShape = node.input(0)->type().shape;
  if (node.opId() == OpId::Mm) {
    a.strides.insert(a.strides.begin(), SymInt(0));
    b.strides.insert(b.strides.begin(), SymInt(0));
    gemm.batch = SymInt(1);
    gemm.m = aShape[0];
    gemm.k = aShape[1];
  } else {
    gemm.batch = aShape[0];
    gemm.m = aShape[1];
    gemm.k = aShape[2];
  }
  gemm.n = outType.shape.back();
  gemm.a = a;
  gemm.b = b;
  loop.origins = {shortName(node.op())};
  int id = context.addTemplate(std::move(loop), node.output()->name(), outType);
  context.setBuffer(node.output(), id);
  context.setOrigins(node.output(), {shortName(node.op())});
  return Status::ok();
}

/// Whether `view` is dense over `shape`, size-1 dims aside.
bool isDense(const StridedView &view, const std::vector<SymInt> &shape) {
  std::vector<SymInt> dense = contiguousStrides(shape);
  if (view.offset != SymInt(0))
    return false;
  for (size_t d = 0; d < shape.size(); ++d)
    if (!isOne(shape[d]) && view.strides[d] != dense[d])
      return false;
  return true;
}

/// The convolution's weights ([OC, C/groups, KH, KW]) packed for the channels-last kernels: a
/// constant is packed at compile time ([OC][KH][KW][C/groups], or [KH][KW][C] for depthwise
/// convolutions), other weights are copied by a pointwise node; the view indexes
/// [OC, KH, KW, C/groups].
StridedView packedConvWeight(LowerContext &context, const Value *weight,
                             const LoopNode::Conv &conv) {
  StridedView source = context.stridedView(weight);
  const std::vector<SymInt> &s = source.strides;
  int64_t cg = conv.c / conv.groups;
  bool depthwise = conv.depthwise();
  // Stored order: depthwise [KH, KW, OC] (C/groups is 1), else [OC, KH, KW, C/groups].
  std::vector<size_t> order =
      depthwise ? std::vector<size_t>{2, 3, 0, 1} : std::vector<size_t>{0, 2, 3, 1};
  std::vector<SymInt> dims = {SymInt(conv.oc), SymInt(cg), SymInt(conv.kh), SymInt(conv.kw)};
  std::vector<SymInt> storedShape, storedStrides;
  for (size_t d : order) {
    storedShape.push_back(dims[d]);
    storedStrides.push_back(s[d]);
  }
  if (depthwise) { // the size-1 C/groups dim is not stored
    storedShape.pop_back();
    storedStrides.pop_back();
  }
  StridedView stored{source.buffer, source.offset, storedStrides};
  StridedView packed = context.contiguousWeight(stored, storedShape);
  if (!isDense(packed, storedShape)) {
    packed.buffer = context.realizePermuted(weight, order, weight->name() + "_packed");
    packed.offset = SymInt(0);
  }
  // The view over [OC, KH, KW, C/groups].
  StridedView view{packed.buffer, SymInt(0), {}};
  if (depthwise)
    view.strides = {SymInt(1), SymInt(conv.kw * conv.oc), SymInt(conv.oc), SymInt(1)};
  else
    view.strides = {SymInt(conv.kh * conv.kw * cg), SymInt(conv.kw * cg), SymInt(cg), SymInt(1)};
  return view;
}

/// A grouped convolution of few channels per group (ResNeXt's 4 or 8) on the GPU: `merge`
/// consecutive groups become one whose constant weights, packed [OC][KH][KW][merge * C/groups],
/// are zero between the merged groups (the same products, plus zeros). The tensor-core kernel
/// then fills its narrowest tile (16 columns) and loads 16-byte vectors instead of 4 or 8 of 16
/// columns element by element: ResNeXt-50's 4-channel groups on an H200 at batch 8, 0.230 ->
/// 0.024 ms a layer (16 channels a group). Returns the view (as packedConvWeight's) and sets
/// conv.groups, or nothing when the weights are not constant or the groups are not 2, 4 or 8
/// channels wide.
std::optional<StridedView> mergedGroupWeight(LowerContext &context, const Value *weight,
                                             LoopNode::Conv &conv) {
  // Groups of 2, 4 or 8 channels only: merged into exactly 16 (whole vectors); other widths would
  // multiply more zeros and still load element by element.
  constexpr int64_t kWidth = 16;
  int64_t cg = conv.c / conv.groups, ocg = conv.oc / conv.groups;
  if (conv.groups == 1 || cg == 1 || cg >= kWidth || kWidth % cg != 0)
    return std::nullopt;
  int64_t merge = kWidth / cg;
  if (conv.groups % merge != 0)
    return std::nullopt;
  StridedView source = context.stridedView(weight);
  const Buffer &buffer = context.program().buffers[size_t(source.buffer)];
  auto data = context.program().weights.find(buffer.name);
  std::optional<int64_t> offset = source.offset.constant();
  if (buffer.kind != Buffer::Kind::Weight || data == context.program().weights.end() || !offset)
    return std::nullopt;
  int64_t strides[4];
  for (size_t d = 0; d < 4; ++d) {
    std::optional<int64_t> stride = source.strides[d].constant();
    if (!stride)
      return std::nullopt;
    strides[d] = *stride;
  }
  int64_t width = merge * cg;
  Expected<Tensor> packed = Tensor::zeros(buffer.dtype, {conv.oc, conv.kh, conv.kw, width});
  if (!packed)
    return std::nullopt;
  const Tensor &from = data->second;
  for (int64_t o = 0; o < conv.oc; ++o) {
    int64_t column = (o / ocg) % merge * cg; // the group's channels within its merged group
    for (int64_t kh = 0; kh < conv.kh; ++kh)
      for (int64_t kw = 0; kw < conv.kw; ++kw)
        for (int64_t i = 0; i < cg; ++i)
          packed->setDouble(((o * conv.kh + kh) * conv.kw + kw) * width + column + i,
                            from.getDouble(*offset + o * strides[0] + i * strides[1] +
                                           kh * strides[2] + kw * strides[3]));
  }
  std::string name = context.uniqueBufferName(buffer.name + "_merged_groups");
  int id = context.addBuffer(
      name, Buffer::Kind::Weight,
      TensorType(buffer.dtype, {SymInt(conv.oc), SymInt(conv.kh), SymInt(conv.kw), SymInt(width)}));
  context.program().weights[name] = std::move(*packed);
  conv.groups /= merge;
  return StridedView{
      id,
      SymInt(0),
      {SymInt(conv.kh * conv.kw * width), SymInt(conv.kw * width), SymInt(width), SymInt(1)}};
}

/// Whether `weight` is a view of a constant (a weight with its data in the program).
bool isConstantWeight(LowerContext &context, const Value *weight) {
  if (weight->type().rank() != 4)
    return false;
  StridedView view = context.stridedView(weight);
  const Buffer &buffer = context.program().buffers[size_t(view.buffer)];
  return buffer.kind == Buffer::Kind::Weight && context.program().weights.count(buffer.name) > 0;
}

/// The channels-last form (LowerOptions::channelsLastConv): the input read as a dense NHWC
/// buffer (a copy when it is not one), packed weights, the result in an NHWC buffer that every
/// user reads at the NHWC address of its NCHW index; the bias add is computed in f32 and
/// becomes part of the epilogue like the NCHW form's.
Status lowerChannelsLast(LowerContext &context, const Node &node, LoopNode loop,
                         const Value *bias) {
  LoopNode::Conv &conv = loop.conv;
  conv.channelsLast = true;
  conv.input = context.channelsLastBuffer(node.input(0));
  // GPU compiles merge small groups (the CPU has its channelwise kernel for them).
  std::optional<StridedView> merged;
  if (context.options().halfPrecisionTemplates)
    merged = mergedGroupWeight(context, node.input(1), conv);
  conv.weight = merged ? *merged : packedConvWeight(context, node.input(1), conv);
  const TensorType &outType = node.output()->type();
  DType dtype = outType.dtype;
  std::vector<SymInt> nhwc = {conv.n, SymInt(conv.oh), SymInt(conv.ow), SymInt(conv.oc)};
  // Never the value's own name: realize() gives that to an NCHW copy (a graph output).
  std::string name = context.uniqueBufferName(node.output()->name() + (bias ? "_nobias" : "_nhwc"));
  int id = context.addTemplate(std::move(loop), name, TensorType(dtype, nhwc));
  auto result = [id, dtype, nhwc](const Index &i) {
    return makeLoad(id, dtype, flatten({i[0], i[2], i[3], i[1]}, nhwc));
  };
  std::vector<std::string> origins = {shortName(node.op())};
  if (!bias) {
    context.setPointwise(node.output(), result, 0, /*readsTemplate=*/true, origins);
    return Status::ok();
  }
  Loader biasLoad = context.value(bias).load;
  int cost = 1 + (context.value(bias).buffer >= 0 ? 0 : context.value(bias).cost);
  context.setPointwise(
      node.output(),
      [result, biasLoad, dtype](const Index &i) {
        ExprRef sum = makeBinary(BinaryOp::Add, makeCast(result(i), DType::F32),
                                 makeCast(biasLoad({i[1]}), DType::F32));
        return makeCast(sum, dtype);
      },
      cost, /*readsTemplate=*/true, origins);
  return Status::ok();
}

/// f32 2-D convolution (not transposed, static channels and spatial sizes) as an implicit-GEMM
/// template without its bias; the bias add becomes a pointwise value reading the template's
/// result, so it (and whatever pointwise ops follow) can be fused as the epilogue.
Status lowerConvolution(LowerContext &context, const Node &node) {
  const TensorType &outType = node.output()->type();
  const TensorType &inType = node.input(0)->type(), &wType = node.input(1)->type();
  AttrReader attrs(node.attrs());
  const Value *bias = node.inputs().size() > 2 ? node.input(2) : nullptr;
  DType dtype = outType.dtype;
  bool channelsLast = context.options().channelsLastConv;
  if (channelsLast && context.options().channelsLastNeedsConstantWeights)
    channelsLast = isConstantWeight(context, node.input(1));
  bool templated =
      dtype == DType::F32 || (channelsLast && context.options().halfPrecisionTemplates &&
                              (dtype == DType::F16 || dtype == DType::BF16));
  if (!templated || inType.dtype != dtype || wType.dtype != dtype ||
      (bias && bias->type().dtype != dtype))
    return context.fallback(node, context.options().halfPrecisionTemplates
                                      ? "no convolution template for this dtype (f32, "
                                        "f16, bf16 of one dtype)"
                                      : "the convolution template is f32 only");
  if (inType.rank() != 4 || wType.rank() != 4 || outType.rank() != 4)
    return context.fallback(node, "the convolution template is 2-D only");
  if (attrs.getBool("transposed"))
    return context.fallback(node, "no template for transposed convolutions yet");
  auto constants = [](const std::vector<SymInt> &dims, size_t from) {
    std::vector<int64_t> values;
    for (size_t i = from; i < dims.size(); ++i)
      if (auto value = dims[i].constant(); value && *value > 0)
        values.push_back(*value);
    return values;
  };
  std::vector<int64_t> in = constants(inType.shape, 1), w = constants(wType.shape, 0),
                       out = constants(outType.shape, 1);
  if (in.size() != 3 || w.size() != 4 || out.size() != 3)
    return context.fallback(node, "symbolic or empty dims other than the batch");
  auto pairOf = [&](const char *name) -> std::optional<std::array<int64_t, 2>> {
    Expected<std::vector<int64_t>> values = attrs.getStaticInts(name);
    if (!values || values->empty() || values->size() > 2)
      return std::nullopt;
    return std::array<int64_t, 2>{values->front(), values->back()};
  };
  auto stride = pairOf("stride"), padding = pairOf("padding"), dilation = pairOf("dilation");
  int64_t groups = attrs.getInt("groups");
  if (!stride || !padding || !dilation || groups < 1 || in[0] % groups != 0 || w[0] % groups != 0 ||
      w[1] * groups != in[0])
    return context.fallback(node, "stride, padding, dilation or groups the template cannot take");

  LoopNode loop;
  loop.templateKind = LoopNode::TemplateKind::Conv2d;
  LoopNode::Conv &conv = loop.conv;
  conv.n = inType.shape[0];
  conv.c = in[0], conv.h = in[1], conv.w = in[2];
  conv.oc = w[0], conv.kh = w[2], conv.kw = w[3];
  conv.oh = out[1], conv.ow = out[2];
  conv.strideH = (*stride)[0], conv.strideW = (*stride)[1];
  conv.padH = (*padding)[0], conv.padW = (*padding)[1];
  conv.dilationH = (*dilation)[0], conv.dilationW = (*dilation)[1];
  conv.groups = groups;
  loop.origins = {shortName(node.op())};
  if (channelsLast)
    return lowerChannelsLast(context, node, std::move(loop), bias);
  conv.input = context.realize(node.input(0));
  conv.weight = context.stridedView(node.input(1));
  // The micro-kernel reads a group's weights as an OC x (C/groups*KH*KW) matrix.
  const std::vector<SymInt> &ws = conv.weight.strides;
  if (ws[2] != ws[3] * SymInt(w[3]) || ws[1] != ws[2] * SymInt(w[2]))
    conv.weight = {context.realize(node.input(1)), SymInt(0), contiguousStrides(wType.shape)};
  std::string name = node.output()->name() + (bias ? "_nobias" : "");
  int id = context.addTemplate(std::move(loop), name, outType);
  if (!bias) {
    context.setBuffer(node.output(), id);
    context.setOrigins(node.output(), {shortName(node.op())});
    return Status::ok();
  }
  Loader biasLoad = context.value(bias).load;
  std::vector<SymInt> shape = outType.shape;
  context.setPointwise(node.output(),
                       [id, shape, biasLoad](const Index &i) {
                         return makeBinary(BinaryOp::Add,
                                           makeLoad(id, DType::F32, flatten(i, shape)),
                                           makeCast(biasLoad({i[1]}), DType::F32));
                       },
                       1 + (context.value(bias).buffer >= 0 ? 0 : context.value(bias).cost),
                       /*readsTemplate=*/true, {shortName(node.op())});
  return Status::ok();
}

} // namespace

void addGemmConvRules(RuleTable &table) {
  table.add({OpId::Mm, OpId::Bmm}, lowerGemm);
  table.add({OpId::Convolution}, lowerConvolution);
  table.fallback({OpId::Addmm, OpId::Matmul}, "decomposed before lowering; this case was not");
}

} // namespace tensorc::loop
