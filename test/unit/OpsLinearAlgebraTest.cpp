// Tests of aten.mm, bmm, addmm and matmul against naive loops written here.
#include "OpTestUtil.h"

#include "tensorc/IR/Graph.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>

namespace tensorc::test {
namespace {

std::vector<double> randomValues(int64_t count, uint32_t seed, bool integers = false) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> values(static_cast<size_t>(count));
  for (double &value : values)
    value = integers ? std::round(dist(rng) * 5) : dist(rng);
  return values;
}

/// [n, k] @ [k, m], row-major, the textbook triple loop.
std::vector<double> naiveMatmul(const std::vector<double> &a, const std::vector<double> &b,
                                int64_t n, int64_t k, int64_t m) {
  std::vector<double> c(size_t(n * m), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j)
      for (int64_t p = 0; p < k; ++p)
        c[size_t(i * m + j)] += a[size_t(i * k + p)] * b[size_t(p * m + j)];
  return c;
}

void expectClose(const Tensor &actual, const std::vector<double> &expected, double tolerance) {
  std::vector<double> values = toDoubles(actual);
  ASSERT_EQ(values.size(), expected.size());
  for (size_t i = 0; i < values.size(); ++i)
    ASSERT_NEAR(values[i], expected[i], tolerance * (1 + std::abs(expected[i]))) << "element " << i;
}

Tensor runOne(std::string_view name, const std::vector<Tensor> &inputs, AttrMap attrs = {}) {
  Expected<std::vector<Tensor>> result = runOp(name, inputs, std::move(attrs));
  EXPECT_TRUE(result.hasValue()) << (result ? "" : result.error().message());
  if (!result)
    return Tensor();
  return (*result)[0];
}

std::string errorOf(std::string_view name, const std::vector<Tensor> &inputs, AttrMap attrs = {}) {
  Expected<std::vector<Tensor>> result = runOp(name, inputs, std::move(attrs));
  EXPECT_FALSE(result.hasValue()) << name << " should have failed";
  return result ? "" : result.error().message();
}

TEST(OpsLinearAlgebra, MmHandComputed) {
  Tensor a = makeTensor(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = makeTensor(DType::F32, {3, 2}, {7, 8, 9, 10, 11, 12});
  Tensor c = runOne("aten.mm", {a, b});
  EXPECT_EQ(c.shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(toDoubles(c), (std::vector<double>{58, 64, 139, 154}));
}

// Sizes straddle the micro-tile (6 x 16 / 6 x 8), the k block (256), the n block (2048 for f32)
// and the threading threshold, with odd tails everywhere.
TEST(OpsLinearAlgebra, MmMatchesNaiveLoopAcrossBlockingTails) {
  const std::vector<std::array<int64_t, 3>> sizes = {{1, 1, 1},       {7, 13, 5},     {6, 256, 16},
                                                     {13, 300, 33},   {67, 301, 129}, {5, 40, 2101},
                                                     {130, 520, 257}, {2, 700, 1}};
  for (DType dtype : {DType::F32, DType::F64}) {
    for (auto [n, k, m] : sizes) {
      SCOPED_TRACE(testing::Message() << dtypeName(dtype) << " " << n << "x" << k << "x" << m);
      std::vector<double> a = randomValues(n * k, 1), b = randomValues(k * m, 2);
      Tensor c = runOne("aten.mm", {makeTensor(dtype, {n, k}, a), makeTensor(dtype, {k, m}, b)});
      EXPECT_EQ(c.dtype(), dtype);
      expectClose(c, naiveMatmul(a, b, n, k, m), dtype == DType::F32 ? 1e-4 : 1e-12);
    }
  }
}

TEST(OpsLinearAlgebra, MmHalfTypesAccumulateInF32) {
  for (DType dtype : {DType::F16, DType::BF16}) {
    // Small integers are exact in both formats, and so is every partial sum here.
    std::vector<double> a = randomValues(9 * 40, 3, true), b = randomValues(40 * 11, 4, true);
    Tensor c = runOne("aten.mm", {makeTensor(dtype, {9, 40}, a), makeTensor(dtype, {40, 11}, b)});
    EXPECT_EQ(c.dtype(), dtype);
    std::vector<double> expected = naiveMatmul(a, b, 9, 40, 11);
    // Round the exact result like the kernel does once at the end.
    Tensor rounded = makeTensor(dtype, {9, 11}, expected);
    expectClose(c, toDoubles(rounded), 0);
  }
}

TEST(OpsLinearAlgebra, MmIntegers) {
  std::vector<double> a = randomValues(5 * 7, 5, true), b = randomValues(7 * 3, 6, true);
  Tensor c =
      runOne("aten.mm", {makeTensor(DType::I64, {5, 7}, a), makeTensor(DType::I64, {7, 3}, b)});
  EXPECT_EQ(c.dtype(), DType::I64);
  EXPECT_EQ(toDoubles(c), naiveMatmul(a, b, 5, 7, 3));
}

TEST(OpsLinearAlgebra, Bmm) {
  int64_t batch = 3, n = 4, k = 5, m = 7;
  std::vector<double> a = randomValues(batch * n * k, 7), b = randomValues(batch * k * m, 8);
  Tensor c = runOne("aten.bmm", {makeTensor(DType::F64, {batch, n, k}, a),
                                 makeTensor(DType::F64, {batch, k, m}, b)});
  EXPECT_EQ(c.shape(), (std::vector<int64_t>{batch, n, m}));
  std::vector<double> expected;
  for (int64_t i = 0; i < batch; ++i) {
    std::vector<double> ai(a.begin() + i * n * k, a.begin() + (i + 1) * n * k);
    std::vector<double> bi(b.begin() + i * k * m, b.begin() + (i + 1) * k * m);
    std::vector<double> ci = naiveMatmul(ai, bi, n, k, m);
    expected.insert(expected.end(), ci.begin(), ci.end());
  }
  expectClose(c, expected, 1e-12);
}

TEST(OpsLinearAlgebra, AddmmBroadcastsSelfAndScales) {
  int64_t n = 9, k = 20, m = 17;
  std::vector<double> a = randomValues(n * k, 9), b = randomValues(k * m, 10);
  std::vector<double> product = naiveMatmul(a, b, n, k, m);
  Tensor mat1 = makeTensor(DType::F32, {n, k}, a), mat2 = makeTensor(DType::F32, {k, m}, b);
  struct Case {
    std::vector<int64_t> selfShape;
    double beta, alpha;
  };
  for (const Case &c : std::vector<Case>{
           {{m}, 1, 1}, {{1, m}, 0.5, 2}, {{n, 1}, 2, -1}, {{n, m}, 1, 0.25}, {{}, 3, 1}}) {
    SCOPED_TRACE(testing::Message() << "self rank " << c.selfShape.size());
    int64_t selfCount = 1;
    for (int64_t dim : c.selfShape)
      selfCount *= dim;
    std::vector<double> self = randomValues(selfCount, 11);
    Tensor out = runOne("aten.addmm", {makeTensor(DType::F32, c.selfShape, self), mat1, mat2},
                        {{"beta", Attribute(c.beta)}, {"alpha", Attribute(c.alpha)}});
    ASSERT_EQ(out.shape(), (std::vector<int64_t>{n, m}));
    std::vector<double> expected(size_t(n * m));
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < m; ++j) {
        int64_t selfIndex =
            c.selfShape.empty() ? 0
            : c.selfShape.size() == 1
                ? j
                : (c.selfShape[0] == 1 ? 0 : i) * c.selfShape[1] + (c.selfShape[1] == 1 ? 0 : j);
        expected[size_t(i * m + j)] =
            c.beta * self[size_t(selfIndex)] + c.alpha * product[size_t(i * m + j)];
      }
    }
    expectClose(out, expected, 1e-5);
  }
}

TEST(OpsLinearAlgebra, AddmmBetaZeroIgnoresNaNInSelf) {
  Tensor self = makeTensor(DType::F32, {2}, {NAN, NAN});
  Tensor a = makeTensor(DType::F32, {1, 1}, {3});
  Tensor b = makeTensor(DType::F32, {1, 2}, {1, 2});
  Tensor out = runOne("aten.addmm", {self, a, b}, {{"beta", Attribute(int64_t(0))}});
  EXPECT_EQ(toDoubles(out), (std::vector<double>{3, 6}));
}

// The MLP layer shape the interpreter must run fast: [64, 1024] @ t(w) with w [4096, 1024].
TEST(OpsLinearAlgebra, AddmmMlpLayerSampled) {
  int64_t n = 64, k = 1024, m = 4096;
  std::vector<double> x = randomValues(n * k, 12), wt = randomValues(k * m, 13),
                      bias = randomValues(m, 14);
  Tensor out =
      runOne("aten.addmm", {makeTensor(DType::F32, {m}, bias), makeTensor(DType::F32, {n, k}, x),
                            makeTensor(DType::F32, {k, m}, wt)});
  std::vector<double> values = toDoubles(out);
  for (int64_t i = 0; i < n; i += 9) {
    for (int64_t j = 0; j < m; j += 97) {
      double expected = bias[size_t(j)];
      for (int64_t p = 0; p < k; ++p)
        expected += x[size_t(i * k + p)] * wt[size_t(p * m + j)];
      ASSERT_NEAR(values[size_t(i * m + j)], expected, 1e-3) << i << ", " << j;
    }
  }
}

TEST(OpsLinearAlgebra, MatmulVectorCases) {
  Tensor v = makeTensor(DType::F32, {3}, {1, 2, 3});
  Tensor w = makeTensor(DType::F32, {3}, {4, 5, 6});
  Tensor dot = runOne("aten.matmul", {v, w});
  EXPECT_EQ(dot.rank(), 0u);
  EXPECT_EQ(toDoubles(dot), (std::vector<double>{32}));

  Tensor matrix = makeTensor(DType::F32, {2, 3}, {1, 0, 2, -1, 3, 1});
  Tensor mv = runOne("aten.matmul", {matrix, v});
  EXPECT_EQ(mv.shape(), (std::vector<int64_t>{2}));
  EXPECT_EQ(toDoubles(mv), (std::vector<double>{7, 8}));

  Tensor vm = runOne("aten.matmul", {makeTensor(DType::F32, {2}, {1, 2}), matrix});
  EXPECT_EQ(vm.shape(), (std::vector<int64_t>{3}));
  EXPECT_EQ(toDoubles(vm), (std::vector<double>{-1, 6, 4}));

  // A vector against a batch of matrices: [3] @ [2, 3, 2] -> [2, 2].
  Tensor batch = makeTensor(DType::F32, {2, 3, 2}, {1, 2, 3, 4, 5, 6, 0, 1, 0, 1, 0, 1});
  Tensor vb = runOne("aten.matmul", {v, batch});
  EXPECT_EQ(vb.shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(toDoubles(vb), (std::vector<double>{22, 28, 0, 6}));
}

TEST(OpsLinearAlgebra, MatmulBroadcastsBatchDims) {
  // [2, 1, 3, 4] @ [5, 4, 6] -> [2, 5, 3, 6]; and [2, 3, 4] @ [4, 6] (folded into one GEMM).
  std::vector<double> a = randomValues(2 * 3 * 4, 15), b = randomValues(5 * 4 * 6, 16);
  Tensor out = runOne("aten.matmul", {makeTensor(DType::F64, {2, 1, 3, 4}, a),
                                      makeTensor(DType::F64, {5, 4, 6}, b)});
  ASSERT_EQ(out.shape(), (std::vector<int64_t>{2, 5, 3, 6}));
  std::vector<double> expected;
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 5; ++j) {
      std::vector<double> ai(a.begin() + i * 12, a.begin() + (i + 1) * 12);
      std::vector<double> bj(b.begin() + j * 24, b.begin() + (j + 1) * 24);
      std::vector<double> c = naiveMatmul(ai, bj, 3, 4, 6);
      expected.insert(expected.end(), c.begin(), c.end());
    }
  }
  expectClose(out, expected, 1e-12);

