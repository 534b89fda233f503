// Convolution layers of ResNet-50, MobileNetV3 and EfficientNet at batch 1 through the generated
// kernels (Conv.h), on NHWC and on NCHW16c (the two activation layouts compared for the layout
// pass), per CPU variant: GFLOP/s (2 * OH*OW * OC * KH*KW * C/groups per image) of one thread.
//
//   build/bench/cpu/tensorc-bench-conv [--layers name,...] [--variants x86_64-avx512,...]
//                                      [--threads N] [--reps N] [--csv] [--print-layers]
//                                      [--tiling MC,NC] [--cold MIB]
//
// Columns as in tensorc-bench-gemm: best and median wall time, and with one thread the median
// over thread CPU time and the sum over tiles of each tile's best time (the kernel undisturbed).
// --tiling gives every non-depthwise layer MC x NC tiles instead of chooseConvTiling's.
// --cold MIB writes that many MiB before each timed run: weights and input come from memory, as
// in a model at batch 1 (more than the last-level cache evicts them).
// --print-layers writes the layer list (name c h w oc k stride pad groups) for ort_conv.py.
// --so FILE compiles through the compiler's own back end instead of the JIT (O3, object, ld.lld)
// into FILE and loads it: `perf record` / `perf annotate` then see the kernels' symbols.
#include "tensorc/Codegen/CPU/Conv.h"
#include "KernelJit.h"
#include "ObjectLinker.h"
#include "Peak.h"
#include "ThreadPool.h"
#include "Timing.h"
#include "tensorc/Codegen/CPU/WeightPacking.h"

#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>

#include <dlfcn.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using tensorc::bench::CacheEvictor;
using tensorc::bench::timeRuns;
using tensorc::bench::Timing;
using tensorc::cpu::ActivationLayout;
using tensorc::cpu::ConvParams;
using tensorc::cpu::CpuTarget;
using ConvFn = void(const float *, const float *, float *, int64_t, int64_t, int64_t);
using CountFn = int64_t(int64_t);

struct Layer {
  std::string name;
  int64_t c, h, w, oc, k, stride, pad, groups;
  bool depthwise() const { return groups > 1 && groups == c && groups == oc; }
  ConvParams params(ActivationLayout layout) const {
    ConvParams p;
    p.c = c, p.h = h, p.w = w, p.oc = oc, p.kh = p.kw = k;
    p.strideH = p.strideW = stride;
    p.padTop = p.padLeft = pad;
    p.groups = groups;
    p.oh = (h + 2 * pad - k) / stride + 1;
    p.ow = (w + 2 * pad - k) / stride + 1;
    p.layout = layout;
    return p;
  }
  double flops() const {
    ConvParams p = params(ActivationLayout::NHWC);
    return 2.0 * double(p.oh * p.ow) * double(oc) * double(k * k) * double(c / groups);
  }
};

// ResNet-50 v1.5 (torchvision), MobileNetV3-Large and EfficientNet-B0 layers, 224 x 224 input.
const std::vector<Layer> kLayers = {
    {"r50.stem.7x7s2", 3, 224, 224, 64, 7, 2, 3, 1},
    {"r50.3x3.56", 64, 56, 56, 64, 3, 1, 1, 1},
    {"r50.3x3s2.56", 128, 56, 56, 128, 3, 2, 1, 1},
    {"r50.3x3.28", 128, 28, 28, 128, 3, 1, 1, 1},
    {"r50.3x3.14", 256, 14, 14, 256, 3, 1, 1, 1},
    {"r50.3x3.7", 512, 7, 7, 512, 3, 1, 1, 1},
    {"r50.1x1.expand.56", 64, 56, 56, 256, 1, 1, 0, 1},
    {"r50.1x1.reduce.56", 256, 56, 56, 64, 1, 1, 0, 1},
    {"r50.1x1.reduce.14", 1024, 14, 14, 256, 1, 1, 0, 1},
    {"r50.1x1.expand.7", 512, 7, 7, 2048, 1, 1, 0, 1},
    {"r50.1x1s2.down.56", 256, 56, 56, 512, 1, 2, 0, 1},
    {"mbv3.pw.112", 16, 112, 112, 64, 1, 1, 0, 1},
    {"mbv3.pw.28", 40, 28, 28, 120, 1, 1, 0, 1},
    {"mbv3.pw.7", 160, 7, 7, 960, 1, 1, 0, 1},
    {"eff.pw.112", 32, 112, 112, 16, 1, 1, 0, 1},
    {"eff.pw.14", 480, 14, 14, 80, 1, 1, 0, 1},
    {"dw3x3.112.c16", 16, 112, 112, 16, 3, 1, 1, 16},
    {"dw3x3s2.112.c64", 64, 112, 112, 64, 3, 2, 1, 64},
    {"dw3x3.56.c72", 72, 56, 56, 72, 3, 1, 1, 72},
    {"dw3x3.14.c480", 480, 14, 14, 480, 3, 1, 1, 480},
    {"dw5x5s2.56.c72", 72, 56, 56, 72, 5, 2, 2, 72},
    {"dw5x5.28.c120", 120, 28, 28, 120, 5, 1, 2, 120},
    {"dw5x5s2.56.c144", 144, 56, 56, 144, 5, 2, 2, 144},
    {"dw5x5.7.c960", 960, 7, 7, 960, 5, 1, 2, 960},
    {"dw5x5.7.c1152", 1152, 7, 7, 1152, 5, 1, 2, 1152},
};

