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

int64_t packedWinogradSize(int64_t oc, int64_t c) { return 16 * packedGemmBSize(c, oc); }

std::vector<float> packWinogradWeights(const float *weights, int64_t oc, int64_t c) {
  // G = [[1, 0, 0], [1/2, 1/2, 1/2], [1/2, -1/2, 1/2], [0, 0, 1]].
  static constexpr double g[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  std::vector<float> out(size_t(packedWinogradSize(oc, c)));
  std::vector<float> points(size_t(16 * c * oc)); // [xi][c][o]
  for (int64_t o = 0; o < oc; ++o)
    for (int64_t ci = 0; ci < c; ++ci) {
      const float *filter = weights + (o * c + ci) * 9;
      double rows[4][3]; // G g
      for (int r = 0; r < 4; ++r)
        for (int j = 0; j < 3; ++j)
          rows[r][j] = g[r][0] * filter[j] + g[r][1] * filter[3 + j] + g[r][2] * filter[6 + j];
      for (int r = 0; r < 4; ++r)
        for (int s = 0; s < 4; ++s)
          points[size_t(((r * 4 + s) * c + ci) * oc + o)] =
              float(rows[r][0] * g[s][0] + rows[r][1] * g[s][1] + rows[r][2] * g[s][2]);
    }
  const int64_t size = packedGemmBSize(c, oc);
  for (int64_t xi = 0; xi < 16; ++xi)
    packGemmB(points.data() + xi * c * oc, c, oc, oc, 1, out.data() + xi * size);
  return out;
}

int64_t packedDepthwiseSize(int64_t c, int64_t kh, int64_t kw, int64_t group) {
  return strips(c) * kh * kw * group * kPackStrip;
}

std::vector<float> packDepthwiseWeights(const float *weights, int64_t c, int64_t kh, int64_t kw,
                                        int64_t group) {
  const int64_t taps = kh * kw;
  // B[t * G + ci][ch] = weights[(ch * G + ci) * KH*KW + t], a (KH*KW*G) x C operand.
  std::vector<float> b(size_t(taps * group * c));
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t ci = 0; ci < group; ++ci)
      for (int64_t t = 0; t < taps; ++t)
        b[size_t((t * group + ci) * c + ch)] = weights[(ch * group + ci) * taps + t];
  return packGemmB(b.data(), taps * group, c, c, 1);
}

} // namespace tensorc::cpu
