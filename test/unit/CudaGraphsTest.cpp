// When the CUDA executor may replay a bundle's launch list as a CUDA graph (no GPU needed: the
// rule reads the manifest), and what the runners print when it may not; how a Hopper GEMM's
// tensor maps are encoded from its operand views.
#include "CudaExecutor.h"

#include <gtest/gtest.h>

namespace tensorc {
namespace {

bundle::Launch launch(bundle::LaunchKind kind, const std::string &name) {
  bundle::Launch result;
  result.kind = kind;
  result.name = name;
  return result;
}

TEST(CudaGraphs, KernelsAndCopiesReplay) {
  bundle::Manifest manifest;
  manifest.launches = {launch(bundle::LaunchKind::Kernel, "poi_fused_relu_0"),
                       launch(bundle::LaunchKind::Copy, "copy")};
  EXPECT_EQ(rt::CudaExecutor::graphBlocker(manifest), "");
}

TEST(CudaGraphs, FallbacksBlockReplayAndTheFirstIsNamed) {
  bundle::Manifest manifest;
  manifest.launches = {launch(bundle::LaunchKind::Kernel, "poi_fused_exp_0"),
                       launch(bundle::LaunchKind::Extern, "aten.cumsum"),
                       launch(bundle::LaunchKind::Extern, "aten.max_pool2d")};
  std::string why = rt::CudaExecutor::graphBlocker(manifest);
  EXPECT_NE(why.find("2 reference-kernel fallback launches on the host"), std::string::npos) << why;
  EXPECT_NE(why.find("first: launches[1] (extern aten.cumsum)"), std::string::npos) << why;
  EXPECT_EQ(why.find("max_pool2d"), std::string::npos) << why;
}

TEST(HopperMaps, EncodeTheOperandViews) {
  using bundle::HopperGemm;
  using bundle::SizeExpr;
  auto expr = [](const char *text) {
    Expected<SizeExpr> e = SizeExpr::parse(text);
    EXPECT_TRUE(e) << e.error().message();
    return *e;
  };
  HopperGemm h;
  h.dtype = DType::F16;
  h.k = SizeExpr::constant(768), h.batch = expr("b");
  // A [b][m][768] at element 64 (128 bytes in), rows 1536 elements apart; B shared.
  h.a = {0, SizeExpr::constant(64), expr("m"), SizeExpr::constant(1536), expr("m*1536"), 128};
  h.b = {1,
         SizeExpr::constant(0),
         SizeExpr::constant(3072),
         SizeExpr::constant(768),
         SizeExpr::constant(0),
         256};
  std::map<std::string, int64_t> bindings = {{"b", 2}, {"m", 100}};
  Expected<rt::HopperMapArgs> a =
      rt::hopperMapArgs(h, h.a, 0x10000, bindings);
  ASSERT_TRUE(a) << a.error().message();
  EXPECT_EQ(a->dataType, 6);
  EXPECT_EQ(a->address, 0x10000u + 128u);
  EXPECT_EQ(a->dims[0], 768u);
  EXPECT_EQ(a->dims[1], 100u);
  EXPECT_EQ(a->dims[2], 2u);
  EXPECT_EQ(a->strides[0], 3072u);
  EXPECT_EQ(a->strides[1], 100u * 3072u);
  EXPECT_EQ(a->box[0], 64u);
  EXPECT_EQ(a->box[1], 128u);
  Expected<rt::HopperMapArgs> b =
      rt::hopperMapArgs(h, h.b, 0x20000, bindings);
  ASSERT_TRUE(b) << b.error().message();
  EXPECT_EQ(b->dims[2], 1u); // shared by the batch: one entry, the whole matrix as its stride
  EXPECT_EQ(b->strides[1], 3072u * 768u * 2u);
  EXPECT_EQ(b->box[1], 256u);
  h.tf32 = true, h.dtype = DType::F32;
  Expected<rt::HopperMapArgs> tf32 =
      rt::hopperMapArgs(h, h.b, 0x20000, bindings);
  ASSERT_TRUE(tf32) << tf32.error().message();
  EXPECT_EQ(tf32->dataType, 11);
  EXPECT_EQ(tf32->box[0], 32u);
  // What TMA cannot take is an error, not a fault on the GPU.
  Expected<rt::HopperMapArgs> unaligned =
      rt::hopperMapArgs(h, h.a, 0x10004, bindings);
  EXPECT_FALSE(unaligned);
  h.a.ld = SizeExpr::constant(1537);
  h.tf32 = false, h.dtype = DType::F16;
  Expected<rt::HopperMapArgs> odd =
      rt::hopperMapArgs(h, h.a, 0x10000, bindings);
  ASSERT_FALSE(odd);
  EXPECT_NE(odd.error().message().find("stride of 3074 bytes"), std::string::npos)
      << odd.error().message();
}

} // namespace
} // namespace tensorc
