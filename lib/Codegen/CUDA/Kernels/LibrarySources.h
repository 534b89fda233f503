// Internals shared by the kernel generators: each family's device text and the helpers that
// render a generated kernel's __global__ wrapper around it.
#pragma once

#include "KernelLibrary.h"

#include <string>
#include <vector>

namespace tensorc::cuda::kernels::detail {

/// Device text, concatenated by kernelLibrarySource() in this order.
const char *devicePrimitives();
const char *hopperPrimitives();
const char *tensorCoreDevice();
const char *wgmmaDevice();
const char *simtDevice();
const char *depthwiseDevice();

/// The two epilogue lambdas a device template takes, as call arguments: one for `vec`
/// consecutive accumulators (`const float *tk_v`), one for a single one (`float tk_v1`). Their
/// parameters are (tk_b, tk_r, tk_c) = (batch, row, column) as the template sees them;
/// `batch` and `col` say what the site's batch and column are in those terms. Without
/// `vectorSites` (output columns of a vector not aligned to it) the vector lambda hands the
/// epilogue one column at a time.
std::string epilogueLambdas(const Epilogue &epilogue, int vec, const std::string &batch,
                            const std::string &col, const std::string &indent, bool vectorSites);

/// `extern "C" __global__` function `kernel.name` with `kernel.params` and `body`.
std::string wrapKernel(const KernelSource &kernel, const std::string &body);

/// Tensor-core GEMM configurations (TensorCoreGemm.cpp): a reason the config cannot run, or "".
std::string checkTensorCoreConfig(const GemmConfig &config, ElemType type, MathMode math,
                                  bool aKMajor, bool bKMajor);
std::string tensorCoreConfigType(const GemmConfig &config, ElemType type, MathMode math);
int tensorCoreSmemBytes(const GemmConfig &config, MathMode math);

/// SIMT GEMM configurations (SimtGemm.cpp).
std::string checkSimtConfig(const GemmConfig &config);
std::string simtConfigType(const GemmConfig &config);
int simtThreads(const GemmConfig &config);
int simtSmemBytes(const GemmConfig &config);

/// Fills the launch fields shared by GEMM-shaped kernels (threads, shared memory, units, split-K
/// workspaces), or returns why the config cannot run. `m`, `n`, `batch` are the caller's C
/// expressions.
std::string gemmLaunch(KernelSource &kernel, const GemmConfig &config, ElemType type, MathMode math,
                       bool aKMajor, bool bKMajor, const std::string &m, const std::string &n,
                       const std::string &batch);

/// The split-K workspace parameters (none without split-K).
std::vector<std::string> splitKParams(const GemmConfig &config);

/// A generated kernel's parameter list: the caller's own `params` when it has one, else the
/// `operands`, the epilogue's parameters, the split-K `workspace` and `scalarParams`; with the
/// caller's own list the workspace comes after it.
std::vector<std::string> kernelParams(std::vector<std::string> operands, const Epilogue &epilogue,
                                      const std::vector<std::string> &workspace,
                                      const std::vector<std::string> &scalarParams,
                                      const std::vector<std::string> &params);

/// The mma element kind a device template takes: 0 f16, 1 bf16, 2 TF32.
int mmaKind(ElemType type, MathMode math);

/// The device template call's name and config type for a math mode.
std::string gemmTemplateCall(const GemmConfig &config, ElemType type, MathMode math);

/// A dense GEMM for the Hopper kernel (WgmmaGemm.cpp): both operands K-major and TMA-loadable.
/// `aOperand` / `bOperand` name the caller's buffers in the tensor map specs; the epilogue's
/// batch and column are `epilogueBatch` / `epilogueCol` in terms of the template's (tk_b, tk_c).
struct WgmmaProblem {
  std::string name;
  ElemType type = ElemType::F16;
  MathMode math = MathMode::Tensor16;
  MatrixOperand a, b;
  std::string aOperand = "A", bOperand = "B";
  std::string m, n, k, batch;
  std::vector<std::string> scalarParams;
  GemmConfig config;
  Epilogue epilogue;
  std::string epilogueBatch = "tk_b", epilogueCol = "tk_c";
};
std::string checkWgmmaConfig(const GemmConfig &config, ElemType type, MathMode math);
int wgmmaSmemBytes(const GemmConfig &config);
/// The guarded specialization tk_wgmma<n, kind> (inline PTX) a kernel carries before itself.
std::string wgmmaWrapper(int n, int kind);
KernelSource renderWgmma(const WgmmaProblem &problem, std::string &error);

} // namespace tensorc::cuda::kernels::detail
