// Convolution kernels (Conv.h): direct, 1x1, grouped and depthwise convolutions on NHWC (and the
// NCHW16c layout kept for the layout comparison), with packed weights and a fused epilogue, the
// AVX2 and AVX-512 variants JIT-compiled and run on this host against a plain C++ reference over
// shapes with tails (channels, pixels, borders), strides, dilations and padding; tiles split
// between two callers. The NEON variant is compiled to an object.
#include "KernelJit.h"
#include "tensorc/Codegen/CPU/Conv.h"
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

using ConvFn = void(const float *, const float *, float *, int64_t, int64_t, int64_t,
                    const float *);
using CountFn = int64_t(int64_t);

struct Case {
  std::string name;
  ConvParams p;
  int64_t images = 1;
  bool depthwise = false;
  bool epilogue = false;
  ConvTiling tiling{}; // mc 0: chooseConvTiling(p, 2) (chooseWinogradTiling)
  bool winograd = false;
};

ConvParams conv(int64_t c, int64_t h, int64_t w, int64_t oc, int64_t k, int64_t stride, int64_t pad,
                int64_t groups = 1, int64_t dilation = 1,
                ActivationLayout layout = ActivationLayout::NHWC) {
  ConvParams p;
  p.c = c, p.h = h, p.w = w, p.oc = oc, p.kh = k, p.kw = k;
  p.strideH = p.strideW = stride;
  p.padTop = p.padLeft = pad;
  p.dilationH = p.dilationW = dilation;
  p.groups = groups;
  p.oh = (h + 2 * pad - dilation * (k - 1) - 1) / stride + 1;
  p.ow = (w + 2 * pad - dilation * (k - 1) - 1) / stride + 1;
  p.layout = layout;
  return p;
}

std::vector<Case> cases() {
  const auto nchw16c = ActivationLayout::NCHW16c;
  std::vector<Case> all = {
      {"3x3_s1", conv(16, 9, 11, 32, 3, 1, 1), 2},
      {"3x3_s1_epilogue", conv(16, 9, 11, 32, 3, 1, 1), 2, false, true},
      {"stem_7x7_s2_c3", conv(3, 17, 15, 20, 7, 2, 3)},
      {"stem_wide_rows", conv(3, 12, 70, 20, 7, 2, 3), 1, false, true},
      // Windows wider than the image: every kernel row crosses both edges (zero-padded copies).
      {"stem_narrow_image", conv(3, 6, 4, 16, 7, 1, 3), 1, false, true},
      {"3x3_s2_c4", conv(4, 9, 13, 24, 3, 2, 1), 2},
      {"1x1_gemm_epilogue", conv(40, 7, 9, 50, 1, 1, 0), 2, false, true},
      {"1x1_gemm_groups", conv(32, 5, 5, 48, 1, 1, 0, 2)},
      {"1x1_s2", conv(32, 9, 9, 64, 1, 2, 0)},
      {"3x3_s2_groups4", conv(16, 10, 10, 24, 3, 2, 1, 4)},
      {"5x5_dilated", conv(5, 12, 13, 7, 5, 1, 4, 1, 2)},
      {"3x3_p0_tiles", conv(8, 30, 30, 100, 3, 1, 0), 1, false, true, {24, 64}},
      {"3x3_s1_nchw16c", conv(32, 9, 11, 32, 3, 1, 1, 1, 1, nchw16c), 2, false, true},
      {"3x3_s2_nchw16c", conv(16, 10, 9, 48, 3, 2, 1, 1, 1, nchw16c)},
      {"1x1_nchw16c", conv(32, 6, 7, 64, 1, 1, 0, 1, 1, nchw16c), 1, false, true},
      {"dw_3x3_s1_c40", conv(40, 9, 11, 40, 3, 1, 1, 40), 2, true, true},
      {"dw_3x3_s2_c64", conv(64, 12, 13, 64, 3, 2, 1, 64), 1, true},
      {"dw_5x5_s1_c24", conv(24, 10, 10, 24, 5, 1, 2, 24), 1, true, true},
      {"dw_5x5_s2_c72", conv(72, 11, 11, 72, 5, 2, 2, 72), 1, true},
      {"dw_narrow_rows", conv(48, 5, 3, 48, 3, 1, 1, 48), 2, true, true},
      {"dw_dilated", conv(16, 9, 9, 16, 3, 1, 2, 16, 2), 1, true},
      {"dw_3x3_nchw16c", conv(32, 9, 11, 32, 3, 1, 1, 32, 1, nchw16c), 2, true, true},
      // Groups of 4, 8 and 2 channels on the depthwise kernel (channelwiseFits): within a vector
      // (permuted), or a vector inside one group (AVX2's 8 lanes at G = 8: broadcast).
      {"cw_3x3_g4", conv(64, 9, 11, 64, 3, 1, 1, 16), 2, true, true},
      {"cw_3x3_s2_g8", conv(32, 10, 9, 32, 3, 2, 1, 4), 1, true, false},
      {"cw_3x3_g2", conv(48, 7, 13, 48, 3, 1, 1, 24), 1, true, true},
      // 16 per group, strided (RegNet's first block of a stage): one group per 16-lane vector.
      {"cw_3x3_s2_g16", conv(64, 11, 10, 64, 3, 2, 1, 4), 2, true, true},
      // Winograd F(2x2, 3x3): odd output sizes (edge tiles with one row or column), several
      // K blocks with a partial last one (C 80), channel blocks with a partial last one (OC 80),
      // no padding, tasks of one row group and of several.
      {"wino_odd_edges", conv(16, 9, 11, 32, 3, 1, 1), 2, false, true, {}, true},
      {"wino_k_blocks", conv(80, 8, 10, 80, 3, 1, 1), 1, false, true, {12, 64}, true},
      {"wino_pad0", conv(32, 12, 13, 48, 3, 1, 0), 2, false, false, {36, 48}, true},
      {"wino_wide", conv(64, 14, 14, 128, 3, 1, 1), 1, false, true, {}, true},
  };
  return all;
}

