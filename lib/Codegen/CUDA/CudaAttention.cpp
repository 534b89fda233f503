// Attention templates as CUDA: the flash kernel (f16/bf16 on tensor cores, FlashAttention.cpp)
// or one warp per query row with an online softmax.
#include "KernelRenderer.h"

#include <cstdio>

namespace tensorc::cuda {

std::string KernelRenderer::maskBase(const LoopNode::Attention &a, const std::string &bi,
                                     const std::string &indent) {
  size_t batchDims = a.batchDims.size();
  bool any = false;
  for (size_t d = 0; d < batchDims; ++d)
    any = any || !(a.mask.strides[d] == SymInt(0));
  if (!any)
    return "0ll";
  text += strCat(indent, "long long tc_mask_base = 0, tc_mask_rest = ", bi, ";\n");
  for (size_t d = batchDims; d-- > 0;) {
    std::string dim = ex->index(a.batchDims[d], symbols);
    if (!(a.mask.strides[d] == SymInt(0)))
      text += strCat(indent, "tc_mask_base += (tc_mask_rest % ", dim, ") * ",
                     ex->index(a.mask.strides[d], symbols), ";\n");
    if (d > 0)
      text += strCat(indent, "tc_mask_rest /= ", dim, ";\n");
  }
  return "tc_mask_base";
}

Expected<LaunchConfig> KernelRenderer::renderAttention(const LoopNode &node) {
  const LoopNode::Attention &a = node.attention;
  text += strCat("  const long long L = ", ex->index(a.l, symbols),
                 ", S = ", ex->index(a.s, symbols), ";\n");
  if (flashAttentionFits(program, node))
    return renderFlashAttention(node);
  return renderRowAttention(node);
}

Expected<LaunchConfig> KernelRenderer::renderFlashAttention(const LoopNode &node) {
  const LoopNode::Attention &a = node.attention;
  usesFlashAttention = true;
  blockThreads = kFlashThreads;
  size_t rank = a.batchDims.size() + 2;
  bool bf16 = program.buffers[size_t(a.q)].dtype == DType::BF16;
  int maskKind = a.mask.buffer < 0                                             ? 0
                 : program.buffers[size_t(a.mask.buffer)].dtype == DType::Bool ? 2
                                                                               : 1;
  char scaleLog2[64];
  std::snprintf(scaleLog2, sizeof scaleLog2, "%af", double(float(a.scale * 1.4426950408889634)));
  text += strCat("  __shared__ __align__(16) unsigned short tc_fa_smem[", kFlashKeys, " * (",
                 a.e + 8, " + ", a.ev + 8, ")];\n");
  text += strCat("  const long long qTiles = (L + ", kFlashRows - 1, ") / ", kFlashRows,
                 ", total = ", ex->index(a.batch, symbols), " * qTiles;\n");
  text += "  for (long long t = blockIdx.x; t < total; t += gridDim.x) {\n";
  text += strCat("    const long long bi = t / qTiles, row0 = (t % qTiles) * ", kFlashRows, ";\n");
  std::string mask = "nullptr", maskRow = "0ll", maskCol = "0ll";
  if (maskKind) {
    mask = strCat("b", a.mask.buffer, " + ", maskBase(a, "bi", "    "));
    maskRow = ex->index(a.mask.strides[rank - 2], symbols);
    maskCol = ex->index(a.mask.strides[rank - 1], symbols);
  }
  text += strCat("    tc_flash_attention<", a.e, ", ", a.ev, ", ", bf16 ? "true" : "false", ", ",
                 maskKind, ", ", a.safeSoftmax ? "true" : "false", ">(b", a.q, " + bi * L * ", a.e,
                 "ll, b", a.k, " + bi * S * ", a.e, "ll, b", a.v, " + bi * S * ", a.ev, "ll, b",
                 node.output, " + bi * L * ", a.ev, "ll, ", mask, ", ", maskRow, ", ", maskCol,
                 ", L, S, row0, ", scaleLog2, ", tc_fa_smem);\n");
  text += "  }\n";
  return LaunchConfig{a.batch * ceilDiv(a.l, kFlashRows), kFlashThreads};
}

Expected<LaunchConfig> KernelRenderer::renderRowAttention(const LoopNode &node) {
  const LoopNode::Attention &a = node.attention;
  constexpr int64_t warps = 4;
  blockThreads = warps * 32;
  size_t rank = a.batchDims.size() + 2;
  int64_t qPerLane = (a.e + 31) / 32, vPerLane = (a.ev + 31) / 32;
  char scale[64];
  std::snprintf(scale, sizeof scale, "%af", double(float(a.scale)));
  // `statement` for each head dim d < limit of this lane's `count` (d = lane + 32 i).
  auto laneDims = [&](const std::string &indent, int64_t count, int64_t limit,
                      const std::string &statement) {
    text += strCat(indent, "#pragma unroll\n", indent, "for (int i = 0; i < ", count, "; ++i) {\n",
                   indent, "  const int d = lane + 32 * i;\n", indent, "  if (d < ", limit, ") ",
                   statement, "\n", indent, "}\n");
  };
  text += strCat("  const long long rows = ", ex->index(a.batch, symbols), " * L;\n");
  text += "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n";
  text += strCat("  for (long long row = (long long)blockIdx.x * ", warps,
                 " + warp; row < rows; row += (long long)gridDim.x * ", warps, ") {\n");
  text += "    const long long bi = row / L;\n";
  std::string maskAt;
  if (a.mask.buffer >= 0) {
    std::string base = maskBase(a, "bi", "    ");
    text += strCat("    const long long tc_mask_row = ", base, " + (row - bi * L) * ",
                   ex->index(a.mask.strides[rank - 2], symbols), ";\n");
    maskAt = strCat("tc_mask_row + j * ", ex->index(a.mask.strides[rank - 1], symbols));
  }
  text += strCat("    float qv[", qPerLane, "], acc[", vPerLane, "];\n");
  text += strCat("    #pragma unroll\n    for (int i = 0; i < ", qPerLane, "; ++i) {\n",
                 "      const int d = lane + 32 * i;\n", "      qv[i] = d < ", a.e, " ? ",
                 floatElement(a.q, strCat("row * ", a.e, "ll + d")), " * ", scale, " : 0.0f;\n",
                 "    }\n");
  text +=
      strCat("    #pragma unroll\n    for (int i = 0; i < ", vPerLane, "; ++i) acc[i] = 0.0f;\n");
  text += "    float best = __int_as_float((int)0xff800000u), total = 0.0f;\n";
  text += "    for (long long j = 0; j < S; ++j) {\n";
  text += "      const long long key = bi * S + j;\n";
  text += "      float score = 0.0f;\n";
  laneDims("      ", qPerLane, a.e,
           strCat("score += qv[i] * ", floatElement(a.k, strCat("key * ", a.e, "ll + d")), ";"));
  text += "      #pragma unroll\n      for (int d = 16; d > 0; d >>= 1) score += "
          "__shfl_xor_sync(0xffffffffu, score, d);\n";
  if (a.mask.buffer >= 0) {
    if (program.buffers[size_t(a.mask.buffer)].dtype == DType::Bool)
      text += strCat("      if (b", a.mask.buffer, "[", maskAt,
                     "] == 0) score = __int_as_float((int)0xff800000u);\n");
    else
      text += strCat("      score += ", floatElement(a.mask.buffer, maskAt), ";\n");
  }
  // A NaN score poisons the row for good, as the unfused softmax would. While every score so
  // far is -inf the exponent base is 0, so those keys weigh 0 (not NaN); a row that stays so
  // ends as 0 / 0 = NaN, as the unfused softmax gives.
  text += "      const float next = (score != score || best != best) ? "
          "__int_as_float(0x7fc00000) : fmaxf(best, score);\n";
  text += "      const float base = next == __int_as_float((int)0xff800000u) ? 0.0f : next;\n";
  text += "      const float rescale = best == next ? 1.0f : expf(best - base);\n";
  text += "      const float p = expf(score - base);\n";
  text += "      total = total * rescale + p;\n";
  laneDims("      ", vPerLane, a.ev,
           strCat("acc[i] = acc[i] * rescale + p * ",
                  floatElement(a.v, strCat("key * ", a.ev, "ll + d")), ";"));
  text += "      best = next;\n    }\n";
  // Safe softmax: a row whose softmax is undefined (total 0 or NaN) gives 0.
  laneDims("    ", vPerLane, a.ev,
           ex->store(node.output, DType::F32,
                     a.safeSoftmax ? "(total > 0.0f ? acc[i] / total : 0.0f)" : "acc[i] / total",
                     strCat("row * ", a.ev, "ll + d")));
  text += "  }\n";
  return LaunchConfig{ceilDiv(a.batch * a.l, warps), blockThreads};
}

} // namespace tensorc::cuda
