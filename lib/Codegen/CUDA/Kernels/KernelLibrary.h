// CUDA kernel library: generators of GEMM, implicit-GEMM convolution and depthwise convolution
// kernels (CUDA C++ for NVRTC) from plain parameter structs, with a caller-rendered epilogue, and
// the heuristic that picks their tiles, pipeline depth and split-K.
//
// Two GEMM kernels: mma.sync from cp.async-filled shared memory (sm_80 and later, any operand
// layout, convolutions), and on Hopper (sm_90a) wgmma from TMA-filled shared memory with a
// producer warpgroup (K-major operands with 16-byte aligned rows: linear layers, 1x1
// convolutions). The second takes TMA tensor maps the host builds (KernelSource::tensorMaps).
//
// Independent of LoopIR and the scheduler: a caller (the CUDA renderer, the kit tool in
// bench/cuda_kernels) describes the problem with C expressions and an epilogue hook, and gets
// back one `extern "C" __global__` function plus how to launch it. Every generated kernel calls
// device templates from kernelLibrarySource(), which a module holds once (after the prelude).
//
// Kernel ABI. Parameters, in order: the operand pointers (GEMM: A, B; convolution: input,
// packed weights), the epilogue's `params`, then for split-K (`splitK > 1`) `float *tk_partials,
// unsigned *tk_counters`, then the caller's `scalarParams`. A caller with its own parameter list
// (the specs' `params`) gets it as it is, followed for split-K by `tk_partials, tk_counters`.
// Blocks are 1-D, `threads` wide, with `smemBytes` of dynamic shared memory (set
// cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) once per function: split-K
// kernels add a static word, so 48 KB of dynamic shared memory already passes the default). The
// grid is `grid` blocks (`units`, or fewer for a persistent kernel); a kernel loops over its
// units with a stride of gridDim.x, so any grid that is a multiple of `clusterSize` is correct.
// Split-K workspaces: `tk_partials` holds partialFloats() floats (scratch, any content),
// `tk_counters` holds counterCount() unsigned ints that must be zero before the first launch; every
// launch leaves them zero again (so CUDA graphs replay).
//
// Hopper kernels (KernelSource::arch "sm_90a"): the operands' pointers are replaced by TMA
// tensor maps (`const __grid_constant__ TkTensorMap`, 128 bytes passed by value), one per entry
// of KernelSource::tensorMaps; the kernel is compiled with __cluster_dims__(clusterSize, 1, 1)
// when clusterSize > 1 (the split-K parts of a tile reduce through distributed shared memory:
// no workspace). The runtime's side: compile such modules for sm_90a (cubins for CC 9.0 only;
// keep a plain sm_80/sm_90 module for other GPUs); once buffers have addresses (after memory
// planning, before graph capture), encode each TensorMapSpec with cuTensorMapEncodeTiled from
// the dlopen'ed driver (rank 3, CU_TENSOR_MAP_DATA_TYPE_FLOAT16 / BFLOAT16 / TFLOAT32 for f32
// operands of TF32 math, interleave none, swizzle 128B, L2 promotion 256B, OOB fill none = zeros;
// the buffer's address 16-byte aligned), keep the 128-byte result with the launch and pass a
// pointer to it in kernelParams; a buffer that moves needs its map re-encoded
// (cuTensorMapReplaceAddress). Launch `grid` blocks with the plain cuLaunchKernel: the cluster
// shape is compiled in.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tensorc::cuda::kernels {

/// Element type of operands in memory.
enum class ElemType { F16, BF16, F32 };

/// How products are computed. Tensor16: mma.sync m16n8k16 on f16/bf16 operands; TF32:
/// mma.sync m16n8k8 on f32 operands rounded to TF32 (torch's `high` matmul precision); SimtF32:
/// strict f32 FMAs (torch's `highest`). Accumulation is f32 throughout.
enum class MathMode { Tensor16, TF32, SimtF32 };

const char *elemTypeName(ElemType type);
const char *mathModeName(MathMode mode);

/// Where a kernel applies the caller's epilogue: `acc.size()` f32 accumulators (1, or the
/// kernel's vector width: 8 on tensor cores, 4 on SIMT, 8/4 for depthwise) of output row `row`,
/// columns `col` .. `col + acc.size() - 1`, all inside the output; `col` is then a multiple of
/// acc.size(). GEMM: row < M, col < N of batch entry `batch`. Convolutions: row is the output
/// pixel (n * OH + oh) * OW + ow, col the output channel (groups included), batch "0".
struct EpilogueSite {
  std::string batch, row, col;  // C expressions of type long long
  std::vector<std::string> acc; // C expressions of type float
  std::string indent;           // for the statements returned
};

