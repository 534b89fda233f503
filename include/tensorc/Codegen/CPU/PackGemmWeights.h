// Compile-time packing of constant GEMM operands for the CPU: the B operand of every GEMM template
// that reads a weight is replaced by a weight holding it in the micro-kernels' strips
// (WeightPacking.h), so a bundle stores its weights packed and no run repacks them.
#pragma once

#include "tensorc/Codegen/CPU/Conv.h"
#include "tensorc/Lowering/LoopIR.h"
#include "tensorc/Scheduler/Schedule.h"
#include "tensorc/Support/Status.h"

namespace tensorc::cpu {

/// Rewrites each scheduled f32 GEMM whose B is a view of a weight with static shape and strides
/// into one reading a packed copy (LoopNode::Gemm::packedB). GEMMs reading the same view share one
/// copy. The copy replaces the weight's data when nothing else reads the weight (no second copy
/// in the bundle); otherwise it is a new weight `<name>.packed16` added to the kernel's args. The
/// packed layout is the CPU's: call this only when no other back end compiles the program.
/// Returns the number of GEMMs rewritten.
Expected<int> packGemmWeights(loop::LoopProgram &program, sched::Schedule &schedule);

/// Rewrites each scheduled f32 channels-last convolution whose weight is a static view of a
/// weight into one reading a packed copy (packConvWeights, packDepthwiseWeights for depthwise
/// ones, or with `winograd` packWinogradWeights for those that winogradFits;
/// LoopNode::Conv::packedWeights, winograd) and chooses its task tiles (Conv::tileM, tileN),
/// which fix its launch range. Copies replace the weight's data as packGemmWeights' do (a new
/// weight is `<name>.conv16`). Returns the number of convolutions rewritten.
Expected<int> packConvTemplates(loop::LoopProgram &program, sched::Schedule &schedule,
                                bool winograd = true);

/// The kernel parameters (NHWC) of a channels-last convolution node.
ConvParams convParamsOf(const loop::LoopNode::Conv &conv);

/// sched::ScheduleOptions::writesOutputOnce for CPU-only bundles: channels-last convolutions
/// whose kernel writes each output element once (convWritesOutputOnce; never one on the depthwise
/// kernel: depthwise or channelwiseFits).
bool templateWritesOutputOnce(const loop::LoopNode &templateNode);

} // namespace tensorc::cpu
