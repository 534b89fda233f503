// CPU kernel codegen: hand-built LoopPrograms compiled to a .so, loaded with dlopen and checked
// against plain C++ on the host (AVX2), plus link-only builds for AVX-512 and AArch64.
#include "tensorc/Codegen/CPU/CpuCodegen.h"

#include "tensorc/Bundle/Manifest.h"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <set>
#include <vector>

namespace tensorc::cpu {
namespace {

using loop::BinaryOp;
using loop::LoopNode;
using loop::ReduceOp;
using loop::UnaryOp;

SymInt var(const std::string &name) { return SymInt::symbol(name); }
SymInt x(int i) { return var(loop::loopVar(size_t(i))); }
SymInt r(int i) { return var(loop::reductionVar(size_t(i))); }
loop::ExprRef f32(double v) { return loop::makeConstant(v, DType::F32); }

/// Builds a LoopProgram and its schedule by hand, one kernel at a time.
struct TestProgram {
  loop::LoopProgram program;
  sched::Schedule schedule;

  int buffer(const std::string &name, DType dtype, std::vector<SymInt> shape) {
    loop::Buffer buf;
    buf.id = int(program.buffers.size());
    buf.name = name;
    buf.dtype = dtype;
    buf.shape = std::move(shape);
    program.buffers.push_back(buf);
    return buf.id;
  }
  loop::ExprRef load(int buf, SymInt index) {
    return loop::makeLoad(buf, program.buffers[size_t(buf)].dtype, std::move(index));
  }
  int node(LoopNode::Kind kind, int output, std::vector<SymInt> ranges, loop::ExprRef body,
           std::vector<SymInt> reductionRanges = {}, ReduceOp op = ReduceOp::Sum) {
    LoopNode n;
    n.kind = kind;
    n.id = int(program.nodes.size());
    n.name = "n" + std::to_string(n.id);
    n.output = output;
    n.ranges = std::move(ranges);
    n.reductionRanges = std::move(reductionRanges);
    n.reduceOp = op;
    n.body = std::move(body);
    program.nodes.push_back(n);
    return n.id;
  }
  int pointwise(int output, std::vector<SymInt> ranges, loop::ExprRef body) {
    return node(LoopNode::Kind::Pointwise, output, std::move(ranges), std::move(body));
  }
  int reduction(int output, std::vector<SymInt> ranges, std::vector<SymInt> reductionRanges,
                ReduceOp op, loop::ExprRef body) {
    return node(LoopNode::Kind::Reduction, output, std::move(ranges), std::move(body),
                std::move(reductionRanges), op);
  }
  sched::Kernel kernel(const std::string &name, sched::Kernel::Kind kind,
                       std::vector<SymInt> outerRanges, std::vector<int> nodes) {
    sched::Kernel k;
    k.kind = kind;
    k.name = name;
    k.outerRanges = std::move(outerRanges);
    k.nodes = std::move(nodes);
    std::set<int> args;
    for (int id : k.nodes) {
      for (int buf : program.nodes[size_t(id)].reads())
        args.insert(buf);
      args.insert(program.nodes[size_t(id)].output);
    }
    k.args.assign(args.begin(), args.end());
    schedule.kernels.push_back(k);
    return k;
  }
};

CpuTarget targetNamed(const std::string &arch, const std::string &name) {
  auto targets = targetsForArch(arch);
  EXPECT_TRUE(targets.hasValue());
  for (const CpuTarget &t : *targets)
    if (t.name == name)
      return t;
  ADD_FAILURE() << "no target " << name;
  return {};
}

/// The compiled .so, written to a temp file and dlopen'ed.
class Library {
public:
  explicit Library(const TestProgram &p) {
    auto compiled = compileKernels(p.program, p.schedule, targetNamed("x86_64", "x86_64"), {});
    if (!compiled) {
      ADD_FAILURE() << compiled.error().message();
      return;
    }
    ir = compiled->llvmIR;
    char path[] = "/tmp/tensorc-cgtest-XXXXXX";
    int fd = mkstemp(path);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(write(fd, compiled->sharedObject.data(), compiled->sharedObject.size()),
              ssize_t(compiled->sharedObject.size()));
    close(fd);
    handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    std::remove(path);
    EXPECT_NE(handle, nullptr) << dlerror();
  }
  ~Library() {
    if (handle)
      dlclose(handle);
  }
  bundle::TensorcKernelFn fn(const std::string &name) {
    if (!handle)
      return nullptr;
    auto f = reinterpret_cast<bundle::TensorcKernelFn>(dlsym(handle, name.c_str()));
    EXPECT_NE(f, nullptr) << name;
    return f;
  }
  std::string ir;

private:
  void *handle = nullptr;
};

/// Calls kernel `k` over [begin, end) with buffers by id.
void run(Library &lib, const sched::Kernel &k, const std::map<int, void *> &buffers,
         std::vector<int64_t> syms, int64_t begin, int64_t end) {
  std::vector<void *> args;
  for (int id : k.args)
    args.push_back(buffers.at(id));
  auto fn = lib.fn(k.name);
  ASSERT_NE(fn, nullptr);
  fn(args.data(), syms.data(), begin, end);
}

TEST(CpuCodegen, BroadcastAddReluSplitRanges) {
  // out[i, j] = relu(a[i, j] + b[j] * c[i]) over 4 x 37: stride-0 loads, an odd row (tail), and
  // two calls that split rows in the middle.
  TestProgram p;
  int a = p.buffer("a", DType::F32, {4, 37}), bv = p.buffer("b", DType::F32, {37});
  int c = p.buffer("c", DType::F32, {4, 1}), out = p.buffer("out", DType::F32, {4, 37});
  auto body = loop::makeUnary(
      UnaryOp::Relu,
      loop::makeBinary(BinaryOp::Add, p.load(a, x(0) * 37 + x(1)),
                       loop::makeBinary(BinaryOp::Mul, p.load(bv, x(1)), p.load(c, x(0)))));
  int n = p.pointwise(out, {4, 37}, body);
  const auto &k = p.kernel("poi_add_relu_0", sched::Kernel::Kind::Loop, {4, 37}, {n});
  Library lib(p);
  EXPECT_NE(lib.ir.find("<8 x float>"), std::string::npos);
  std::vector<float> A(148), B(37), C(4), O(148, -7);
  for (int i = 0; i < 148; ++i)
    A[size_t(i)] = float(i % 11) - 5.f;
  for (int j = 0; j < 37; ++j)
    B[size_t(j)] = 0.25f * float(j) - 3;
  for (int i = 0; i < 4; ++i)
    C[size_t(i)] = float(i) - 1.5f;
  std::map<int, void *> bufs{{a, A.data()}, {bv, B.data()}, {c, C.data()}, {out, O.data()}};
  run(lib, k, bufs, {}, 0, 50);
  run(lib, k, bufs, {}, 50, 148);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 37; ++j)
      EXPECT_FLOAT_EQ(O[size_t(i * 37 + j)],
                      std::max(0.f, A[size_t(i * 37 + j)] + B[size_t(j)] * C[size_t(i)]))
          << i << "," << j;
}

TEST(CpuCodegen, ConcatenationAlongRowsRunsPerInput) {
  // out[i, j] = relu(cat([a (3 x 5), b (3 x 8), c (3 x 32)], dim 1)[i, j] * 2 - 1) over 3 x 45,
  // the select chain lowering writes: the row runs as three loops, one plain load each (the
  // 32-wide input in vectors), and calls that start and end inside pieces still write each
  // element once.
  TestProgram p;
  int a = p.buffer("a", DType::F32, {3, 5}), bb = p.buffer("b", DType::F32, {3, 8});
  int c = p.buffer("c", DType::F32, {3, 32}), out = p.buffer("out", DType::F32, {3, 45});
  auto part = [&](int buffer, int64_t start, int64_t size) {
    int64_t shift = (size - start % size) % size;
    return p.load(buffer, x(0) * size + SymInt::mod(x(1) + SymInt(shift), size));
  };
  auto at = loop::makeIndex(x(1), DType::I64);
  auto below = [&](int64_t bound) {
    return loop::makeBinary(BinaryOp::Lt, at, loop::makeIntConstant(bound, DType::I64));
  };
  auto cat = loop::makeSelect(below(5), part(a, 0, 5),
                              loop::makeSelect(below(13), part(bb, 5, 8), part(c, 13, 32)));
  auto body = loop::makeUnary(
      UnaryOp::Relu,
      loop::makeBinary(BinaryOp::Sub, loop::makeBinary(BinaryOp::Mul, cat, f32(2)), f32(1)));
  int n = p.pointwise(out, {3, 45}, body);
  const auto &k = p.kernel("poi_cat_0", sched::Kernel::Kind::Loop, {3, 45}, {n});
  Library lib(p);
  EXPECT_NE(lib.ir.find("load <8 x float>"), std::string::npos) << "no vector load";
  EXPECT_EQ(lib.ir.find("select"), std::string::npos) << "selects left in the pieces";
  std::vector<float> A(15), B(24), C(96), O(135, std::nanf(""));
  for (size_t i = 0; i < A.size(); ++i)
    A[i] = float(i) * 0.5f;
  for (size_t i = 0; i < B.size(); ++i)
    B[i] = 1.f - float(i) * 0.25f;
  for (size_t i = 0; i < C.size(); ++i)
    C[i] = float(i % 7) - 2.f;
  std::map<int, void *> bufs{{a, A.data()}, {bb, B.data()}, {c, C.data()}, {out, O.data()}};
  for (auto [begin, end] : {std::pair{0, 3}, std::pair{3, 20}, std::pair{20, 61}, {61, 135}})
    run(lib, k, bufs, {}, begin, end);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 45; ++j) {
      float v = j < 5    ? A[size_t(i * 5 + j)]
                : j < 13 ? B[size_t(i * 8 + j - 5)]
                         : C[size_t(i * 32 + j - 13)];
      EXPECT_FLOAT_EQ(O[size_t(i * 45 + j)], std::max(0.f, v * 2 - 1)) << i << "," << j;
    }
}

