// Registration entry points of the op groups, one per lib/Ops/*.cpp file.
#pragma once

#include "tensorc/IR/OpDef.h"

namespace tensorc::ops {

/// prims.constant, elementwise unary/binary ops, where, clamp, convert_element_type.
Status registerElementwiseOps(OpRegistry &registry);
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
/// view, reshape, permute, transpose, t, expand, squeeze, unsqueeze, slice, cat, split, gather,
/// index_select, pad, embedding, clone.
Status registerViewOps(OpRegistry &registry);
/// full, arange, zeros_like, full_like.
Status registerCreationOps(OpRegistry &registry);
/// Scans and selections: cumsum, topk.
Status registerScanOps(OpRegistry &registry);
/// Indexing, scatter and resampling: gather_nd, scatter, resize.
Status registerIndexingOps(OpRegistry &registry);
/// Data-dependent and miscellaneous ops: nonzero, unique, compress, non_max_suppression,
/// grid_sample, max_pool_with_indices, reverse_sequence, roi_align, det, dft, stft.
Status registerMiscOps(OpRegistry &registry);
/// Gradient rules of the differentiable primitives (Gradients.cpp), set on ops already defined.
Status registerGradientRules(OpRegistry &registry);

} // namespace tensorc::ops
