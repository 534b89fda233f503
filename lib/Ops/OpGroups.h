// Registration entry points of the op groups, one per lib/Ops/*.cpp file.
#pragma once

#include "tensorc/IR/OpDef.h"

namespace tensorc::ops {

using RegisterFn = Status (*)(OpRegistry &registry);
/// Every group below, in registration order (buildCoreRegistry runs them all).
const std::vector<RegisterFn> &allOpGroups();

/// prims.constant, elementwise unary ops, gelu, silu, clamp, convert_element_type.
Status registerElementwiseOps(OpRegistry &registry);
/// Elementwise binary ops (arithmetic, comparisons, logical, bitwise) and where.
Status registerElementwiseBinaryOps(OpRegistry &registry);
/// sum, mean, amax, amin, prod, argmax, argmin, var, softmax, log_softmax.
Status registerReductionOps(OpRegistry &registry);
/// mm, bmm, addmm, matmul.
Status registerLinearAlgebraOps(OpRegistry &registry);
/// convolution, max_pool, avg_pool.
Status registerConvolutionOps(OpRegistry &registry);
/// batch_norm, layer_norm.
Status registerNormalizationOps(OpRegistry &registry);
/// scaled_dot_product_attention.
Status registerAttentionOps(OpRegistry &registry);
/// view, reshape, permute, transpose, t, expand, squeeze, unsqueeze, slice, cat, split, clone.
Status registerViewOps(OpRegistry &registry);
/// pad (every mode).
Status registerPadOps(OpRegistry &registry);
/// full, arange, zeros_like, full_like.
Status registerCreationOps(OpRegistry &registry);
/// Scans and selections: cumsum, topk.
Status registerScanOps(OpRegistry &registry);
/// Indexing, scatter and resampling: gather, index_select, embedding, gather_nd, scatter,
/// scatter_nd, resize.
Status registerIndexingOps(OpRegistry &registry);
/// Data-dependent and miscellaneous ops: nonzero, unique, compress, non_max_suppression,
/// reverse_sequence, det, dft, stft.
Status registerMiscOps(OpRegistry &registry);
/// Spatial sampling: grid_sample, max_pool_with_indices, roi_align.
Status registerSamplingOps(OpRegistry &registry);
/// Gradient rules of the differentiable primitives (Gradients.cpp), set on ops already defined.
Status registerGradientRules(OpRegistry &registry);
/// Gradient rules of mm, bmm, convolution, max_pool, avg_pool (GradientsNN.cpp).
Status registerNNGradientRules(OpRegistry &registry);

} // namespace tensorc::ops
