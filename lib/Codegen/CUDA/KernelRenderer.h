// The CUDA renderer's kernel renderer, shared by the files that render each kind of kernel:
// CudaRenderer.cpp (loop kernels and the entry point), CudaGemm.cpp (GEMM templates, the kernel
// library's epilogue hook, NCHW convolutions), CudaConv.cpp (channels-last convolutions),
// CudaAttention.cpp (attention templates).
#pragma once

#include "ExprRenderer.h"
#include "FlashAttention.h"
#include "Kernels/KernelLibrary.h"

#include "tensorc/Codegen/CUDA/CudaCodegen.h"
#include "tensorc/Codegen/Common/KernelWalker.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tensorc::cuda {

using loop::LoopNode;
using loop::ReduceOp;
using loop::StridedView;

constexpr int64_t kElementwiseBlock = 256;
/// Elementwise kernels with more expression nodes than this are not vectorized (see
/// renderVectorElementwise).
constexpr size_t kMaxVectorizedExprNodes = 128;

inline SymInt product(const std::vector<SymInt> &dims, size_t from = 0, size_t to = SIZE_MAX) {
  SymInt result(1);
  for (size_t d = from; d < std::min(to, dims.size()); ++d)
    result = result * dims[d];
  return result;
}

inline SymInt ceilDiv(const SymInt &value, int64_t divisor) {
  return SymInt::floorDiv(value + SymInt(divisor - 1), divisor);
}

/// A size's value when constant; symbolic sizes count as large.
inline int64_t sizeHint(const SymInt &value) { return value.constant().value_or(1 << 20); }

/// Renders one scheduled Loop or Template kernel as a __global__ function (the walker checks it
/// first) and says how to launch it.
class KernelRenderer : public codegen::KernelVisitor {
public:
  KernelRenderer(const loop::LoopProgram &program, const sched::Kernel &kernel,
                 const RenderOptions &options)
      : program(program), kernel(kernel), options(options) {}

  Expected<LaunchConfig> render(std::string &source) {
    TC_RETURN_IF_ERROR(codegen::walkKernel(program, kernel, *this));
    TC_RETURN_IF_ERROR(ex->status());
    if (!librarySource.empty()) {
      source += librarySource + "\n";
      return config;
    }
    source +=
        strCat("extern \"C\" __global__ void __launch_bounds__(", config.block, ") ", kernel.name,
               "(", join(params, ", "), ") {\n", kernels::kGridDependencyWaitCall, text, "}\n\n");
    return config;
  }

  Status loopKernel(const codegen::LoopKernel &loopKernel) override;
  Status gemmKernel(const codegen::TemplateKernel &t) override;
  Status convKernel(const codegen::TemplateKernel &t) override;
  Status attentionKernel(const codegen::TemplateKernel &t) override;

private:
  Status finish(Expected<LaunchConfig> rendered);

  /// The kernel's parameters (buffers, then shape symbols) and the expression renderer.
  void start();

  /// Declares x<first>.. over `ranges` [first, last) from the flat `flat` (row-major).
  void decompose(const std::string &flat, const std::vector<SymInt> &ranges, size_t first,
                 size_t last, const std::function<std::string(size_t)> &varName, Scope &scope,
                 const std::string &indent);

  static std::string loopVarName(size_t d) { return loop::loopVar(d); }

  /// Element `at` of kernel argument `buffer`, as a float expression (template operands).
  std::string floatElement(int buffer, const std::string &at) const;
  static std::string reductionVarName(size_t d) { return loop::reductionVar(d); }

  // ---- Loop kernels ----------------------------------------------------------------------------

  Expected<LaunchConfig> renderLoop(const codegen::LoopKernel &loopKernel);

  /// The 4-wide vector type of a dtype's memory form ("float4"), or "" for 8-byte dtypes.
  static std::string vectorType(DType dtype);

  /// Elementwise kernels whose dense loads and stores are 4-byte or narrower: four elements per
  /// thread, each dense operand read and each result written as one 4-wide vector (128 bits for
  /// f32), then a scalar loop for the last range % 4 elements. Loads at other indices (broadcast
  /// operands) and indirect loads (gathers) stay scalar; later stages read earlier stages'
  /// results from registers. False (nothing rendered) when some dense operand or result is wider,
  /// or the stages hold more than kMaxVectorizedExprNodes expression nodes.
  bool renderVectorElementwise(const std::vector<const LoopNode *> &stages,
                               const std::string &range);

  /// Elements [first, range) one per thread, grid-striding; every stage reads earlier stages'
  /// results only at its own element (the scheduler's same-row rule with rows of one element).
  void renderScalarElementwise(const std::vector<const LoopNode *> &stages,
                               const std::string &first);

  void renderPointwiseStage(const LoopNode &node, const Scope &outer);

