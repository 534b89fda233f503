// The implicit-GEMM convolution on channels-last activations: renderConv's wrapper runs the
// tensor-core or SIMT GEMM template with the NHWC patch loader (TkConvInput) as its A operand
// and the pre-packed [OC][KH][KW][C / groups] weights as a K-major B, batched over groups; a
// pointwise convolution with a Wgmma configuration is the dense GEMM [pixels][C] x [OC][C].
#include "LibrarySources.h"

#include "tensorc/Support/StrCat.h"

namespace tensorc::cuda::kernels {

bool convIsDenseGemm(const ConvSpec &s) {
  int vec = s.type == ElemType::F32 ? 4 : 8;
  return s.kh == 1 && s.kw == 1 && s.strideH == 1 && s.strideW == 1 && s.padH == 0 && s.padW == 0 &&
         s.groups == 1 && s.aligned16 && s.c % vec == 0;
}

KernelSource renderConv(const ConvSpec &s, std::string &error) {
  auto fail = [&](const std::string &why) {
    error = s.name + ": " + why;
    return KernelSource{};
  };
  if (s.config.kernel == GemmKernel::Wgmma) {
    if (!convIsDenseGemm(s))
      return fail("the wgmma kernel takes pointwise convolutions only (1x1, stride 1, no "
                  "padding, one group, 16-byte aligned channels)");
    detail::WgmmaProblem p;
    p.name = s.name, p.type = s.type, p.math = s.math;
    p.a = {true, std::to_string(s.c), "0", true};
    p.b = {true, std::to_string(s.c), "0", true};
    p.aOperand = "input", p.bOperand = "weight";
    p.m = strCat("(", s.batch, ") * ", int64_t(s.h) * s.w, "ll");
    p.n = strCat(s.oc, "ll"), p.k = strCat(s.c, "ll"), p.batch = "1ll";
    p.scalarParams = s.scalarParams, p.config = s.config, p.epilogue = s.epilogue;
    p.epilogueBatch = "0ll";
    KernelSource k = detail::renderWgmma(p, error);
    if (!error.empty())
      error = s.name + ": " + error.substr(error.find(": ") + 2);
    return k;
  }
  if (s.groups < 1 || s.c % s.groups || s.oc % s.groups)
    return fail(strCat("channels ", s.c, " -> ", s.oc, " do not split into ", s.groups, " groups"));
  if (s.kh < 1 || s.kw < 1 || s.strideH < 1 || s.strideW < 1 || s.dilationH < 1 ||
      s.dilationW < 1 || s.padH < 0 || s.padW < 0 || s.oh() < 1 || s.ow() < 1)
    return fail("the convolution's geometry has no output");
  int cg = s.c / s.groups, ocg = s.oc / s.groups, k = s.kh * s.kw * cg;
  int vec = s.type == ElemType::F32 ? 4 : 8;
  // Patches move as 16-byte vectors when a vector never straddles two taps (C / groups a
  // multiple of it); otherwise element by element, still on the same tiles. The packed weights'
  // rows are K long: they move as vectors when K is a whole number of them.
  bool vector = s.aligned16 && cg % vec == 0, vectorB = s.aligned16 && k % vec == 0;
  std::string pixels = strCat("(", s.batch, ") * ", int64_t(s.oh()) * s.ow(), "ll");

  KernelSource kernel;
  kernel.name = s.name;
  std::string why = detail::gemmLaunch(kernel, s.config, s.type, s.math, true, true, pixels,
                                       std::to_string(ocg), std::to_string(s.groups));
  if (!why.empty())
    return fail(why);
  std::string t = s.type == ElemType::F32 ? "float" : "unsigned short";
  kernel.params = detail::kernelParams(
      {strCat("const ", t, " *__restrict__ input"), strCat("const ", t, " *__restrict__ weight")},
      s.epilogue, detail::splitKParams(s.config), s.scalarParams, s.params);
  bool split = s.config.splitK > 1;
  const char *v = vector ? "true" : "false", *vb = vectorB ? "true" : "false";
  std::string body =
      strCat("  TK_DYNAMIC_SMEM(tk_smem);\n", "  const long long tk_M = ", pixels, ";\n",
             "  const TkConvInput<", t, ", ", s.kh, ", ", s.kw, ", ", cg, ", ", s.strideH, ", ",
             s.strideW, ", ", s.dilationH, ", ", s.dilationW, ", ", v, "> tk_a{", s.inputExpr,
             ", tk_M, ", s.h, ", ", s.w, ", ", s.c, ", ", s.oh(), ", ", s.ow(), ", ", s.padH, ", ",
             s.padW, "};\n", "  const TkMatrix<", t, ", true, ", vb, "> tk_b{", s.weightExpr, ", ",
             k, "ll, ", int64_t(ocg) * k, "ll, ", ocg, "ll, ", k, "ll};\n", "  ",
             detail::gemmTemplateCall(s.config, s.type, s.math), "(tk_a, tk_b, tk_M, ", ocg, "ll, ",
             k, "ll, ", s.groups, "ll, ", split ? "tk_partials" : "nullptr", ", ",
             split ? "tk_counters" : "nullptr", ", tk_smem,\n",
             detail::epilogueLambdas(s.epilogue, s.math == MathMode::SimtF32 ? 4 : 8, "0ll",
                                     strCat("(tk_b * ", ocg, "ll + tk_c)"), "      ",
                                     s.groups == 1 || ocg % vec == 0),
             ");\n");
  kernel.source = detail::wrapKernel(kernel, body);
  return kernel;
}

} // namespace tensorc::cuda::kernels
