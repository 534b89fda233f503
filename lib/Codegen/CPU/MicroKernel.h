// The register-tiled f32 micro-kernel every packed GEMM and convolution calls: a tile of up to
// MR rows x S strips of 16 columns held in vector registers over a K loop that reads each row of
// A through a pointer per segment (an indirection: GEMM rows, or convolution taps whose pointers
// may point at a zero row for padding) and B as packed strips (WeightPacking.h).
#pragma once

#include "tensorc/Codegen/CPU/Gemm.h"
#include "tensorc/Codegen/CPU/Target.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace llvm {
class AllocaInst;
class Function;
class IRBuilderBase;
class Module;
class Value;
} // namespace llvm

namespace tensorc::cpu {

/// The register blocking of one target.
struct MicroTiles {
  unsigned lanes = 8;         // f32 lanes per vector
  unsigned mr = 6;            // most rows per tile
  unsigned accumulators = 12; // vector registers for accumulators
  unsigned maxStrips = 4;     // most strips per tile
  /// Strips of 16 columns a tile of `rows` rows uses (the widest that fits the registers).
  unsigned stripsFor(unsigned rows) const;
  unsigned vectorsPerStrip() const { return 16 / lanes; }
};
MicroTiles microTilesFor(const CpuTarget &target);

/// The arguments of one micro-kernel call (i64 values unless said otherwise).
///   rows:      ptr to `segments` x R pointers: segment s of row i starts at rows[s * R + i]
///   segments:  number of segments; K = segments * kseg
///   kseg:      K steps per segment; row i of segment s reads rows[s * R + i][0 .. kseg)
///   b:         ptr to packed B at this call's first K step in strip 0; strip j is at
///              b + j * bStripStride, step p of it at + p * 16 (the steps of all segments follow
///              each other)
///   c:         ptr to the tile's C; element (i, col) at c + i * cRowStride +
///              (col / 16) * cStripStride + col % 16
///   cols:      valid columns, 1 .. 16 * S (fewer: masked loads and stores)
///   accumulate (i1): add the tile to C instead of overwriting it
struct MicroKernelArgs {
  llvm::Value *rows = nullptr, *segments = nullptr, *kseg = nullptr;
  llvm::Value *b = nullptr, *bStripStride = nullptr;
  llvm::Value *c = nullptr, *cRowStride = nullptr, *cStripStride = nullptr;
  llvm::Value *cols = nullptr, *accumulate = nullptr;
};

/// The R x S micro-kernel of `target` (1 <= R <= mr, 1 <= S <= stripsFor(R)), emitted into the
/// module on first use as an internal function taking MicroKernelArgs in order (or its
/// declaration, when declareMicroKernels made one).
llvm::Function *getMicroKernel(llvm::Module &module, const CpuTarget &target, unsigned rows,
                               unsigned strips);

/// Micro-kernels shared by several modules (CPU code generation splits kernels over modules):
/// declareMicroKernels declares every micro-kernel of `target` in a module (external, hidden), so
/// that the kernels emitted into it afterwards call those declarations (getMicroKernel returns
/// them) instead of defining copies; usedMicroKernels then erases the unused declarations and
/// returns the (rows, strips) of the others; defineMicroKernels defines those of `shapes`
/// (external, hidden) in the module the others link against and returns their names.
void declareMicroKernels(llvm::Module &module, const CpuTarget &target);
std::vector<std::pair<unsigned, unsigned>> usedMicroKernels(llvm::Module &module,
                                                            const CpuTarget &target);
std::vector<std::string>
defineMicroKernels(llvm::Module &module, const CpuTarget &target,
                   const std::vector<std::pair<unsigned, unsigned>> &shapes);
/// True for a declaration of a shared micro-kernel (resolved when the modules are linked).
bool isMicroKernelDeclaration(const llvm::Function &function);

/// Calls the micro-kernel for a static row count and a runtime strip count (1 .. stripsFor(rows)).
void emitMicroKernelCall(llvm::IRBuilderBase &b, const CpuTarget &target, unsigned rows,
                         llvm::Value *strips, const MicroKernelArgs &args);

/// Calls the micro-kernel for runtime rows (1 .. mr) and strips (1 .. stripsFor(rows)).
void emitMicroKernelCall(llvm::IRBuilderBase &b, const CpuTarget &target, llvm::Value *rows,
                         llvm::Value *strips, const MicroKernelArgs &args);

/// stripsFor(rows) for runtime rows (1 .. mr), as an i64.
llvm::Value *emitStripsFor(llvm::IRBuilderBase &b, const MicroTiles &tiles, llvm::Value *rows);

/// A rows x cols block of f32: element (i, j) at base + i * rowStride + (j / 16) * stripStride +
/// j % 16 (i64 strides in elements).
struct TileView {
  llvm::Value *base = nullptr, *rowStride = nullptr, *stripStride = nullptr;
};

/// Applies `epilogue` to a rows x cols micro-tile after its last K step: reads `from`, passes each
/// element to the epilogue as (row0 + i, col0 + j) and writes the result to `to` (which may be
/// `from`). Vectors while whole ones fit, then scalars.
void emitEpilogue(llvm::IRBuilderBase &b, const CpuTarget &target, const GemmEpilogue &epilogue,
                  const TileView &from, const TileView &to, llvm::Value *rows, llvm::Value *cols,
                  llvm::Value *row0, llvm::Value *col0);

/// The same in place: element (i, j) at tile + i * rowStride + (j / 16) * stripStride + j % 16.
void emitEpilogueInPlace(llvm::IRBuilderBase &b, const CpuTarget &target,
                         const GemmEpilogue &epilogue, llvm::Value *tile, llvm::Value *rowStride,
                         llvm::Value *stripStride, llvm::Value *rows, llvm::Value *cols,
                         llvm::Value *row0, llvm::Value *col0);

/// A frame buffer for one micro-tile (rows x strips x 16 f32 of the largest tile), which a
/// micro-kernel whose tile gets an epilogue writes instead of the output. The epilogue then reads
/// it (in L1: the stores forward or hit) and writes the output once: written in place, each
/// output line took two rounds of stores, and in a large output whose lines are not in cache
/// those stores wait in the store buffer for the line's ownership and stall the next tiles (a
/// ResNet-50 1x1 convolution with a residual add took 1.7x the time of the same one without).
/// Its row stride is the call's columns (strips x 16), its strip stride 16.
llvm::AllocaInst *emitEpilogueScratch(llvm::IRBuilderBase &b, const MicroTiles &tiles);

} // namespace tensorc::cpu
