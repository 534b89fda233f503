// The CUDA renderer's kernel renderer, shared by the files that render each kind of kernel:
// CudaRenderer.cpp (loop kernels and the entry point), CudaGemm.cpp (GEMM and convolution
// templates), CudaAttention.cpp (attention templates).
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

constexpr int64_t kElementwiseBlock = 256;
/// Elementwise kernels with more expression nodes than this are not vectorized (see
/// renderVectorElementwise).
constexpr size_t kMaxVectorizedExprNodes = 128;
// GEMM tiles: BM x BN outputs per block of 256 threads (16 x 16, each 4 x 4), BK-deep panels.
constexpr int64_t kTileM = 64, kTileN = 64, kTileK = 16, kGemmThreads = 256;

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
  KernelRenderer(const loop::LoopProgram &program, const sched::Kernel &kernel)
      : program(program), kernel(kernel) {}

  Expected<LaunchConfig> render(std::string &source) {
    TC_RETURN_IF_ERROR(codegen::walkKernel(program, kernel, *this));
    TC_RETURN_IF_ERROR(ex->status());
    if (!librarySource.empty()) {
      source += librarySource + "\n";
      return config;
    }
    source += strCat("extern \"C\" __global__ void __launch_bounds__(", config.block, ") ",
                     kernel.name, "(", join(params, ", "), ") {\n", text, "}\n\n");
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

  /// GEMM and convolution templates (an implicit GEMM per image and group).
  Expected<LaunchConfig> renderGemm(const codegen::TemplateKernel &t);

  /// Stores the accumulator `acc` (a float expression) of output element (row, col) of batch `bi`
  /// (convolutions: `image`, `group`), through the epilogue when there is one.
  void storeElement(const LoopNode &node, const LoopNode *epilogue, int out, const std::string &acc,
                    const std::string &indent);

  /// The 4 x 4 accumulators acc[outer][inner] of a thread, each stored through storeElement
  /// where `rowCol` (statements declaring `row` and `col`) puts it inside the M x N output; closes
  /// the tile loop.
  void storeTile(const LoopNode &node, const LoopNode *epilogue, int out, const std::string &outer,
                 const std::string &inner, const std::string &rowCol);

  /// Channels-last convolutions (CudaConv.cpp): a kernel of the kernel library (implicit GEMM,
  /// or depthwise), whose epilogue hook stores each output element through the scheduled
  /// epilogue. Its source replaces the kernel's (librarySource).
  Expected<LaunchConfig> renderLibraryConv(const codegen::TemplateKernel &t);
  std::string libraryEpilogue(const codegen::TemplateKernel &t, const kernels::EpilogueSite &site);

  /// Declares `tc_mask_base`, the offset of batch entry `bi`'s mask (over the attention's batch
  /// dims, 0 where the mask broadcasts), and returns its name; "0ll" when it broadcasts over all.
  std::string maskBase(const LoopNode::Attention &a, const std::string &bi,
                       const std::string &indent);

  /// Attention: f16/bf16 with head dims that are multiples of 16 up to 128 on the flash kernel
  /// (FlashAttention.cpp: 64 query rows per block on tensor cores); the rest one warp per query
  /// row.
  Expected<LaunchConfig> renderAttention(const LoopNode &node);

  Expected<LaunchConfig> renderFlashAttention(const LoopNode &node);

  /// Attention, one warp per query row (four rows per block): the lanes split the head dims,
  /// each key's score is a warp sum, and an online softmax (running max and sum, rescaling the
  /// accumulators) folds the values in as the keys stream by, so the L x S scores never exist.
  Expected<LaunchConfig> renderRowAttention(const LoopNode &node);

  /// How one operand tile moves from global to shared memory: `rows` x BK elements of an
  /// operand whose element (row, k) is at `index` (a C expression over `rowVar` and `gk`).
  struct OperandTile {
    int buffer = -1;
    std::string smem, rowVar, rowLimit, index;
    int64_t rows = 0;
    bool kContiguous = false; // k has stride 1: threads walk k, else they walk rows
    bool kMajor = false;      // shared memory holds [k][row] (B with n contiguous), else [row][k]
  };

  std::string smemAt(const OperandTile &tile, const std::string &stage, const std::string &row,
                     const std::string &k);

  /// Element-wise loads into smem[row][k] (16-bit patterns), coalesced along the operand's
  /// contiguous dim; out-of-range elements are zero.
  void loadTileElements(const OperandTile &tile, int64_t BK, int64_t threads,
                        const std::string &stage, const std::string &indent);

  /// 16-byte cp.async copies of 8 elements along the contiguous dim (the caller proved the
  /// alignment, and that the dim's extent is a multiple of 8).
  void loadTileAsync(const OperandTile &tile, int64_t BK, int64_t threads, const std::string &stage,
                     const std::string &indent);

  /// f16/bf16 GEMM on tensor cores (mma.sync m16n8k16, f32 accumulators, sm_80+): blocks of
  /// 64 x 32 outputs, four warps of 16 x 32. Operands whose contiguous dim is 16-byte aligned
  /// (linear layers) stream through a ring of three shared-memory stages with cp.async, so later
  /// K slices load while one multiplies; others load element-wise, coalesced along their
  /// contiguous dim. A is kept [m][k] in shared memory and B [n][k] (one 32-bit load per fragment
  /// register) or, when n is contiguous, [k][n] (two 16-bit loads).
  Expected<LaunchConfig> renderMmaGemm(const LoopNode &node, const LoopNode *epilogue, int out,
                                       const std::string &aIndex, const std::string &bIndex,
                                       DType dtype);

public:
  /// Whether the kernel calls the flash-attention device code (flashAttentionLibrary()).
  bool usesFlashAttention = false;
  /// Whether the kernel calls the kernel library (kernels::kernelLibrarySource()).
  bool usesKernelLibrary = false;

private:
  const loop::LoopProgram &program;
  const sched::Kernel &kernel;
  std::vector<std::string> params;
  LaunchConfig config;
  std::unique_ptr<ExprRenderer> ex;
  Scope symbols;
  std::string text;
  std::string librarySource; // the whole kernel, when the kernel library rendered it
  int64_t blockThreads = 32;
  int counter = 0;
};

} // namespace tensorc::cuda
