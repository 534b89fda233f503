// When the CUDA executor may replay a bundle's launch list as a CUDA graph (no GPU needed: the
// rule reads the manifest), and what the runners print when it may not.
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

} // namespace
} // namespace tensorc
