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
  StridedView b =
      context.contiguousWeight(context.stridedView(node.input(1)), node.input(1)->type().shape);
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

/// f32 2-D convolution (not transposed, static channels and spatial sizes) as an implicit-GEMM
/// template without its bias; the bias add becomes a pointwise value reading the template's
/// result, so it (and whatever pointwise ops follow) can be fused as the epilogue.
Status lowerConvolution(LowerContext &context, const Node &node) {
  const TensorType &outType = node.output()->type();
  const TensorType &inType = node.input(0)->type(), &wType = node.input(1)->type();
  AttrReader attrs(node.attrs());
  const Value *bias = node.inputs().size() > 2 ? node.input(2) : nullptr;
  if (outType.dtype != DType::F32 || inType.dtype != DType::F32 || wType.dtype != DType::F32 ||
      (bias && bias->type().dtype != DType::F32))
    return context.fallback(node, "the convolution template is f32 only");
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
  conv.input = context.realize(node.input(0));
  conv.weight = context.stridedView(node.input(1));
  // The micro-kernel reads a group's weights as an OC x (C/groups*KH*KW) matrix.
  const std::vector<SymInt> &ws = conv.weight.strides;
  if (ws[2] != ws[3] * SymInt(w[3]) || ws[1] != ws[2] * SymInt(w[2]))
    conv.weight = {context.realize(node.input(1)), SymInt(0), contiguousStrides(wType.shape)};
  conv.n = inType.shape[0];
  conv.c = in[0], conv.h = in[1], conv.w = in[2];
  conv.oc = w[0], conv.kh = w[2], conv.kw = w[3];
  conv.oh = out[1], conv.ow = out[2];
  conv.strideH = (*stride)[0], conv.strideW = (*stride)[1];
  conv.padH = (*padding)[0], conv.padW = (*padding)[1];
  conv.dilationH = (*dilation)[0], conv.dilationW = (*dilation)[1];
  conv.groups = groups;
  loop.origins = {shortName(node.op())};
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