TEST(CpuCodegen, TransposedLoadAndSymbolicDims) {
  // t[i, j] = a[j, i] (stride s1 in the inner var: scalar path) and u[i, j] = 2 * a[i, j] + 1.
  TestProgram p;
  SymInt s0 = var("s0"), s1 = var("s1");
  int a = p.buffer("a", DType::F32, {s0, s1});
  int t = p.buffer("t", DType::F32, {s1, s0}), u = p.buffer("u", DType::F32, {s0, s1});
  p.program.symbols = {"s0", "s1"};
  int nt = p.pointwise(t, {s1, s0}, p.load(a, x(1) * s1 + x(0)));
  int nu = p.pointwise(
      u, {s0, s1},
      loop::makeBinary(BinaryOp::Add,
                       loop::makeBinary(BinaryOp::Mul, p.load(a, x(0) * s1 + x(1)), f32(2)),
                       f32(1)));
  const auto &kt = p.kernel("poi_transpose_0", sched::Kernel::Kind::Loop, {s1, s0}, {nt});
  const auto &ku = p.kernel("poi_affine_1", sched::Kernel::Kind::Loop, {s0, s1}, {nu});
  Library lib(p);
  const int64_t R = 5, C = 19;
  std::vector<float> A(R * C), T(R * C), U(R * C);
  for (size_t i = 0; i < A.size(); ++i)
    A[i] = float(i) * 0.5f;
  std::map<int, void *> bufs{{a, A.data()}, {t, T.data()}, {u, U.data()}};
  run(lib, kt, bufs, {R, C}, 0, R * C);
  run(lib, ku, bufs, {R, C}, 0, 30);
  run(lib, ku, bufs, {R, C}, 30, R * C);
  for (int64_t i = 0; i < R; ++i)
    for (int64_t j = 0; j < C; ++j) {
      EXPECT_EQ(T[size_t(j * R + i)], A[size_t(i * C + j)]);
      EXPECT_EQ(U[size_t(i * C + j)], 2 * A[size_t(i * C + j)] + 1);
    }
}

