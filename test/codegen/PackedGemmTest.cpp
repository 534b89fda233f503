// Packed-B GEMM (PackedGemm.h) and the weight packing it reads (WeightPacking.h): the AVX2 and
// AVX-512 variants JIT-compiled and run on this host (each where the host supports it) against a
// double-precision reference, over shapes with tails in every dimension, several K blocks,
// transposed and padded A, tiles split between two callers, and a fused epilogue; the NEON
// variant compiled to an object.
#include "tensorc/Codegen/CPU/PackedGemm.h"
#include "KernelJit.h"
#include "tensorc/Codegen/CPU/WeightPacking.h"

#include <gtest/gtest.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>

#include <cmath>
#include <map>
#include <mutex>
#include <random>
#include <vector>

namespace tensorc::cpu {
namespace {

using GemmFn = void(const float *, int64_t, int64_t, const float *, float *, int64_t, int64_t,
                    int64_t, int64_t, int64_t, int64_t, const float *);
using TileCountFn = int64_t(int64_t, int64_t);

/// out = relu(acc + bias[col]) + 0.25 * row: uses both coordinates, and applying it twice or to a
/// partial K sum changes the result.
llvm::Value *biasReluRow(llvm::IRBuilderBase &b, llvm::Value *bias, llvm::Value *acc,
                         llvm::Value *row, llvm::Value *col) {
  llvm::Type *type = acc->getType();
  llvm::Value *biasPtr = b.CreateInBoundsGEP(b.getFloatTy(), bias, col);
  llvm::Value *x = b.CreateFAdd(acc, b.CreateAlignedLoad(type, biasPtr, llvm::Align(4)));
  x = b.CreateMaxNum(x, llvm::Constant::getNullValue(type));
  llvm::Value *rowTerm = b.CreateFMul(b.CreateSIToFP(row, b.getFloatTy()),
                                      llvm::ConstantFP::get(b.getFloatTy(), 0.25));
  if (auto *vector = llvm::dyn_cast<llvm::FixedVectorType>(type))
    rowTerm = b.CreateVectorSplat(vector->getNumElements(), rowTerm);
  return b.CreateFAdd(x, rowTerm);
}

/// The compiler's task grid (emitPackedGemmGrid): tasks of at most rows x cols before the split
/// into equal shares.
struct Grid {
  int64_t rows = 0, cols = 0;
};

/// Adds `void name(a, sam, sak, packedB, c, ldc, m, n, k, tileBegin, tileEnd, bias)` (bias null:
/// no epilogue was emitted) and `i64 name_tiles(m, n)`: tiles of `tiling`, or with a `grid`, its
/// tasks (and tiling.kc).
void addPackedGemm(llvm::Module &module, const CpuTarget &target, const PackedGemmTiling &tiling,
                   const std::string &name, bool withEpilogue, Grid grid = {}) {
  llvm::LLVMContext &ctx = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(ctx);
  llvm::Type *i64 = llvm::Type::getInt64Ty(ctx);
  auto *fnTy =
      llvm::FunctionType::get(llvm::Type::getVoidTy(ctx),
                              {ptr, i64, i64, ptr, ptr, i64, i64, i64, i64, i64, i64, ptr}, false);
  auto *fn = llvm::Function::Create(fnTy, llvm::Function::ExternalLinkage, name, module);
  fn->addFnAttr("target-cpu", target.cpu);
  fn->addFnAttr("target-features", target.features);
  fn->addFnAttr("no-builtins");
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  auto arg = [&](unsigned i) { return fn->getArg(i); };
  PackedGemmOperands ops;
  ops.a = arg(0), ops.aRowStride = arg(1), ops.aColStride = arg(2);
  ops.packedB = arg(3);
  ops.c = arg(4), ops.cRowStride = arg(5);
  ops.m = arg(6), ops.n = arg(7), ops.k = arg(8);
  GemmEpilogue epilogue;
  if (withEpilogue)
    epilogue = [bias = arg(11)](llvm::IRBuilderBase &ir, llvm::Value *acc, llvm::Value *row,
                                llvm::Value *col) { return biasReluRow(ir, bias, acc, row, col); };
  auto tasks = [&](llvm::Value *extent, int64_t size) {
    return b.CreateUDiv(b.CreateAdd(extent, b.getInt64(size - 1)), b.getInt64(size));
  };
  if (grid.rows)
    emitPackedGemmGrid(b, target, tiling.kc, ops, tasks(ops.m, grid.rows), tasks(ops.n, grid.cols),
                       arg(9), arg(10), epilogue);
  else
    emitPackedGemmTiles(b, target, tiling, ops, arg(9), arg(10), epilogue);
  b.CreateRetVoid();

  auto *count = llvm::Function::Create(llvm::FunctionType::get(i64, {i64, i64}, false),
                                       llvm::Function::ExternalLinkage, name + "_tiles", module);
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", count));
  if (grid.rows)
    b.CreateRet(
        b.CreateMul(tasks(count->getArg(0), grid.rows), tasks(count->getArg(1), grid.cols)));
  else
    b.CreateRet(emitPackedGemmTileCount(b, tiling, count->getArg(0), count->getArg(1)));
}

// Small blocks: several K blocks and tiles even for small shapes, tails inside every tile.
const PackedGemmTiling kSmallTiling{24, 64, 20};
const PackedGemmTiling kDefaultTiling{};
// The compiler's grid (96 x 256 tasks, sched::kGemmTileM/N) and a fine one whose shares often
// round up to fewer than the tasks; K blocks of 20 in the second.
const Grid kCompilerGrid{96, 256}, kFineGrid{20, 40};

struct Variant {
  GemmFn *gemm = nullptr, *gemmSmall = nullptr, *gemmEpilogue = nullptr;
  GemmFn *grid = nullptr, *fineGrid = nullptr, *gridEpilogue = nullptr;
  TileCountFn *tiles = nullptr, *smallTiles = nullptr, *gridTasks = nullptr,
              *fineGridTasks = nullptr;
};

struct Variants {
  std::string error;
  std::unique_ptr<test::HostJit> jit;
  std::map<std::string, Variant> byTarget;
};

const Variants &variants() {
  static Variants v;
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<CpuTarget> targets = {test::cpuTarget("x86_64", "x86_64"),
                                      test::cpuTarget("x86_64", "x86_64-avx512")};
    v.jit = test::jitKernels(
        [&](llvm::Module &module) {
          for (const CpuTarget &t : targets) {
            addPackedGemm(module, t, kDefaultTiling, "gemm_" + t.name, false);
            addPackedGemm(module, t, kSmallTiling, "gemm_small_" + t.name, false);
            addPackedGemm(module, t, kDefaultTiling, "gemm_epilogue_" + t.name, true);
            PackedGemmTiling kcOnly{96, 256, packedGemmKBlock(-1)};
            addPackedGemm(module, t, kcOnly, "grid_" + t.name, false, kCompilerGrid);
            addPackedGemm(module, t, kSmallTiling, "grid_fine_" + t.name, false, kFineGrid);
            addPackedGemm(module, t, kcOnly, "grid_epilogue_" + t.name, true, kCompilerGrid);
          }
        },
        v.error);
    if (!v.jit)
      return;
    for (const CpuTarget &t : targets) {
      Variant &variant = v.byTarget[t.name];
      auto lookup = [&](auto *&fn, const std::string &name) {
        auto address =
            v.jit->lookup<std::remove_pointer_t<std::remove_reference_t<decltype(fn)>>>(name);
        if (!address)
          v.error += llvm::toString(address.takeError());
        else
          fn = *address;
      };
      lookup(variant.gemm, "gemm_" + t.name);
      lookup(variant.gemmSmall, "gemm_small_" + t.name);
      lookup(variant.gemmEpilogue, "gemm_epilogue_" + t.name);
      lookup(variant.tiles, "gemm_" + t.name + "_tiles");
      lookup(variant.smallTiles, "gemm_small_" + t.name + "_tiles");
      lookup(variant.grid, "grid_" + t.name);
      lookup(variant.fineGrid, "grid_fine_" + t.name);
      lookup(variant.gridEpilogue, "grid_epilogue_" + t.name);
      lookup(variant.gridTasks, "grid_" + t.name + "_tiles");
      lookup(variant.fineGridTasks, "grid_fine_" + t.name + "_tiles");
    }
  });
  return v;
}

