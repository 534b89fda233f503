// Every ONNX op the importer converts, in one list with its converter (defined in the
// OnnxOps*.cpp files), and the lookup the importer dispatches on (OnnxOpTable.cpp).
#pragma once

#include "ConvertContext.h"

#include <string_view>

namespace tensorc::onnx {

/// Converts one ONNX node; opset differences are handled inside.
using ConvertFn = Status (*)(ConvertContext &);

/// The converter of default-domain op `type`; nullptr when none handles it.
ConvertFn findConverter(std::string_view type);
/// The registry op that ONNX op `type` is on the same inputs (the ops of convertDirect); empty
/// for other ops.
std::string_view directOp(std::string_view type);

/// The ONNX ops with a converter of their own: X(op type, converter), sorted by op type
/// (std::string_view order; OnnxOpTable.cpp checks it). Adding an op is adding a line here.
#define TENSORC_ONNX_CONVERTERS(X)                                                                 \
  X(Add, convertAdd)                                                                               \
  X(ArgMax, convertArgMax)                                                                         \
  X(ArgMin, convertArgMin)                                                                         \
  X(AveragePool, convertAveragePool)                                                               \
  X(BatchNormalization, convertBatchNormalization)                                                 \
  X(BitShift, convertBitShift)                                                                     \
  X(BlackmanWindow, convertBlackmanWindow)                                                         \
  X(Cast, convertCast)                                                                             \
  X(CastLike, convertCastLike)                                                                     \
  X(Celu, convertCelu)                                                                             \
  X(Clip, convertClip)                                                                             \
  X(Compress, convertCompress)                                                                     \
  X(Concat, convertConcat)                                                                         \
  X(Constant, convertConstant)                                                                     \
  X(ConstantOfShape, convertConstantOfShape)                                                       \
  X(Conv, convertConv)                                                                             \
  X(ConvInteger, convertConvInteger)                                                               \
  X(ConvTranspose, convertConvTranspose)                                                           \
  X(CumSum, convertCumSum)                                                                         \
  X(DFT, convertDft)                                                                               \
  X(DepthToSpace, convertDepthToSpace)                                                             \
  X(DequantizeLinear, convertDequantizeLinear)                                                     \
  X(Det, convertDet)                                                                               \
  X(Div, convertDiv)                                                                               \
  X(Dropout, convertDropout)                                                                       \
  X(DynamicQuantizeLinear, convertDynamicQuantizeLinear)                                           \
  X(Einsum, convertEinsum)                                                                         \
  X(Elu, convertElu)                                                                               \
  X(Expand, convertExpand)                                                                         \
  X(EyeLike, convertEyeLike)                                                                       \
  X(Flatten, convertFlatten)                                                                       \
  X(GRU, convertGRU)                                                                               \
  X(Gather, convertGather)                                                                         \
  X(GatherElements, convertGatherElements)                                                         \
  X(GatherND, convertGatherND)                                                                     \
  X(Gelu, convertGelu)                                                                             \
  X(Gemm, convertGemm)                                                                             \
  X(GlobalAveragePool, convertGlobalAveragePool)                                                   \
  X(GlobalMaxPool, convertGlobalMaxPool)                                                           \
  X(GridSample, convertGridSample)                                                                 \
  X(HammingWindow, convertHammingWindow)                                                           \
  X(HannWindow, convertHannWindow)                                                                 \
  X(HardSigmoid, convertHardSigmoid)                                                               \
  X(HardSwish, convertHardSwish)                                                                   \
  X(Hardmax, convertHardmax)                                                                       \
  X(Identity, convertIdentity)                                                                     \
  X(If, convertIf)                                                                                 \
  X(InstanceNormalization, convertInstanceNormalization)                                           \
  X(IsInf, convertIsInf)                                                                           \
  X(LRN, convertLRN)                                                                               \
  X(LSTM, convertLSTM)                                                                             \
  X(LayerNormalization, convertLayerNormalization)                                                 \
  X(LeakyRelu, convertLeakyRelu)                                                                   \
  X(LogSoftmax, convertLogSoftmax)                                                                 \
  X(Loop, convertLoop)                                                                             \
  X(LpNormalization, convertLpNormalization)                                                       \
  X(LpPool, convertLpPool)                                                                         \
  X(MatMul, convertMatMul)                                                                         \
  X(MatMulInteger, convertMatMulInteger)                                                           \
  X(Max, convertMax)                                                                               \
  X(MaxPool, convertMaxPool)                                                                       \
  X(MaxUnpool, convertMaxUnpool)                                                                   \
  X(Mean, convertMean)                                                                             \
  X(MeanVarianceNormalization, convertMeanVarianceNormalization)                                   \
  X(MelWeightMatrix, convertMelWeightMatrix)                                                       \
  X(Min, convertMin)                                                                               \
  X(Mish, convertMish)                                                                             \
  X(Mod, convertMod)                                                                               \
  X(Mul, convertMul)                                                                               \
  X(NegativeLogLikelihoodLoss, convertNegativeLogLikelihoodLoss)                                   \
  X(NonMaxSuppression, convertNonMaxSuppression)                                                   \
  X(NonZero, convertNonZero)                                                                       \
  X(OneHot, convertOneHot)                                                                         \
  X(PRelu, convertPRelu)                                                                           \
  X(Pad, convertPad)                                                                               \
  X(Pow, convertPow)                                                                               \
  X(QLinearConv, convertQLinearConv)                                                               \
  X(QLinearMatMul, convertQLinearMatMul)                                                           \
  X(QuantizeLinear, convertQuantizeLinear)                                                         \
  X(RNN, convertRNN)                                                                               \
  X(Range, convertRange)                                                                           \
  X(ReduceL1, convertReduceL1)                                                                     \
  X(ReduceL2, convertReduceL2)                                                                     \
  X(ReduceLogSum, convertReduceLogSum)                                                             \
  X(ReduceLogSumExp, convertReduceLogSumExp)                                                       \
  X(ReduceMax, convertReduceMax)                                                                   \
  X(ReduceMean, convertReduceMean)                                                                 \
  X(ReduceMin, convertReduceMin)                                                                   \
  X(ReduceProd, convertReduceProd)                                                                 \
  X(ReduceSum, convertReduceSum)                                                                   \
  X(ReduceSumSquare, convertReduceSumSquare)                                                       \
  X(Reshape, convertReshape)                                                                       \
  X(Resize, convertResize)                                                                         \
  X(ReverseSequence, convertReverseSequence)                                                       \
  X(RoiAlign, convertRoiAlign)                                                                     \
  X(STFT, convertStft)                                                                             \
  X(Scan, convertScan)                                                                             \
  X(Scatter, convertScatterElements)                                                               \
  X(ScatterElements, convertScatterElements)                                                       \
  X(ScatterND, convertScatterND)                                                                   \
  X(Selu, convertSelu)                                                                             \
  X(Shape, convertShape)                                                                           \
  X(Shrink, convertShrink)                                                                         \
  X(Size, convertSize)                                                                             \
  X(Slice, convertSlice)                                                                           \
  X(Softmax, convertSoftmax)                                                                       \
  X(SoftmaxCrossEntropyLoss, convertSoftmaxCrossEntropyLoss)                                       \
  X(Softplus, convertSoftplus)                                                                     \
  X(Softsign, convertSoftsign)                                                                     \
  X(SpaceToDepth, convertSpaceToDepth)                                                             \
  X(Split, convertSplit)                                                                           \
  X(Squeeze, convertSqueeze)                                                                       \
  X(Sub, convertSub)                                                                               \
  X(Sum, convertSum)                                                                               \
  X(ThresholdedRelu, convertThresholdedRelu)                                                       \
  X(Tile, convertTile)                                                                             \
  X(TopK, convertTopK)                                                                             \
  X(Transpose, convertTranspose)                                                                   \
  X(Trilu, convertTrilu)                                                                           \
  X(Unique, convertUnique)                                                                         \
  X(Unsqueeze, convertUnsqueeze)                                                                   \
  X(Upsample, convertResize)

/// The ONNX ops that are one registry op on the same inputs, converted by convertDirect:
/// X(op type, registry op), sorted by op type.
#define TENSORC_ONNX_DIRECT_OPS(X)                                                                 \
  X(Abs, "aten.abs")                                                                               \
  X(Acos, "aten.acos")                                                                             \
  X(Acosh, "aten.acosh")                                                                           \
  X(And, "aten.logical_and")                                                                       \
  X(Asin, "aten.asin")                                                                             \
  X(Asinh, "aten.asinh")                                                                           \
  X(Atan, "aten.atan")                                                                             \
  X(Atanh, "aten.atanh")                                                                           \
  X(BitwiseAnd, "aten.bitwise_and")                                                                \
  X(BitwiseNot, "aten.bitwise_not")                                                                \
  X(BitwiseOr, "aten.bitwise_or")                                                                  \
  X(BitwiseXor, "aten.bitwise_xor")                                                                \
  X(Ceil, "aten.ceil")                                                                             \
  X(Cos, "aten.cos")                                                                               \
  X(Cosh, "aten.cosh")                                                                             \
  X(Equal, "aten.eq")                                                                              \
  X(Erf, "aten.erf")                                                                               \
  X(Exp, "aten.exp")                                                                               \
  X(Floor, "aten.floor")                                                                           \
  X(Greater, "aten.gt")                                                                            \
  X(GreaterOrEqual, "aten.ge")                                                                     \
  X(IsNaN, "aten.isnan")                                                                           \
  X(Less, "aten.lt")                                                                               \
  X(LessOrEqual, "aten.le")                                                                        \
  X(Log, "aten.log")                                                                               \
  X(Neg, "aten.neg")                                                                               \
  X(Not, "aten.logical_not")                                                                       \
  X(Or, "aten.logical_or")                                                                         \
  X(Reciprocal, "aten.reciprocal")                                                                 \
  X(Relu, "aten.relu")                                                                             \
  X(Round, "aten.round")                                                                           \
  X(Sigmoid, "aten.sigmoid")                                                                       \
  X(Sign, "aten.sign")                                                                             \
  X(Sin, "aten.sin")                                                                               \
  X(Sinh, "aten.sinh")                                                                             \
  X(Sqrt, "aten.sqrt")                                                                             \
  X(Tan, "aten.tan")                                                                               \
  X(Tanh, "aten.tanh")                                                                             \
  X(Where, "aten.where")                                                                           \
  X(Xor, "aten.logical_xor")

#define TENSORC_DECLARE_CONVERTER(type, convert) Status convert(ConvertContext &c);
TENSORC_ONNX_CONVERTERS(TENSORC_DECLARE_CONVERTER)
#undef TENSORC_DECLARE_CONVERTER

/// Emits the registry op directOp() names on all inputs.
Status convertDirect(ConvertContext &c);

} // namespace tensorc::onnx
