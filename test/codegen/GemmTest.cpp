// GEMM codegen tests: the host variant JIT-compiled and checked against a double reference; the
// AVX-512 and NEON variants verified and compiled to objects.
#include "tensorc/Codegen/CPU/Gemm.h"
#include "JitHelpers.h"

#include <gtest/gtest.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Host.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <random>
#include <string>
#include <vector>

namespace {

using tensorc::cpu::CpuTarget;
using tensorc::cpu::GemmTiling;

using GemmFn = void(const float *, int64_t, int64_t, const float *, int64_t, int64_t, float *,
                    int64_t, int64_t, int64_t, int64_t, int64_t, int64_t);
using GemmEpilogueFn = void(const float *, int64_t, int64_t, const float *, int64_t, int64_t,
                            float *, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                            const float *);
using TileCountFn = int64_t(int64_t, int64_t);

CpuTarget targetNamed(const std::string &arch, const std::string &name) {
  auto targets = tensorc::cpu::targetsForArch(arch);
  EXPECT_TRUE(targets.hasValue());
  for (const CpuTarget &target : *targets)
    if (target.name == name)
      return target;
  ADD_FAILURE() << "no CPU target " << name;
  return {};
}

/// out = relu(acc + bias[col]) + 0.25 * row: uses both coordinates, and applying it twice (or on
/// a partial K sum) changes the result.
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

/// How a test GEMM reads B: strided (the fast paths), or through GemmOperands::loadB (an
/// implicit B, as convolution patches are), optionally with the loadBRow contiguous fast path.
enum class BReads { Strided, Loader, LoaderWithRows };

/// Adds `void name(a, sam, sak, b, sbk, sbn, c, ldc, m, n, k, tileBegin, tileEnd[, bias])` and
/// `i64 name_tiles(m, n)` to the module.
void addGemm(llvm::Module &module, const CpuTarget &target, const GemmTiling &tiling,
             const std::string &name, bool withEpilogue, BReads reads = BReads::Strided) {
  llvm::LLVMContext &ctx = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(ctx);
  llvm::Type *i64 = llvm::Type::getInt64Ty(ctx);
  std::vector<llvm::Type *> params = {ptr, i64, i64, ptr, i64, i64, ptr,
                                      i64, i64, i64, i64, i64, i64};
  if (withEpilogue)
    params.push_back(ptr);
  auto *fnTy = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), params, false);
  auto *fn = llvm::Function::Create(fnTy, llvm::Function::ExternalLinkage, name, module);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  auto arg = [&](unsigned i) { return fn->getArg(i); };
  tensorc::cpu::GemmOperands ops;
  ops.a = arg(0), ops.aRowStride = arg(1), ops.aColStride = arg(2);
  ops.b = arg(3), ops.bRowStride = arg(4), ops.bColStride = arg(5);
  ops.c = arg(6), ops.cRowStride = arg(7);
  ops.m = arg(8), ops.n = arg(9), ops.k = arg(10);
  auto elementIndex = [&](llvm::IRBuilderBase &ir, llvm::Value *k, llvm::Value *n) {
    return ir.CreateAdd(ir.CreateMul(k, ops.bRowStride), ir.CreateMul(n, ops.bColStride));
  };
  if (reads != BReads::Strided)
    ops.loadB = [&](llvm::IRBuilderBase &ir, llvm::Value *k, llvm::Value *n) -> llvm::Value * {
      llvm::Value *ptr = ir.CreateInBoundsGEP(ir.getFloatTy(), ops.b, elementIndex(ir, k, n));
      return ir.CreateAlignedLoad(ir.getFloatTy(), ptr, llvm::Align(4));
    };
  // Claims contiguity only for unit column stride and strips not starting at a multiple of 3, so
  // both packing paths run in one GEMM.
  if (reads == BReads::LoaderWithRows)
    ops.loadBRow = [&](llvm::IRBuilderBase &ir, llvm::Value *k, llvm::Value *n0,
                       unsigned) -> std::pair<llvm::Value *, llvm::Value *> {
      llvm::Value *ok =
          ir.CreateAnd(ir.CreateICmpEQ(ops.bColStride, ir.getInt64(1)),
                       ir.CreateICmpNE(ir.CreateURem(n0, ir.getInt64(3)), ir.getInt64(0)));
      return {ir.CreateGEP(ir.getFloatTy(), ops.b, elementIndex(ir, k, n0)), ok};
    };
  tensorc::cpu::GemmEpilogue epilogue;
  if (withEpilogue)
    epilogue = [bias = arg(13)](llvm::IRBuilderBase &b, llvm::Value *acc, llvm::Value *row,
                                llvm::Value *col) { return biasReluRow(b, bias, acc, row, col); };
  tensorc::cpu::emitGemmTiles(b, target, tiling, ops, arg(11), arg(12), epilogue);
  b.CreateRetVoid();

  auto *countTy = llvm::FunctionType::get(i64, {i64, i64}, false);
  auto *count =
      llvm::Function::Create(countTy, llvm::Function::ExternalLinkage, name + "_tiles", module);
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", count));
  b.CreateRet(tensorc::cpu::emitGemmTileCount(b, tiling, count->getArg(0), count->getArg(1)));
}