TEST(CpuCodegen, FusedReductionThenPointwise) {
  // per row: mean = sum(x[row, :]) / C, then y[row, j] = x[row, j] - mean.
  TestProgram p;
  const int64_t R = 3, C = 29;
  int xb = p.buffer("x", DType::F32, {R, C}), sum = p.buffer("sum", DType::F32, {R});
  int y = p.buffer("y", DType::F32, {R, C});
  int nsum = p.reduction(sum, {R}, {C}, ReduceOp::Sum, p.load(xb, x(0) * C + r(0)));
  auto mean = loop::makeBinary(BinaryOp::Div, p.load(sum, x(0)), f32(double(C)));
  int ny =
      p.pointwise(y, {R, C}, loop::makeBinary(BinaryOp::Sub, p.load(xb, x(0) * C + x(1)), mean));
  const auto &k = p.kernel("per_fused_mean_sub_0", sched::Kernel::Kind::Loop, {R}, {nsum, ny});
  Library lib(p);
  std::vector<float> X(R * C), S(R), Y(R * C);
  for (size_t i = 0; i < X.size(); ++i)
    X[i] = std::sin(float(i));
  run(lib, k, {{xb, X.data()}, {sum, S.data()}, {y, Y.data()}}, {}, 0, R);
  for (int64_t i = 0; i < R; ++i) {
    double s = 0;
    for (int64_t j = 0; j < C; ++j)
      s += X[size_t(i * C + j)];
    EXPECT_NEAR(S[size_t(i)], s, 1e-5);
    for (int64_t j = 0; j < C; ++j)
      EXPECT_NEAR(Y[size_t(i * C + j)], X[size_t(i * C + j)] - s / C, 1e-5);
  }
}

