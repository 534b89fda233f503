// Compile-time packing of weights into the layouts the CPU micro-kernels stream: plain C++ (no
// LLVM), called by the compiler on constant tensors so that a bundle stores its weights packed.
// Every layout is the same for all CPU targets (AVX2, AVX-512, NEON), so one weights file serves
// every variant of a bundle.
#pragma once

#include <cstdint>
#include <vector>

namespace tensorc::cpu {

/// Columns (GEMM N, output channels) per packed strip: one AVX-512 vector, two AVX2 vectors, four
/// NEON vectors. A micro-kernel reads a whole strip per K step.
constexpr int64_t kPackStrip = 16;

/// Floats of a packed K x N GEMM operand B: ceil(N / 16) strips of K rows of 16 floats.
int64_t packedGemmBSize(int64_t k, int64_t n);

/// Packs B (K x N; element (k, n) at b[k * rowStride + n * colStride]) into strips of 16 columns:
/// element (k, n) goes to out[(n / 16) * K * 16 + k * 16 + n % 16]; the columns past N in the last
/// strip are zero. `out` holds packedGemmBSize(k, n) floats.
void packGemmB(const float *b, int64_t k, int64_t n, int64_t rowStride, int64_t colStride,
               float *out);
std::vector<float> packGemmB(const float *b, int64_t k, int64_t n, int64_t rowStride,
                             int64_t colStride);

/// A 2-D convolution's weights in PyTorch layout [OC][C / groups][KH][KW], contiguous.
struct ConvWeightShape {
  int64_t oc = 0, c = 0, kh = 0, kw = 0, groups = 1;
  int64_t cg() const { return c / groups; }
  int64_t ocg() const { return oc / groups; }
};

/// Floats of packed convolution weights: per group, the K x OCg GEMM operand with K = KH*KW*Cg in
/// (kh, kw, c) order (the order of an NHWC patch), packed as packGemmB: groups of
/// packedGemmBSize(KH*KW*Cg, OCg) floats.
int64_t packedConvWeightSize(const ConvWeightShape &shape);
std::vector<float> packConvWeights(const float *weights, const ConvWeightShape &shape);

/// Winograd F(2x2, 3x3) weights for a 3x3 convolution without groups, [OC][C][3][3]: each filter
/// transformed to U = G g G^T (4 x 4, in double, then rounded), and for each of the 16 points
/// xi = 4 * row + column of U the C x OC operand U_xi[c][o] packed as packGemmB, one after
/// another: point xi at xi * packedGemmBSize(C, OC).
int64_t packedWinogradSize(int64_t oc, int64_t c);
std::vector<float> packWinogradWeights(const float *weights, int64_t oc, int64_t c);

/// Depthwise weights [C][G][KH][KW] (G input channels per output channel: 1 for depthwise, C /
/// groups for channelwiseFits groups) for the NHWC depthwise kernel: strips of 16 output channels,
/// each KH*KW taps of G x 16 floats: channel c, tap t, input ci of its group at (c / 16) * KH*KW*G
/// * 16 + (t * G + ci) * 16 + c % 16, channels past C zero.
int64_t packedDepthwiseSize(int64_t c, int64_t kh, int64_t kw, int64_t group = 1);
std::vector<float> packDepthwiseWeights(const float *weights, int64_t c, int64_t kh, int64_t kw,
                                        int64_t group = 1);

} // namespace tensorc::cpu