void optimizeO3(llvm::Module &module, llvm::TargetMachine &machine) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder passes(&machine);
  passes.registerModuleAnalyses(mam);
  passes.registerCGSCCAnalyses(cgam);
  passes.registerFunctionAnalyses(fam);
  passes.registerLoopAnalyses(lam);
  passes.crossRegisterProxies(lam, fam, cgam, mam);
  passes.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(module, mam);
}

/// Names of functions the optimized module still calls: the GEMM must stay freestanding, so any
/// call other than an intrinsic (e.g. a loop turned into memset) is a bug.
std::string externalCalls(const llvm::Module &module) {
  std::string calls;
  for (const llvm::Function &fn : module)
    if (fn.isDeclaration() && !fn.isIntrinsic() && !fn.use_empty())
      calls += fn.getName().str() + " ";
  return calls;
}

/// The host (AVX2) variants, built and JIT-compiled once for all tests.
struct HostGemms {
  std::string error;
  std::unique_ptr<tensorc::test::HostJit> jit;
  GemmTiling tiling;
  GemmFn *gemm = nullptr;    // default tiling, no epilogue
  GemmFn *gemmOdd = nullptr; // 13 x 20 tiles: partial strips inside every tile
  TileCountFn *gemmOddTiles = nullptr;
  TileCountFn *gemmTiles = nullptr;
  GemmEpilogueFn *gemmEpilogue = nullptr;
  GemmFn *gemmLoader = nullptr;     // B through the element loader (odd tiling)
  GemmFn *gemmLoaderRows = nullptr; // element loader plus the contiguous-row fast path
};

const GemmTiling kOddTiling{13, 20};

const HostGemms &hostGemms() {
  static HostGemms gemms;
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!builder) {
      gemms.error = llvm::toString(builder.takeError());
      return;
    }
    builder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
    auto machine = builder->createTargetMachine();
    if (!machine) {
      gemms.error = llvm::toString(machine.takeError());
      return;
    }
    CpuTarget target = targetNamed("x86_64", "x86_64");
    gemms.tiling = tensorc::cpu::chooseGemmTiling(target);
    auto ctx = std::make_unique<llvm::LLVMContext>();
    auto module = std::make_unique<llvm::Module>("gemm_test", *ctx);
    module->setDataLayout((*machine)->createDataLayout());
    module->setTargetTriple((*machine)->getTargetTriple().str());
    addGemm(*module, target, gemms.tiling, "gemm", false);
    addGemm(*module, target, kOddTiling, "gemm_odd", false);
    addGemm(*module, target, gemms.tiling, "gemm_epilogue", true);
    addGemm(*module, target, kOddTiling, "gemm_loader", false, BReads::Loader);
    addGemm(*module, target, gemms.tiling, "gemm_loader_rows", false, BReads::LoaderWithRows);
    std::string message;
    llvm::raw_string_ostream os(message);
    if (llvm::verifyModule(*module, &os)) {
      gemms.error = "invalid IR: " + message;
      return;
    }
    optimizeO3(*module, **machine);
    if (std::string calls = externalCalls(*module); !calls.empty()) {
      gemms.error = "optimized GEMM calls " + calls;
      return;
    }
    auto jit = tensorc::test::HostJit::create(std::move(module), std::move(ctx));
    if (!jit) {
      gemms.error = llvm::toString(jit.takeError());
      return;
    }
    gemms.jit = std::move(*jit);
    auto lookup = [&](auto *&fn, const char *name) {
      auto address =
          gemms.jit->lookup<std::remove_pointer_t<std::remove_reference_t<decltype(fn)>>>(name);
      if (!address)
        gemms.error += llvm::toString(address.takeError());
      else
        fn = *address;
    };
    lookup(gemms.gemm, "gemm");
    lookup(gemms.gemmTiles, "gemm_tiles");
    lookup(gemms.gemmOdd, "gemm_odd");
    lookup(gemms.gemmOddTiles, "gemm_odd_tiles");
    lookup(gemms.gemmEpilogue, "gemm_epilogue");
    lookup(gemms.gemmLoader, "gemm_loader");
    lookup(gemms.gemmLoaderRows, "gemm_loader_rows");
  });
  return gemms;
}