TEST(CpuCodegen, ColumnMeanIsTheSameForAnyChunking) {
  // A squeeze-excite mean over an NHWC tensor: m[n, c] = sum(x[n, :, :, c]) / (H * W), the
  // channels vectors wide (a column kernel). The thread pool may cut [0, N * C) anywhere; each
  // call rounds its chunk to whole sweeps of its row, so every chunking must give the result of
  // one call over the whole range, bit for bit, and that result the mean.
  TestProgram p;
  const int64_t N = 2, H = 5, W = 9, C = 70;
  int xb = p.buffer("x", DType::F32, {N, H, W, C}), sum = p.buffer("sum", DType::F32, {N, C});
  int mean = p.buffer("mean", DType::F32, {N, C});
  int nsum = p.reduction(sum, {N, C}, {H, W}, ReduceOp::Sum,
                         p.load(xb, ((x(0) * H + r(0)) * W + r(1)) * C + x(1)));
  int nmean = p.pointwise(
      mean, {N, C},
      loop::makeBinary(BinaryOp::Div, p.load(sum, x(0) * C + x(1)), f32(double(H * W))));
  const auto &k = p.kernel("per_fused_sum_div_channels_last_0", sched::Kernel::Kind::Loop, {N, C},
                           {nsum, nmean});
  Library lib(p);
  std::vector<float> X(size_t(N * H * W * C));
  for (size_t i = 0; i < X.size(); ++i)
    X[i] = std::sin(0.37f * float(i)) * 3.0f + 0.1f * float(i % 7);
  auto runChunks = [&](int64_t chunk) {
    std::vector<float> S(size_t(N * C), -1.0f), M(size_t(N * C), -1.0f);
    std::map<int, void *> bufs{{xb, X.data()}, {sum, S.data()}, {mean, M.data()}};
    for (int64_t begin = 0; begin < N * C; begin += chunk)
      run(lib, k, bufs, {}, begin, std::min(N * C, begin + chunk));
    return M;
  };
  std::vector<float> whole = runChunks(N * C);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      double s = 0;
      for (int64_t hw = 0; hw < H * W; ++hw)
        s += X[size_t((n * H * W + hw) * C + c)];
      EXPECT_NEAR(whole[size_t(n * C + c)], s / double(H * W), 1e-5) << n << "," << c;
    }
  for (int64_t chunk : {1, 3, 4, 7, 12, 31, 33, 64, 100}) {
    std::vector<float> chunked = runChunks(chunk);
    for (size_t i = 0; i < whole.size(); ++i)
      ASSERT_EQ(chunked[i], whole[i]) << "chunks of " << chunk << ", element " << i;
  }
}