/// out = relu(acc + bias[channel]) + 0.25 * image + 0.001 * pixel: every coordinate matters, and
/// applying it twice or to a partial sum changes the result.
llvm::Value *epilogueValue(llvm::IRBuilderBase &b, llvm::Value *bias, llvm::Value *acc,
                           llvm::Value *image, llvm::Value *pixel, llvm::Value *channel) {
  llvm::Type *type = acc->getType();
  llvm::Value *x = b.CreateFAdd(
      acc, b.CreateAlignedLoad(type, b.CreateInBoundsGEP(b.getFloatTy(), bias, channel),
                               llvm::Align(4)));
  x = b.CreateMaxNum(x, llvm::Constant::getNullValue(type));
  llvm::Value *term = b.CreateFAdd(b.CreateFMul(b.CreateSIToFP(image, b.getFloatTy()),
                                                llvm::ConstantFP::get(b.getFloatTy(), 0.25)),
                                   b.CreateFMul(b.CreateSIToFP(pixel, b.getFloatTy()),
                                                llvm::ConstantFP::get(b.getFloatTy(), 0.001)));
  if (auto *vector = llvm::dyn_cast<llvm::FixedVectorType>(type))
    term = b.CreateVectorSplat(vector->getNumElements(), term);
  return b.CreateFAdd(x, term);
}

ConvTiling tilingOf(const Case &c) {
  if (c.tiling.mc)
    return c.tiling;
  return c.winograd ? chooseWinogradTiling(c.p, 2) : chooseConvTiling(c.p, 2);
}

void addCase(llvm::Module &module, const CpuTarget &target, const Case &c,
             const std::string &name) {
  llvm::LLVMContext &ctx = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(ctx), *i64 = llvm::Type::getInt64Ty(ctx);
  auto *fn =
      llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(ctx),
                                                     {ptr, ptr, ptr, i64, i64, i64, ptr}, false),
                             llvm::Function::ExternalLinkage, name, module);
  fn->addFnAttr("target-cpu", target.cpu);
  fn->addFnAttr("target-features", target.features);
  fn->addFnAttr("no-builtins");
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  ConvEpilogue epilogue;
  if (c.epilogue)
    epilogue = [bias = fn->getArg(6)](llvm::IRBuilderBase &ir, llvm::Value *acc, llvm::Value *image,
                                      llvm::Value *pixel, llvm::Value *channel) {
      return epilogueValue(ir, bias, acc, image, pixel, channel);
    };
  auto *count = llvm::Function::Create(llvm::FunctionType::get(i64, {i64}, false),
                                       llvm::Function::ExternalLinkage, name + "_tiles", module);
  llvm::IRBuilder<> cb(llvm::BasicBlock::Create(ctx, "entry", count));
  if (c.depthwise) {
    DepthwiseTiling tiling = chooseDepthwiseTiling(c.p, 2);
    emitDepthwiseTiles(b, target, c.p, tiling, fn->getArg(3), fn->getArg(0), fn->getArg(1),
                       fn->getArg(2), fn->getArg(4), fn->getArg(5), epilogue);
    cb.CreateRet(emitDepthwiseTileCount(cb, c.p, tiling, count->getArg(0)));
  } else if (c.winograd) {
    emitWinogradTiles(b, target, c.p, tilingOf(c), fn->getArg(3), fn->getArg(0), fn->getArg(1),
                      fn->getArg(2), fn->getArg(4), fn->getArg(5), epilogue);
    cb.CreateRet(emitWinogradTaskCount(cb, c.p, tilingOf(c), count->getArg(0)));
  } else {
    emitConvTiles(b, target, c.p, tilingOf(c), fn->getArg(3), fn->getArg(0), fn->getArg(1),
                  fn->getArg(2), fn->getArg(4), fn->getArg(5), epilogue);
    cb.CreateRet(emitConvTileCount(cb, c.p, tilingOf(c), count->getArg(0)));
  }
  b.CreateRetVoid();
}

