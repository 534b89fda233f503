// The kernel library's entry points: the device text, renderGemm, and the wrapper helpers the
// generators share (epilogue lambdas, launch fields, split-K workspaces).
#include "LibrarySources.h"

#include "tensorc/Support/StrCat.h"

namespace tensorc::cuda::kernels {

const char *elemTypeName(ElemType type) {
  switch (type) {
  case ElemType::F16:
    return "f16";
  case ElemType::BF16:
    return "bf16";
  case ElemType::F32:
    return "f32";
  }
  return "?";
}

const char *mathModeName(MathMode mode) {
  switch (mode) {
  case MathMode::Tensor16:
    return "tensor16";
  case MathMode::TF32:
    return "tf32";
  case MathMode::SimtF32:
    return "simt";
  }
  return "?";
}

const char *gridDependencyWaitSource() {
  // Outside the inline-PTX sections: the CPU emulation (no __CUDA_ARCH__) gets the no-op.
  return R"(#ifndef TC_GRID_DEPENDENCY_WAIT
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define TC_GRID_DEPENDENCY_WAIT() \
  asm volatile("griddepcontrol.wait;" ::: "memory")
#else
#define TC_GRID_DEPENDENCY_WAIT() ((void)0)
#endif
#endif
)";
}

const std::string &kernelLibrarySource() {
  static const std::string text = std::string(gridDependencyWaitSource()) +
                                  detail::devicePrimitives() + detail::hopperPrimitives() +
                                  detail::tensorCoreDevice() + detail::wgmmaDevice() +
                                  detail::simtDevice() + detail::depthwiseDevice();
  return text;
}

namespace detail {

std::string epilogueLambdas(const Epilogue &epilogue, int vec, const std::string &batch,
                            const std::string &col, const std::string &indent, bool vectorSites) {
  auto render = [&](int count, const std::string &in) {
    EpilogueSite site;
    site.batch = batch;
    site.row = "tk_r";
    site.col = col;
    site.indent = in;
    for (int i = 0; i < count; ++i)
      site.acc.push_back(count == 1 ? "tk_v1" : strCat("tk_v[", i, "]"));
    return epilogue.render(site);
  };
  std::string head = strCat(indent, "[&](long long tk_b, long long tk_r, long long tk_c");
  std::string many;
  if (vectorSites) {
    many = strCat(head, ", const float *tk_v) {\n", indent, "  (void)tk_b; (void)tk_c;\n",
                  render(vec, indent + "  "), indent, "}");
  } else { // one site per column: the columns are not vector-aligned in the output
    many = strCat(head, "0, const float *tk_v) {\n", indent, "  #pragma unroll\n", indent,
                  "  for (int tk_e = 0; tk_e < ", vec, "; ++tk_e) {\n", indent,
                  "    const long long tk_c = tk_c0 + tk_e;\n", indent,
                  "    const float tk_v1 = tk_v[tk_e];\n", indent, "    (void)tk_b; (void)tk_c;\n",
                  render(1, indent + "    "), indent, "  }\n", indent, "}");
  }
  std::string one = strCat(head, ", float tk_v1) {\n", indent, "  (void)tk_b; (void)tk_c;\n",
                           render(1, indent + "  "), indent, "}");
  return many + ",\n" + one;
}

std::string wrapKernel(const KernelSource &kernel, const std::string &body) {
  // Hopper kernels: one block per SM at most (setmaxnreg needs a register cap at entry).
  std::string bounds =
      kernel.arch == "sm_90a" ? strCat(kernel.threads, ", 1") : std::to_string(kernel.threads);
  std::string cluster =
      kernel.clusterSize > 1 ? strCat("__cluster_dims__(", kernel.clusterSize, ", 1, 1) ") : "";
  return strCat("extern \"C\" __global__ void ", cluster, "__launch_bounds__(", bounds, ")\n",
                kernel.name, "(", join(kernel.params, ", "), ") {\n", kGridDependencyWaitCall, body,
                "}\n");
}

std::string gemmLaunch(KernelSource &kernel, const GemmConfig &c, ElemType type, MathMode math,
                       bool aKMajor, bool bKMajor, const std::string &m, const std::string &n,
                       const std::string &batch) {
  bool simt = math == MathMode::SimtF32;
  if (simt && type != ElemType::F32)
    return "SIMT math takes f32 operands";
  std::string why =
      simt ? checkSimtConfig(c) : checkTensorCoreConfig(c, type, math, aKMajor, bKMajor);
  if (!why.empty())
    return why;
  kernel.threads = simt ? simtThreads(c) : c.warpsM * c.warpsN * 32;
  kernel.smemBytes = simt ? simtSmemBytes(c) : tensorCoreSmemBytes(c, math);
  std::string tiles = strCat("(((", m, ") + ", c.bm - 1, ") / ", c.bm, ") * (((", n, ") + ",
                             c.bn - 1, ") / ", c.bn, ")");
  kernel.units = strCat("(", batch, ") * ", tiles, " * ", c.splitK);
  kernel.grid = kernel.units;
  if (c.gridLimit > 0)
    kernel.grid = strCat("((", kernel.units, ") < ", c.gridLimit, " ? (", kernel.units,
                         ") : ", c.gridLimit, ")");
  if (c.splitK > 1) {
    kernel.partialFloats = strCat("(", batch, ") * ", tiles, " * ", c.splitK * c.bm * c.bn);
    kernel.counterCount = strCat("(", batch, ") * ", tiles);
  }
  return "";
}

std::vector<std::string> splitKParams(const GemmConfig &c) {
  if (c.splitK <= 1)
    return {};
  return {"float *__restrict__ tk_partials", "unsigned *__restrict__ tk_counters"};
}

std::vector<std::string> kernelParams(std::vector<std::string> operands, const Epilogue &epilogue,
                                      const std::vector<std::string> &workspace,
                                      const std::vector<std::string> &scalarParams,
                                      const std::vector<std::string> &params) {
  std::vector<std::string> all = params.empty() ? std::move(operands) : params;
  if (params.empty())
    all.insert(all.end(), epilogue.params.begin(), epilogue.params.end());
  all.insert(all.end(), workspace.begin(), workspace.end());
  if (params.empty())
    all.insert(all.end(), scalarParams.begin(), scalarParams.end());
  return all;
}

int mmaKind(ElemType type, MathMode math) {
  if (math == MathMode::TF32)
    return 2;
  return type == ElemType::BF16 ? 1 : 0;
}

std::string gemmTemplateCall(const GemmConfig &c, ElemType type, MathMode math) {
  if (math == MathMode::SimtF32)
    return strCat("tk_gemm_simt<", simtConfigType(c), ">");
  return strCat("tk_gemm_tc<", tensorCoreConfigType(c, type, math), ">");
}

} // namespace detail

