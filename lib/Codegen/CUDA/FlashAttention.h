// The flash-attention kernel for f16/bf16 attention templates: device code shared by every kernel
// that runs it, and the test of which attention nodes it takes.
#pragma once

#include "tensorc/Lowering/LoopIR.h"

#include <string>

namespace tensorc::cuda {

/// Query rows per block (four warps of 16) and keys per shared-memory tile of the flash kernel.
constexpr int64_t kFlashRows = 64, kFlashKeys = 64, kFlashThreads = 128;

/// Whether `node` (an attention template) runs on the flash kernel: q, k, v and the result of
/// one dtype, of a tensorCoreAttentionShape (f16 or bf16, head dims multiples of 16 up to 128).
/// Others run on the warp-per-row kernel.
bool flashAttentionFits(const loop::LoopProgram &program, const loop::LoopNode &node);

/// Device code of the flash kernel: `tc_flash_attention<E, EV, BF16, MASK, SAFE, STAGES,
/// SPLIT>(...)` computes one block's 64 / SPLIT query rows of one batch entry (see
/// FlashAttention.cpp). A module holds it once, after prelude(), when one of its kernels calls it.
const std::string &flashAttentionLibrary();

/// Shared memory a kernel's block may declare statically.
constexpr int64_t kStaticSmemBytes = 48 * 1024;

/// Key tiles of K and V the flash kernel keeps in shared memory (its STAGES): two, with Q in a
/// buffer of its own, so that Q and the first two tiles load together and each next tile loads
/// while one computes, where that fits kStaticSmemBytes (head dims up to 64); else one.
int64_t flashAttentionStages(int64_t e, int64_t ev, int64_t split);

/// The flash kernel's shared memory, in 16-bit elements, for head dims e and ev, `stages` and
/// `split`.
int64_t flashAttentionSmemElements(int64_t e, int64_t ev, int64_t stages, int64_t split);

/// The flash kernel's SPLIT (warps that share 16 query rows, each taking a slice of every key
/// tile; blocks then take kFlashRows / SPLIT rows) for `blocks` blocks of kFlashRows rows on a
/// GPU of `sms` multiprocessors: 2 while those would leave three quarters of the SMs idle, else
/// 1. At batch 1 the kernel is latency-bound with one warp per scheduler (BERT-base s128: 24
/// blocks). On an H200, two warps per 16 rows took 5-8% off the kernel at 24-48 blocks and lost
/// at 96, four lost everywhere; in whole models (CUDA graphs) two gained 1.0-1.3% at 24 blocks
/// (BERT-base, GPT-2, DistilBERT f16) and lost 0.6% at 48 (ViT-B/16 f16).
int64_t flashAttentionSplit(int64_t blocks, int64_t sms);

/// Keys per tile of the strict-f32 tiled kernel; its blocks take `rows` query rows,
/// `rowsPerThread` per thread: rows / rowsPerThread x 16 threads. 16 rows of 2 per thread came
/// out 0-1.5% ahead of 32 of 4, 16 of 4 and 32 of 2 on ViT-B/16, BERT, GPT-2 and Swin-T in f32
/// (an H200, whole models with graph replay; ViT preferred 16 of 4 by 1%).
constexpr int64_t kSimtFlashKeys = 32;
struct SimtFlashTiles {
  int64_t rows = 16, rowsPerThread = 2;
  int64_t threads() const { return rows / rowsPerThread * 16; }
};

/// Whether `node` runs on the strict-f32 tiled kernel: q, k, v and the result f32, of a
/// simtAttentionShape (head dims e % 4 == 0, ev % 16 == 0, both at most 64).
bool simtAttentionFits(const loop::LoopProgram &program, const loop::LoopNode &node);

/// Device code of that kernel: `tc_flash_attention_f32<E, EV, MASK, SAFE, ROWS, RPT>(...)`
/// computes one block's query rows of one batch entry; shared memory of
/// simtAttentionSmemFloats(e, ev, rows).
const std::string &simtAttentionLibrary();

inline int64_t simtAttentionSmemFloats(int64_t e, int64_t ev, int64_t rows) {
  return rows * (e + 4) + kSimtFlashKeys * (e + 4) + kSimtFlashKeys * (ev + 4) +
         rows * (kSimtFlashKeys + 4);
}

} // namespace tensorc::cuda
