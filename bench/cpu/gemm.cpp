// GEMM throughput of the generated kernels against the machine's measured peak: the packed-B GEMM
// (PackedGemm.h, B packed ahead as a compiled model's weights are) with the tiling of
// choosePackedGemmTiling ("packed-B") and as the compiler emits it (emitPackedGemmGrid over the
// scheduler's task grid: "compiler"), and for comparison the GEMM that packs both operands at run
// time (Gemm.h, what a GEMM with a non-constant B gets), per CPU variant and thread count.
//
//   build/bench/cpu/tensorc-bench-gemm [--shapes 1024x1024x1024,128x768x768] [--threads 1,2]
//                                      [--variants x86_64,x86_64-avx512] [--reps N] [--no-old]
//                                      [--tiling MC,NC,KC]   (instead of choosePackedGemmTiling)
//                                      [--cold MIB]  (write MIB MiB before each timed run)
//
// Per case: the best and the median of --reps timed runs (wall clock; on a busy machine the best
// is the one least disturbed), GFLOP/s of the best, and that as a share of threads x one core's
// peak. With one thread also the median over thread CPU time, which preemption does not inflate,
// and the sum over tiles of each tile's best time (tiles are ~1 ms: short enough to find an
// undisturbed run of each on a busy machine, so this is the kernel's speed on a quiet one).
#include "tensorc/Codegen/CPU/Gemm.h"
#include "KernelJit.h"
#include "Peak.h"
#include "ThreadPool.h"
#include "Timing.h"
#include "tensorc/Codegen/CPU/PackedGemm.h"
#include "tensorc/Codegen/CPU/WeightPacking.h"
#include "tensorc/Scheduler/Schedule.h"

#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>

#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using tensorc::bench::CacheEvictor;
using tensorc::bench::timeRuns;
using tensorc::bench::Timing;
using tensorc::cpu::CpuTarget;
using PackedFn = void(const float *, int64_t, int64_t, const float *, float *, int64_t, int64_t,
                      int64_t, int64_t, int64_t, int64_t, const float *);
using OldFn = void(const float *, int64_t, int64_t, const float *, int64_t, int64_t, float *,
                   int64_t, int64_t, int64_t, int64_t, int64_t, int64_t);
using CountFn = int64_t(int64_t, int64_t);

struct Shape {
  int64_t m, n, k;
};

std::vector<std::string> split(const std::string &text) {
  std::vector<std::string> items;
  std::stringstream stream(text);
  for (std::string item; std::getline(stream, item, ',');)
    items.push_back(item);
  return items;
}

llvm::Function *declare(llvm::Module &module, const CpuTarget &target, const std::string &name,
                        std::vector<llvm::Type *> params) {
  llvm::LLVMContext &ctx = module.getContext();
  auto *fn =
      llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), params, false),
                             llvm::Function::ExternalLinkage, name, module);
  fn->addFnAttr("target-cpu", target.cpu);
  fn->addFnAttr("target-features", target.features);
  fn->addFnAttr("no-builtins");
  return fn;
}

void addCount(llvm::Module &module, const std::string &name,
              const std::function<llvm::Value *(llvm::IRBuilderBase &, llvm::Value *,
                                                llvm::Value *)> &count) {
  llvm::LLVMContext &ctx = module.getContext();
  llvm::Type *i64 = llvm::Type::getInt64Ty(ctx);
  auto *fn = llvm::Function::Create(llvm::FunctionType::get(i64, {i64, i64}, false),
                                    llvm::Function::ExternalLinkage, name, module);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  b.CreateRet(count(b, fn->getArg(0), fn->getArg(1)));
}

