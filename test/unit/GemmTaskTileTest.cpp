// The CPU GEMM task grid (sched::gemmTaskTile): enough tasks for many threads on small-M GEMMs
// with packed weights, the full 96 x 256 tiles where there is work enough, never a task too small.
#include "tensorc/Scheduler/Schedule.h"

#include <gtest/gtest.h>

namespace tensorc::sched {
namespace {

loop::LoopNode::Gemm gemm(SymInt m, int64_t n, int64_t k, bool packedB = true, int64_t batch = 1) {
  loop::LoopNode::Gemm g;
  g.batch = SymInt(batch);
  g.m = std::move(m);
  g.n = SymInt(n);
  g.k = SymInt(k);
  g.packedB = packedB;
  return g;
}

int64_t tasks(const loop::LoopNode::Gemm &g, int64_t s0 = 1) {
  auto count = gemmTileCount(g).substitute({{"s0", SymInt(s0)}}).constant();
  EXPECT_TRUE(count.has_value());
  return count.value_or(-1);
}

int64_t macs(const loop::LoopNode::Gemm &g, const GemmTaskTile &t) {
  return std::min(*g.m.constant(), t.rows) * std::min(*g.n.constant(), t.cols) * *g.k.constant();
}

TEST(GemmTaskTile, SmallMProjectionsGetTasksForEveryThread) {
  // BERT-base at batch 1: Q/K/V/output projections, FFN up and down; GPT-2's fused QKV.
  for (auto [n, k] :
       {std::pair<int64_t, int64_t>{768, 768}, {3072, 768}, {768, 3072}, {2304, 768}}) {
    loop::LoopNode::Gemm g = gemm(SymInt(128), n, k);
    GemmTaskTile t = gemmTaskTile(g);
    EXPECT_GE(tasks(g), kGemmMinTasks) << n << "x" << k;
    EXPECT_GE(t.cols, kGemmMinTileN);
    EXPECT_GE(t.rows, kGemmMinTileM);
    EXPECT_EQ(t.rows % 12, 0) << "whole 12-row micro-tiles";
    EXPECT_EQ(t.cols % 16, 0) << "whole 16-column strips";
    EXPECT_GE(macs(g, t), kGemmMinTaskMacs);
  }
  // Columns split before rows: each row of tasks reads all the weights once.
  GemmTaskTile t = gemmTaskTile(gemm(SymInt(128), 768, 768));
  EXPECT_EQ(t.cols, kGemmMinTileN);
  EXPECT_EQ(t.rows, kGemmTileM);
}

TEST(GemmTaskTile, LargeOrUnpackedGemmsKeepFullTiles) {
  for (const loop::LoopNode::Gemm &g :
       {gemm(SymInt(8192), 768, 768), gemm(SymInt(128), 768, 768, /*packedB=*/false),
        gemm(SymInt(128), 768, 768, true, /*batch=*/64)}) {
    GemmTaskTile t = gemmTaskTile(g);
    EXPECT_EQ(t.rows, kGemmTileM);
    EXPECT_EQ(t.cols, kGemmTileN);
  }
  EXPECT_EQ(tasks(gemm(SymInt(128), 768, 768, false)), 6);
}

TEST(GemmTaskTile, SymbolicRowsSplitColumnsOnly) {
  loop::LoopNode::Gemm g = gemm(SymInt(128) * SymInt::symbol("s0"), 768, 768);
  GemmTaskTile t = gemmTaskTile(g);
  EXPECT_EQ(t.rows, kGemmTileM);
  EXPECT_EQ(t.cols, kGemmMinTileN);
  EXPECT_EQ(tasks(g, 1), 2 * 24);
  EXPECT_EQ(tasks(g, 4), 6 * 24);
}

TEST(GemmTaskTile, NoTaskBelowTheMinimumWork) {
  // A matrix-vector product splits its columns only while each task keeps enough work; a tiny
  // GEMM stays one task.
  loop::LoopNode::Gemm gemv = gemm(SymInt(1), 1000, 1280);
  GemmTaskTile t = gemmTaskTile(gemv);
  EXPECT_GE(macs(gemv, t), kGemmMinTaskMacs);
  EXPECT_GT(tasks(gemv), 4);
  EXPECT_LT(t.cols, kGemmTileN);
  loop::LoopNode::Gemm tiny = gemm(SymInt(4), 8, 8);
  EXPECT_EQ(tasks(tiny), 1);
  GemmTaskTile small = gemmTaskTile(tiny);
  EXPECT_EQ(small.rows, kGemmTileM);
  EXPECT_EQ(small.cols, kGemmTileN);
}

TEST(GemmTaskTile, HugeExtentsDoNotOverflow) {
  // Checked under UBSan in the sanitizer build: no product of extents overflows.
  const int64_t huge = int64_t(1) << 62;
  GemmTaskTile t = gemmTaskTile(gemm(SymInt(huge), huge, huge, true, huge));
  EXPECT_EQ(t.rows, kGemmTileM);
  EXPECT_EQ(t.cols, kGemmTileN);
  GemmTaskTile thin = gemmTaskTile(gemm(SymInt(1), 1000, huge));
  EXPECT_EQ(thin.cols, kGemmMinTileN);
}

} // namespace
} // namespace tensorc::sched