TEST(CpuCodegen, MaxArgMaxWithNaNAndTies) {
  TestProgram p;
  const int64_t R = 4, C = 21;
  int xb = p.buffer("x", DType::F32, {R, C});
  int mx = p.buffer("max", DType::F32, {R}), am = p.buffer("argmax", DType::I64, {R});
  int amin = p.buffer("argmin", DType::I64, {R}), mn = p.buffer("min", DType::F32, {R});
  auto in = p.load(xb, x(0) * C + r(0));
  int n0 = p.reduction(mx, {R}, {C}, ReduceOp::Max, in);
  int n1 = p.reduction(am, {R}, {C}, ReduceOp::ArgMax, in);
  int n2 = p.reduction(amin, {R}, {C}, ReduceOp::ArgMin, in);
  int n3 = p.reduction(mn, {R}, {C}, ReduceOp::Min, in);
  const auto &k =
      p.kernel("red_fused_max_argmax_0", sched::Kernel::Kind::Loop, {R}, {n0, n1, n2, n3});
  Library lib(p);
  float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> X(R * C);
  for (int64_t j = 0; j < C; ++j) {
    X[size_t(j)] = float((j * 7) % 13);   // row 0: max 12 first at j=11 (and j=... later)
    X[size_t(C + j)] = float(j % 5);      // row 1: NaN at 13 and 17
    X[size_t(2 * C + j)] = 3.f;           // row 2: all equal
    X[size_t(3 * C + j)] = -float(j % 9); // row 3: max 0 at 0, 9, 18; min -8 at 8, 17
  }
  X[size_t(C + 13)] = nan;
  X[size_t(C + 17)] = nan;
  X[size_t(C + 20)] = 99.f;
  std::vector<float> M(R), N(R);
  std::vector<int64_t> A(R), Amin(R);
  run(lib, k, {{xb, X.data()}, {mx, M.data()}, {am, A.data()}, {amin, Amin.data()}, {mn, N.data()}},
      {}, 0, R);
  EXPECT_EQ(M[0], 12.f);
  EXPECT_EQ(A[0], 11);
  EXPECT_TRUE(std::isnan(M[1]));
  EXPECT_TRUE(std::isnan(N[1]));
  EXPECT_EQ(A[1], 13);
  EXPECT_EQ(Amin[1], 13);
  EXPECT_EQ(M[2], 3.f);
  EXPECT_EQ(A[2], 0);
  EXPECT_EQ(Amin[2], 0);
  EXPECT_EQ(M[3], 0.f);
  EXPECT_EQ(A[3], 0);
  EXPECT_EQ(N[3], -8.f);
  EXPECT_EQ(Amin[3], 8);
  EXPECT_EQ(N[0], 0.f);
  EXPECT_EQ(Amin[0], 0);
}

