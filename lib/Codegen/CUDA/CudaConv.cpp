// Channels-last convolution templates as CUDA: the kernel library's NHWC implicit GEMM
// (tensor cores for f16/bf16, strict f32 SIMT or TF32 for f32) or its depthwise kernel,
// configured by the library's heuristic (split-K included), with the scheduled epilogue rendered
// into the library's epilogue hook (KernelRenderer::libraryEpilogue, CudaGemm.cpp).
#include "KernelRenderer.h"

#include "Kernels/KernelLibrary.h"

namespace tensorc::cuda {

namespace kl = kernels;

Expected<LaunchConfig> KernelRenderer::renderLibraryConv(const codegen::TemplateKernel &t) {
  const LoopNode &node = *t.node;
  const LoopNode::Conv &cv = node.conv;
  DType dtype = program.buffers[size_t(cv.input)].dtype;
  TC_ASSIGN_OR_RETURN(kl::ElemType type,
                      libraryType(dtype, program.buffers[size_t(cv.weight.buffer)].dtype,
                                  "convolution " + node.name, "input and weights",
                                  "channels-last kernel"));
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
    kl::KernelSource source = kl::renderDepthwise(s, error);
    if (!error.empty())
      return makeError("convolution ", node.name, ": ", error);
    TC_RETURN_IF_ERROR(ex->status());
    return libraryLaunch(std::move(source),
                         cv.n * SymInt((s.oh() + s.tileH - 1) / s.tileH) *
                             SymInt((s.ow() + s.tileW - 1) / s.tileW) *
                             SymInt((s.c + s.channelsPerBlock - 1) / s.channelsPerBlock));
  }
  kl::ConvSpec s;
  s.name = kernel.name;
  s.type = type;
  s.math = mathFor(dtype);
  s.batch = batch;
  s.h = int(cv.h), s.w = int(cv.w), s.c = int(cv.c), s.oc = int(cv.oc);
  s.kh = int(cv.kh), s.kw = int(cv.kw);
  s.strideH = int(cv.strideH), s.strideW = int(cv.strideW);
  s.padH = int(cv.padH), s.padW = int(cv.padW);
  s.dilationH = int(cv.dilationH), s.dilationW = int(cv.dilationW);
  s.groups = int(cv.groups);
  // A patchify convolution (stride = kernel width along W, no padding or dilation there: ViT's
  // 16x16/16 embedding) reads whole runs of KW x C input channels: NHWC [N][H][W][C] is the same
  // memory as [N][H][W / KW][KW * C], and the packed weights [OC][KH][KW][C] are [OC][KH][1][KW *
  // C]. So it is the convolution of KW = 1 over KW * C channels, whose patches move as 16-byte
  // vectors where C alone (3 for RGB) does not allow them.
  int vec = dtype == DType::F32 ? 4 : 8;
  if (s.groups == 1 && s.kw > 1 && s.strideW == s.kw && s.padW == 0 && s.dilationW == 1 &&
      s.w % s.kw == 0 && s.c % vec != 0 && (s.kw * s.c) % vec == 0) {
    s.w /= s.kw, s.c *= s.kw;
    s.kw = 1, s.strideW = 1;
  }
  s.epilogue = epilogue;
  s.params = params;
  s.inputExpr = input, s.weightExpr = weight;
  // The mma.sync kernel, split-K as the heuristic says (Hopper forms are GEMMs' alone so far; the
  // library's wgmma kernel takes pointwise convolutions too).
  s.config = kl::chooseConvConfig(s, images, gpu);
  kl::KernelSource source = kl::renderConv(s, error);
  if (!error.empty())
    return makeError("convolution ", node.name, ": ", error);
  TC_RETURN_IF_ERROR(ex->status());
  int64_t pixels = int64_t(s.oh()) * s.ow(), ocg = cv.oc / cv.groups;
  return gemmLaunch(std::move(source), s.config,
                    SymInt(cv.groups) * ceilDiv(cv.n * SymInt(pixels), s.config.bm) *
                        SymInt((ocg + s.config.bn - 1) / s.config.bn));
}

} // namespace tensorc::cuda