  /// Register rows: when every stage that loops over the row loops over one inner dim of the
  /// same constant extent, of at most kMaxRowSlots slots per thread, each thread takes slots
  /// threadIdx.x + j * block (j < rowSlots) in every stage, in unrolled loops: a stage's loads
  /// issue together, and later stages read earlier stages' results at their own element
  /// (pointwise) or row (reductions, broadcast through shared memory) from registers instead
  /// of loading them back. A slot is rowVector consecutive elements: 4 when the extent is a
  /// multiple of 4 (a block of extent / 4 threads, rounded up to whole warps), whose row and
  /// column operands load and whose results store as one vector (a LayerNorm row of 768 f16
  /// on an H200: 1.88 us in a graph with 4 per thread in one 8-byte load, against 2.24 with
  /// 3 scalar loads per thread in a block of 256). Sets rowSlots, rowExtent and rowVector (and
  /// blockThreads for vector rows); rowSlots 0: rows loop as before.
  void planRegisterRow(const std::vector<const LoopNode *> &stages);
  /// The registers holding `node`'s results in a register row (rc<buffer>[j] or rv<buffer>).
  std::string rowValueName(const LoopNode &node) const;
  /// Points loads of earlier stages' results (rowValues) at their registers (element `slot` of
  /// the arrays), for a stage whose inner loop variable is `innerVar`.
  void overrideRowLoads(const std::string &innerVar, const std::string &slot);
  /// The unrolled loop over a thread's slots (its body left open); binds tc_base, the slot's
  /// first element.
  std::string rowLoopHead(const std::string &indent);
  /// Inside rowLoopHead: the slot's elements one after another, each binding `var` and calling
  /// `bind` (the stage's index scope) before its body is rendered; `each` gets the body's value
  /// and the element's register slot. The stage's row and column operands (loads at the
  /// element's own index in the row, or at its column alone) load once per slot, as a vector.
  void renderRowElements(
      const LoopNode &node, const std::string &innerVar, const std::string &var,
      const std::string &indent, const std::function<void(Scope &)> &bind,
      const std::function<void(const std::string &value, const std::string &slot)> &each);

  /// `#pragma unroll 1` before a block-strided loop whose variable splits into `dims` dims (more
  /// than one), else nothing.
  static std::string noUnroll(size_t dims);

  // Reductions: codegen::reductionIdentity and friends, printed by the expression renderer.
  std::string identity(ReduceOp op, DType dtype);

  /// `acc = combine(acc, value)` as a statement.
  std::string combine(ReduceOp op, DType dtype, const std::string &acc, const std::string &value);

  std::string argBetter(ReduceOp op, DType dtype, const std::string &value,
                        const std::string &index, const std::string &best,
                        const std::string &bestIndex, bool tieBreak);

  void renderReductionStage(const LoopNode &node, const Scope &outer);

  // ---- Template kernels ------------------------------------------------------------------------

  /// Binds the epilogue's loop variables for the output element (outer, rowBase + row, col).
  void bindEpilogue(const LoopNode &templateNode, const LoopNode &epilogue, size_t columnDims,
                    const std::string &outer, const std::string &row, const std::string &col,
                    Scope &scope, const std::string &indent);

  /// The GPU the kernel library's heuristic configures for: an H100 without the sm_90a-only
  /// paths (the module is compiled for plain sm_80/sm_90), so every configuration runs on any
  /// sm_80+ GPU.
  static kernels::GpuInfo targetGpu();
  /// The wgmma configuration of a GEMM's Hopper form (RenderOptions::hopper), or none: the GEMM
  /// keeps its mma.sync kernel alone (see the definition for which problems qualify).
  std::optional<kernels::GemmConfig> hopperConfig(const kernels::GemmSpec &spec, int64_t m,
                                                  int64_t n, int64_t k, int64_t batch,
                                                  const kernels::GpuInfo &gpu) const;
  /// How GEMMs and convolutions of `dtype` multiply: tensor cores for f16/bf16; f32 by
  /// --matmul-precision (strict SIMT, or TF32 tensor cores).
  kernels::MathMode mathFor(DType dtype) const;

