// Attention templates as CUDA: the flash kernel (f16/bf16 on tensor cores, FlashAttention.cpp)
// or one warp per query row with an online softmax.
#include "KernelRenderer.h"

#include <cstdio>

namespace tensorc::cuda {

std::string KernelRenderer::batchBase(const LoopNode::Attention &a, const StridedView &view,
                                      const std::string &bi, const std::string &name,
                                      const std::string &indent) {
  size_t batchDims = a.batchDims.size();
  std::string offset = view.offset == SymInt(0) ? "" : ex->index(view.offset, symbols) + " + ";
  bool any = false;
  for (size_t d = 0; d < batchDims; ++d)
    any = any || !(view.strides[d] == SymInt(0));
  if (!any)
    return offset + "0ll";
  // Batch dims that flatten (each stride the next one's times its extent) are one stride.
  bool flat = true;
  for (size_t d = 0; d + 1 < batchDims; ++d)
    flat = flat && view.strides[d] == view.strides[d + 1] * a.batchDims[d + 1];
  if (flat)
    return strCat(offset, bi, " * ", ex->index(view.strides[batchDims - 1], symbols));
  std::string base = strCat("tc_", name, "_base"), rest = strCat("tc_", name, "_rest");
  text += strCat(indent, "long long ", base, " = 0, ", rest, " = ", bi, ";\n");
  for (size_t d = batchDims; d-- > 0;) {
    std::string dim = ex->index(a.batchDims[d], symbols);
    if (!(view.strides[d] == SymInt(0)))
      text += strCat(indent, base, " += (", rest, " % ", dim, ") * ",
                     ex->index(view.strides[d], symbols), ";\n");
    if (d > 0)
      text += strCat(indent, rest, " /= ", dim, ";\n");
  }
  return offset + base;
}

namespace {

/// The attention's output as a view: its strides, or dense over [batchDims..., l, ev].
StridedView outputView(const LoopNode &node) {
  const LoopNode::Attention &a = node.attention;
  return {node.output, SymInt(0),
          a.outStrides.empty() ? loop::contiguousStrides(a.dims(a.l, a.ev)) : a.outStrides};
}

} // namespace

Expected<LaunchConfig> KernelRenderer::renderAttention(const LoopNode &node) {
  const LoopNode::Attention &a = node.attention;
  text += strCat("  const long long L = ", ex->index(a.l, symbols),
                 ", S = ", ex->index(a.s, symbols), ";\n");
  if (flashAttentionFits(program, node))
    return renderTiledAttention(node, false);
  if (simtAttentionFits(program, node))
    return renderTiledAttention(node, true);
  return renderRowAttention(node);
}

Expected<LaunchConfig> KernelRenderer::renderTiledAttention(const LoopNode &node, bool f32) {
  const LoopNode::Attention &a = node.attention;
  usesFlashAttention = true;
  const SimtFlashTiles simt;
  // The flash kernel's blocks take fewer rows each where its grid would leave SMs idle (known
  // sizes; a symbolic batch or length counts as large).
  int64_t split =
      f32 ? 1
          : flashAttentionSplit(sizeHint(a.batch) * ((sizeHint(a.l) + kFlashRows - 1) / kFlashRows),
                                targetGpu().sms);
  int64_t rows = f32 ? simt.rows : kFlashRows / split,
          threads = f32 ? simt.threads() : kFlashThreads;
  int64_t stages = flashAttentionStages(a.e, a.ev, split);
  blockThreads = int(threads);
  size_t rank = a.batchDims.size() + 2;
  int maskKind = a.mask.buffer < 0                                             ? 0
                 : program.buffers[size_t(a.mask.buffer)].dtype == DType::Bool ? 2
                                                                               : 1;
  const char *safe = a.safeSoftmax ? "true" : "false";
  char scaleLog2[64];
  std::snprintf(scaleLog2, sizeof scaleLog2, "%af", double(float(a.scale * 1.4426950408889634)));
  std::string smem = f32 ? "tc_fa32_smem" : "tc_fa_smem";
  if (f32)
    text += strCat("  __shared__ __align__(16) float ", smem, "[",
                   simtAttentionSmemFloats(a.e, a.ev, simt.rows), "];\n");
  else
    text += strCat("  __shared__ __align__(16) unsigned short ", smem, "[",
                   flashAttentionSmemElements(a.e, a.ev, stages, split), "];\n");
  text += strCat("  const long long qTiles = (L + ", rows - 1, ") / ", rows,
                 ", total = ", ex->index(a.batch, symbols), " * qTiles;\n");
  text += "  for (long long t = blockIdx.x; t < total; t += gridDim.x) {\n";
  text += strCat("    const long long bi = t / qTiles, row0 = (t % qTiles) * ", rows, ";\n");
  std::string mask = "nullptr", maskRow = "0ll", maskCol = "0ll";
  if (maskKind) {
    mask = strCat("b", a.mask.buffer, " + ", batchBase(a, a.mask, "bi", "mask", "    "));
    maskRow = ex->index(a.mask.strides[rank - 2], symbols);
    maskCol = ex->index(a.mask.strides[rank - 1], symbols);
  }
  // Each operand's rows (and the output's) from its batch entry's base, `ld` apart.
  std::string args;
  StridedView out = outputView(node);
  for (auto [view, name] : {std::pair{&a.q, "q"}, {&a.k, "k"}, {&a.v, "v"}, {&out, "out"}})
    args += strCat("b", view->buffer, " + ", batchBase(a, *view, "bi", name, "    "), ", ",
                   ex->index(view->strides[rank - 2], symbols), ", ");
  bool bf16 = program.buffers[size_t(a.q.buffer)].dtype == DType::BF16;
  std::string kernel =
      f32 ? strCat("tc_flash_attention_f32<", a.e, ", ", a.ev, ", ", maskKind, ", ", safe, ", ",
                   simt.rows, ", ", simt.rowsPerThread, ">")
          : strCat("tc_flash_attention<", a.e, ", ", a.ev, ", ", bf16 ? "true" : "false", ", ",
                   maskKind, ", ", safe, ", ", stages, ", ", split, ">");
  text += strCat("    ", kernel, "(", args, mask, ", ", maskRow, ", ", maskCol, ", L, S, row0, ",
                 scaleLog2, ", ", smem, ");\n");
  text += "  }\n";
  return LaunchConfig{a.batch * ceilDiv(a.l, rows), threads};
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
  text += "    const long long bi = row / L, tc_i = row - bi * L;\n";
  StridedView out = outputView(node);
  // Row i of q and the output, key j of k and v: from each one's batch base, `ld` apart.
  auto rowAt = [&](const StridedView &view, const std::string &name, const std::string &r) {
    return strCat("(", batchBase(a, view, "bi", name, "    "), ") + ", r, " * ",
                  ex->index(view.strides[rank - 2], symbols));
  };
  text += strCat("    const long long tc_q_row = ", rowAt(a.q, "q", "tc_i"), ";\n");
  text += strCat("    const long long tc_out_row = ", rowAt(out, "out", "tc_i"), ";\n");
  std::string kBase = batchBase(a, a.k, "bi", "k", "    ");
  std::string vBase = batchBase(a, a.v, "bi", "v", "    ");
  std::string maskAt;
  if (a.mask.buffer >= 0) {
    std::string base = batchBase(a, a.mask, "bi", "mask", "    ");
    text += strCat("    const long long tc_mask_row = ", base, " + tc_i * ",
                   ex->index(a.mask.strides[rank - 2], symbols), ";\n");
    maskAt = strCat("tc_mask_row + j * ", ex->index(a.mask.strides[rank - 1], symbols));
  }
  text += strCat("    float qv[", qPerLane, "], acc[", vPerLane, "];\n");
  text += strCat("    #pragma unroll\n    for (int i = 0; i < ", qPerLane, "; ++i) {\n",
                 "      const int d = lane + 32 * i;\n", "      qv[i] = d < ", a.e, " ? ",
                 floatElement(a.q.buffer, "tc_q_row + d"), " * ", scale, " : 0.0f;\n",
                 "    }\n");
  text +=
      strCat("    #pragma unroll\n    for (int i = 0; i < ", vPerLane, "; ++i) acc[i] = 0.0f;\n");
  text += "    float best = __int_as_float((int)0xff800000u), total = 0.0f;\n";
  text += "    for (long long j = 0; j < S; ++j) {\n";
  text += strCat("      const long long tc_k_row = ", kBase, " + j * ",
                 ex->index(a.k.strides[rank - 2], symbols), ", tc_v_row = ", vBase, " + j * ",
                 ex->index(a.v.strides[rank - 2], symbols), ";\n");
  text += "      float score = 0.0f;\n";
  laneDims("      ", qPerLane, a.e,
           strCat("score += qv[i] * ", floatElement(a.k.buffer, "tc_k_row + d"), ";"));
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
                  floatElement(a.v.buffer, "tc_v_row + d"), ";"));
  text += "      best = next;\n    }\n";
  // Safe softmax: a row whose softmax is undefined (total 0 or NaN) gives 0.
  laneDims("    ", vPerLane, a.ev,
           ex->store(node.output, DType::F32,
                     a.safeSoftmax ? "(total > 0.0f ? acc[i] / total : 0.0f)" : "acc[i] / total",
                     "tc_out_row + d"));
  text += "  }\n";
  return LaunchConfig{ceilDiv(a.batch * a.l, warps), blockThreads};
}

} // namespace tensorc::cuda
