// GEMM in LLVM IR: packed, register-blocked (BLIS-style) f32 matrix multiply with a fused
// epilogue, emitted as straight IR for one CpuTarget. Used for aten.mm/bmm/addmm and (through
// implicit GEMM) convolution.
#pragma once

#include "tensorc/Codegen/CPU/Target.h"

#include <cstdint>
#include <functional>
#include <utility>

namespace llvm {
class IRBuilderBase;
class Value;
} // namespace llvm

namespace tensorc::cpu {

/// The operands of C[m, n] = epilogue(sum_k A[m, k] * B[k, n], m, n) for one matrix. All values are
/// LLVM values at the insertion point: pointers are `ptr` to f32 elements, the rest i64 element
/// counts/strides (any strides: transposed and broadcast operands are strides, packing makes them
/// contiguous).
struct GemmOperands {
  llvm::Value *a = nullptr, *aRowStride = nullptr, *aColStride = nullptr; // A is M x K
  llvm::Value *b = nullptr, *bRowStride = nullptr, *bColStride = nullptr; // B is K x N
  llvm::Value *c = nullptr, *cRowStride = nullptr; // C is M x N, unit col stride
  llvm::Value *m = nullptr, *n = nullptr, *k = nullptr;
  /// An implicit B (convolution patches): when set, packing emits loadB(b, k, n) for each element
  /// (i64 k < K, n < N) instead of reading b/bRowStride/bColStride, and uses the f32 it returns.
  /// It may be emitted in any block and must only load in bounds (select 0 for padding).
  std::function<llvm::Value *(llvm::IRBuilderBase &b, llvm::Value *k, llvm::Value *n)> loadB;
  /// Optional with loadB, a fast path: returns {pointer, i1}; when the i1 is true, B[k, n0 + j]
  /// is the float at pointer + j for j < count (an interior stretch of one image row).
  std::function<std::pair<llvm::Value *, llvm::Value *>(llvm::IRBuilderBase &b, llvm::Value *k,
                                                        llvm::Value *n0, unsigned count)>
      loadBRow;
};

/// Called for every output vector: `acc` is a <L x float> (L = target lanes, or 1 for the scalar
/// tail where it is a plain float) holding C[row, col .. col+L-1] before the epilogue; returns the
/// value to store. `row`, `col` are i64. The default (no epilogue) returns `acc`. It is called
/// while emitting several store paths (full and partial tiles, vector and scalar), so it must only
/// emit code at the builder's insertion point and keep nothing between calls.
using GemmEpilogue = std::function<llvm::Value *(llvm::IRBuilderBase &b, llvm::Value *acc,
                                                 llvm::Value *row, llvm::Value *col)>;

/// How the work of one GEMM is split into independent tasks ("tiles"), so the runtime's thread
/// pool can run tile ranges [begin, end) in parallel. Tiles are MC x NC blocks of C; with
/// rowBlocks = ceil(M/MC), tile t is row block t % rowBlocks of column block t / rowBlocks.
struct GemmTiling {
  int64_t mc = 0, nc = 0; // chosen by the generator for the target (both > 0); kc is internal
};
GemmTiling chooseGemmTiling(const CpuTarget &target);

/// Number of tiles for given M and N (i64 LLVM values): ceil(M/mc) * ceil(N/nc).
llvm::Value *emitGemmTileCount(llvm::IRBuilderBase &b, const GemmTiling &tiling, llvm::Value *m,
                               llvm::Value *n);

/// Emits, at the insertion point of a function, the computation of tiles [tileBegin, tileEnd) of
/// one GEMM (tileEnd is clamped to the tile count). Scratch for packed panels lives in fixed
/// allocas of the entry block (bounded: about kc*(mc+nc) floats, ~400 KiB), so the code is
/// freestanding and thread-safe. C is overwritten (it need not be zeroed); the epilogue sees each
/// element exactly once, after the whole K sum, and K == 0 gives epilogue(0). Leaves the builder
/// after the emitted code (splitting the block when the insertion point is inside one).
void emitGemmTiles(llvm::IRBuilderBase &b, const CpuTarget &target, const GemmTiling &tiling,
                   const GemmOperands &ops, llvm::Value *tileBegin, llvm::Value *tileEnd,
                   const GemmEpilogue &epilogue = nullptr);

} // namespace tensorc::cpu