TEST(CpuCodegen, IntegerBoolAndCasts) {
  TestProgram p;
  const int64_t n = 23;
  int a = p.buffer("a", DType::I32, {n}), bb = p.buffer("b", DType::I32, {n});
  int f = p.buffer("f", DType::F32, {n});
  int rem = p.buffer("rem", DType::I32, {n}), div = p.buffer("div", DType::I32, {n});
  int gt = p.buffer("gt", DType::Bool, {n}), sel = p.buffer("sel", DType::I64, {n});
  int toInt = p.buffer("to_int", DType::I32, {n}), half = p.buffer("half", DType::F16, {n});
  int bf = p.buffer("bf", DType::BF16, {n}), u = p.buffer("u", DType::U8, {n});
  auto A = p.load(a, x(0)), B = p.load(bb, x(0)), F = p.load(f, x(0));
  auto cmp = loop::makeBinary(BinaryOp::Gt, A, B);
  std::vector<int> nodes = {
      p.pointwise(rem, {n}, loop::makeBinary(BinaryOp::Remainder, A, B)),
      p.pointwise(div, {n}, loop::makeBinary(BinaryOp::Div, A, B)),
      p.pointwise(gt, {n},
                  loop::makeBinary(BinaryOp::LogicalAnd, cmp,
                                   loop::makeUnary(UnaryOp::LogicalNot, p.load(gt, x(0))))),
      p.pointwise(sel, {n},
                  loop::makeSelect(cmp, loop::makeCast(A, DType::I64),
                                   loop::makeIndex(x(0) * 3 - 1, DType::I64))),
      p.pointwise(toInt, {n}, loop::makeCast(F, DType::I32)),
      p.pointwise(half, {n}, F),
      p.pointwise(bf, {n}, F),
      p.pointwise(u, {n},
                  loop::makeBinary(BinaryOp::Shr, loop::makeCast(A, DType::U8),
                                   loop::makeIntConstant(1, DType::U8))),
  };
  // `gt` reads itself (in place, same index): the stage order and same-row rule make it sound.
  const auto &k = p.kernel("poi_int_ops_0", sched::Kernel::Kind::Loop, {n}, nodes);
  Library lib(p);
  std::vector<int32_t> VA(n), VB(n), Rem(n), Div(n), ToInt(n);
  std::vector<float> VF(n);
  std::vector<uint8_t> Gt(n), U(n);
  std::vector<int64_t> Sel(n);
  std::vector<uint16_t> H(n), BF(n);
  for (int64_t i = 0; i < n; ++i) {
    VA[size_t(i)] = int32_t(i * 37 % 29) - 14;
    VB[size_t(i)] = (i % 3 == 0 ? -1 : 1) * int32_t(i % 5 + 1);
    VF[size_t(i)] = float(i) * 1.37f - 13.1f;
    Gt[size_t(i)] = i % 4 == 0;
  }
  std::vector<uint8_t> gtBefore = Gt;
  run(lib, k,
      {{a, VA.data()},
       {bb, VB.data()},
       {f, VF.data()},
       {rem, Rem.data()},
       {div, Div.data()},
       {gt, Gt.data()},
       {sel, Sel.data()},
       {toInt, ToInt.data()},
       {half, H.data()},
       {bf, BF.data()},
       {u, U.data()}},
      {}, 0, n);
  for (int64_t i = 0; i < n; ++i) {
    int32_t va = VA[size_t(i)], vb = VB[size_t(i)];
    int32_t m = va % vb;
    if (m != 0 && ((m < 0) != (vb < 0)))
      m += vb;
    EXPECT_EQ(Rem[size_t(i)], m) << va << " % " << vb;
    EXPECT_EQ(Div[size_t(i)], va / vb);
    EXPECT_EQ(Gt[size_t(i)], uint8_t(va > vb && !gtBefore[size_t(i)]));
    EXPECT_EQ(Sel[size_t(i)], va > vb ? int64_t(va) : i * 3 - 1);
    EXPECT_EQ(ToInt[size_t(i)], int32_t(VF[size_t(i)]));
    EXPECT_EQ(H[size_t(i)], floatToHalf(VF[size_t(i)]));
    EXPECT_EQ(BF[size_t(i)], floatToBf16(VF[size_t(i)]));
    EXPECT_EQ(U[size_t(i)], uint8_t(uint8_t(va) >> 1));
  }
}