struct Shape {
  int64_t m, n, k;
  bool transA = false;
  int64_t pad = 0; // unused elements after each row (or column) of A
};

std::string describe(const Shape &s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) +
         (s.transA ? " A^T" : "") + (s.pad ? " pad " + std::to_string(s.pad) : "");
}

/// Runs one shape with the tiles split in two halves (two "threads"), checks every element of C
/// against a double reference and that C's row padding is untouched.
void checkShape(const Shape &s, GemmFn *gemm, TileCountFn *tiles, const float *bias = nullptr) {
  SCOPED_TRACE(describe(s));
  std::mt19937 rng(uint32_t(s.m * 131 + s.n * 17 + s.k));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  int64_t sam = s.transA ? 1 : s.k + s.pad, sak = s.transA ? s.m + s.pad : 1;
  std::vector<float> a(
      size_t(std::max<int64_t>(1, s.transA ? (s.m + s.pad) * s.k : s.m * (s.k + s.pad))));
  std::vector<float> bMatrix(size_t(std::max<int64_t>(1, s.k * s.n)));
  for (float &x : a)
    x = dist(rng);
  for (float &x : bMatrix)
    x = dist(rng);
  std::vector<float> packed = packGemmB(bMatrix.data(), s.k, s.n, s.n, 1);
  packed.push_back(0.0f); // never empty
  const int64_t ldc = s.n + 3;
  // NaN everywhere: the first K block must overwrite C, never read it.
  std::vector<float> c(size_t(std::max<int64_t>(1, s.m * ldc)), std::nanf(""));
  int64_t count = tiles(s.m, s.n), split = count / 2;
  for (auto [begin, end] : {std::pair{int64_t(0), split}, std::pair{split, count}})
    gemm(a.data(), sam, sak, packed.data(), c.data(), ldc, s.m, s.n, s.k, begin, end, bias);
  int64_t failures = 0;
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < s.n; ++j) {
      double sum = 0, magnitude = 0;
      for (int64_t p = 0; p < s.k; ++p) {
        double term = double(a[size_t(i * sam + p * sak)]) * double(bMatrix[size_t(p * s.n + j)]);
        sum += term;
        magnitude += std::fabs(term);
      }
      if (bias)
        sum = std::max(sum + bias[j], 0.0) + 0.25 * double(i);
      double tolerance = 1e-6 * double(s.k + 4) * magnitude + 1e-5;
      float got = c[size_t(i * ldc + j)];
      if (!(std::fabs(got - sum) <= tolerance) && failures++ < 5)
        ADD_FAILURE() << "C[" << i << "][" << j << "] = " << got << ", expected " << sum;
    }
    for (int64_t j = s.n; j < ldc && i * ldc + j < int64_t(c.size()); ++j)
      if (!std::isnan(c[size_t(i * ldc + j)]) && failures++ < 5)
        ADD_FAILURE() << "padding C[" << i << "][" << j << "] was written";
  }
  EXPECT_EQ(failures, 0);
}