  std::vector<double> w = randomValues(4 * 6, 17);
  Tensor folded = runOne("aten.matmul",
                         {makeTensor(DType::F64, {2, 3, 4}, a), makeTensor(DType::F64, {4, 6}, w)});
  ASSERT_EQ(folded.shape(), (std::vector<int64_t>{2, 3, 6}));
  expectClose(folded, naiveMatmul(a, w, 6, 4, 6), 1e-12);
}

TEST(OpsLinearAlgebra, ErrorsNameTheProblem) {
  Tensor a23 = makeTensor(DType::F32, {2, 3}, std::vector<double>(6, 1));
  Tensor a43 = makeTensor(DType::F32, {4, 3}, std::vector<double>(12, 1));
  Tensor v3 = makeTensor(DType::F32, {3}, {1, 2, 3});
  EXPECT_NE(errorOf("aten.mm", {a23, a43}).find("cannot be multiplied (2x3 and 4x3)"),
            std::string::npos);
  EXPECT_NE(errorOf("aten.mm", {a23, v3}).find("mat2 must be a matrix"), std::string::npos);
  Tensor d32 = makeTensor(DType::F64, {3, 2}, std::vector<double>(6, 1));
  EXPECT_NE(errorOf("aten.mm", {a23, d32}).find("same dtype, but got: f32 != f64"),
            std::string::npos);
  Tensor b1 = makeTensor(DType::F32, {2, 2, 3}, std::vector<double>(12, 1));
  Tensor b2 = makeTensor(DType::F32, {3, 3, 2}, std::vector<double>(18, 1));
  EXPECT_NE(errorOf("aten.bmm", {b1, b2}).find("same batch size"), std::string::npos);
  EXPECT_NE(errorOf("aten.bmm", {a23, b2}).find("self must be a batch of matrices"),
            std::string::npos);
  Tensor scalar = makeTensor(DType::F32, {}, {1});
  EXPECT_NE(errorOf("aten.matmul", {scalar, v3}).find("at least 1D"), std::string::npos);
  EXPECT_NE(errorOf("aten.matmul", {a23, a43}).find("cannot be multiplied"), std::string::npos);
  Tensor badSelf = makeTensor(DType::F32, {3}, {1, 2, 3});
  Tensor a32 = makeTensor(DType::F32, {3, 2}, std::vector<double>(6, 1));
  EXPECT_NE(errorOf("aten.addmm", {badSelf, a23, a32}).find("does not broadcast"),
            std::string::npos);
}

