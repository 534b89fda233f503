// f32 GEMM with B packed at compile time (WeightPacking.h): register-tiled micro-kernels read A in
// place (packing only A with a non-unit column stride), K blocked for L1/L2, the epilogue applied
// to each micro-tile right after its last K block while it is in L1. Emitted as LLVM IR for one
// CpuTarget; the work is split into tiles (MC x NC blocks of C) that the thread pool distributes.
#pragma once

#include "tensorc/Codegen/CPU/Gemm.h"
#include "tensorc/Codegen/CPU/Target.h"

#include <cstdint>

namespace llvm {
class IRBuilderBase;
class Value;
} // namespace llvm

namespace tensorc::cpu {

/// C[m, n] = epilogue(sum_k A[m, k] * B[k, n]) with B given packed. LLVM values at the insertion
/// point: pointers to f32, the rest i64 element counts and strides.
struct PackedGemmOperands {
  llvm::Value *a = nullptr, *aRowStride = nullptr, *aColStride = nullptr; // A is M x K
  llvm::Value *packedB = nullptr; // packGemmB of the K x N operand: ceil(N/16) strips of K x 16
  llvm::Value *c = nullptr, *cRowStride = nullptr; // C is M x N, unit column stride
  llvm::Value *m = nullptr, *n = nullptr, *k = nullptr;
};

/// The split of one GEMM: tiles of mc x nc of C (tile t is row block t % ceil(M/mc) of column
/// block t / ceil(M/mc)), each computed in K blocks of kc. The same for every CPU target of a
/// bundle (the launch range is computed from it), so mc is a multiple of 12 and nc of 64: whole
/// micro-tiles on AVX-512 (12 x 32), AVX2 (6 x 16) and NEON (6 x 16).
struct PackedGemmTiling {
  int64_t mc = 96, nc = 256, kc = 256;
};

/// The tiling for an M x N x K GEMM (-1: not known at compile time) run on `threads` threads:
/// blocks that keep a K block of B in L2 and of A's rows in L1, then split until there are at
/// least ~3 tiles per thread or the tiles reach the size of a few micro-tiles.
PackedGemmTiling choosePackedGemmTiling(int64_t m, int64_t n, int64_t k, int threads);

/// ceil(M/mc) * ceil(N/nc) for i64 M and N.
llvm::Value *emitPackedGemmTileCount(llvm::IRBuilderBase &b, const PackedGemmTiling &tiling,
                                     llvm::Value *m, llvm::Value *n);

/// Emits tiles [tileBegin, tileEnd) of one GEMM (tileEnd clamped to the tile count) at the
/// insertion point and leaves the builder after them. C is overwritten (no need to zero it); the
/// epilogue (GemmEpilogue's contract) sees every element once, after the whole K sum; K == 0 gives
/// epilogue(0). Stack scratch: MR row pointers and, for a non-unit column stride of A, an
/// MR x kc strip of A.
void emitPackedGemmTiles(llvm::IRBuilderBase &b, const CpuTarget &target,
                         const PackedGemmTiling &tiling, const PackedGemmOperands &ops,
                         llvm::Value *tileBegin, llvm::Value *tileEnd,
                         const GemmEpilogue &epilogue = nullptr);

/// The K block for a depth of `k` (-1: not known at compile time): all of K up to 384, so that C
/// is written once, else 256 (12 rows of A in L1 next to B's stream).
int64_t packedGemmKBlock(int64_t k);

/// The compiler's entry: tasks [taskBegin, taskEnd) of rowTasks x colTasks tasks (i64 values: the
/// launch range the scheduler chose) over one GEMM. M is split into at most rowTasks equal shares
/// of whole 12-row micro-tiles and N into at most colTasks of whole 16-column strips, so that
/// tasks are of one size whatever M and N are; task t computes row share t % R of column share
/// t / R (R row shares), and the tasks past the shares (when rounding leaves fewer) do nothing.
/// Otherwise as emitPackedGemmTiles.
void emitPackedGemmGrid(llvm::IRBuilderBase &b, const CpuTarget &target, int64_t kc,
                        const PackedGemmOperands &ops, llvm::Value *rowTasks, llvm::Value *colTasks,
                        llvm::Value *taskBegin, llvm::Value *taskEnd,
                        const GemmEpilogue &epilogue = nullptr);

} // namespace tensorc::cpu
