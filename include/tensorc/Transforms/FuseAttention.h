// The fuse-attention pass (and its variant for tensor-core shapes).
#pragma once

#include "tensorc/Ops/AttentionShapes.h"
#include "tensorc/Transforms/PassRegistry.h"

namespace tensorc {

/// Rewrites softmax(Q . K^T [* or / a constant scalar] [+ mask], last dim) . V, each intermediate
/// used once, into one aten.scaled_dot_product_attention (K^T may be a transpose or permute of K,
/// or any value, which is then transposed back). A bool mask applied as where(keep, scores, -inf)
/// or where(drop, -inf, scores) becomes the op's bool attn_mask (keep, or logical_not(drop)). GPU compiles run it before decompose, so the
/// CUDA backend can run attention as one kernel; the reference kernel computes the same.
Status fuseAttention(Graph &graph, const PassContext &context);

/// fuseAttention for the heads the CUDA backend has a tiled kernel for (tiledAttentionShape:
/// f16/bf16 on tensor cores, strict f32 on CUDA cores): what GPU compiles run by default, as the
/// unfused kernels beat the warp-per-row kernel the other heads would run on.
Status fuseTiledAttention(Graph &graph, const PassContext &context);

} // namespace tensorc
