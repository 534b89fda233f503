// Channels-last convolution templates as CUDA: the kernel library's NHWC implicit GEMM
// (tensor cores for f16/bf16, strict f32 SIMT for f32) or its depthwise kernel, configured by the
// library's heuristic, with the scheduled epilogue rendered into the library's epilogue hook.
#include "KernelRenderer.h"

#include "Kernels/KernelLibrary.h"

namespace tensorc::cuda {

namespace kl = kernels;

namespace {

/// The GPU the heuristic configures for: an H100 without the sm_90a-only paths (the module is
/// compiled for plain sm_80/sm_90), so every configuration runs on any sm_80+ GPU.
kl::GpuInfo targetGpu() { return kl::GpuInfo{}; }

/// Without split-K (its workspaces are not planned yet), a convolution the heuristic would split
/// takes a smaller tile instead: the first of the heuristic's, 64x64, 32x64, 16x64, 16x32 (SIMT:
/// 64x64, 32x64) that gives every SM a block, else the one giving the most blocks.
void refitWithoutSplitK(kl::GemmConfig &c, kl::MathMode math, int64_t m, int64_t n, int64_t groups,
                        const kl::GpuInfo &gpu) {
  if (c.splitK <= 1)
    return;
  c.splitK = 1;
  struct Tile {
    int bm, bn, warpsM, warpsN;
  };
  std::vector<Tile> tiles = {{c.bm, c.bn, c.warpsM, c.warpsN}};
  if (math == kl::MathMode::SimtF32)
    tiles.insert(tiles.end(), {{64, 64, 1, 1}, {32, 64, 1, 1}});
  else
    tiles.insert(tiles.end(), {{64, 64, 2, 2}, {32, 64, 1, 4}, {16, 64, 1, 4}, {16, 32, 1, 2}});
  auto blocks = [&](const Tile &t) {
    return groups * ((m + t.bm - 1) / t.bm) * ((n + t.bn - 1) / t.bn);
  };
  const Tile *best = &tiles[0];
  for (const Tile &t : tiles) {
    if (t.bm * t.bn > c.bm * c.bn)
      continue; // only ever smaller than the heuristic's
    if (blocks(t) > blocks(*best))
      best = &t;
    if (blocks(t) >= gpu.sms)
      break;
  }
  c.bm = best->bm, c.bn = best->bn, c.warpsM = best->warpsM, c.warpsN = best->warpsN;
}

} // namespace

std::string KernelRenderer::libraryEpilogue(const codegen::TemplateKernel &t,
                                            const kl::EpilogueSite &site) {
  const LoopNode &node = *t.node;
  const LoopNode *epilogue = t.epilogue;
  std::string saved;
  std::swap(saved, text); // ex->body and decompose append to `text`
  const std::string &in = site.indent;
  size_t count = site.acc.size();
  text += strCat(in, "const float tc_acc[", count, "] = {", join(site.acc, ", "), "};\n");
  text += strCat(in, "#pragma unroll\n", in, "for (int tc_e = 0; tc_e < ", count, "; ++tc_e) {\n");
  // The output (or the epilogue's) buffer is dense NHWC: element (pixel, channel) is at
  // pixel * OC + channel, which is also the epilogue's own flat index.
  std::string flat = strCat("tc_flat", counter++);
  text += strCat(in, "  const long long ", flat, " = (", site.row, ") * ", node.conv.oc, "ll + (",
                 site.col, ") + tc_e;\n");
  if (!epilogue) {
    text += strCat(in, "  ", ex->store(t.output, DType::F32, "tc_acc[tc_e]", flat), "\n");
  } else {
    Scope scope = symbols;
    decompose(flat, epilogue->ranges, 0, epilogue->ranges.size(), loopVarName, scope, in + "  ");
    std::string value =
        ex->body(epilogue->body, scope, text, in + "  ", node.output, "tc_acc[tc_e]");
    text += strCat(in, "  ", ex->store(t.output, epilogue->body->dtype, value, flat), "\n");
  }
  text += in + "}\n";
  std::swap(saved, text);
  return saved;
}

Expected<LaunchConfig> KernelRenderer::renderLibraryConv(const codegen::TemplateKernel &t) {
  const LoopNode &node = *t.node;
  const LoopNode::Conv &cv = node.conv;
  DType dtype = program.buffers[size_t(cv.input)].dtype;
  if (program.buffers[size_t(cv.weight.buffer)].dtype != dtype)
    return makeError("convolution ", node.name, ": input and weights differ in dtype");
  if (dtype != DType::F32 && dtype != DType::F16 && dtype != DType::BF16)
    return makeError("convolution ", node.name, ": no channels-last kernel for ", dtypeName(dtype));
  kl::ElemType type = dtype == DType::F16    ? kl::ElemType::F16
                      : dtype == DType::BF16 ? kl::ElemType::BF16
                                             : kl::ElemType::F32;
  // The weights must be packed as the kernel reads them (the lowering's packedConvWeight).
  int64_t cg = cv.c / cv.groups;
  std::vector<SymInt> packed =
      cv.depthwise()
          ? std::vector<SymInt>{SymInt(1), SymInt(cv.kw * cv.oc), SymInt(cv.oc), SymInt(1)}
          : std::vector<SymInt>{SymInt(cv.kh * cv.kw * cg), SymInt(cv.kw * cg), SymInt(cg),
                                SymInt(1)};
  if (cv.weight.offset != SymInt(0) || cv.weight.strides != packed)
    return makeError("convolution ", node.name, ": weights are not packed channels-last");

  std::string input = strCat("b", cv.input), weight = strCat("b", cv.weight.buffer);
  std::string batch = ex->index(cv.n, symbols);
  kl::Epilogue epilogue;
  epilogue.render = [&](const kl::EpilogueSite &site) { return libraryEpilogue(t, site); };
  std::string error;
  kl::KernelSource source;
  SymInt grid;
  kl::GpuInfo gpu = targetGpu();
  int64_t images = sizeHint(cv.n);
  if (cv.depthwise()) {
    kl::DepthwiseSpec s;
    s.name = kernel.name;
    s.type = type;
    s.batch = batch;
    s.h = int(cv.h), s.w = int(cv.w), s.c = int(cv.c), s.kh = int(cv.kh), s.kw = int(cv.kw);
    s.strideH = int(cv.strideH), s.strideW = int(cv.strideW);
    s.padH = int(cv.padH), s.padW = int(cv.padW);
    s.dilationH = int(cv.dilationH), s.dilationW = int(cv.dilationW);
    s.epilogue = epilogue;
    s.params = params;
    s.inputExpr = input, s.weightExpr = weight;
    kl::chooseDepthwiseTiles(s, images, gpu);
    source = kl::renderDepthwise(s, error);
    grid = cv.n * SymInt((s.oh() + s.tileH - 1) / s.tileH) *
           SymInt((s.ow() + s.tileW - 1) / s.tileW) *
           SymInt((s.c + s.channelsPerBlock - 1) / s.channelsPerBlock);
  } else {
    kl::ConvSpec s;
    s.name = kernel.name;
    s.type = type;
    s.math = type == kl::ElemType::F32 ? kl::MathMode::SimtF32 : kl::MathMode::Tensor16;
    s.batch = batch;
    s.h = int(cv.h), s.w = int(cv.w), s.c = int(cv.c), s.oc = int(cv.oc);
    s.kh = int(cv.kh), s.kw = int(cv.kw);
    s.strideH = int(cv.strideH), s.strideW = int(cv.strideW);
    s.padH = int(cv.padH), s.padW = int(cv.padW);
    s.dilationH = int(cv.dilationH), s.dilationW = int(cv.dilationW);
    s.groups = int(cv.groups);
    s.epilogue = epilogue;
    s.params = params;
    s.inputExpr = input, s.weightExpr = weight;
    s.config = kl::chooseConvConfig(s, images, gpu);
    // No split-K yet (its workspaces are not planned) and the mma.sync kernel (wgmma needs TMA
    // maps the runtime does not encode yet).
    int64_t pixels = int64_t(s.oh()) * s.ow(), ocg = cv.oc / cv.groups;
    s.config.kernel = kl::GemmKernel::MmaSync;
    s.config.gridLimit = 0;
    refitWithoutSplitK(s.config, s.math, images * pixels, ocg, cv.groups, gpu);
    source = kl::renderConv(s, error);
    grid = SymInt(cv.groups) * ceilDiv(cv.n * SymInt(pixels), s.config.bm) *
           SymInt((ocg + s.config.bn - 1) / s.config.bn);
  }
  if (!error.empty())
    return makeError("convolution ", node.name, ": ", error);
  TC_RETURN_IF_ERROR(ex->status());
  librarySource = std::move(source.source);
  usesKernelLibrary = true;
  return LaunchConfig{grid, source.threads, source.smemBytes};
}

} // namespace tensorc::cuda