void addPacked(llvm::Module &module, const CpuTarget &target,
               const tensorc::cpu::PackedGemmTiling &tiling, const std::string &name) {
  llvm::LLVMContext &ctx = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(ctx), *i64 = llvm::Type::getInt64Ty(ctx);
  llvm::Function *fn =
      declare(module, target, name, {ptr, i64, i64, ptr, ptr, i64, i64, i64, i64, i64, i64, ptr});
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  tensorc::cpu::PackedGemmOperands ops;
  ops.a = fn->getArg(0), ops.aRowStride = fn->getArg(1), ops.aColStride = fn->getArg(2);
  ops.packedB = fn->getArg(3), ops.c = fn->getArg(4), ops.cRowStride = fn->getArg(5);
  ops.m = fn->getArg(6), ops.n = fn->getArg(7), ops.k = fn->getArg(8);
  tensorc::cpu::emitPackedGemmTiles(b, target, tiling, ops, fn->getArg(9), fn->getArg(10));
  b.CreateRetVoid();
  addCount(module, name + "_tiles", [&](llvm::IRBuilderBase &ir, llvm::Value *m, llvm::Value *n) {
    return tensorc::cpu::emitPackedGemmTileCount(ir, tiling, m, n);
  });
}

/// The compiler's GEMM template with B packed at compile time (CpuCodegen's gemmKernel).
void addCompiler(llvm::Module &module, const CpuTarget &target, int64_t k,
                 const std::string &name) {
  llvm::LLVMContext &ctx = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(ctx), *i64 = llvm::Type::getInt64Ty(ctx);
  llvm::Function *fn =
      declare(module, target, name, {ptr, i64, i64, ptr, ptr, i64, i64, i64, i64, i64, i64, ptr});
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  tensorc::cpu::PackedGemmOperands ops;
  ops.a = fn->getArg(0), ops.aRowStride = fn->getArg(1), ops.aColStride = fn->getArg(2);
  ops.packedB = fn->getArg(3), ops.c = fn->getArg(4), ops.cRowStride = fn->getArg(5);
  ops.m = fn->getArg(6), ops.n = fn->getArg(7), ops.k = fn->getArg(8);
  auto tasks = [](llvm::IRBuilderBase &ir, llvm::Value *extent, int64_t size) {
    return ir.CreateUDiv(ir.CreateAdd(extent, ir.getInt64(size - 1)), ir.getInt64(size));
  };
  tensorc::cpu::emitPackedGemmGrid(b, target, tensorc::cpu::packedGemmKBlock(k), ops,
                                   tasks(b, ops.m, tensorc::sched::kGemmTileM),
                                   tasks(b, ops.n, tensorc::sched::kGemmTileN), fn->getArg(9),
                                   fn->getArg(10));
  b.CreateRetVoid();
  addCount(module, name + "_tiles", [&](llvm::IRBuilderBase &ir, llvm::Value *m, llvm::Value *n) {
    return ir.CreateMul(tasks(ir, m, tensorc::sched::kGemmTileM),
                        tasks(ir, n, tensorc::sched::kGemmTileN));
  });
}

void addOld(llvm::Module &module, const CpuTarget &target, const std::string &name) {
  llvm::LLVMContext &ctx = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(ctx), *i64 = llvm::Type::getInt64Ty(ctx);
  llvm::Function *fn = declare(module, target, name,
                               {ptr, i64, i64, ptr, i64, i64, ptr, i64, i64, i64, i64, i64, i64});
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  tensorc::cpu::GemmOperands ops;
  ops.a = fn->getArg(0), ops.aRowStride = fn->getArg(1), ops.aColStride = fn->getArg(2);
  ops.b = fn->getArg(3), ops.bRowStride = fn->getArg(4), ops.bColStride = fn->getArg(5);
  ops.c = fn->getArg(6), ops.cRowStride = fn->getArg(7);
  ops.m = fn->getArg(8), ops.n = fn->getArg(9), ops.k = fn->getArg(10);
  tensorc::cpu::GemmTiling tiling = tensorc::cpu::chooseGemmTiling(target);
  tensorc::cpu::emitGemmTiles(b, target, tiling, ops, fn->getArg(11), fn->getArg(12));
  b.CreateRetVoid();
  addCount(module, name + "_tiles", [&](llvm::IRBuilderBase &ir, llvm::Value *m, llvm::Value *n) {
    return tensorc::cpu::emitGemmTileCount(ir, tiling, m, n);
  });
}

} // namespace