TEST(CpuCodegen, FloatMathAndVecMath) {
  TestProgram p;
  const int64_t n = 37;
  int a = p.buffer("a", DType::F32, {n}), bb = p.buffer("b", DType::F32, {n});
  std::vector<std::string> names = {"exp",  "tanh",  "sigmoid", "rem",    "fmod",  "pow2",
                                    "powy", "round", "sign",    "maxnan", "rsqrt", "bf16in"};
  std::vector<int> outs;
  for (const auto &name : names)
    outs.push_back(p.buffer(name, DType::F32, {n}));
  int bfIn = p.buffer("bfsrc", DType::BF16, {n});
  auto A = p.load(a, x(0)), B = p.load(bb, x(0));
  auto absA = loop::makeUnary(UnaryOp::Abs, A);
  std::vector<loop::ExprRef> bodies = {
      loop::makeUnary(UnaryOp::Exp, A),
      loop::makeUnary(UnaryOp::Tanh, A),
      loop::makeUnary(UnaryOp::Sigmoid, A),
      loop::makeBinary(BinaryOp::Remainder, A, B),
      loop::makeBinary(BinaryOp::Fmod, A, B),
      loop::makeBinary(BinaryOp::Pow, A, f32(2)),
      loop::makeBinary(BinaryOp::Pow, A, loop::makeUnary(UnaryOp::Round, B)),
      loop::makeUnary(UnaryOp::Round, A),
      loop::makeUnary(UnaryOp::Sign, A),
      loop::makeBinary(BinaryOp::Maximum, A, B),
      loop::makeUnary(UnaryOp::Rsqrt, absA),
      loop::makeCast(p.load(bfIn, x(0)), DType::F32),
  };
  std::vector<int> nodes;
  for (size_t i = 0; i < bodies.size(); ++i)
    nodes.push_back(p.pointwise(outs[i], {n}, bodies[i]));
  const auto &k = p.kernel("poi_float_ops_0", sched::Kernel::Kind::Loop, {n}, nodes);
  Library lib(p);
  std::vector<float> VA(n), VB(n);
  std::vector<uint16_t> BFS(n);
  std::vector<std::vector<float>> O(names.size(), std::vector<float>(n));
  for (int64_t i = 0; i < n; ++i) {
    VA[size_t(i)] = float(i - 18) * 0.37f;
    VB[size_t(i)] = (i % 2 ? -1.f : 1.f) * (0.7f + float(i % 4));
    BFS[size_t(i)] = floatToBf16(float(i) * 0.1f);
  }
  VA[5] = 2.5f; // ties round to even
  VA[6] = -3.5f;
  VB[7] = std::numeric_limits<float>::quiet_NaN();
  std::map<int, void *> bufs{{a, VA.data()}, {bb, VB.data()}, {bfIn, BFS.data()}};
  for (size_t i = 0; i < outs.size(); ++i)
    bufs[outs[i]] = O[i].data();
  run(lib, k, bufs, {}, 0, n);
  for (int64_t i = 0; i < n; ++i) {
    float va = VA[size_t(i)], vb = VB[size_t(i)];
    auto at = [&](int o) { return O[size_t(o)][size_t(i)]; };
    EXPECT_NEAR(at(0), std::exp(va), 1e-6 * std::exp(va));
    EXPECT_NEAR(at(1), std::tanh(va), 1e-6);
    EXPECT_NEAR(at(2), 1 / (1 + std::exp(-va)), 1e-6);
    if (!std::isnan(vb) && va != 0) {
      float f = std::fmod(va, vb), py = f != 0 && ((f < 0) != (vb < 0)) ? f + vb : f;
      EXPECT_NEAR(at(3), py, 1e-5) << va << " rem " << vb;
      EXPECT_NEAR(at(4), f, 1e-5) << va << " fmod " << vb;
      float e = std::nearbyint(vb);
      EXPECT_NEAR(at(6), std::pow(va, e), 1e-4 * (1 + std::fabs(std::pow(va, e))))
          << va << " ** " << e;
      EXPECT_EQ(at(9), std::max(va, vb));
    } else if (std::isnan(vb)) {
      EXPECT_TRUE(std::isnan(at(9)));
    }
    EXPECT_EQ(at(5), va * va);
    EXPECT_EQ(at(7), std::nearbyint(va));
    EXPECT_EQ(at(8), float((va > 0) - (va < 0)));
    if (va != 0) {
      EXPECT_NEAR(at(10), 1 / std::sqrt(std::fabs(va)), 1e-6 / std::sqrt(std::fabs(va)));
    }
    EXPECT_EQ(at(11), bf16ToFloat(BFS[size_t(i)]));
  }
}

TestProgram gemmProgram(int64_t batch, int64_t M, int64_t N, int64_t K, int *ids) {
  TestProgram p;
  int a = p.buffer("a", DType::F32, {batch, M, K}), bt = p.buffer("bt", DType::F32, {batch, N, K});
  int mm = p.buffer("mm", DType::F32, {batch, M, N}), bias = p.buffer("bias", DType::F32, {N});
  int out = p.buffer("out", DType::F32, {batch, M, N});
  LoopNode g;
  g.kind = LoopNode::Kind::Template;
  g.id = 0;
  g.name = "mm";
  g.output = mm;
  g.ranges = {batch, M, N};
  // B is given transposed (N x K) to exercise a strided B view.
  g.gemm.a = {a, 0, {M * K, K, 1}};
  g.gemm.b = {bt, 0, {N * K, 1, K}};
  g.gemm.batch = batch;
  g.gemm.m = M;
  g.gemm.n = N;
  g.gemm.k = K;
  p.program.nodes.push_back(g);
  auto body = loop::makeUnary(
      UnaryOp::Relu, loop::makeBinary(BinaryOp::Add, p.load(mm, x(0) * (M * N) + x(1) * N + x(2)),
                                      p.load(bias, x(2))));
  int epi = p.pointwise(out, {batch, M, N}, body);
  sched::Kernel k;
  k.kind = sched::Kernel::Kind::Template;
  k.name = "tem_mm_relu_0";
  k.nodes = {0, epi};
  k.args = {a, bt, bias, out};
  p.schedule.kernels.push_back(k);
  ids[0] = a, ids[1] = bt, ids[2] = bias, ids[3] = out;
  return p;
}

