// The schedule: lowered nodes grouped into kernels (fusion), kernel names, and the buffer plan.
#pragma once

#include "tensorc/Lowering/LoopIR.h"
#include "tensorc/Support/Status.h"

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tensorc::sched {

/// One kernel of the launch list.
struct Kernel {
  enum class Kind : uint8_t {
    Loop,     // poi_/red_/per_: per outer index, run each stage's loop in order
    Template, // tem_: a GEMM or convolution over tiles, with an optional pointwise epilogue
    Extern,   // a fallback op run by the runtime's reference kernel
  };
  Kind kind = Kind::Loop;
  std::string name; // poi_fused_add_relu_0, red_fused_sum_1, per_fused_..., tem_mm_gelu_3
  /// Loop: the parallel dims. Every stage's ranges start with these; a Reduction stage has exactly
  /// these ranges, a Pointwise stage these plus inner dims (run as an inner loop nest, the last
  /// one vectorized when its loads allow). The kernel's range is their product.
  std::vector<SymInt> outerRanges;
  /// Loop: the lowered nodes, in execution order (ids into LoopProgram::nodes). Template: the GEMM
  /// node, then optionally an epilogue chain of Pointwise nodes over the same ranges, each reading
  /// the result of the node before it only at its own index and nothing else reading that result
  /// (codegen replaces the first link's load by the accumulator, each later link's by the link
  /// before it, and stores only the last link's output). Extern: the one node.
  std::vector<int> nodes;
  /// Buffers the kernel reads or writes, sorted: the kernel's `args` order.
  std::vector<int> args;
  /// Buffers written by the kernel and read by no other kernel nor returned: kept for now (they
  /// still get memory), listed so codegen may skip stores in the future.
  std::vector<int> internal;
  std::string reason; // why these nodes were fused, one line (also logged under `schedule`)
  /// Fewest iterations of the parallel range worth one task: about kMinTaskElements element
  /// operations, so small kernels run on one thread instead of paying for waking the pool.
  int64_t grain = 1;
};

/// GEMM task decomposition shared by the compiler and every CPU target, so the manifest's range
/// does not depend on the variant: tiles of each batch's C, kGemmTileM x kGemmTileN at most.
constexpr int64_t kGemmTileM = 96;
constexpr int64_t kGemmTileN = 256;
/// Rows x columns of C one task computes (gemmTaskTile). A GEMM whose B is packed (CPU) with a
/// static N gets smaller tiles while it has fewer than kGemmMinTasks tasks (BERT's 128 x 768
/// projections had 6, so 10 of 16 threads idled through them): columns first (each task then
/// reads its own part of the weights), down to kGemmMinTileN, then rows (the weights are read
/// once per row of tasks), down to kGemmMinTileM, never below kGemmMinTaskMacs multiply-adds.
/// Other GEMMs keep kGemmTileM x kGemmTileN, the generic micro-kernel driver's blocking.
constexpr int64_t kGemmMinTasks = 48;
constexpr int64_t kGemmMinTileM = 24;
constexpr int64_t kGemmMinTileN = 32;
constexpr int64_t kGemmMinTaskMacs = int64_t(1) << 16;
struct GemmTaskTile {
  int64_t rows = kGemmTileM, cols = kGemmTileN;
};
GemmTaskTile gemmTaskTile(const loop::LoopNode::Gemm &gemm);
SymInt gemmTileCount(const loop::LoopNode::Gemm &gemm);
/// Convolution templates: one GEMM per image and group, OC/groups x OH*OW, tiled the same way
/// (task t is tile t % tilesPerGemm of GEMM t / tilesPerGemm, GEMMs ordered image-major); CPU
/// convolutions with packed weights: their own tiles (Conv::tileM x Conv::tileN).
SymInt convTileCount(const loop::LoopNode::Conv &conv);
/// The task count of a Template node of either kind (the manifest's launch range).
SymInt templateTileCount(const loop::LoopNode &node);

/// When `index` over the loop variables x0, x1, ... of `ranges` addresses a dense buffer of the
/// same elements in another dim order (index = sum of stride_i * x_i, the strides those of a
/// dense layout of the dims in some order; a transpose, a head split): each dim's stride (0 for
/// size-1 dims). nullopt otherwise. GEMM epilogues reading the product so run over the product's
/// elements and store at their own index (CUDA).
std::optional<std::vector<SymInt>> permutedStrides(const SymInt &index,
                                                   const std::vector<SymInt> &ranges);

/// The flat index of element (x0, ..., x(count-1), 0, ...) of a dense buffer over `ranges`, in
/// the loop variables x0, x1, ...: a kernel's row over its outer ranges, a node's own element.
SymInt rowMajorFlat(const std::vector<SymInt> &ranges, size_t count);

/// Element operations (loads, stores, accumulations) a task should have at least.
constexpr int64_t kMinTaskElements = 32768;

/// Where each buffer lives.
struct BufferPlan {
  std::vector<SymInt> offsets;  // per buffer id: arena byte offset (Intermediate buffers only)
  SymInt arenaBytes;
  int64_t peakBytes = 0;        // at the symbols' example values
  int64_t naiveBytes = 0;       // without reuse, same example values (report)
};

/// One fusion the scheduler considered, in scheduling order: made or refused, and why (what
/// `--log schedule` prints, kept for `tensorc explain` and `tensorc bisect`).
struct FusionDecision {
  enum class Kind : uint8_t {
    Pointwise, // a pointwise node into the loop kernel before it (vertical or horizontal)
    Reduction, // a reduction node into the loop kernel before it
    Epilogue,  // a pointwise node into the GEMM/convolution kernel whose result it reads
  };
  Kind kind = Kind::Pointwise;
  int node = -1; // the node offered (LoopProgram::nodes id)
  bool fused = false;
  std::string reason;
};
/// "pointwise", "reduction", "epilogue".
const char *fusionKindName(FusionDecision::Kind kind);

struct Schedule {
  std::vector<Kernel> kernels;
  BufferPlan plan;
  std::vector<FusionDecision> decisions;
};

struct ScheduleOptions {
  bool fuse = true;
  /// Example value of every shape symbol, for reporting sizes (peak bytes).
  int64_t exampleSymbolValue = 64;
  /// GEMM epilogues may produce any float dtype (the CUDA renderer converts on store); the CPU
  /// GEMM stores f32 only.
  bool anyFloatEpilogue = false;
  /// GEMM epilogues may read the product at a permutation of their own index (permutedStrides:
  /// BERT's bias add and head split) and store their result there (the CUDA renderer binds the
  /// epilogue's variables from the product's element); the CPU GEMM stores where it wrote C.
  bool permutedEpilogue = false;
  /// Debugging (`tensorc bisect`): make at most this many fusions, in scheduling order (-1: no
  /// limit), and none of the kinds named here ("pointwise", "reduction", "epilogue"); the fusions
  /// not made are refused with the limit as the reason.
  int64_t maxFusions = -1;
  std::set<std::string> disabledFusions;
  /// The most expression nodes the bodies of one loop kernel hold together: fusing a long chain
  /// into one huge function makes NVRTC's (and LLVM's) compile time grow faster than linearly;
  /// bounded kernels keep it linear in the model's size.
  size_t maxKernelExprNodes = 512;
  /// In-place epilogues: a template kernel's output may take the memory of a buffer that only
  /// its epilogue reads, at the output's own element, and that no later kernel reads (a residual
  /// add writing over the residual), for templates this accepts: those whose code reads the
  /// epilogue's operands of each output element before writing that element, and writes it only
  /// once (no partial sums in the output). The store then finds the line the epilogue just read
  /// in cache instead of fetching one more. Null: never.
  std::function<bool(const loop::LoopNode &templateNode)> writesOutputOnce;
};

/// Groups the program's nodes into kernels: vertical (reduction + pointwise row stages into one
/// per_ kernel), horizontal (same iteration space), and GEMM epilogue fusion (chains of pointwise
/// nodes, also when other kernels were scheduled between the GEMM and them); logs each decision
/// and rejection under the `schedule` category. Then plans buffers by lifetime.
Expected<Schedule> schedule(const loop::LoopProgram &program, const ScheduleOptions &options);

/// Human-readable dump (the `fuse` stage of `tensorc inspect`).
std::string printSchedule(const loop::LoopProgram &program, const Schedule &schedule);

} // namespace tensorc::sched
