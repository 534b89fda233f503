// The kernel cases shared by the test-kernel generator (emit_kernels.cpp, which compiles them for
// a CPU target into a shared object) and the harness that runs them (kernel_harness.cpp, built
// for the target: natively, or cross-built and run under qemu). Plain C++: no LLVM.
#pragma once

#include <cstdint>
#include <vector>

namespace tensorc::testcases {

/// A convolution case: NHWC, batch `images`, padding `pad` on every side; depthwise when
/// groups == c == oc.
struct ConvCase {
  const char *name;
  int64_t c, h, w, oc, k, stride, pad, groups, dilation, images;
  int64_t oh() const { return (h + 2 * pad - dilation * (k - 1) - 1) / stride + 1; }
  int64_t ow() const { return (w + 2 * pad - dilation * (k - 1) - 1) / stride + 1; }
  bool depthwise() const { return groups > 1 && groups == c && groups == oc; }
};

/// Tails everywhere: channels not multiples of 16, output rows not multiples of the row tiles,
/// borders, strides, groups, dilation, 1x1 as GEMM, a stem on 3 channels.
inline std::vector<ConvCase> convCases() {
  return {
      {"conv3x3", 16, 9, 11, 20, 3, 1, 1, 1, 1, 2},
      {"stem7x7s2", 3, 12, 30, 24, 7, 2, 3, 1, 1, 1},
      {"pointwise", 40, 7, 9, 50, 1, 1, 0, 1, 1, 2},
      {"grouped3x3s2", 16, 10, 10, 24, 3, 2, 1, 4, 1, 1},
      {"dilated5x5", 5, 12, 13, 7, 5, 1, 4, 1, 2, 1},
      {"depthwise3x3", 40, 9, 11, 40, 3, 1, 1, 40, 1, 2},
      {"depthwise5x5s2", 72, 11, 11, 72, 5, 2, 2, 72, 1, 1},
  };
}

/// GEMM shapes (M, N, K) for the packed-B GEMM kernel (runtime shapes, one kernel).
struct GemmCase {
  int64_t m, n, k;
};
inline std::vector<GemmCase> gemmCases() {
  return {{1, 1, 1}, {7, 13, 5}, {13, 33, 300}, {65, 129, 33}, {1, 300, 64}, {16, 100, 600}};
}

/// The epilogue every generated case applies: relu(acc + bias[col]) + 0.25 * outer + 0.001 * row,
/// where for a GEMM row is M's index and outer 0; for a convolution, outer is the image and row
/// the output pixel (oh * OW + ow), col the output channel.
inline double epilogue(double acc, double bias, int64_t outer, int64_t row) {
  return (acc + bias > 0 ? acc + bias : 0.0) + 0.25 * double(outer) + 0.001 * double(row);
}

} // namespace tensorc::testcases
