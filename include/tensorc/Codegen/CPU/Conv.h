// 2-D convolution kernels for the CPU, emitted as LLVM IR for one CpuTarget, on channels-last
// activations (NHWC; NCHW16c is kept for the layout comparison in bench/cpu/conv.cpp):
// - emitConvTiles: direct convolution as an implicit GEMM without im2col: output pixels x output
//   channels in register tiles (the shared micro-kernel), each pixel's taps read through an
//   indirection of row pointers (a zero row for padding), weights packed at compile time
//   (packConvWeights), groups, the epilogue fused per micro-tile. A 1x1 stride-1 convolution is a
//   GEMM on the NHWC input as it is (no packing, no indirection).
// - emitDepthwiseTiles: depthwise convolution (groups == C == OC), vectorized over channels with
//   register blocking over output pixels of a row, weights packed (packDepthwiseWeights).
// Every kernel splits its work into tiles that the runtime's thread pool distributes.
#pragma once

#include "tensorc/Codegen/CPU/Target.h"

#include <cstdint>
#include <functional>

namespace llvm {
class IRBuilderBase;
class Value;
} // namespace llvm

namespace tensorc::cpu {

/// Where element (n, c, h, w) of an activation lives.
enum class ActivationLayout {
  NHWC,    // ((n * H + h) * W + w) * C + c
  NCHW16c, // (((n * C/16 + c/16) * H + h) * W + w) * 16 + c%16; C a multiple of 16
};

/// A convolution with static shapes but for the batch (a runtime value at emission).
struct ConvParams {
  int64_t c = 0, h = 0, w = 0;    // input channels and size
  int64_t oc = 0, kh = 1, kw = 1; // output channels, kernel size
  int64_t strideH = 1, strideW = 1, padTop = 0, padLeft = 0, dilationH = 1, dilationW = 1;
  int64_t groups = 1;
  int64_t oh = 0, ow = 0; // output size (the caller's: padding at the bottom/right follows)
  ActivationLayout layout = ActivationLayout::NHWC;
  int64_t cg() const { return c / groups; }
  int64_t ocg() const { return oc / groups; }
  int64_t taps() const { return kh * kw; }
  bool isPointwise() const {
    return kh == 1 && kw == 1 && strideH == 1 && strideW == 1 && padTop == 0 && padLeft == 0;
  }
};

/// Called on each output vector (or scalar, GemmEpilogue's contract) before it is stored:
/// `image`, `pixel` (oh * OW + ow) and `channel` (the first output channel of the value) are i64.
using ConvEpilogue =
    std::function<llvm::Value *(llvm::IRBuilderBase &b, llvm::Value *acc, llvm::Value *image,
                                llvm::Value *pixel, llvm::Value *channel)>;

/// Whether emitConvTiles writes each output element once, after reading the epilogue's operands
/// for it: all but the 1x1 stride-1 NHWC convolutions deeper than one K block of the packed GEMM
/// (their partial sums go through the output). An epilogue may then read a buffer that the
/// output overwrites (sched::ScheduleOptions::writesOutputOnce). emitDepthwiseTiles never does:
/// its tiles overlap at a row's end (7 wide: 4 + 4 pixels on AVX2) and it stores a partial channel
/// block before applying the epilogue to it in place.
bool convWritesOutputOnce(const ConvParams &params);

/// Tiles of one convolution: per image and group, blocks of mc output pixels x nc output channels
/// (ordered image, group, channel block, pixel block: neighbouring tiles share weights).
struct ConvTiling {
  int64_t mc = 96, nc = 64;
};
ConvTiling chooseConvTiling(const ConvParams &params, int threads);

/// images * groups * ceil(OH*OW / mc) * ceil(OCg / nc).
llvm::Value *emitConvTileCount(llvm::IRBuilderBase &b, const ConvParams &params,
                               const ConvTiling &tiling, llvm::Value *images);

/// Emits tiles [tileBegin, tileEnd) of the convolution of `images` images at `input` (layout
/// params.layout) with `packedWeights` (packConvWeights) into `output` (same layout, OH x OW),
/// at the insertion point; the builder ends after them. Stack scratch: the indirection of one row
/// group and a zero row.
void emitConvTiles(llvm::IRBuilderBase &b, const CpuTarget &target, const ConvParams &params,
                   const ConvTiling &tiling, llvm::Value *images, llvm::Value *input,
                   llvm::Value *packedWeights, llvm::Value *output, llvm::Value *tileBegin,
                   llvm::Value *tileEnd, const ConvEpilogue &epilogue = nullptr);

/// Winograd F(2x2, 3x3) (Lavin and Gray): each 2 x 2 block of outputs from its 4 x 4 input patch
/// d as A^T [(G g G^T) . (B^T d B)] A, 16 multiplications per input channel where the direct
/// kernel does 36; the transformed weights G g G^T are packed at compile time
/// (packWinogradWeights). The transforms' coefficients are 0, +-1 and 1/2 (exact in binary), so
/// the rounding stays of the direct kernel's order: ConvKernels checks both against one bound.
/// winogradFits: NHWC, no groups, 3x3, stride and dilation 1, channels multiples of 16 (C up to
/// 1024), and at least 49 output tiles per image (14x14 outputs): on fewer, the weights (16/9 of
/// the direct kernel's) are read for too few rows.
bool winogradFits(const ConvParams &params);
/// Tasks of mc output tiles (2 x 2 outputs each, row-major over the tiles; blocks of equal size)
/// x nc output channels (a multiple of 16, at most 64) per image.
ConvTiling chooseWinogradTiling(const ConvParams &params, int threads);
/// Whether emitWinogradTiles takes `tiling` for `params` (winogradFits, nc as above).
bool winogradTilingFits(const ConvParams &params, const ConvTiling &tiling);
/// images * ceil(tiles / mc) * ceil(OC / nc).
llvm::Value *emitWinogradTaskCount(llvm::IRBuilderBase &b, const ConvParams &params,
                                   const ConvTiling &tiling, llvm::Value *images);
/// As emitConvTiles for a convolution that winogradFits, with packWinogradWeights weights. Stack
/// scratch: the transformed inputs of a row group and their products, 16 x MR x (64 + nc) floats
/// (about 100 KiB on AVX-512).
void emitWinogradTiles(llvm::IRBuilderBase &b, const CpuTarget &target, const ConvParams &params,
                       const ConvTiling &tiling, llvm::Value *images, llvm::Value *input,
                       llvm::Value *packedWeights, llvm::Value *output, llvm::Value *tileBegin,
                       llvm::Value *tileEnd, const ConvEpilogue &epilogue = nullptr);

/// Grouped convolutions of 2, 4 or 8 channels per group in and out (ResNeXt's 32 x 4), and of 16
/// when strided (RegNet's first block of a stage), C a multiple of 16, NHWC: they run on the
/// depthwise kernel (emitDepthwiseTiles), vectorized over output channels across groups, with
/// packDepthwiseWeights(..., C / groups) weights. On the direct kernel a group's 4 output
/// channels fill a quarter of a 16-column strip; 16-channel groups fill one strip, and the
/// direct kernel stays faster at stride 1.
bool channelwiseFits(const ConvParams &params);

/// Depthwise tiles: per image, `rows` output rows x `channels` channels (a multiple of 16).
struct DepthwiseTiling {
  int64_t rows = 1, channels = 64;
};
DepthwiseTiling chooseDepthwiseTiling(const ConvParams &params, int threads);
llvm::Value *emitDepthwiseTileCount(llvm::IRBuilderBase &b, const ConvParams &params,
                                    const DepthwiseTiling &tiling, llvm::Value *images);

/// As emitConvTiles for a depthwise convolution (groups == c == oc) or one that channelwiseFits,
/// with packDepthwiseWeights weights.
void emitDepthwiseTiles(llvm::IRBuilderBase &b, const CpuTarget &target, const ConvParams &params,
                        const DepthwiseTiling &tiling, llvm::Value *images, llvm::Value *input,
                        llvm::Value *packedWeights, llvm::Value *output, llvm::Value *tileBegin,
                        llvm::Value *tileEnd, const ConvEpilogue &epilogue = nullptr);

} // namespace tensorc::cpu