std::vector<std::string> split(const std::string &text) {
  std::vector<std::string> items;
  std::stringstream stream(text);
  for (std::string item; std::getline(stream, item, ',');)
    items.push_back(item);
  return items;
}

const char *layoutName(ActivationLayout layout) {
  return layout == ActivationLayout::NHWC ? "NHWC" : "NCHW16c";
}

bool supports(const Layer &layer, ActivationLayout layout) {
  if (layout == ActivationLayout::NHWC)
    return true;
  // Blocked: channels of every group in whole blocks (a C = 3 stem has its own kernel in MLAS).
  return layer.depthwise()
             ? layer.c % 16 == 0
             : (layer.c / layer.groups) % 16 == 0 && (layer.oc / layer.groups) % 16 == 0;
}

void addLayer(llvm::Module &module, const CpuTarget &target, const Layer &layer,
              ActivationLayout layout, int threads, const tensorc::cpu::ConvTiling *override,
              const std::string &name) {
  llvm::LLVMContext &ctx = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(ctx), *i64 = llvm::Type::getInt64Ty(ctx);
  auto *fn = llvm::Function::Create(
      llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr, ptr, ptr, i64, i64, i64}, false),
      llvm::Function::ExternalLinkage, name, module);
  fn->addFnAttr("target-cpu", target.cpu);
  fn->addFnAttr("target-features", target.features);
  fn->addFnAttr("no-builtins");
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  auto *count = llvm::Function::Create(llvm::FunctionType::get(i64, {i64}, false),
                                       llvm::Function::ExternalLinkage, name + "_tiles", module);
  llvm::IRBuilder<> cb(llvm::BasicBlock::Create(ctx, "entry", count));
  ConvParams p = layer.params(layout);
  if (layer.depthwise()) {
    auto tiling = tensorc::cpu::chooseDepthwiseTiling(p, threads);
    tensorc::cpu::emitDepthwiseTiles(b, target, p, tiling, fn->getArg(3), fn->getArg(0),
                                     fn->getArg(1), fn->getArg(2), fn->getArg(4), fn->getArg(5));
    cb.CreateRet(tensorc::cpu::emitDepthwiseTileCount(cb, p, tiling, count->getArg(0)));
  } else {
    auto tiling = override ? *override : tensorc::cpu::chooseConvTiling(p, threads);
    tensorc::cpu::emitConvTiles(b, target, p, tiling, fn->getArg(3), fn->getArg(0), fn->getArg(1),
                                fn->getArg(2), fn->getArg(4), fn->getArg(5));
    cb.CreateRet(tensorc::cpu::emitConvTileCount(cb, p, tiling, count->getArg(0)));
  }
  b.CreateRetVoid();
}

} // namespace