bool hostHasAvx2Fma() {
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  return features.lookup("avx2") && features.lookup("fma");
}

/// A matrix stored with arbitrary strides inside `data` (transposed or padded storage).
struct Strided {
  int64_t rows = 0, cols = 0, rowStride = 0, colStride = 0;
  std::vector<float> data;
  float at(int64_t i, int64_t j) const { return data[i * rowStride + j * colStride]; }
};

/// Random rows x cols values; `transposed` stores them column-major, `pad` adds unused elements
/// after every row (or column).
Strided makeMatrix(int64_t rows, int64_t cols, bool transposed, int64_t pad, std::mt19937 &rng) {
  Strided x;
  x.rows = rows, x.cols = cols;
  if (transposed)
    x.rowStride = 1, x.colStride = rows + pad;
  else
    x.rowStride = cols + pad, x.colStride = 1;
  int64_t size = transposed ? (rows + pad) * cols : rows * (cols + pad);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  x.data.resize(std::max<int64_t>(size, 1));
  for (float &v : x.data)
    v = dist(rng);
  return x;
}

struct Shape {
  int64_t m, n, k;
  bool transA = false, transB = false;
  int64_t pad = 0;
};

std::string describe(const Shape &s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) +
         (s.transA ? " A^T" : "") + (s.transB ? " B^T" : "") +
         (s.pad ? " pad " + std::to_string(s.pad) : "");
}

/// Runs a GEMM variant on one shape with the tiles split at `split` (two "threads"), and checks
/// every element against a double-accumulated reference, and that C's row padding is untouched.
void checkShape(const Shape &s, GemmFn *gemm, TileCountFn *tiles, const float *bias = nullptr,
                GemmEpilogueFn *gemmEpilogue = nullptr) {
  SCOPED_TRACE(describe(s));
  std::mt19937 rng(uint32_t(s.m * 131 + s.n * 17 + s.k));
  Strided a = makeMatrix(s.m, s.k, s.transA, s.pad, rng);
  Strided b = makeMatrix(s.k, s.n, s.transB, s.pad, rng);
  const int64_t ldc = s.n + 3;
  // NaN everywhere: the first K block must overwrite C, never read-modify-write it.
  std::vector<float> c(std::max<int64_t>(s.m * ldc, 1), std::nanf(""));
  int64_t count = tiles(s.m, s.n);
  int64_t split = count / 2;
  for (auto [begin, end] : {std::pair{int64_t(0), split}, std::pair{split, count}}) {
    if (gemmEpilogue)
      gemmEpilogue(a.data.data(), a.rowStride, a.colStride, b.data.data(), b.rowStride, b.colStride,
                   c.data(), ldc, s.m, s.n, s.k, begin, end, bias);
    else
      gemm(a.data.data(), a.rowStride, a.colStride, b.data.data(), b.rowStride, b.colStride,
           c.data(), ldc, s.m, s.n, s.k, begin, end);
  }
  int64_t failures = 0;
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < s.n; ++j) {
      double sum = 0, magnitude = 0;
      for (int64_t p = 0; p < s.k; ++p) {
        double term = double(a.at(i, p)) * double(b.at(p, j));
        sum += term;
        magnitude += std::fabs(term);
      }
      if (bias)
        sum = std::max(sum + bias[j], 0.0) + 0.25 * double(i);
      double tolerance = 1e-6 * double(s.k + 4) * magnitude + 1e-5;
      float got = c[i * ldc + j];
      if (!(std::fabs(got - sum) <= tolerance) && failures++ < 5)
        ADD_FAILURE() << "C[" << i << "][" << j << "] = " << got << ", expected " << sum;
    }
    for (int64_t j = s.n; j < ldc && i * ldc + j < int64_t(c.size()); ++j)
      if (!std::isnan(c[i * ldc + j]) && failures++ < 5)
        ADD_FAILURE() << "padding C[" << i << "][" << j << "] was written";
  }
  EXPECT_EQ(failures, 0);
}

