// Weight packing for the CPU micro-kernels: GEMM B strips, convolution and depthwise weights.
#include "tensorc/Codegen/CPU/WeightPacking.h"

#include <algorithm>

namespace tensorc::cpu {

namespace {

int64_t strips(int64_t n) { return (n + kPackStrip - 1) / kPackStrip; }

} // namespace

int64_t packedGemmBSize(int64_t k, int64_t n) { return strips(n) * k * kPackStrip; }

void packGemmB(const float *b, int64_t k, int64_t n, int64_t rowStride, int64_t colStride,
               float *out) {
  for (int64_t s = 0; s < strips(n); ++s) {
    float *strip = out + s * k * kPackStrip;
    int64_t width = std::min(kPackStrip, n - s * kPackStrip);
    for (int64_t p = 0; p < k; ++p) {
      float *row = strip + p * kPackStrip;
      for (int64_t j = 0; j < kPackStrip; ++j)
        row[j] = j < width ? b[p * rowStride + (s * kPackStrip + j) * colStride] : 0.0f;
    }
  }
}

std::vector<float> packGemmB(const float *b, int64_t k, int64_t n, int64_t rowStride,
                             int64_t colStride) {
  std::vector<float> out(size_t(packedGemmBSize(k, n)));
  packGemmB(b, k, n, rowStride, colStride, out.data());
  return out;
}

int64_t packedConvWeightSize(const ConvWeightShape &shape) {
  return shape.groups * packedGemmBSize(shape.kh * shape.kw * shape.cg(), shape.ocg());
}

std::vector<float> packConvWeights(const float *weights, const ConvWeightShape &s) {
  // As a GEMM operand of group g: B[k][o] with k = (kh * KW + kw) * Cg + c, o the output channel
  // within the group; weights[o][c][kh][kw] sits at ((o * Cg + c) * KH + kh) * KW + kw.
  std::vector<float> out(size_t(packedConvWeightSize(s)));
  int64_t k = s.kh * s.kw * s.cg(), groupSize = packedGemmBSize(k, s.ocg());
  std::vector<float> b(size_t(k * s.ocg()));
  for (int64_t g = 0; g < s.groups; ++g) {
    const float *group = weights + g * s.ocg() * s.cg() * s.kh * s.kw;
    for (int64_t o = 0; o < s.ocg(); ++o)
      for (int64_t c = 0; c < s.cg(); ++c)
        for (int64_t t = 0; t < s.kh * s.kw; ++t)
          b[size_t((t * s.cg() + c) * s.ocg() + o)] = group[(o * s.cg() + c) * s.kh * s.kw + t];
    packGemmB(b.data(), k, s.ocg(), s.ocg(), 1, out.data() + g * groupSize);
  }
  return out;
}

int64_t packedDepthwiseSize(int64_t c, int64_t kh, int64_t kw) {
  return strips(c) * kh * kw * kPackStrip;
}

std::vector<float> packDepthwiseWeights(const float *weights, int64_t c, int64_t kh, int64_t kw) {
  // Channel ch's taps are weights[ch * KH*KW + t]: a KH*KW x C matrix with row stride 1.
  return packGemmB(weights, kh * kw, c, 1, kh * kw);
}

} // namespace tensorc::cpu