TEST(OpsLinearAlgebra, InferenceKeepsSymbolicDims) {
  const OpDef *mm = registry().lookup("aten.addmm");
  ASSERT_NE(mm, nullptr);
  SymInt s0 = SymInt::symbol("s0");
  TensorType bias(DType::F32, {SymInt(4096)});
  TensorType x(DType::F32, {s0, SymInt(1024)});
  TensorType w(DType::F32, {SymInt(1024), SymInt(4096)});
  AttrMap attrs;
  Expected<std::vector<TensorType>> types = inferTypes(*mm, {&bias, &x, &w}, attrs);
  ASSERT_TRUE(types.hasValue()) << types.error().message();
  EXPECT_EQ((*types)[0], TensorType(DType::F32, {s0, SymInt(4096)}));

  const OpDef *matmul = registry().lookup("aten.matmul");
  TensorType batched(DType::F32, {SymInt::symbol("b"), s0, SymInt(64)});
  TensorType weight(DType::F32, {SymInt(64), SymInt(8)});
  AttrMap none;
  types = inferTypes(*matmul, {&batched, &weight}, none);
  ASSERT_TRUE(types.hasValue()) << types.error().message();
  EXPECT_EQ((*types)[0], TensorType(DType::F32, {SymInt::symbol("b"), s0, SymInt(8)}));
}

} // namespace
} // namespace tensorc::test