class PackedGemm : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    CpuTarget target = test::cpuTarget("x86_64", GetParam());
    if (!test::hostSupports(target))
      GTEST_SKIP() << "host cannot run " << GetParam();
    ASSERT_EQ(variants().error, "");
    v = variants().byTarget.at(GetParam());
  }
  Variant v;
};

TEST_P(PackedGemm, SmallAndOddShapes) {
  for (Shape s : std::vector<Shape>{{1, 1, 1},
                                    {1, 17, 3},
                                    {6, 16, 8},
                                    {12, 32, 8},
                                    {13, 33, 5},
                                    {7, 13, 5},
                                    {5, 100, 300},
                                    {65, 129, 33},
                                    {100, 1000, 37},
                                    {1, 300, 64},
                                    {16, 768, 96},
                                    {3, 64, 1000}}) {
    checkShape(s, v.gemm, v.tiles);
    checkShape(s, v.gemmSmall, v.smallTiles);
    checkShape(s, v.grid, v.gridTasks);
    checkShape(s, v.fineGrid, v.fineGridTasks);
  }
}

TEST_P(PackedGemm, GridOfEqualSharesCoversEveryElementOnce) {
  // Shares that round unevenly (128 rows in 2 tasks: 72 + 56; 97 x 257 in 2 x 2 tasks; 193 rows
  // in 10 fine tasks of 24: 9 shares), transposed A, several K blocks, and a fused epilogue.
  for (Shape s : std::vector<Shape>{{128, 768, 768},
                                    {97, 257, 100},
                                    {193, 50, 30},
                                    {41, 121, 45, true, 3},
                                    {1, 2304, 20},
                                    {300, 17, 700}}) {
    checkShape(s, v.grid, v.gridTasks);
    checkShape(s, v.fineGrid, v.fineGridTasks);
  }
  std::vector<float> bias(2400);
  for (size_t j = 0; j < bias.size(); ++j)
    bias[j] = (j % 3 == 0 ? -0.5f : 0.75f) + 0.01f * float(j % 7);
  for (Shape s : std::vector<Shape>{
           {1, 1, 1}, {128, 300, 600}, {20, 37, 0}, {5, 2304, 64}, {25, 40, 30}, {37, 50, 600}})
    checkShape(s, v.gridEpilogue, v.gridTasks, bias.data());
}