/// The caller's fused pointwise epilogue: bias, folded batch norm, activation, residual add,
/// conversion and the store itself. `render` returns C++ statements that consume one site.
struct Epilogue {
  /// Extra kernel parameters the statements read ("const float *__restrict__ bias").
  std::vector<std::string> params;
  std::function<std::string(const EpilogueSite &)> render;
};

/// One GEMM operand in memory. A is M x K, B is K x N (both per batch entry).
struct MatrixOperand {
  /// K is the contiguous dim: A row-major, B column-major (a [N][K] weight). Otherwise M (A) or
  /// N (B) is contiguous.
  bool kContiguous = true;
  std::string ld = "0";          // elements between consecutive rows of the non-contiguous dim
  std::string batchStride = "0"; // elements between batch entries ("0": shared by all)
  /// The base pointer is 16-byte aligned and `ld` and `batchStride` are multiples of 16 bytes:
  /// tiles move as 16-byte vectors (cp.async), tails zero-filled. Otherwise element copies.
  bool aligned16 = false;
};

/// Tiles and pipeline. BM x BN output tile per block, BK deep K slices, warpsM x warpsN warps
/// (each owns a (BM / warpsM) x (BN / warpsN) tile), `stages` K slices in flight (cp.async
/// ring; the SIMT kernel always double-buffers), K split `splitK` ways (1 = off).
///
/// GemmKernel::Wgmma (sm_90a): bm is 64 or 128 (one or two consumer warpgroups of 64 rows, plus
/// a producer warpgroup issuing TMA loads), bn a multiple of 16 up to 256, bk 128 bytes of K
/// (64 f16/bf16, 32 TF32), warpsM / warpsN unused; splitK parts (at most 8) form a thread-block
/// cluster whose CTAs reduce the tile through distributed shared memory; `epilogueCols` output
/// columns go through shared memory per epilogue pass (0: all of bn).
enum class GemmKernel { MmaSync, Wgmma };

struct GemmConfig {
  int bm = 128, bn = 128, bk = 32;
  int warpsM = 2, warpsN = 2;
  int stages = 4;
  int splitK = 1;
  GemmKernel kernel = GemmKernel::MmaSync;
  int epilogueCols = 0;
  /// Blocks to launch at most (a persistent grid: each block loops over units); 0: one per unit.
  int gridLimit = 0;
};

struct GemmSpec {
  std::string name; // the __global__ function's name
  ElemType type = ElemType::F16;
  MathMode math = MathMode::Tensor16;
  MatrixOperand a, b;
  std::string m = "M", n = "N", k = "K", batch = "1"; // C expressions (long long)
  std::vector<std::string> scalarParams; // declarations the expressions use ("long long M")
  GemmConfig config;
  Epilogue epilogue;
  /// A caller with its own kernel signature (the CUDA renderer passes its buffers in its order):
  /// every parameter declaration, replacing the default list (split-K's workspaces follow it),
  /// and the C expressions of the operands' base pointers in terms of them.
  std::vector<std::string> params;
  std::string aExpr = "A", bExpr = "B";
};

/// A 2-D convolution on channels-last activations: input [N][H][W][C], weights pre-packed
/// [OC][KH][KW][C / groups] (K-major), output pixels x channels [N * OH * OW][OC]. A 1-D
/// convolution is H = KH = 1. GEMM view per group g: M = N * OH * OW, N = OC / groups,
/// K = KH * KW * (C / groups), batched over groups.
struct ConvSpec {
  std::string name;
  ElemType type = ElemType::F16;
  MathMode math = MathMode::Tensor16;
  std::string batch = "1"; // N, a C expression (long long)
  int h = 1, w = 1, c = 1, oc = 1, kh = 1, kw = 1;
  int strideH = 1, strideW = 1, padH = 0, padW = 0, dilationH = 1, dilationW = 1, groups = 1;
  std::vector<std::string> scalarParams;
  GemmConfig config;
  Epilogue epilogue;
  /// The input pointer is 16-byte aligned (so are the weights): with C / groups a multiple of
  /// 16 bytes' elements, patches move as 16-byte vectors; otherwise element by element.
  bool aligned16 = true;
  /// A caller with its own kernel signature (the CUDA renderer passes its buffers in its order):
  /// every parameter declaration, replacing the default list (split-K's workspaces follow it),
  /// and the C expressions of the operands' pointers in terms of them.
  std::vector<std::string> params;
  std::string inputExpr = "input", weightExpr = "weight";

  int oh() const { return (h + 2 * padH - dilationH * (kh - 1) - 1) / strideH + 1; }
  int ow() const { return (w + 2 * padW - dilationW * (kw - 1) - 1) / strideW + 1; }
};