  /// The kernel library's element type for operands of `a` and `b` (`what`, e.g. "GEMM mm_3",
  /// names the node; `operands` the two, `kernel` what has no such dtype): f32, f16 or bf16, the
  /// same for both.
  static Expected<kernels::ElemType> libraryType(DType a, DType b, const std::string &what,
                                                 const char *operands, const char *kernel);
  /// GEMM templates (CudaGemm.cpp): the kernel library's GEMM on the operands' strided views,
  /// whose epilogue hook stores each output element through the scheduled epilogue. Its source
  /// replaces the kernel's (librarySource).
  Expected<LaunchConfig> renderLibraryGemm(const codegen::TemplateKernel &t);
  /// For a GEMM template under RenderOptions::gemmCalls: appends to librarySource the function
  /// (the kernel's name + bundle::kGemmEpilogueSuffix, its parameters, then `const float
  /// *tk_product`) applying the template's epilogue to a dense f32 [batch][M][N] product, a
  /// thread per 16 bytes of output; `m`, `n`, `batch` are the sizes as C expressions. Returns its
  /// grid (blocks of bundle::kGemmEpilogueBlock threads).
  SymInt renderProductEpilogue(const codegen::TemplateKernel &t, const std::string &m,
                               const std::string &n, const std::string &batch);
  /// Channels-last convolutions (CudaConv.cpp): the kernel library's implicit GEMM or depthwise
  /// kernel, likewise.
  Expected<LaunchConfig> renderLibraryConv(const codegen::TemplateKernel &t);
  /// When the epilogue reads the GEMM's product at a permutation of its own index: each of its
  /// loop variables' stride in the product (sched::permutedStrides); nullopt when it reads it at
  /// its own index (the scheduler allows nothing else).
  static std::optional<std::vector<SymInt>> permutedRead(const LoopNode &templateNode,
                                                         const LoopNode &epilogue);
  /// When the epilogue only adds a vector along N to the product, in the product's dtype
  /// (out[b][m][n] = product[b][m][n] + bias[n], a linear layer's bias): the bias buffer, which a
  /// GEMM library adds as it stores the product (cuBLASLt's bias epilogue); nullopt otherwise.
  static std::optional<int> biasOnly(const loop::LoopProgram &program, const LoopNode &templateNode,
                                     const LoopNode &epilogue);
  /// The library's epilogue hook for a GEMM or channels-last convolution template: the site's
  /// accumulators through the scheduled epilogue (if any) into the template's output buffer.
  std::string libraryEpilogue(const codegen::TemplateKernel &t, const kernels::EpilogueSite &site);
  /// Takes a rendered library kernel as this kernel's source, launched on `grid` blocks.
  LaunchConfig libraryLaunch(kernels::KernelSource source, SymInt grid);
  /// Likewise for a GEMM-shaped kernel: `tiles` output tiles (all batch entries), each split
  /// config.splitK ways, with its split-K workspaces.
  LaunchConfig gemmLaunch(kernels::KernelSource source, const kernels::GemmConfig &config,
                          SymInt tiles);

  /// NCHW convolutions (CPU-and-CUDA compiles; CUDA alone lowers them channels-last): f32, an
  /// implicit GEMM per image and group in shared-memory tiles, each output through the epilogue
  /// (storeConvElement).
  Expected<LaunchConfig> renderNchwConv(const codegen::TemplateKernel &t);
  void storeConvElement(const LoopNode &node, const LoopNode *epilogue, int out,
                        const std::string &acc, const std::string &indent);

  /// The element offset of batch entry `bi` in `view` (an attention operand, mask or output over
  /// [batchDims..., rows, cols]): an expression, declaring `tc_<name>_base` first when the batch
  /// dims do not flatten into one stride.
  std::string batchBase(const LoopNode::Attention &a, const StridedView &view,
                        const std::string &bi, const std::string &name, const std::string &indent);

  /// Attention: f16/bf16 with head dims that are multiples of 16 up to 128 on the flash kernel
  /// (FlashAttention.cpp: 64 query rows per block on tensor cores), f32 of simtAttentionShape on
  /// the f32 tiled kernel (16 rows per block); the rest one warp per query row.
  Expected<LaunchConfig> renderAttention(const LoopNode &node);

  /// The flash kernel (f16/bf16) or the f32 tiled one: a block per tile of query rows.
  Expected<LaunchConfig> renderTiledAttention(const LoopNode &node, bool f32);

  /// Attention, one warp per query row (four rows per block): the lanes split the head dims,
  /// each key's score is a warp sum, and an online softmax (running max and sum, rescaling the
  /// accumulators) folds the values in as the keys stream by, so the L x S scores never exist.
  Expected<LaunchConfig> renderRowAttention(const LoopNode &node);

public:
  /// Whether the kernel calls the flash-attention device code (flashAttentionLibrary()).
  bool usesFlashAttention = false;
  /// Whether the kernel calls the kernel library (kernels::kernelLibrarySource()).
  bool usesKernelLibrary = false;
  bool hopperForm = false; // a GEMM with a Hopper form (RenderedKernel::hopper)

private:
  const loop::LoopProgram &program;
  const sched::Kernel &kernel;
  const RenderOptions &options;
  std::vector<std::string> params;
  LaunchConfig config;
  std::unique_ptr<ExprRenderer> ex;
  Scope symbols;
  std::string text;
  std::string librarySource; // the whole kernel, when the kernel library rendered it
  int64_t blockThreads = 32;
  static constexpr int64_t kMaxRowSlots = 16;
  int64_t rowSlots = 0, rowExtent = 0, rowVector = 1;
  static constexpr int64_t kRowVector = 4;
  std::vector<const LoopNode *> rowValues; // stages whose results are in registers
  int counter = 0;
};

} // namespace tensorc::cuda