TEST_P(PackedGemm, ZeroDepthGivesZero) {
  checkShape({7, 13, 0}, v.gemm, v.tiles);
  checkShape({30, 45, 0}, v.gemmSmall, v.smallTiles);
}

TEST_P(PackedGemm, TransposedAndPaddedA) {
  for (bool transA : {false, true})
    for (int64_t pad : {0, 5}) {
      checkShape({37, 70, 45, transA, pad}, v.gemm, v.tiles);
      checkShape({37, 70, 45, transA, pad}, v.gemmSmall, v.smallTiles);
    }
}

TEST_P(PackedGemm, SeveralBlocksInEveryDimension) {
  // 3 row tiles, 2 column tiles and 3 K blocks of the default tiling, ragged everywhere.
  checkShape({2 * kDefaultTiling.mc + 7, kDefaultTiling.nc + 19, 600}, v.gemm, v.tiles);
  checkShape({150, 260, 530, true}, v.gemm, v.tiles);
  checkShape({40, 50, 520}, v.gemmSmall, v.smallTiles);
}

TEST_P(PackedGemm, EpilogueAppliedOnceAfterTheFullSum) {
  std::vector<float> bias(400);
  for (size_t j = 0; j < bias.size(); ++j)
    bias[j] = (j % 3 == 0 ? -0.5f : 0.75f) + 0.01f * float(j % 7);
  for (Shape s : std::vector<Shape>{{1, 1, 1}, {7, 13, 5}, {45, 300, 600}, {20, 37, 0}})
    checkShape(s, v.gemmEpilogue, v.tiles, bias.data());
}

INSTANTIATE_TEST_SUITE_P(Targets, PackedGemm, ::testing::Values("x86_64", "x86_64-avx512"),
                         [](const auto &info) {
                           return info.param == "x86_64" ? std::string("Avx2")
                                                         : std::string("Avx512");
                         });

TEST(WeightPacking, GemmBStripsAndZeroPadding) {
  // 3 x 20 with a column stride of 3 (a transposed view): 2 strips, the second 4 wide.
  std::vector<float> b(3 * 20 * 3);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = float(i) + 0.5f;
  std::vector<float> packed = packGemmB(b.data(), 3, 20, 1, 3);
  ASSERT_EQ(int64_t(packed.size()), packedGemmBSize(3, 20));
  EXPECT_EQ(packed.size(), 2u * 3 * 16);
  for (int64_t s = 0; s < 2; ++s)
    for (int64_t p = 0; p < 3; ++p)
      for (int64_t j = 0; j < 16; ++j) {
        int64_t n = s * 16 + j;
        float expected = n < 20 ? b[size_t(p + n * 3)] : 0.0f;
        EXPECT_EQ(packed[size_t((s * 3 + p) * 16 + j)], expected) << s << " " << p << " " << j;
      }
}