/// Depthwise convolution (groups = C, one filter per channel) on channels-last activations:
/// input [N][H][W][C], weights pre-packed [KH][KW][C], output [N][OH][OW][C]. A block computes
/// tileH x tileW output pixels of `channelsPerBlock` channels from an input halo in shared
/// memory; a thread owns one vector of channels (8 f16/bf16, 4 f32) over `rowsPerThread`
/// output rows of one output column.
struct DepthwiseSpec {
  std::string name;
  ElemType type = ElemType::F16;
  std::string batch = "1";
  int h = 1, w = 1, c = 1, kh = 3, kw = 3;
  int strideH = 1, strideW = 1, padH = 1, padW = 1, dilationH = 1, dilationW = 1;
  int tileH = 8, tileW = 8, channelsPerBlock = 32, rowsPerThread = 2;
  std::vector<std::string> scalarParams;
  Epilogue epilogue;
  bool aligned16 = true; // input and weights 16-byte aligned; vectors need C % vector == 0 too
  /// As ConvSpec's: the caller's whole parameter list and its operand pointer expressions.
  std::vector<std::string> params;
  std::string inputExpr = "input", weightExpr = "weight";

  int oh() const { return (h + 2 * padH - dilationH * (kh - 1) - 1) / strideH + 1; }
  int ow() const { return (w + 2 * padW - dilationW * (kw - 1) - 1) / strideW + 1; }
};

/// A TMA tensor map the host encodes with cuTensorMapEncodeTiled and passes by value in kernel
/// parameter `param`: a rank-3 tiled map over `operand`'s buffer ("A" / "B" of a GEMM, "input" /
/// "weight" of a convolution), 128-byte swizzle, no interleave, 256-byte L2 promotion, zero fill
/// out of bounds. Element type: `type` (F32 operands of TF32 math use the TFLOAT32 map type).
/// dims: elements along {K (contiguous), rows, batch entries}; strides: bytes between rows and
/// between batch entries; box: {128 bytes of K in elements, tile rows, 1}. C expressions.
struct TensorMapSpec {
  std::string param, operand;
  ElemType type = ElemType::F16;
  bool tf32 = false;
  std::string dims[3], strides[2];
  int box[3] = {0, 0, 1};
};

/// A rendered kernel and how to launch it. `units`, `grid`, partialFloats and counterCount are
/// C expressions over the spec's expressions (plain numbers when those are).
struct KernelSource {
  std::string name;
  std::string source; // the __global__ function (needs kernelLibrarySource() before it)
  std::vector<std::string> params; // parameter declarations, in order
  int threads = 0;
  int smemBytes = 0; // dynamic shared memory per block
  std::string units; // blocks of work
  std::string grid;  // blocks to launch (== units unless persistent)
  std::string partialFloats = "0", counterCount = "0"; // split-K workspaces (splitK > 1)
  int clusterSize = 1;                                 // thread-block cluster (x) of the launch
  std::string arch;                      // the target it needs ("sm_90a"), or "" for any
  std::vector<TensorMapSpec> tensorMaps; // TMA maps the host encodes (Hopper kernels)
};

/// TC_GRID_DEPENDENCY_WAIT(), which every kernel calls before anything else (the call is
/// kGridDependencyWaitCall): on sm_90 and newer it waits until the kernel before it in the stream
/// has finished and its writes are visible (programmatic dependent launch: the runtime may launch
/// a kernel before the one ahead of it ends); elsewhere it does nothing. The next kernel may
/// launch when this one's blocks exit: triggering it earlier (launch_dependents after the wait)
/// made most models slower (bench/cuda_kernels/NOTES.md). Defined by the prelude and the
/// library, whichever comes first.
const char *gridDependencyWaitSource();
inline constexpr const char *kGridDependencyWaitCall = "  TC_GRID_DEPENDENCY_WAIT();\n";

/// Device templates every generated kernel calls (tk_ names), with the inline PTX between
/// `// ---- inline PTX` and `// ---- end of inline PTX` markers so that test/e2e/cuda_emu.h can
/// replace it. Defines TC_DEVICE if the module's prelude did not.
const std::string &kernelLibrarySource();

/// Each returns an error message in `error` (and an empty KernelSource) for a spec it cannot
/// render: tiles that do not divide into warps, a math mode the dtype lacks, and so on.
KernelSource renderGemm(const GemmSpec &spec, std::string &error);
KernelSource renderConv(const ConvSpec &spec, std::string &error);
KernelSource renderDepthwise(const DepthwiseSpec &spec, std::string &error);

// ---- Choosing configurations (GemmConfig.cpp) ----