int main(int argc, char **argv) {
  std::vector<Shape> shapes = {{1024, 1024, 1024}, {512, 512, 512},  {128, 768, 768},
                               {128, 3072, 768},   {128, 768, 3072}, {1, 768, 768},
                               {1, 1000, 2048},    {16, 768, 768}};
  std::vector<int> threadCounts = {1, int(std::max(1u, std::thread::hardware_concurrency()))};
  std::vector<std::string> variantNames = {"x86_64", "x86_64-avx512"};
  int reps = 15;
  bool old = true;
  CacheEvictor evictor;
  int64_t forceMc = 0, forceNc = 0, forceKc = 0;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    auto value = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (flag == "--shapes") {
      shapes.clear();
      for (const std::string &item : split(value())) {
        Shape s{};
        if (std::sscanf(item.c_str(), "%ldx%ldx%ld", &s.m, &s.n, &s.k) != 3) {
          std::fprintf(stderr, "gemm: bad shape '%s' (want MxNxK)\n", item.c_str());
          return 1;
        }
        shapes.push_back(s);
      }
    } else if (flag == "--threads") {
      threadCounts.clear();
      for (const std::string &item : split(value()))
        threadCounts.push_back(std::atoi(item.c_str()));
    } else if (flag == "--variants") {
      variantNames = split(value());
    } else if (flag == "--cold") {
      if (!evictor.setMegabytes(value())) {
        std::fprintf(stderr, "gemm: --cold takes a size in MiB (more than the last-level cache)\n");
        return 1;
      }
    } else if (flag == "--reps") {
      reps = std::max(1, std::atoi(value().c_str()));
    } else if (flag == "--tiling") {
      if (std::sscanf(value().c_str(), "%ld,%ld,%ld", &forceMc, &forceNc, &forceKc) != 3) {
        std::fprintf(stderr, "gemm: --tiling wants MC,NC,KC\n");
        return 1;
      }
    } else if (flag == "--no-old") {
      old = false;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--shapes MxNxK,...] [--threads 1,2] [--variants ...] "
                   "[--reps N] [--no-old] [--tiling MC,NC,KC] [--cold MIB]\n",
                   argv[0]);
      return 1;
    }
  }
  std::vector<CpuTarget> targets;
  for (const std::string &name : variantNames) {
    CpuTarget target = tensorc::test::cpuTarget("x86_64", name);
    if (target.name.empty() || !tensorc::test::hostSupports(target))
      std::fprintf(stderr, "gemm: skipping %s (unknown, or this host cannot run it)\n",
                   name.c_str());
    else
      targets.push_back(target);
  }
  tensorc::bench::Peak peak = tensorc::bench::measurePeak();
  std::printf("peak per core: AVX2 %.1f GFLOP/s, AVX-512 %.1f GFLOP/s at %.2f GHz\n",
              peak.avx2Flops * 1e-9, peak.avx512Flops * 1e-9, peak.ghz);

  auto key = [](const std::string &kind, const CpuTarget &t, const Shape &s, int threads) {
    return kind + "_" + t.name + "_" + std::to_string(s.m) + "_" + std::to_string(s.n) + "_" +
           std::to_string(s.k) + "_" + std::to_string(threads);
  };
  std::string error;
  auto jit = tensorc::test::jitKernels(
      [&](llvm::Module &module) {
        for (const CpuTarget &t : targets) {
          if (old)
            addOld(module, t, "old_" + t.name);
          for (const Shape &s : shapes)
            for (int threads : threadCounts) {
              tensorc::cpu::PackedGemmTiling tiling =
                  tensorc::cpu::choosePackedGemmTiling(s.m, s.n, s.k, threads);
              if (forceMc)
                tiling = {forceMc, forceNc, forceKc};
              addPacked(module, t, tiling, key("packed", t, s, threads));
            }
          for (const Shape &s : shapes)
            addCompiler(module, t, s.k, key("compiler", t, s, 0));
        }
      },
      error);
  if (!jit) {
    std::fprintf(stderr, "gemm: %s\n", error.c_str());
    return 1;
  }

  std::printf("%-16s %-14s %-12s %3s %9s %9s %8s %7s %9s %9s %7s\n", "shape", "variant", "gemm",
              "thr", "best ms", "median ms", "GFLOP/s", "% peak", "cpu GF/s", "tile GF/s",
              "% peak");
  for (const Shape &s : shapes) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-1, 1);
    std::vector<float> a(size_t(s.m * s.k)), bm(size_t(s.k * s.n)), c(size_t(s.m * s.n));
    for (float &x : a)
      x = dist(rng);
    for (float &x : bm)
      x = dist(rng);
    std::vector<float> packed = tensorc::cpu::packGemmB(bm.data(), s.k, s.n, s.n, 1);
    double flops = 2.0 * double(s.m) * double(s.n) * double(s.k);
    for (const CpuTarget &t : targets) {
      double corePeak = t.vectorBits == 512 ? peak.avx512Flops : peak.avx2Flops;
      for (int threads : threadCounts) {
        tensorc::rt::ThreadPool pool(threads);
        auto report = [&](const char *kind, const Timing &time, int64_t tiles, auto &&tileBody) {
          std::printf("%-16s %-14s %-12s %3d %9.3f %9.3f %8.1f %6.1f%%", "", t.name.c_str(), kind,
                      threads, time.best * 1e3, time.median * 1e3, flops / time.best * 1e-9,
                      100.0 * flops / time.best / (corePeak * threads));
          if (threads == 1) {
            double tileSum = 0;
            for (int64_t tile = 0; tile < tiles; ++tile)
              tileSum += timeRuns(
                             reps, [&] { tileBody(tile, tile + 1); }, &evictor)
                             .best;
            std::printf(" %9.1f %9.1f %6.1f%%", flops / time.cpuMedian * 1e-9,
                        flops / tileSum * 1e-9, 100.0 * flops / tileSum / corePeak);
          }
          std::printf("\n");
        };
        std::string name = key("packed", t, s, threads);
        auto gemm = jit->lookup<PackedFn>(name);
        auto count = jit->lookup<CountFn>(name + "_tiles");
        if (!gemm || !count) {
          std::fprintf(stderr, "gemm: lookup failed\n");
          return 1;
        }
        int64_t tiles = (*count)(s.m, s.n);
        auto body = [&](int64_t begin, int64_t end) {
          (*gemm)(a.data(), s.k, 1, packed.data(), c.data(), s.n, s.m, s.n, s.k, begin, end,
                  nullptr);
        };
        std::printf("%ldx%ldx%ld\n", s.m, s.n, s.k);
        report("packed-B",
               timeRuns(
                   reps, [&] { pool.parallelFor(tiles, 1, body); }, &evictor),
               tiles, body);
        auto compiler = jit->lookup<PackedFn>(key("compiler", t, s, 0));
        auto compilerCount = jit->lookup<CountFn>(key("compiler", t, s, 0) + "_tiles");
        if (!compiler || !compilerCount)
          return 1;
        int64_t tasks = (*compilerCount)(s.m, s.n);
        auto compilerBody = [&](int64_t begin, int64_t end) {
          (*compiler)(a.data(), s.k, 1, packed.data(), c.data(), s.n, s.m, s.n, s.k, begin, end,
                      nullptr);
        };
        report("compiler",
               timeRuns(
                   reps, [&] { pool.parallelFor(tasks, 1, compilerBody); }, &evictor),
               tasks, compilerBody);
        if (old) {
          auto oldGemm = jit->lookup<OldFn>("old_" + t.name);
          auto oldCount = jit->lookup<CountFn>("old_" + t.name + "_tiles");
          if (!oldGemm || !oldCount)
            return 1;
          int64_t oldTiles = (*oldCount)(s.m, s.n);
          auto oldBody = [&](int64_t begin, int64_t end) {
            (*oldGemm)(a.data(), s.k, 1, bm.data(), s.n, 1, c.data(), s.n, s.m, s.n, s.k, begin,
                       end);
          };
          report("runtime-pack",
                 timeRuns(
                     reps, [&] { pool.parallelFor(oldTiles, 1, oldBody); }, &evictor),
                 oldTiles, oldBody);
        }
      }
    }
  }
  return 0;
}
