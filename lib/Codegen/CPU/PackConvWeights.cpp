// Compile-time packing of the constant weights of channels-last CPU convolutions, and the choice
// of their task tiles (which fixes the manifest's launch range).
#include "tensorc/Codegen/CPU/Conv.h"
#include "tensorc/Codegen/CPU/PackGemmWeights.h"
#include "tensorc/Codegen/CPU/WeightPacking.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace tensorc::cpu {

using loop::Buffer;
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
  auto tie() const { return std::tie(buffer, offset, strides, oc, kh, kw, c, groups, depthwise); }
  bool operator<(const ConvPackKey &other) const { return tie() < other.tie(); }
};

std::optional<ConvPackKey> packKey(const LoopProgram &program, const LoopNode &node) {
  if (node.kind != LoopNode::Kind::Template ||
      node.templateKind != LoopNode::TemplateKind::Conv2d || !node.conv.channelsLast ||
      node.conv.packedWeights)
    return std::nullopt;
  const LoopNode::Conv &conv = node.conv;
  const loop::StridedView &view = conv.weight;
  if (view.buffer < 0 || size_t(view.buffer) >= program.buffers.size() ||
      view.strides.size() != 4 || conv.groups < 1 || conv.c % conv.groups || conv.oc % conv.groups)
    return std::nullopt;
  const Buffer &buffer = program.buffers[size_t(view.buffer)];
  auto data = program.weights.find(buffer.name);
  if (buffer.kind != Buffer::Kind::Weight || buffer.dtype != DType::F32 ||
      data == program.weights.end() || data->second.dtype() != DType::F32)
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
  // Every element read must lie inside the data.
  int64_t lo = key.offset, hi = key.offset;
  const int64_t extents[4] = {key.oc, key.kh, key.kw, key.c / key.groups};
  for (size_t d = 0; d < 4; ++d) {
    int64_t reach = (extents[d] - 1) * key.strides[d];
    (reach < 0 ? lo : hi) += reach;
  }
  if (lo < 0 || hi >= data->second.numel())
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
      key.depthwise ? packDepthwiseWeights(dense.data(), key.c, key.kh, key.kw)
                    : packConvWeights(dense.data(), {key.oc, key.c, key.kh, key.kw, key.groups});
  TC_ASSIGN_OR_RETURN(Tensor out, Tensor::zeros(DType::F32, {int64_t(packed.size())}));
  std::copy(packed.begin(), packed.end(), out.mutableDataAs<float>());
  return out;
}

std::string freshName(const std::set<std::string> &taken, const std::string &base) {
  std::string name = base + ".conv16";
  for (int i = 1; taken.count(name); ++i)
    name = base + ".conv16_" + std::to_string(i);
  return name;
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

Expected<int> packConvTemplates(LoopProgram &program, sched::Schedule &schedule) {
  std::map<ConvPackKey, std::vector<std::pair<size_t, int>>> users;
  for (size_t kernel = 0; kernel < schedule.kernels.size(); ++kernel) {
    const sched::Kernel &k = schedule.kernels[kernel];
    if (k.kind != sched::Kernel::Kind::Template || k.nodes.empty() || k.nodes[0] < 0 ||
        size_t(k.nodes[0]) >= program.nodes.size())
      continue;
    if (std::optional<ConvPackKey> key = packKey(program, program.nodes[size_t(k.nodes[0])]))
      users[*key].push_back({kernel, k.nodes[0]});
  }
  if (users.empty())
    return 0;

  // A weight whose only readers are packable convolutions (through one view) takes its packed
  // copy's place.
  std::map<int, std::set<ConvPackKey>> keysOf;
  std::set<int> convNodes;
  for (const auto &[key, list] : users) {
    keysOf[key.buffer].insert(key);
    for (const auto &[kernel, node] : list)
      convNodes.insert(node);
  }
  std::set<int> sharedWeights(program.outputs.begin(), program.outputs.end());
  for (const LoopNode &node : program.nodes) {
    bool packable = convNodes.count(node.id) > 0;
    for (int buffer : node.reads())
      if (!packable || node.conv.input == buffer)
        sharedWeights.insert(buffer);
  }
  std::set<std::string> names;
  for (const Buffer &buffer : program.buffers)
    names.insert(buffer.name);

  int rewritten = 0;
  for (const auto &[key, list] : users) {
    Buffer &source = program.buffers[size_t(key.buffer)];
    TC_ASSIGN_OR_RETURN(Tensor packed, pack(program.weights.at(source.name), key));
    int target = key.buffer;
    if (!sharedWeights.count(key.buffer) && keysOf[key.buffer].size() == 1) {
      source.shape = {SymInt(packed.numel())};
      program.weights[source.name] = std::move(packed);
    } else {
      Buffer copy;
      copy.id = int(program.buffers.size());
      copy.name = freshName(names, source.name);
      copy.kind = Buffer::Kind::Weight;
      copy.dtype = DType::F32;
      copy.shape = {SymInt(packed.numel())};
      names.insert(copy.name);
      program.weights[copy.name] = std::move(packed);
      target = copy.id;
      program.buffers.push_back(std::move(copy));
      if (schedule.plan.offsets.size() + 1 == program.buffers.size())
        schedule.plan.offsets.push_back(SymInt(0));
    }
    for (const auto &[kernel, nodeId] : list) {
      LoopNode::Conv &conv = program.nodes[size_t(nodeId)].conv;
      // The view keeps the dense [OC, KH, KW, C/groups] shape (every bound checked on it holds:
      // the packed data is at least that many floats); the data is the kernel's (packedWeights).
      int64_t cg = conv.c / conv.groups;
      conv.weight.buffer = target;
      conv.weight.offset = SymInt(0);
      conv.weight.strides = {SymInt(conv.kh * conv.kw * cg), SymInt(conv.kw * cg), SymInt(cg),
                             SymInt(1)};
      conv.packedWeights = true;
      ConvParams params = paramsOf(conv);
      if (conv.depthwise()) {
        DepthwiseTiling tiling = chooseDepthwiseTiling(params, kTileThreads);
        conv.tileM = tiling.rows;
        conv.tileN = tiling.channels;
      } else {
        ConvTiling tiling = chooseConvTiling(params, kTileThreads);
        conv.tileM = tiling.mc;
        conv.tileN = tiling.nc;
      }
      std::vector<int> &args = schedule.kernels[kernel].args;
      if (!std::binary_search(args.begin(), args.end(), target))
        args.insert(std::upper_bound(args.begin(), args.end(), target), target);
      ++rewritten;
    }
  }
  return rewritten;
}

} // namespace tensorc::cpu