TEST(WeightPacking, ConvWeightsInPatchOrderPerGroup) {
  ConvWeightShape shape{4, 6, 2, 3, 2}; // OC 4, C 6, 2 x 3, 2 groups: Cg 3, OCg 2
  std::vector<float> w(size_t(shape.oc * shape.cg() * shape.kh * shape.kw));
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = float(i);
  std::vector<float> packed = packConvWeights(w.data(), shape);
  int64_t k = shape.kh * shape.kw * shape.cg();
  ASSERT_EQ(int64_t(packed.size()), shape.groups * k * 16);
  for (int64_t g = 0; g < shape.groups; ++g)
    for (int64_t o = 0; o < 16; ++o)
      for (int64_t kh = 0; kh < shape.kh; ++kh)
        for (int64_t kw = 0; kw < shape.kw; ++kw)
          for (int64_t c = 0; c < shape.cg(); ++c) {
            int64_t row = (kh * shape.kw + kw) * shape.cg() + c;
            int64_t oc = g * shape.ocg() + o;
            float expected =
                o < shape.ocg() ? w[size_t(((oc * shape.cg() + c) * shape.kh + kh) * shape.kw + kw)]
                                : 0.0f;
            EXPECT_EQ(packed[size_t(g * k * 16 + row * 16 + o)], expected);
          }
}

TEST(WeightPacking, DepthwiseChannelStrips) {
  std::vector<float> w(20 * 9);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = float(i) + 1.0f;
  std::vector<float> packed = packDepthwiseWeights(w.data(), 20, 3, 3);
  ASSERT_EQ(int64_t(packed.size()), packedDepthwiseSize(20, 3, 3));
  for (int64_t c = 0; c < 32; ++c)
    for (int64_t t = 0; t < 9; ++t)
      EXPECT_EQ(packed[size_t((c / 16) * 9 * 16 + t * 16 + c % 16)],
                c < 20 ? w[size_t(c * 9 + t)] : 0.0f);
}

TEST(PackedGemmTiling, TilesAreWholeMicroTilesAndFeedTheThreads) {
  for (int threads : {1, 2, 16})
    for (auto [m, n, k] : std::vector<std::array<int64_t, 3>>{{1024, 1024, 1024},
                                                              {128, 768, 768},
                                                              {128, 3072, 768},
                                                              {1, 1000, 2048},
                                                              {49, 512, 4608}}) {
      PackedGemmTiling t = choosePackedGemmTiling(m, n, k, threads);
      EXPECT_EQ(t.mc % 12, 0);
      EXPECT_EQ(t.nc % 64, 0);
      EXPECT_GT(t.kc, 0);
      int64_t tiles = (m + t.mc - 1) / t.mc * ((n + t.nc - 1) / t.nc);
      // Either enough tiles for every thread, or tiles already at their smallest.
      EXPECT_TRUE(tiles >= 3 * threads || threads == 1 || (t.mc <= 24 && t.nc <= 64) ||
                  (t.mc >= m && t.nc <= 64) || (t.nc >= n && t.mc <= 24))
          << m << "x" << n << "x" << k << " on " << threads << ": " << t.mc << " x " << t.nc;
    }
}

TEST(PackedGemmCrossTarget, NeonCompiles) {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
  });
  CpuTarget target = test::cpuTarget("aarch64", "aarch64");
  std::string error;
  const llvm::Target *llvmTarget = llvm::TargetRegistry::lookupTarget(target.triple, error);
  ASSERT_NE(llvmTarget, nullptr) << error;
  std::unique_ptr<llvm::TargetMachine> machine(llvmTarget->createTargetMachine(
      target.triple, target.cpu, target.features, llvm::TargetOptions(), llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  llvm::LLVMContext ctx;
  llvm::Module module("packed_gemm_neon", ctx);
  module.setTargetTriple(target.triple);
  module.setDataLayout(machine->createDataLayout());
  addPackedGemm(module, target, kDefaultTiling, "gemm_epilogue", true);
  std::string message;
  llvm::raw_string_ostream os(message);
  ASSERT_FALSE(llvm::verifyModule(module, &os)) << message;
  test::optimizeModuleO3(module, *machine);
  llvm::SmallVector<char, 0> object;
  llvm::raw_svector_ostream objectStream(object);
  llvm::legacy::PassManager codegen;
  ASSERT_FALSE(machine->addPassesToEmitFile(codegen, objectStream, nullptr,
                                            llvm::CodeGenFileType::ObjectFile));
  codegen.run(module);
  EXPECT_GT(object.size(), 1000u);
}

} // namespace
} // namespace tensorc::cpu
