// Lowering (DESIGN §4): a decomposed Graph -> LoopProgram of pointwise, reduction, template and
// extern nodes, inlining pointwise producers and views into their consumers' bodies.
#pragma once

#include "tensorc/IR/Graph.h"
#include "tensorc/Lowering/LoopIR.h"
#include "tensorc/Support/Status.h"

namespace tensorc::loop {

/// What lowering does with an op it has no generated kernel for (`compile --fallback`): run it
/// on its reference kernel in the runtime (an Extern node), or stop with an error naming the
/// node, op and reason (GPU bundles must not depend on the host).
enum class FallbackPolicy : uint8_t { Allow, Error };
Expected<FallbackPolicy> parseFallbackPolicy(const std::string &text);

struct LowerOptions {
  /// A pointwise value with several users is computed once into a buffer when its body is at least
  /// this expensive (ops counted, transcendental ops count 8), else recomputed by each user.
  int realizeCostThreshold = 16;
  /// A pointwise value with several users is also computed once when its body reads more than
  /// this many distinct buffers of its own size: a residual stream x + p1 + p2 + ... is cheap to
  /// compute but each user re-reads every term (a pre-norm transformer's layer norms and residual
  /// adds), so the terms read per element stay bounded. Two users inlining r terms read 2r
  /// elements; computed once by the first (the norm's row kernel, which then stores it) they read
  /// r + 1 and write 1: fewer from r = 3 on.
  int realizeReadsThreshold = 2;
  /// A pointwise value whose inlined body reaches this cost is computed into a buffer whatever
  /// its users: it bounds the depth of a body's expression graph (a chain of thousands of
  /// elementwise ops), which every later walk recurses through, at one extra buffer per this many
  /// ops.
  int maxInlineCost = 256;
  /// GEMMs whose operands and result are one float dtype (f16, bf16) become templates too, not
  /// only f32 ones (the CUDA backend accumulates them in f32; the CPU GEMM is f32-only, so bundles
  /// with CPU kernels leave them to the reference kernel).
  bool halfPrecisionTemplates = false;
  /// aten.scaled_dot_product_attention without a mask, head dims <= 256, becomes an attention
  /// template (CUDA only; otherwise it runs on its reference kernel).
  bool attentionTemplates = false;
  /// Convolutions become channels-last templates (CUDA only: the kernel library's NHWC
  /// implicit GEMM and depthwise kernels): f32, and f16/bf16 under halfPrecisionTemplates.
  /// Pointwise values that read channels-last buffers are stored channels-last too, so a chain
  /// of convolutions keeps NHWC between them; graph outputs keep their declared layout.
  bool channelsLastConv = false;
  /// Under channelsLastConv, only convolutions whose weights are constants go channels-last
  /// (CPU inference: the back end packs them at compile time); the others keep the NCHW form.
  bool channelsLastNeedsConstantWeights = false;
  /// Under channelsLastConv, a pool's or pad's input that must be computed once is stored in
  /// the layout its loads suggest (LowerContext::materialize: NHWC after a convolution), not
  /// NCHW, so a conv -> relu -> max_pool stem keeps NHWC (and the relu stays the conv's epilogue);
  /// a value whose loads read channels contiguously (a pool over an NHWC buffer) is stored NHWC.
  bool channelsLastWindows = false;
  FallbackPolicy fallback = FallbackPolicy::Allow;
};

/// Lowers `graph` (after decomposition), each node by its op's rule (LoweringRules.h). Ops with
/// no generated kernel become Extern nodes saying why (reported in `fallbacks`), or errors under
/// FallbackPolicy::Error; errors name the node.
Expected<LoopProgram> lower(const Graph &graph, const LowerOptions &options = {});

} // namespace tensorc::loop