class GemmHost : public ::testing::Test {
protected:
  void SetUp() override {
    if (!hostHasAvx2Fma())
      GTEST_SKIP() << "host has no AVX2+FMA";
    ASSERT_EQ(hostGemms().error, "");
  }
};

TEST_F(GemmHost, TileCountCoversTheMatrix) {
  const HostGemms &g = hostGemms();
  EXPECT_EQ(g.gemmTiles(0, 5), 0);
  EXPECT_EQ(g.gemmTiles(1, 1), 1);
  EXPECT_EQ(g.gemmTiles(g.tiling.mc, g.tiling.nc), 1);
  EXPECT_EQ(g.gemmTiles(g.tiling.mc + 1, 2 * g.tiling.nc + 1), 2 * 3);
  EXPECT_EQ(g.gemmOddTiles(27, 41), 3 * 3);
}

TEST_F(GemmHost, SmallAndOddShapes) {
  const HostGemms &g = hostGemms();
  for (Shape s : std::vector<Shape>{{1, 1, 1},
                                    {1, 17, 3},
                                    {6, 16, 8},
                                    {7, 13, 5},
                                    {12, 32, 1},
                                    {5, 8, 300},
                                    {65, 129, 33},
                                    {100, 1000, 37},
                                    {1, 300, 64}}) {
    checkShape(s, g.gemm, g.gemmTiles);
    checkShape(s, g.gemmOdd, g.gemmOddTiles);
  }
}

TEST_F(GemmHost, ZeroDepthGivesZero) {
  const HostGemms &g = hostGemms();
  checkShape({7, 13, 0}, g.gemm, g.gemmTiles);
  checkShape({30, 45, 0}, g.gemmOdd, g.gemmOddTiles);
}

TEST_F(GemmHost, TransposedAndPaddedOperands) {
  const HostGemms &g = hostGemms();
  for (bool transA : {false, true})
    for (bool transB : {false, true})
      for (int64_t pad : {0, 5}) {
        checkShape({37, 70, 45, transA, transB, pad}, g.gemm, g.gemmTiles);
        checkShape({37, 70, 45, transA, transB, pad}, g.gemmOdd, g.gemmOddTiles);
      }
}

TEST_F(GemmHost, SeveralBlocksInEveryDimension) {
  const HostGemms &g = hostGemms();
  // Spans 3 mc, 2 nc and 3 kc blocks of the default tiling, with ragged ends everywhere.
  checkShape({2 * g.tiling.mc + 7, g.tiling.nc + 19, 600}, g.gemm, g.gemmTiles);
  checkShape({150, 260, 530, true, true}, g.gemm, g.gemmTiles);
  checkShape({40, 50, 520, false, true}, g.gemmOdd, g.gemmOddTiles);
}

TEST_F(GemmHost, EpilogueAppliedOnceAfterTheFullSum) {
  const HostGemms &g = hostGemms();
  std::vector<float> bias(400);
  for (size_t j = 0; j < bias.size(); ++j)
    bias[j] = (j % 3 == 0 ? -0.5f : 0.75f) + 0.01f * float(j % 7);
  for (Shape s : std::vector<Shape>{{1, 1, 1}, {7, 13, 5}, {45, 300, 600}, {20, 37, 0}})
    checkShape(s, nullptr, g.gemmTiles, bias.data(), g.gemmEpilogue);
}