struct Kernels {
  std::string error;
  std::unique_ptr<test::HostJit> jit;
};

const Kernels &kernels() {
  static Kernels k;
  static std::once_flag once;
  std::call_once(once, [] {
    k.jit = test::jitKernels(
        [](llvm::Module &module) {
          for (const char *name : {"x86_64", "x86_64-avx512"}) {
            CpuTarget target = test::cpuTarget("x86_64", name);
            for (const Case &c : cases())
              addCase(module, target, c, c.name + "_" + target.name);
          }
        },
        k.error);
  });
  return k;
}

/// Offset of element (n, c, h, w) in a tensor of `channels` x `height` x `width` per image.
int64_t at(ActivationLayout layout, int64_t channels, int64_t height, int64_t width, int64_t n,
           int64_t c, int64_t h, int64_t w) {
  switch (layout) {
  case ActivationLayout::NHWC:
    return ((n * height + h) * width + w) * channels + c;
  case ActivationLayout::NCHW16c:
    return (((n * ((channels + 15) / 16) + c / 16) * height + h) * width + w) * 16 + c % 16;
  }
  return 0;
}

int64_t sizeOf(ActivationLayout layout, int64_t images, int64_t channels, int64_t h, int64_t w) {
  return images * (layout == ActivationLayout::NHWC ? channels : (channels + 15) / 16 * 16) * h * w;
}

void checkCase(const Case &c, const std::string &targetName) {
  SCOPED_TRACE(c.name + " on " + targetName);
  const ConvParams &p = c.p;
  const std::string name = c.name + "_" + targetName;
  auto fn = kernels().jit->lookup<ConvFn>(name);
  auto count = kernels().jit->lookup<CountFn>(name + "_tiles");
  ASSERT_TRUE(bool(fn) && bool(count)) << name;
  std::mt19937 rng(uint32_t(p.c * 7 + p.oc * 131 + p.kh));
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> input(size_t(sizeOf(p.layout, c.images, p.c, p.h, p.w)));
  for (float &x : input)
    x = dist(rng);
  std::vector<float> weights(size_t(p.oc * p.cg() * p.kh * p.kw)), bias(size_t(p.oc + 16));
  for (float &x : weights)
    x = dist(rng);
  for (float &x : bias)
    x = dist(rng);
  std::vector<float> packed =
      c.depthwise  ? packDepthwiseWeights(weights.data(), p.c, p.kh, p.kw, p.cg())
      : c.winograd ? packWinogradWeights(weights.data(), p.oc, p.c)
                   : packConvWeights(weights.data(), {p.oc, p.c, p.kh, p.kw, p.groups});
  // NaN everywhere: a kernel must write every output element and nothing else.
  std::vector<float> out(size_t(sizeOf(p.layout, c.images, p.oc, p.oh, p.ow)), std::nanf(""));
  int64_t tiles = (*count)(c.images), split = tiles / 2;
  for (auto [begin, end] : {std::pair{int64_t(0), split}, std::pair{split, tiles}})
    (*fn)(input.data(), packed.data(), out.data(), c.images, begin, end, bias.data());
  int64_t failures = 0;
  for (int64_t n = 0; n < c.images; ++n)
    for (int64_t o = 0; o < p.oc; ++o)
      for (int64_t oh = 0; oh < p.oh; ++oh)
        for (int64_t ow = 0; ow < p.ow; ++ow) {
          int64_t g = o / p.ocg();
          double sum = 0, magnitude = 0;
          for (int64_t ci = 0; ci < p.cg(); ++ci)
            for (int64_t kh = 0; kh < p.kh; ++kh)
              for (int64_t kw = 0; kw < p.kw; ++kw) {
                int64_t ih = oh * p.strideH - p.padTop + kh * p.dilationH;
                int64_t iw = ow * p.strideW - p.padLeft + kw * p.dilationW;
                if (ih < 0 || ih >= p.h || iw < 0 || iw >= p.w)
                  continue;
                double x = input[size_t(at(p.layout, p.c, p.h, p.w, n, g * p.cg() + ci, ih, iw))];
                double term = x * weights[size_t(((o * p.cg() + ci) * p.kh + kh) * p.kw + kw)];
                sum += term;
                magnitude += std::fabs(term);
              }
          if (c.epilogue)
            sum = std::max(sum + bias[size_t(o)], 0.0) + 0.25 * double(n) +
                  0.001 * double(oh * p.ow + ow);
          float got = out[size_t(at(p.layout, p.oc, p.oh, p.ow, n, o, oh, ow))];
          double tolerance = 1e-5 * magnitude + 1e-5;
          if (!(std::fabs(got - sum) <= tolerance) && failures++ < 5)
            ADD_FAILURE() << "out[n " << n << ", c " << o << ", h " << oh << ", w " << ow
                          << "] = " << got << ", expected " << sum;
        }
  EXPECT_EQ(failures, 0);
}

