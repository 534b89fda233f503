// Compile-time packing of the constant weights of channels-last CPU convolutions, and the choice
// of their task tiles (which fixes the manifest's launch range).
#include "tensorc/Codegen/CPU/Conv.h"
#include "tensorc/Codegen/CPU/PackGemmWeights.h"
#include "tensorc/Codegen/CPU/WeightPacking.h"

#include "PackTemplateWeights.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace tensorc::cpu {

using loop::LoopNode;
using loop::LoopProgram;

namespace {

/// The number of threads the task tiles are sized for: enough tiles for this many, whatever the
/// runtime's thread count (the launch range is fixed at compile time and the same for every CPU
/// variant of the bundle).
constexpr int kTileThreads = 8;

/// The weight layout a packed copy is made of (convolutions with equal keys share it).
struct ConvPackKey {
  int buffer = -1;
  int64_t offset = 0;
  std::array<int64_t, 4> strides{}; // of the [OC, KH, KW, C/groups] view
  int64_t oc = 0, kh = 0, kw = 0, c = 0, groups = 1;
  bool depthwise = false;
  bool winograd = false;    // packWinogradWeights
  bool channelwise = false; // packDepthwiseWeights with C / groups per group (channelwiseFits)
  auto tie() const {
    return std::tie(buffer, offset, strides, oc, kh, kw, c, groups, depthwise, winograd,
                    channelwise);
  }
  bool operator<(const ConvPackKey &other) const { return tie() < other.tie(); }
};

ConvParams paramsOf(const LoopNode::Conv &conv);

std::optional<ConvPackKey> packKey(const LoopProgram &program, const LoopNode &node,
                                   bool winograd) {
  if (node.kind != LoopNode::Kind::Template ||
      node.templateKind != LoopNode::TemplateKind::Conv2d || !node.conv.channelsLast ||
      node.conv.packedWeights)
    return std::nullopt;
  const LoopNode::Conv &conv = node.conv;
  const loop::StridedView &view = conv.weight;
  if (view.strides.size() != 4 || conv.groups < 1 || conv.c % conv.groups || conv.oc % conv.groups)
    return std::nullopt;
  const Tensor *data = packableWeight(program, view);
  if (!data)
    return std::nullopt;
  ConvPackKey key;
  key.buffer = view.buffer;
  auto offset = view.offset.constant();
  if (!offset)
    return std::nullopt;
  key.offset = *offset;
  for (size_t d = 0; d < 4; ++d) {
    auto stride = view.strides[d].constant();
    if (!stride)
      return std::nullopt;
    key.strides[d] = *stride;
  }
  key.oc = conv.oc, key.kh = conv.kh, key.kw = conv.kw, key.c = conv.c, key.groups = conv.groups;
  key.depthwise = conv.depthwise();
  const ConvParams params = paramsOf(conv);
  key.winograd = winograd && !key.depthwise && winogradFits(params);
  key.channelwise = !key.depthwise && channelwiseFits(params);
  // Every element read must lie inside the data.
  if (!viewInside(key.offset,
                  {{key.oc, key.strides[0]},
                   {key.kh, key.strides[1]},
                   {key.kw, key.strides[2]},
                   {key.c / key.groups, key.strides[3]}},
                  data->numel()))
    return std::nullopt;
  return key;
}

Expected<Tensor> pack(const Tensor &weight, const ConvPackKey &key) {
  // The weights in PyTorch's dense [OC][C/groups][KH][KW] order, then packed for the kernel.
  const float *source = weight.dataAs<float>();
  const int64_t cg = key.c / key.groups;
  std::vector<float> dense(size_t(key.oc * cg * key.kh * key.kw));
  for (int64_t o = 0; o < key.oc; ++o)
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t h = 0; h < key.kh; ++h)
        for (int64_t w = 0; w < key.kw; ++w)
          dense[size_t(((o * cg + c) * key.kh + h) * key.kw + w)] =
              source[key.offset + o * key.strides[0] + h * key.strides[1] + w * key.strides[2] +
                     c * key.strides[3]];
  std::vector<float> packed =
      key.depthwise     ? packDepthwiseWeights(dense.data(), key.c, key.kh, key.kw)
      : key.channelwise ? packDepthwiseWeights(dense.data(), key.c, key.kh, key.kw, cg)
      : key.winograd    ? packWinogradWeights(dense.data(), key.oc, key.c)
                     : packConvWeights(dense.data(), {key.oc, key.c, key.kh, key.kw, key.groups});
  TC_ASSIGN_OR_RETURN(Tensor out, Tensor::zeros(DType::F32, {int64_t(packed.size())}));
  std::copy(packed.begin(), packed.end(), out.mutableDataAs<float>());
  return out;
}

ConvParams paramsOf(const LoopNode::Conv &conv) {
  ConvParams p;
  p.c = conv.c, p.h = conv.h, p.w = conv.w, p.oc = conv.oc, p.kh = conv.kh, p.kw = conv.kw;
  p.strideH = conv.strideH, p.strideW = conv.strideW, p.padTop = conv.padH, p.padLeft = conv.padW;
  p.dilationH = conv.dilationH, p.dilationW = conv.dilationW, p.groups = conv.groups;
  p.oh = conv.oh, p.ow = conv.ow;
  p.layout = ActivationLayout::NHWC;
  return p;
}

} // namespace

ConvParams convParamsOf(const loop::LoopNode::Conv &conv) { return paramsOf(conv); }

bool templateWritesOutputOnce(const LoopNode &node) {
  return node.kind == LoopNode::Kind::Template &&
         node.templateKind == LoopNode::TemplateKind::Conv2d && node.conv.channelsLast &&
         !node.conv.depthwise() && !channelwiseFits(paramsOf(node.conv)) &&
         convWritesOutputOnce(paramsOf(node.conv));
}

Expected<int> packConvTemplates(LoopProgram &program, sched::Schedule &schedule, bool winograd) {
  return packTemplateWeights<ConvPackKey>(
      program, schedule, ".conv16",
      [winograd](const LoopProgram &p, const LoopNode &node) { return packKey(p, node, winograd); },
      [](const LoopNode &node) { return node.conv.input; },
      [](const std::set<ConvPackKey> &keys, const ConvPackKey &) { return keys.size() == 1; }, pack,
      [](LoopNode &node, const ConvPackKey &key, int target) {
        LoopNode::Conv &conv = node.conv;
        // The view keeps the dense [OC, KH, KW, C/groups] shape (every bound checked on it holds:
        // the packed data is at least that many floats); the data is the kernel's
        // (packedWeights).
        int64_t cg = conv.c / conv.groups;
        conv.weight.buffer = target;
        conv.weight.offset = SymInt(0);
        conv.weight.strides = {SymInt(conv.kh * conv.kw * cg), SymInt(conv.kw * cg), SymInt(cg),
                               SymInt(1)};
        conv.packedWeights = true;
        ConvParams params = paramsOf(conv);
        if (conv.depthwise() || key.channelwise) {
          DepthwiseTiling tiling = chooseDepthwiseTiling(params, kTileThreads);
          conv.tileM = tiling.rows;
          conv.tileN = tiling.channels;
          conv.channelwise = key.channelwise;
        } else if (key.winograd) {
          ConvTiling tiling = chooseWinogradTiling(params, kTileThreads);
          conv.tileM = tiling.mc;
          conv.tileN = tiling.nc;
          conv.winograd = true;
        } else {
          ConvTiling tiling = chooseConvTiling(params, kTileThreads);
          conv.tileM = tiling.mc;
          conv.tileN = tiling.nc;
        }
      });
}

} // namespace tensorc::cpu