TEST_F(GemmHost, ImplicitBThroughTheLoader) {
  const HostGemms &g = hostGemms();
  for (Shape s : std::vector<Shape>{{1, 1, 1},
                                    {7, 13, 5},
                                    {37, 70, 45, false, true, 5},
                                    {40, 50, 520, false, false, 3},
                                    {2 * g.tiling.mc + 7, g.tiling.nc + 19, 300}}) {
    checkShape(s, g.gemmLoader, g.gemmOddTiles);
    checkShape(s, g.gemmLoaderRows, g.gemmTiles);
  }
}

/// Builds the GEMM for a target that may not be the host, verifies it, optimizes it and
/// compiles it to an object file in memory.
void compileForTarget(const CpuTarget &target) {
  SCOPED_TRACE(target.name);
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
  });
  std::string error;
  const llvm::Target *llvmTarget = llvm::TargetRegistry::lookupTarget(target.triple, error);
  ASSERT_NE(llvmTarget, nullptr) << error;
  std::unique_ptr<llvm::TargetMachine> machine(llvmTarget->createTargetMachine(
      target.triple, target.cpu, target.features, llvm::TargetOptions(), llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  ASSERT_NE(machine, nullptr);
  llvm::LLVMContext ctx;
  llvm::Module module("gemm_" + target.name, ctx);
  module.setTargetTriple(target.triple);
  module.setDataLayout(machine->createDataLayout());
  GemmTiling tiling = tensorc::cpu::chooseGemmTiling(target);
  EXPECT_GT(tiling.mc, 0);
  EXPECT_GT(tiling.nc, 0);
  // The epilogue variant holds every store path (with and without the epilogue).
  addGemm(module, target, tiling, "gemm_epilogue", true);
  std::string message;
  llvm::raw_string_ostream os(message);
  ASSERT_FALSE(llvm::verifyModule(module, &os)) << message;
  optimizeO3(module, *machine);
  EXPECT_EQ(externalCalls(module), "");
  llvm::SmallVector<char, 0> object;
  llvm::raw_svector_ostream objectStream(object);
  llvm::legacy::PassManager codegen;
  ASSERT_FALSE(machine->addPassesToEmitFile(codegen, objectStream, nullptr,
                                            llvm::CodeGenFileType::ObjectFile));
  codegen.run(module);
  EXPECT_GT(object.size(), 1000u);
}

TEST(GemmCrossTarget, Avx512Compiles) { compileForTarget(targetNamed("x86_64", "x86_64-avx512")); }

TEST(GemmCrossTarget, NeonCompiles) { compileForTarget(targetNamed("aarch64", "aarch64")); }

/// Single-threaded GFLOP/s of the host variant; run by hand with --gtest_also_run_disabled_tests.
TEST_F(GemmHost, DISABLED_GemmThroughput) {
  const HostGemms &g = hostGemms();
  for (Shape s : std::vector<Shape>{
           {512, 512, 512}, {64, 4096, 1024}, {1024, 1024, 1024}, {512, 512, 512, false, true}}) {
    std::mt19937 rng(1);
    Strided a = makeMatrix(s.m, s.k, s.transA, 0, rng);
    Strided b = makeMatrix(s.k, s.n, s.transB, 0, rng);
    std::vector<float> c(s.m * s.n);
    int64_t count = g.gemmTiles(s.m, s.n);
    double best = 1e30;
    for (int rep = 0; rep < 7; ++rep) {
      auto start = std::chrono::steady_clock::now();
      g.gemm(a.data.data(), a.rowStride, a.colStride, b.data.data(), b.rowStride, b.colStride,
             c.data(), s.n, s.m, s.n, s.k, 0, count);
      std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
      best = std::min(best, elapsed.count());
    }
    std::printf("gemm %-22s %7.2f ms  %6.1f GFLOP/s\n", describe(s).c_str(), best * 1e3,
                2.0 * double(s.m) * double(s.n) * double(s.k) / best * 1e-9);
  }
}

} // namespace