struct GpuInfo {
  int sms = 132;                 // multiprocessors (H100 SXM: 132, A100: 108)
  int arch = 90;                 // compute capability x 10
  int smemPerBlock = 227 * 1024; // opt-in dynamic shared memory limit per block
  bool sm90a = false;            // the module is compiled for sm_90a (wgmma, setmaxnreg allowed)
};

/// The configuration for a batch x (M x N x K) problem, deterministic in its inputs. With
/// `gpu.sm90a`, f16/bf16/TF32 math, M > 16 and `tmaOperands` (both operands K-major with 16-byte
/// aligned rows, so TMA can load them) it is a GemmKernel::Wgmma configuration:
///  - big problems: the first of 128x256 (M > 1024), 128x128, 128x64 whose tiles alone give
///    every SM a block, unsplit;
///  - small problems (fewer tiles): the cheapest of 64/128 x 128/64/32 tiles split 1, 2 or 4
///    ways (a thread-block cluster), under a model fitted to run 2 (bench/cuda_kernels/NOTES.md):
///    the busiest SM's operand bytes at ~55 GB/s, its FLOPs or all the DRAM traffic, whichever
///    is longest, plus ~2.5 us (2) / 3.5 us (4) per cluster; 128-row tiles only when M > 64,
///    tiles over twice N skipped, each part at least 2 K slices deep;
///  - stages: as many as fit beside the epilogue's staging (at most 8, 6 for 256 columns; at
///    most a part's slices + 1), the grid persistent (blocks that fit on the SMs at once).
/// Otherwise a GemmKernel::MmaSync configuration:
///  1. Tile: M > 64 takes the first of 128x256 (which needs two waves: its 128 accumulators per
///     thread leave one block per SM), 128x128, 128x64, 64x128, 64x64 (SIMT: 128x128, 128x64,
///     64x128, 64x64) that gives every SM a block, else 64x64. M <= 64 takes tiles of M's
///     height rounded up to 16, 32 or 64 (SIMT: 32 or 64), the first of N = 128, 64 that gives
///     every SM a block, else N = 64.
///  2. Split-K while the blocks leave SMs idle: the smallest split giving every SM a block
///     (two per SM when M <= 64: those problems stream B from memory and want more loads in
///     flight), at most 16-way, each part at least 4 K slices deep (2 when M <= 64). When K is
///     too shallow to split that far (tensor cores, M > 64), 32x64 and then 16x64 tiles.
///  3. BK: 64 bytes of K per row (128 when M <= 64); SIMT 8. Stages: as many as fit in a third
///     of the block shared-memory limit (half when M <= 64), between 3 and 6.
///  4. Warps: 8 for 128x256 and 128x128 (64 x 64 / 64 x 32 warp tiles), 4 otherwise.
GemmConfig chooseGemmConfig(int64_t m, int64_t n, int64_t k, int64_t batch, ElemType type,
                            MathMode math, const GpuInfo &gpu, bool tmaOperands = false);
/// Convolutions: the GEMM view (M = N * OH * OW, N = OC / groups, K = KH * KW * C / groups,
/// batch = groups). Pointwise convolutions (1x1, stride 1, no padding, one group, 16-byte aligned
/// channels) are dense GEMMs and take the Wgmma kernel on sm_90a.
GemmConfig chooseConvConfig(const ConvSpec &spec, int64_t batch, const GpuInfo &gpu);
/// Depthwise tiles: the first of (8 x 8 pixels, 4 vectors of channels, 2 rows per thread),
/// (8 x 8, 2, 1), (8 x 8, 1, 1), (4 x 8, 2, 1), (4 x 8, 1, 1) that gives two blocks per SM, else
/// the one giving the most blocks.
void chooseDepthwiseTiles(DepthwiseSpec &spec, int64_t batch, const GpuInfo &gpu);

/// Whether a convolution is a dense GEMM over its channels-last input (1x1, stride 1, no padding,
/// one group, rows of 16-byte multiples): the shape the Wgmma kernel takes.
bool convIsDenseGemm(const ConvSpec &spec);

/// Workspace sizes of a split-K kernel at concrete sizes (0 without split-K or with a cluster).
int64_t gemmUnits(const GemmConfig &config, int64_t m, int64_t n, int64_t batch);
/// Blocks to launch for `units` (fewer with a persistent grid, a multiple of the cluster).
int64_t gemmGrid(const GemmConfig &config, int64_t units);
int64_t gemmPartialFloats(const GemmConfig &config, MathMode math, int64_t m, int64_t n,
                          int64_t batch);
int64_t gemmCounterCount(const GemmConfig &config, int64_t m, int64_t n, int64_t batch);

} // namespace tensorc::cuda::kernels