class ConvKernels : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    if (!test::hostSupports(test::cpuTarget("x86_64", GetParam())))
      GTEST_SKIP() << "host cannot run " << GetParam();
    ASSERT_EQ(kernels().error, "");
  }
};

TEST_P(ConvKernels, DirectAndPointwise) {
  for (const Case &c : cases())
    if (!c.depthwise && !c.winograd && c.p.layout == ActivationLayout::NHWC)
      checkCase(c, GetParam());
}

TEST_P(ConvKernels, Winograd) {
  for (const Case &c : cases())
    if (c.winograd)
      checkCase(c, GetParam());
}

TEST_P(ConvKernels, Depthwise) {
  for (const Case &c : cases())
    if (c.depthwise && c.p.layout == ActivationLayout::NHWC)
      checkCase(c, GetParam());
}

TEST_P(ConvKernels, BlockedLayout) {
  for (const Case &c : cases())
    if (c.p.layout == ActivationLayout::NCHW16c)
      checkCase(c, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Targets, ConvKernels, ::testing::Values("x86_64", "x86_64-avx512"),
                         [](const auto &info) {
                           return info.param == "x86_64" ? std::string("Avx2")
                                                         : std::string("Avx512");
                         });

TEST(ConvTiling, TilesFeedTheThreadsAndStayWhole) {
  for (int threads : {1, 2, 16})
    for (const ConvParams &p : {conv(64, 56, 56, 64, 3, 1, 1), conv(512, 7, 7, 512, 3, 1, 1),
                                conv(3, 224, 224, 64, 7, 2, 3), conv(256, 14, 14, 1024, 1, 1, 0)}) {
      ConvTiling t = chooseConvTiling(p, threads);
      EXPECT_EQ(t.mc % 12, 0);
      EXPECT_EQ(t.nc % 64, 0);
      int64_t tiles = (p.oh * p.ow + t.mc - 1) / t.mc * ((p.ocg() + t.nc - 1) / t.nc);
      EXPECT_TRUE(threads == 1 || tiles >= 3 * threads || (t.mc <= 24 && t.nc <= 64))
          << p.c << "->" << p.oc << " " << p.oh << "x" << p.ow << " on " << threads;
    }
}

TEST(ConvTiling, ShallowConvolutionsTileWholePixels) {
  // A weight block of K x nc within 256 KiB, as wide as that allows: with K = 64 or 128 a tile
  // spans every output channel (it writes whole NHWC pixels) while the pixels alone give the
  // threads enough tiles; deeper ones keep narrower blocks.
  for (int threads : {1, 2, 16}) {
    for (const ConvParams &p : {conv(64, 56, 56, 256, 1, 1, 0), conv(128, 28, 28, 512, 1, 1, 0)}) {
      if (threads < 16 || p.oh == 56) {
        EXPECT_EQ(chooseConvTiling(p, threads).nc, p.oc)
            << p.c << "->" << p.oc << " on " << threads;
      }
    }
    for (const ConvParams &p : {conv(256, 14, 14, 1024, 1, 1, 0), conv(1024, 14, 14, 256, 1, 1, 0),
                                conv(64, 56, 56, 64, 3, 1, 1), conv(512, 7, 7, 512, 3, 1, 1)}) {
      ConvTiling t = chooseConvTiling(p, threads);
      const int64_t k = p.taps() * p.cg();
      EXPECT_TRUE(k * t.nc * 4 <= (256 << 10) || t.nc <= 128)
          << p.c << "->" << p.oc << " k" << p.kh << ": nc " << t.nc << " on " << threads;
      EXPECT_LE(t.nc, (p.oc + 63) / 64 * 64);
    }
  }
  EXPECT_EQ(chooseConvTiling(conv(256, 14, 14, 1024, 1, 1, 0), 1).nc, 256);
}

TEST(ConvTiling, SmallSquareGroupsRunChannelwise) {
  // ResNeXt-50 32x4d's first stages (4 and 8 channels per group), 2 per group, 16 per group when
  // strided (RegNet-Y's first block of a stage, ResNeXt's third stage); not depthwise (its own
  // kernel already), 16 per group at stride 1, unequal in and out, or C not a multiple of 16.
  for (const ConvParams &p :
       {conv(128, 56, 56, 128, 3, 1, 1, 32), conv(256, 28, 28, 256, 3, 2, 1, 32),
        conv(32, 9, 9, 32, 3, 1, 1, 16), conv(64, 112, 112, 64, 3, 2, 1, 4)})
    EXPECT_TRUE(channelwiseFits(p)) << p.c << "/" << p.groups;
  for (const ConvParams &p : {conv(64, 9, 9, 64, 3, 1, 1, 64), conv(512, 14, 14, 512, 3, 1, 1, 32),
                              conv(64, 9, 9, 128, 3, 1, 1, 16), conv(40, 9, 9, 40, 3, 1, 1, 10),
                              conv(64, 9, 9, 64, 3, 1, 1)})
    EXPECT_FALSE(channelwiseFits(p)) << p.c << "->" << p.oc << "/" << p.groups;
}

TEST(ConvTiling, WinogradTakesWideStrideOneThreeByThrees) {
  // ResNet's 3x3 convolutions at 56x56, 28x28 and 14x14 (and a VGG-like 224x224 one); not 7x7
  // (16 tiles), strided, grouped, dilated, 5x5 or 3-channel ones.
  for (const ConvParams &p : {conv(64, 56, 56, 64, 3, 1, 1), conv(128, 28, 28, 128, 3, 1, 1),
                              conv(256, 14, 14, 256, 3, 1, 1), conv(64, 224, 224, 64, 3, 1, 1)}) {
    EXPECT_TRUE(winogradFits(p)) << p.c << " " << p.h;
    for (int threads : {1, 2, 8, 16}) {
      ConvTiling t = chooseWinogradTiling(p, threads);
      EXPECT_TRUE(winogradTilingFits(p, t));
      const int64_t count = (p.oh + 1) / 2 * ((p.ow + 1) / 2), blocks = (count + t.mc - 1) / t.mc;
      EXPECT_GE(count - (blocks - 1) * t.mc + blocks, t.mc) << "unequal blocks of " << t.mc;
      EXPECT_TRUE(threads == 1 || blocks * (p.oc / t.nc) >= 3 * threads || t.mc <= 12)
          << p.c << " on " << threads;
    }
  }
  for (const ConvParams &p : {conv(512, 7, 7, 512, 3, 1, 1), conv(128, 56, 56, 128, 3, 2, 1),
                              conv(64, 28, 28, 64, 3, 1, 1, 2), conv(64, 28, 28, 64, 3, 1, 2, 1, 2),
                              conv(64, 28, 28, 64, 5, 1, 2), conv(3, 224, 224, 64, 3, 1, 1),
                              conv(24, 28, 28, 64, 3, 1, 1)})
    EXPECT_FALSE(winogradFits(p)) << p.c << "->" << p.oc << " " << p.h << " k" << p.kh;
  EXPECT_FALSE(winogradTilingFits(conv(64, 56, 56, 64, 3, 1, 1), {24, 128}));
}

TEST(ConvCrossTarget, NeonCompiles) {
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
  llvm::Module module("conv_neon", ctx);
  module.setTargetTriple(target.triple);
  module.setDataLayout(machine->createDataLayout());
  for (const Case &c : cases())
    if (c.epilogue)
      addCase(module, target, c, c.name);
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
