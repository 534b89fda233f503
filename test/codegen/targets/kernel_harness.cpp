// Runs the generated kernel cases (KernelCases.h) from a shared object emitted by
// tensorc-emit-test-kernels and checks them against plain C++ loops in double precision:
//   kernel_harness KERNELS.so        (prints one line per case; exit 1 on any mismatch)
// Built for the kernels' architecture: natively, or with a cross compiler and run under qemu.
#include "KernelCases.h"
#include "tensorc/Codegen/CPU/WeightPacking.h"

#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace {

using GemmFn = void(const float *, int64_t, const float *, float *, int64_t, int64_t, int64_t,
                    int64_t, int64_t, int64_t, const float *);
using GemmTilesFn = int64_t(int64_t, int64_t);
using ConvFn = void(const float *, const float *, float *, int64_t, int64_t, int64_t,
                    const float *);
using ConvTilesFn = int64_t(int64_t);

std::vector<float> randomVector(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

bool close(double got, double expected, double magnitude) {
  return std::fabs(got - expected) <= 1e-5 * magnitude + 1e-5;
}

int checkGemm(void *library) {
  auto gemm = reinterpret_cast<GemmFn *>(dlsym(library, "gemm"));
  auto tiles = reinterpret_cast<GemmTilesFn *>(dlsym(library, "gemm_tiles"));
  if (!gemm || !tiles) {
    std::printf("FAIL gemm: symbols missing\n");
    return 1;
  }
  int failures = 0;
  for (const auto &s : tensorc::testcases::gemmCases()) {
    std::vector<float> a = randomVector(size_t(s.m * s.k), 1),
                       b = randomVector(size_t(s.k * s.n), 2);
    std::vector<float> bias = randomVector(size_t(s.n), 3);
    std::vector<float> packed = tensorc::cpu::packGemmB(b.data(), s.k, s.n, s.n, 1);
    int64_t ldc = s.n + 2;
    std::vector<float> c(size_t(s.m * ldc), std::nanf(""));
    int64_t count = tiles(s.m, s.n);
    gemm(a.data(), s.k, packed.data(), c.data(), ldc, s.m, s.n, s.k, 0, count / 2, bias.data());
    gemm(a.data(), s.k, packed.data(), c.data(), ldc, s.m, s.n, s.k, count / 2, count, bias.data());
    int bad = 0;
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < ldc; ++j) {
        float got = c[size_t(i * ldc + j)];
        if (j >= s.n) {
          bad += !std::isnan(got); // padding untouched
          continue;
        }
        double sum = 0, magnitude = 0;
        for (int64_t p = 0; p < s.k; ++p) {
          double term = double(a[size_t(i * s.k + p)]) * b[size_t(p * s.n + j)];
          sum += term;
          magnitude += std::fabs(term);
        }
        bad += !close(got, tensorc::testcases::epilogue(sum, bias[size_t(j)], 0, i), magnitude);
      }
    std::printf("%s gemm %ldx%ldx%ld (%d wrong)\n", bad ? "FAIL" : "ok", long(s.m), long(s.n),
                long(s.k), bad);
    failures += bad != 0;
  }
  return failures;
}

int checkConv(void *library, const tensorc::testcases::ConvCase &c) {
  auto conv = reinterpret_cast<ConvFn *>(dlsym(library, c.name));
  auto tiles =
      reinterpret_cast<ConvTilesFn *>(dlsym(library, (std::string(c.name) + "_tiles").c_str()));
  if (!conv || !tiles) {
    std::printf("FAIL %s: symbols missing\n", c.name);
    return 1;
  }
  int64_t cg = c.c / c.groups, ocg = c.oc / c.groups, oh = c.oh(), ow = c.ow();
  std::vector<float> input = randomVector(size_t(c.images * c.h * c.w * c.c), 4);
  std::vector<float> weights = randomVector(size_t(c.oc * cg * c.k * c.k), 5);
  std::vector<float> bias = randomVector(size_t(c.oc), 6);
  std::vector<float> packed =
      c.depthwise()
          ? tensorc::cpu::packDepthwiseWeights(weights.data(), c.c, c.k, c.k)
          : tensorc::cpu::packConvWeights(weights.data(), {c.oc, c.c, c.k, c.k, c.groups});
  std::vector<float> out(size_t(c.images * oh * ow * c.oc), std::nanf(""));
  int64_t count = tiles(c.images);
  conv(input.data(), packed.data(), out.data(), c.images, 0, count / 2, bias.data());
  conv(input.data(), packed.data(), out.data(), c.images, count / 2, count, bias.data());
  int bad = 0;
  for (int64_t n = 0; n < c.images; ++n)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t x = 0; x < ow; ++x)
        for (int64_t o = 0; o < c.oc; ++o) {
          int64_t g = o / ocg;
          double sum = 0, magnitude = 0;
          for (int64_t i = 0; i < cg; ++i)
            for (int64_t kh = 0; kh < c.k; ++kh)
              for (int64_t kw = 0; kw < c.k; ++kw) {
                int64_t ih = y * c.stride - c.pad + kh * c.dilation;
                int64_t iw = x * c.stride - c.pad + kw * c.dilation;
                if (ih < 0 || ih >= c.h || iw < 0 || iw >= c.w)
                  continue;
                double term =
                    double(input[size_t(((n * c.h + ih) * c.w + iw) * c.c + g * cg + i)]) *
                    weights[size_t(((o * cg + i) * c.k + kh) * c.k + kw)];
                sum += term;
                magnitude += std::fabs(term);
              }
          float got = out[size_t(((n * oh + y) * ow + x) * c.oc + o)];
          bad += !close(got, tensorc::testcases::epilogue(sum, bias[size_t(o)], n, y * ow + x),
                        magnitude);
        }
  std::printf("%s %s (%d wrong)\n", bad ? "FAIL" : "ok", c.name, bad);
  return bad != 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s KERNELS.so\n", argv[0]);
    return 2;
  }
  void *library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    std::fprintf(stderr, "kernel_harness: %s\n", dlerror());
    return 2;
  }
  int failures = checkGemm(library);
  for (const auto &c : tensorc::testcases::convCases())
    failures += checkConv(library, c);
  std::printf("%s\n", failures ? "FAILED" : "all cases passed");
  return failures ? 1 : 0;
}