TEST(CpuCodegen, GemmWithBiasReluEpilogue) {
  const int64_t batch = 2, M = 100, N = 40, K = 33;
  int ids[4];
  TestProgram p = gemmProgram(batch, M, N, K, ids);
  Library lib(p);
  std::vector<float> A(batch * M * K), Bt(batch * N * K), bias(N), out(batch * M * N, -1);
  for (size_t i = 0; i < A.size(); ++i)
    A[i] = float(int(i * 7 % 17) - 8) * 0.125f;
  for (size_t i = 0; i < Bt.size(); ++i)
    Bt[i] = float(int(i * 5 % 13) - 6) * 0.25f;
  for (int64_t j = 0; j < N; ++j)
    bias[size_t(j)] = float(j % 7) - 3;
  int64_t tiles = batch * ((M + sched::kGemmTileM - 1) / sched::kGemmTileM) *
                  ((N + sched::kGemmTileN - 1) / sched::kGemmTileN);
  ASSERT_EQ(tiles, 4);
  std::map<int, void *> bufs{
      {ids[0], A.data()}, {ids[1], Bt.data()}, {ids[2], bias.data()}, {ids[3], out.data()}};
  run(lib, p.schedule.kernels[0], bufs, {}, 0, 3);
  run(lib, p.schedule.kernels[0], bufs, {}, 3, tiles);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t q = 0; q < K; ++q)
          s += double(A[size_t(b * M * K + i * K + q)]) * Bt[size_t(b * N * K + j * K + q)];
        float expect = std::max(0.f, float(s) + bias[size_t(j)]);
        ASSERT_NEAR(out[size_t(b * M * N + i * N + j)], expect, 1e-4) << b << "," << i << "," << j;
      }
}

TEST(CpuCodegen, LinksForAvx512AndAArch64) {
  int ids[4];
  TestProgram p = gemmProgram(1, 20, 30, 10, ids);
  int src = p.buffer("src", DType::F16, {7, 9}), red = p.buffer("red", DType::F32, {7});
  int nred = p.reduction(red, {7}, {9}, ReduceOp::Max,
                         loop::makeUnary(UnaryOp::Erf, p.load(src, x(0) * 9 + r(0))));
  p.kernel("red_max_erf_1", sched::Kernel::Kind::Loop, {7}, {nred});
  for (auto [arch, name] :
       {std::pair{"x86_64", "x86_64-avx512"}, std::pair{"aarch64", "aarch64"}}) {
    auto compiled = compileKernels(p.program, p.schedule, targetNamed(arch, name), {});
    ASSERT_TRUE(compiled.hasValue()) << compiled.error().message();
    ASSERT_GT(compiled->sharedObject.size(), 4u);
    EXPECT_EQ(compiled->sharedObject.substr(0, 4), "\x7f"
                                                   "ELF");
    EXPECT_NE(compiled->llvmIR.find("define void @red_max_erf_1"), std::string::npos);
  }
}

TEST(CpuCodegen, LinkerErrorsAreReported) {
  TestProgram p;
  int a = p.buffer("a", DType::F32, {4}), o = p.buffer("o", DType::F32, {4});
  p.kernel("poi_copy_0", sched::Kernel::Kind::Loop, {4}, {p.pointwise(o, {4}, p.load(a, x(0)))});
  CodegenOptions options;
  options.linker = "/nonexistent/ld.lld";
  auto compiled = compileKernels(p.program, p.schedule, targetNamed("x86_64", "x86_64"), options);
  ASSERT_FALSE(compiled.hasValue());
  EXPECT_NE(compiled.error().message().find("linking"), std::string::npos);
}

} // namespace
} // namespace tensorc::cpu