KernelSource renderGemm(const GemmSpec &s, std::string &error) {
  if (s.config.kernel == GemmKernel::Wgmma) {
    detail::WgmmaProblem p;
    p.name = s.name, p.type = s.type, p.math = s.math, p.a = s.a, p.b = s.b;
    p.m = s.m, p.n = s.n, p.k = s.k, p.batch = s.batch;
    p.scalarParams = s.scalarParams, p.config = s.config, p.epilogue = s.epilogue;
    return detail::renderWgmma(p, error);
  }
  KernelSource k;
  k.name = s.name;
  error = detail::gemmLaunch(k, s.config, s.type, s.math, s.a.kContiguous, s.b.kContiguous, s.m,
                             s.n, s.batch);
  if (!error.empty()) {
    error = s.name + ": " + error;
    return {};
  }
  std::string t = s.type == ElemType::F32 ? "float" : "unsigned short";
  k.params = detail::kernelParams(
      {strCat("const ", t, " *__restrict__ A"), strCat("const ", t, " *__restrict__ B")},
      s.epilogue, detail::splitKParams(s.config), s.scalarParams, s.params);
  bool split = s.config.splitK > 1;
  auto operand = [&](const MatrixOperand &o, const char *name, const std::string &base,
                     const char *rows) {
    return strCat("  const TkMatrix<", t, ", ", o.kContiguous ? "true" : "false", ", ",
                  o.aligned16 ? "true" : "false", "> tk_", name, "{", base, ", (long long)(", o.ld,
                  "), (long long)(", o.batchStride, "), ", rows, ", tk_K};\n");
  };
  std::string body = strCat(
      "  TK_DYNAMIC_SMEM(tk_smem);\n", "  const long long tk_M = (", s.m, "), tk_N = (", s.n,
      "), tk_K = (", s.k, "), tk_batches = (", s.batch, ");\n", operand(s.a, "a", s.aExpr, "tk_M"),
      operand(s.b, "b", s.bExpr, "tk_N"), "  ", detail::gemmTemplateCall(s.config, s.type, s.math),
      "(tk_a, tk_b, tk_M, tk_N, tk_K, tk_batches, ", split ? "tk_partials" : "nullptr", ", ",
      split ? "tk_counters" : "nullptr", ", tk_smem,\n",
      detail::epilogueLambdas(s.epilogue, s.math == MathMode::SimtF32 ? 4 : 8, "tk_b", "tk_c",
                              "      ", true),
      ");\n");
  k.source = detail::wrapKernel(k, body);
  return k;
}

int64_t gemmUnits(const GemmConfig &c, int64_t m, int64_t n, int64_t batch) {
  return batch * ((m + c.bm - 1) / c.bm) * ((n + c.bn - 1) / c.bn) * c.splitK;
}

int64_t gemmGrid(const GemmConfig &c, int64_t units) {
  if (c.gridLimit <= 0)
    return units;
  int64_t limit = c.kernel == GemmKernel::Wgmma ? c.gridLimit / c.splitK * c.splitK : c.gridLimit;
  return units < limit ? units : limit;
}

int64_t gemmPartialFloats(const GemmConfig &c, MathMode, int64_t m, int64_t n, int64_t batch) {
  if (c.splitK <= 1 || c.kernel == GemmKernel::Wgmma)
    return 0;
  return batch * ((m + c.bm - 1) / c.bm) * ((n + c.bn - 1) / c.bn) * c.splitK * c.bm * c.bn;
}

int64_t gemmCounterCount(const GemmConfig &c, int64_t m, int64_t n, int64_t batch) {
  if (c.splitK <= 1 || c.kernel == GemmKernel::Wgmma)
    return 0;
  return batch * ((m + c.bm - 1) / c.bm) * ((n + c.bn - 1) / c.bn);
}

} // namespace tensorc::cuda::kernels
