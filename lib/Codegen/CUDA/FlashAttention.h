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

/// Device code of the flash kernel: `tc_flash_attention<E, EV, BF16, MASK>(...)` computes one
/// block's 64 query rows of one batch entry (see FlashAttention.cpp). A module holds it once,
/// after prelude(), when one of its kernels calls it.
const std::string &flashAttentionLibrary();

} // namespace tensorc::cuda