int main(int argc, char **argv) {
  std::vector<Layer> layers = kLayers;
  std::vector<std::string> variantNames = {"x86_64-avx512"};
  int threads = 1, reps = 20;
  bool csv = false;
  std::string soPath;
  std::optional<tensorc::cpu::ConvTiling> tiling;
  CacheEvictor evictor;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    auto value = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (flag == "--layers") {
      std::set<std::string> wanted;
      for (const std::string &name : split(value()))
        wanted.insert(name);
      layers.clear();
      for (const Layer &layer : kLayers)
        if (wanted.count(layer.name))
          layers.push_back(layer);
    } else if (flag == "--variants") {
      variantNames = split(value());
    } else if (flag == "--threads") {
      threads = std::max(1, std::atoi(value().c_str()));
    } else if (flag == "--reps") {
      reps = std::max(1, std::atoi(value().c_str()));
    } else if (flag == "--so") {
      soPath = value();
    } else if (flag == "--tiling") {
      std::vector<std::string> sizes = split(value());
      tiling = tensorc::cpu::ConvTiling{};
      if (sizes.size() != 2 || (tiling->mc = std::atoll(sizes[0].c_str())) <= 0 ||
          (tiling->nc = std::atoll(sizes[1].c_str())) <= 0 || tiling->nc % 16) {
        std::fprintf(stderr, "conv: --tiling takes MC,NC (NC a multiple of 16)\n");
        return 1;
      }
    } else if (flag == "--cold") {
      if (!evictor.setMegabytes(value())) {
        std::fprintf(stderr, "conv: --cold takes a size in MiB (more than the last-level cache)\n");
        return 1;
      }
    } else if (flag == "--csv") {
      csv = true;
    } else if (flag == "--print-layers") {
      for (const Layer &l : kLayers)
        std::printf("%s %ld %ld %ld %ld %ld %ld %ld %ld\n", l.name.c_str(), l.c, l.h, l.w, l.oc,
                    l.k, l.stride, l.pad, l.groups);
      return 0;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--layers a,b] [--variants v,...] [--threads N] [--reps N] [--csv] "
                   "[--print-layers] [--so FILE] [--tiling MC,NC] [--cold MIB]\n",
                   argv[0]);
      return 1;
    }
  }
  std::vector<CpuTarget> targets;
  for (const std::string &name : variantNames) {
    CpuTarget target = tensorc::test::cpuTarget("x86_64", name);
    if (!target.name.empty() && tensorc::test::hostSupports(target))
      targets.push_back(target);
    else
      std::fprintf(stderr, "conv: skipping %s\n", name.c_str());
  }
  const ActivationLayout layouts[] = {ActivationLayout::NHWC, ActivationLayout::NCHW16c};
  auto key = [](const CpuTarget &t, const Layer &l, ActivationLayout layout) {
    return t.name + "_" + l.name + "_" + layoutName(layout);
  };
  auto build = [&](llvm::Module &module) {
    for (const CpuTarget &t : targets)
      for (const Layer &l : layers)
        for (ActivationLayout layout : layouts)
          if (supports(l, layout))
            addLayer(module, t, l, layout, threads, tiling ? &*tiling : nullptr, key(t, l, layout));
  };
  std::string error;
  std::unique_ptr<tensorc::test::HostJit> jit;
  void *library = nullptr;
  if (soPath.empty()) {
    jit = tensorc::test::jitKernels(build, error);
  } else if (targets.size() != 1) {
    error = "--so takes one variant";
  } else {
    auto machine = tensorc::cpu::createTargetMachine(targets[0]);
    if (!machine) {
      error = machine.error().message();
    } else {
      llvm::LLVMContext ctx;
      llvm::Module module("bench", ctx);
      module.setTargetTriple(targets[0].triple);
      module.setDataLayout((*machine)->createDataLayout());
      build(module);
      std::string ir;
      auto object = tensorc::cpu::optimizeAndLink(module, **machine, targets[0], {}, ir);
      if (!object) {
        error = object.error().message();
      } else {
        FILE *file = std::fopen(soPath.c_str(), "wb");
        if (!file || std::fwrite(object->data(), 1, object->size(), file) != object->size())
          error = "cannot write " + soPath;
        if (file)
          std::fclose(file);
        if (error.empty() && !(library = dlopen(soPath.c_str(), RTLD_NOW)))
          error = dlerror();
      }
    }
  }
  if (!jit && !library) {
    std::fprintf(stderr, "conv: %s\n", error.c_str());
    return 1;
  }
  auto lookup = [&](const std::string &name, auto *&fn) {
    using Fn = std::remove_pointer_t<std::remove_reference_t<decltype(fn)>>;
    if (library) {
      fn = reinterpret_cast<Fn *>(dlsym(library, name.c_str()));
      return fn != nullptr;
    }
    auto address = jit->lookup<Fn>(name);
    if (!address) {
      llvm::consumeError(address.takeError());
      return false;
    }
    fn = *address;
    return true;
  };
  tensorc::bench::Peak peak = tensorc::bench::measurePeak();
  if (csv)
    std::printf("layer,variant,layout,threads,best_ms,median_ms,cpu_ms,tile_ms,gflops_best,"
                "gflops_tile\n");
  else
    std::printf("peak per core %.1f GFLOP/s\n%-20s %-14s %-8s %3s %8s %9s %8s %8s %8s %6s\n",
                peak.avx512Flops > 0 ? peak.avx512Flops * 1e-9 : peak.avx2Flops * 1e-9, "layer",
                "variant", "layout", "thr", "best ms", "median ms", "GFLOP/s", "cpu GF/s",
                "tile GF/s", "% peak");
  tensorc::rt::ThreadPool pool(threads);
  for (const Layer &l : layers) {
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> dist(-1, 1);
    ConvParams nhwc = l.params(ActivationLayout::NHWC);
    int64_t cPadded = (l.c + 15) / 16 * 16, ocPadded = (l.oc + 15) / 16 * 16;
    std::vector<float> input(size_t(cPadded * l.h * l.w)),
        output(size_t(ocPadded * nhwc.oh * nhwc.ow));
    std::vector<float> weights(size_t(l.oc * (l.c / l.groups) * l.k * l.k));
    for (float &x : input)
      x = dist(rng);
    for (float &x : weights)
      x = dist(rng);
    std::vector<float> packed =
        l.depthwise()
            ? tensorc::cpu::packDepthwiseWeights(weights.data(), l.c, l.k, l.k)
            : tensorc::cpu::packConvWeights(weights.data(), {l.oc, l.c, l.k, l.k, l.groups});
    for (const CpuTarget &t : targets) {
      double corePeak = t.vectorBits == 512 ? peak.avx512Flops : peak.avx2Flops;
      for (ActivationLayout layout : layouts) {
        if (!supports(l, layout))
          continue;
        ConvFn *fn = nullptr;
        CountFn *count = nullptr;
        if (!lookup(key(t, l, layout), fn) || !lookup(key(t, l, layout) + "_tiles", count))
          return 1;
        int64_t tiles = count(1);
        auto body = [&](int64_t begin, int64_t end) {
          fn(input.data(), packed.data(), output.data(), 1, begin, end);
        };
        Timing time = timeRuns(
            reps, [&] { pool.parallelFor(tiles, 1, body); }, &evictor);
        double tileSum = 0;
        if (threads == 1)
          for (int64_t tile = 0; tile < tiles; ++tile)
            tileSum += timeRuns(
                           reps, [&] { body(tile, tile + 1); }, &evictor)
                           .best;
        if (csv)
          std::printf("%s,%s,%s,%d,%.4f,%.4f,%.4f,%.4f,%.2f,%.2f\n", l.name.c_str(), t.name.c_str(),
                      layoutName(layout), threads, time.best * 1e3, time.median * 1e3,
                      time.cpuMedian * 1e3, tileSum * 1e3, l.flops() / time.best * 1e-9,
                      tileSum > 0 ? l.flops() / tileSum * 1e-9 : 0);
        else
          std::printf("%-20s %-14s %-8s %3d %8.3f %9.3f %8.1f %8.1f %8.1f %5.1f%%\n",
                      l.name.c_str(), t.name.c_str(), layoutName(layout), threads, time.best * 1e3,
                      time.median * 1e3, l.flops() / time.best * 1e-9,
                      threads == 1 ? l.flops() / time.cpuMedian * 1e-9 : 0.0,
                      tileSum > 0 ? l.flops() / tileSum * 1e-9 : 0.0,
                      tileSum > 0 ? 100.0 * l.flops() / tileSum / corePeak : 0.0);
      }
    }
  }
  return 0;
}
