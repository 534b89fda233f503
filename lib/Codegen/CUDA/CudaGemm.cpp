// GEMM and convolution templates as CUDA: f32 in shared-memory tiles, f16/bf16 on tensor cores
// (mma.sync, operands streamed with cp.async), the epilogue applied to each accumulator.
#include "KernelRenderer.h"

#include <array>

namespace tensorc::cuda {

void KernelRenderer::bindEpilogue(const LoopNode &templateNode, const LoopNode &epilogue,
                                  size_t columnDims, const std::string &outer,
                                  const std::string &row, const std::string &col, Scope &scope,
                                  const std::string &indent) {
  codegen::EpilogueLayout layout = codegen::epilogueLayout(templateNode, epilogue, columnDims);
  auto bindFlat = [&](const std::string &flat, const std::vector<SymInt> &ranges,
                      const std::vector<std::string> &vars) {
    if (vars.empty())
      return;
    std::string rest = "tc_e" + std::to_string(counter++);
    text += strCat(indent, "long long ", rest, " = ", flat, ";\n");
    for (size_t i = vars.size(); i-- > 0;) {
      std::string local = vars[i] + "_" + std::to_string(counter++);
      if (i == 0) {
        text += strCat(indent, "const long long ", local, " = ", rest, ";\n");
      } else {
        std::string extent = ex->index(ranges[i], symbols);
        text += strCat(indent, "const long long ", local, " = ", rest, " % ", extent, ";\n");
        text += strCat(indent, rest, " /= ", extent, ";\n");
      }
      scope[vars[i]] = local;
    }
  };
  bindFlat(outer, layout.outerRanges, layout.outerVars);
  if (!layout.rowVar.empty())
    scope[layout.rowVar] = row;
  bindFlat(col, layout.columnRanges, layout.columnVars);
}

void KernelRenderer::storeTile(const LoopNode &node, const LoopNode *epilogue, int out,
                               const std::string &outer, const std::string &inner,
                               const std::string &rowCol) {
  text +=
      strCat("    #pragma unroll\n    for (int ", outer, " = 0; ", outer, " < 4; ++", outer,
             ") {\n", "      #pragma unroll\n      for (int ", inner, " = 0; ", inner, " < 4; ++",
             inner, ") {\n", rowCol, "        if (row >= M || col >= N) continue;\n");
  storeElement(node, epilogue, out, strCat("acc[", outer, "][", inner, "]"), "        ");
  text += "      }\n    }\n  }\n";
}

Expected<LaunchConfig> KernelRenderer::renderGemm(const codegen::TemplateKernel &t) {
  const LoopNode &node = *t.node;
  const LoopNode *epilogue = t.epilogue;
  blockThreads = kGemmThreads;
  bool conv = node.templateKind == LoopNode::TemplateKind::Conv2d;
  int out = t.output;
  SymInt m, n, k, batches, tiles;
  std::string loadA, loadB; // float expressions of (gm, gk) and (gk, gn) in the batch `bi`
  if (!conv) {
    const LoopNode::Gemm &g = node.gemm;
    m = g.m, n = g.n, k = g.k, batches = g.batch;
    auto strides = [&](const loop::StridedView &view) {
      size_t base = view.strides.size() - 2;
      return std::array<std::string, 3>{base ? ex->index(view.strides[0], symbols) : "0ll",
                                        ex->index(view.strides[base], symbols),
                                        ex->index(view.strides[base + 1], symbols)};
    };
    auto as = strides(g.a), bs = strides(g.b);
    std::string aIndex = strCat(ex->index(g.a.offset, symbols), " + bi * ", as[0], " + gm * ",
                                as[1], " + gk * ", as[2]);
    std::string bIndex = strCat(ex->index(g.b.offset, symbols), " + bi * ", bs[0], " + gk * ",
                                bs[1], " + gn * ", bs[2]);
    DType aType = program.buffers[size_t(g.a.buffer)].dtype;
    DType bType = program.buffers[size_t(g.b.buffer)].dtype;
    if (aType == bType && (aType == DType::F16 || aType == DType::BF16))
      return renderMmaGemm(node, epilogue, out, aIndex, bIndex, aType);
    loadA = floatElement(g.a.buffer, aIndex);
    loadB = floatElement(g.b.buffer, bIndex);
  } else {
    const LoopNode::Conv &cv = node.conv;
    int64_t cg = cv.c / cv.groups, ocg = cv.oc / cv.groups, taps = cv.kh * cv.kw;
    m = SymInt(ocg), n = SymInt(cv.oh * cv.ow), k = SymInt(cg * taps);
    batches = cv.n * SymInt(cv.groups);
    // Batch bi is (image, group); A is the group's weights, B the patch matrix read in place.
    loadA = floatElement(cv.weight.buffer,
                         strCat(ex->index(cv.weight.offset, symbols), " + (group * ", ocg,
                                "ll + gm) * ", ex->index(cv.weight.strides[0], symbols), " + gk * ",
                                ex->index(cv.weight.strides[3], symbols)));
    text += strCat("  // patch row gk = (c, kh, kw), column gn = (oh, ow); zero in the padding\n");
    std::string patch = strCat("((image * ", cv.c, "ll + group * ", cg, "ll + gk / ", taps,
                               "ll) * ", cv.h * cv.w, "ll + ih * ", cv.w, "ll + iw)");
    loadB = "tc_patch(image, group, gk, gn)";
    // A device lambda keeps the coordinate arithmetic in one place.
    text += strCat(
        "  auto tc_patch = [&](long long image, long long group, long long gk, long long gn) "
        "-> float {\n",
        "    const long long tap = gk % ", taps, "ll, kh = tap / ", cv.kw, "ll, kw = tap % ", cv.kw,
        "ll;\n", "    const long long ih = (gn / ", cv.ow, "ll) * ", cv.strideH, "ll + kh * ",
        cv.dilationH, "ll - ", cv.padH, "ll;\n", "    const long long iw = (gn % ", cv.ow, "ll) * ",
        cv.strideW, "ll + kw * ", cv.dilationW, "ll - ", cv.padW, "ll;\n",
        "    if ((unsigned long long)ih >= ", cv.h, "ull || (unsigned long long)iw >= ", cv.w,
        "ull) return 0.0f;\n", "    return ", floatElement(cv.input, patch), ";\n  };\n");
  }
  tiles = ceilDiv(m, kTileM) * ceilDiv(n, kTileN);
  text += strCat("  const long long M = ", ex->index(m, symbols), ", N = ", ex->index(n, symbols),
                 ", K = ", ex->index(k, symbols), ";\n");
  text += strCat("  const long long tilesN = (N + ", kTileN - 1, ") / ", kTileN, ", tiles = ((M + ",
                 kTileM - 1, ") / ", kTileM, ") * tilesN;\n");
  text += strCat("  const long long total = ", ex->index(batches, symbols), " * tiles;\n");
  text += strCat("  __shared__ float As[", kTileK, "][", kTileM, " + 4];\n");
  text += strCat("  __shared__ float Bs[", kTileK, "][", kTileN, " + 4];\n");
  text += "  const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;\n";
  text += "  for (long long t = blockIdx.x; t < total; t += gridDim.x) {\n";
  text += "    const long long bi = t / tiles, tile = t % tiles;\n";
  text += strCat("    const long long m0 = (tile / tilesN) * ", kTileM, ", n0 = (tile % tilesN) * ",
                 kTileN, ";\n");
  if (conv)
    text += strCat("    const long long image = bi / ", node.conv.groups, "ll, group = bi % ",
                   node.conv.groups, "ll;\n");
  text += "    float acc[4][4];\n";
  text += "    #pragma unroll\n    for (int i = 0; i < 4; ++i)\n"
          "      #pragma unroll\n      for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;\n";
  text += strCat("    for (long long k0 = 0; k0 < K; k0 += ", kTileK, ") {\n");
  text += strCat("      for (int e = threadIdx.x; e < ", kTileM * kTileK, "; e += ", kGemmThreads,
                 ") {\n");
  text +=
      strCat("        const long long gm = m0 + e / ", kTileK, ", gk = k0 + e % ", kTileK, ";\n");
  text += strCat("        As[e % ", kTileK, "][e / ", kTileK, "] = (gm < M && gk < K) ? ", loadA,
                 " : 0.0f;\n      }\n");
  text += strCat("      for (int e = threadIdx.x; e < ", kTileK * kTileN, "; e += ", kGemmThreads,
                 ") {\n");
  text +=
      strCat("        const long long gk = k0 + e / ", kTileN, ", gn = n0 + e % ", kTileN, ";\n");
  text += strCat("        Bs[e / ", kTileN, "][e % ", kTileN, "] = (gk < K && gn < N) ? ", loadB,
                 " : 0.0f;\n      }\n");
  text += "      __syncthreads();\n";
  text += strCat("      #pragma unroll\n      for (int kk = 0; kk < ", kTileK, "; ++kk) {\n");
  text += "        float a[4], b[4];\n";
  text +=
      "        #pragma unroll\n        for (int i = 0; i < 4; ++i) { a[i] = As[kk][ty + 16 * i]; "
      "b[i] = Bs[kk][tx + 16 * i]; }\n";
  text += "        #pragma unroll\n        for (int i = 0; i < 4; ++i)\n"
          "          #pragma unroll\n          for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * "
          "b[j];\n      }\n";
  text += "      __syncthreads();\n    }\n";
  storeTile(node, epilogue, out, "i", "j",
            "        const long long row = m0 + ty + 16 * i, col = n0 + tx + 16 * j;\n");
  return LaunchConfig{batches * tiles, kGemmThreads};
}

void KernelRenderer::storeElement(const LoopNode &node, const LoopNode *epilogue, int out,
                                  const std::string &acc, const std::string &indent) {
  bool conv = node.templateKind == LoopNode::TemplateKind::Conv2d;
  // The output (or the epilogue's, same elements) is dense over the template's dims.
  std::string at = conv ? strCat("(image * ", node.conv.oc, "ll + group * ",
                                 node.conv.oc / node.conv.groups, "ll + row) * N + col")
                        : "(bi * M + row) * N + col";
  if (!epilogue) {
    text += indent + ex->store(out, DType::F32, acc, at) + "\n";
    return;
  }
  text += indent + "{\n";
  Scope scope = symbols;
  if (conv)
    bindEpilogue(node, *epilogue, 2, "image",
                 strCat("group * ", node.conv.oc / node.conv.groups, "ll + row"), "col", scope,
                 indent + "  ");
  else
    bindEpilogue(node, *epilogue, 1, "bi", "row", "col", scope, indent + "  ");
  std::string value = ex->body(epilogue->body, scope, text, indent + "  ", node.output, acc);
  text += indent + "  " + ex->store(out, epilogue->body->dtype, value, at) + "\n";
  text += indent + "}\n";
}

std::string KernelRenderer::smemAt(const OperandTile &tile, const std::string &stage,
                                   const std::string &row, const std::string &k) {
  return tile.kMajor ? strCat(tile.smem, "[", stage, "][", k, "][", row, "]")
                     : strCat(tile.smem, "[", stage, "][", row, "][", k, "]");
}

void KernelRenderer::loadTileElements(const OperandTile &tile, int64_t BK, int64_t threads,
                                      const std::string &stage, const std::string &indent) {
  text += strCat(indent, "#pragma unroll\n", indent, "for (int e = threadIdx.x; e < ",
                 tile.rows * BK, "; e += ", threads, ") {\n");
  if (tile.kContiguous)
    text += strCat(indent, "  const int tr = e / ", BK, ", tk = e % ", BK, ";\n");
  else
    text += strCat(indent, "  const int tr = e % ", tile.rows, ", tk = e / ", tile.rows, ";\n");
  text += strCat(indent, "  const long long ", tile.rowVar, " = ", tile.rowVar,
                 "0 + tr, gk = k0 + tk;\n");
  text += strCat(indent, "  ", smemAt(tile, stage, "tr", "tk"), " = (", tile.rowVar, " < ",
                 tile.rowLimit, " && gk < K) ? b", tile.buffer, "[", tile.index,
                 "] : (unsigned short)0;\n");
  text += indent + "}\n";
}

void KernelRenderer::loadTileAsync(const OperandTile &tile, int64_t BK, int64_t threads,
                                   const std::string &stage, const std::string &indent) {
  if (tile.kMajor) {
    int64_t chunks = tile.rows / 8;
    text += strCat(indent, "#pragma unroll\n", indent, "for (int e = threadIdx.x; e < ",
                   BK * chunks, "; e += ", threads, ") {\n");
    text += strCat(indent, "  const int tk = e / ", chunks, ", tr = (e % ", chunks, ") * 8;\n");
  } else {
    int64_t chunks = BK / 8;
    text += strCat(indent, "#pragma unroll\n", indent, "for (int e = threadIdx.x; e < ",
                   tile.rows * chunks, "; e += ", threads, ") {\n");
    text += strCat(indent, "  const int tr = e / ", chunks, ", tk = (e % ", chunks, ") * 8;\n");
  }
  text += strCat(indent, "  const long long ", tile.rowVar, " = ", tile.rowVar,
                 "0 + tr, gk = kbase + tk;\n");
  text += strCat(indent, "  unsigned short *dst = &", smemAt(tile, stage, "tr", "tk"), ";\n");
  text += strCat(indent, "  if (", tile.rowVar, " < ", tile.rowLimit, " && gk < K) {\n");
  text +=
      strCat(indent, "    const unsigned short *src = &b", tile.buffer, "[", tile.index, "];\n");
  text += strCat(indent, "    asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16;\" :: "
                         "\"r\"((unsigned)__cvta_generic_to_shared(dst)), \"l\"(src));\n");
  text += strCat(indent, "  } else {\n", indent,
                 "    *reinterpret_cast<uint4 *>(dst) = uint4{0u, 0u, 0u, 0u};\n", indent, "  }\n");
  text += indent + "}\n";
}

Expected<LaunchConfig> KernelRenderer::renderMmaGemm(const LoopNode &node, const LoopNode *epilogue,
                                                     int out, const std::string &aIndex,
                                                     const std::string &bIndex, DType dtype) {
  constexpr int64_t BM = 64, BN = 32, BK = 64, threads = 128;
  blockThreads = threads;
  const LoopNode::Gemm &g = node.gemm;
  const char *type = dtype == DType::BF16 ? "bf16" : "f16";
  auto isConstMultiple = [](const SymInt &v, int64_t of) {
    std::optional<int64_t> c = v.constant();
    return c && *c % of == 0;
  };
  auto viewStride = [](const loop::StridedView &view, size_t which) {
    return view.strides[view.strides.size() - 2 + which]; // 0: row (m or k), 1: column
  };
  // A is M x K: k is column 1; B is K x N: k is row 0.
  SymInt aK = viewStride(g.a, 1), aM = viewStride(g.a, 0);
  SymInt bK = viewStride(g.b, 0), bN = viewStride(g.b, 1);
  auto batchStride = [](const loop::StridedView &view) {
    return view.strides.size() == 3 ? view.strides[0] : SymInt(0);
  };
  auto isOne = [](const SymInt &v) { return v.constant() == std::optional<int64_t>(1); };
  bool aKContiguous = isOne(aK), bKContiguous = isOne(bK), bNContiguous = isOne(bN);
  // 16-byte copies need 8-element alignment of every offset and stride they step over, and
  // the contiguous dim's extent a multiple of 8 so a copy never straddles its end.
  bool aVector = aKContiguous && isConstMultiple(g.k, 8) && isConstMultiple(aM, 8) &&
                 isConstMultiple(g.a.offset, 8) && isConstMultiple(batchStride(g.a), 8);
  bool bVector =
      (bKContiguous ? isConstMultiple(g.k, 8) && isConstMultiple(bN, 8)
                    : bNContiguous && isConstMultiple(g.n, 8) && isConstMultiple(bK, 8)) &&
      isConstMultiple(g.b.offset, 8) && isConstMultiple(batchStride(g.b), 8);
  bool vectorized = aVector && bVector;
  OperandTile a{g.a.buffer, "As", "gm", "M", aIndex, BM, aKContiguous, false};
  OperandTile b{g.b.buffer, "Bs", "gn", "N", bIndex, BN, bKContiguous, !bKContiguous};
  // Three stages: two K slices are in flight while one multiplies (43 KB of shared memory
  // for 64 x 32 x 64 tiles, under the 48 KB a block gets without opting in to more).
  int64_t stages = vectorized ? 3 : 1;

  text += strCat("  const long long M = ", ex->index(g.m, symbols),
                 ", N = ", ex->index(g.n, symbols), ", K = ", ex->index(g.k, symbols), ";\n");
  text += strCat("  const long long tilesN = (N + ", BN - 1, ") / ", BN, ", tiles = ((M + ", BM - 1,
                 ") / ", BM, ") * tilesN;\n");
  text += strCat("  const long long total = ", ex->index(g.batch, symbols), " * tiles;\n");
  text += strCat("  __shared__ __align__(16) unsigned short As[", stages, "][", BM, "][", BK,
                 " + 8];\n");
  if (b.kMajor)
    text += strCat("  __shared__ __align__(16) unsigned short Bs[", stages, "][", BK, "][", BN,
                   " + 8];\n");
  else
    text += strCat("  __shared__ __align__(16) unsigned short Bs[", stages, "][", BN, "][", BK,
                   " + 8];\n");
  text += "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n";
  text += "  const int g = lane >> 2, tig = lane & 3;\n";
  text += "  for (long long t = blockIdx.x; t < total; t += gridDim.x) {\n";
  text += "    const long long bi = t / tiles, tile = t % tiles;\n";
  text += strCat("    const long long gm0 = (tile / tilesN) * ", BM, ", gn0 = (tile % tilesN) * ",
                 BN, ", m0 = gm0, n0 = gn0;\n");
  text += "    float acc[4][4];\n";
  text += "    #pragma unroll\n    for (int i = 0; i < 4; ++i)\n"
          "      #pragma unroll\n      for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;\n";
  // The multiply of one staged K slice.
  auto compute = [&](const std::string &stage, const std::string &indent) {
    text +=
        strCat(indent, "#pragma unroll\n", indent, "for (int kk = 0; kk < ", BK, "; kk += 16) {\n");
    std::string in = indent + "  ";
    text += in + "const int r = warp * 16 + g, c = kk + tig * 2;\n";
    auto word = [&](const std::string &smem, const std::string &row, const std::string &col) {
      return strCat("*reinterpret_cast<const unsigned *>(&", smem, "[", stage, "][", row, "][", col,
                    "])");
    };
    text += strCat(in, "const unsigned a0 = ", word("As", "r", "c"),
                   ", a1 = ", word("As", "r + 8", "c"), ", a2 = ", word("As", "r", "c + 8"),
                   ", a3 = ", word("As", "r + 8", "c + 8"), ";\n");
    text += strCat(in, "#pragma unroll\n", in, "for (int j = 0; j < 4; ++j) {\n");
    if (b.kMajor) {
      // k pairs of one column sit in two rows: two 16-bit loads per register.
      auto pair = [&](const std::string &k) {
        return strCat("((unsigned)Bs[", stage, "][", k, "][j * 8 + g] | ((unsigned)Bs[", stage,
                      "][", k, " + 1][j * 8 + g] << 16))");
      };
      text += strCat(in, "  const unsigned b0 = ", pair("c"), ", b1 = ", pair("c + 8"), ";\n");
    } else {
      text += strCat(in, "  const unsigned b0 = ", word("Bs", "j * 8 + g", "c"),
                     ", b1 = ", word("Bs", "j * 8 + g", "c + 8"), ";\n");
    }
    text += strCat(
        in, "  asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.", type, ".", type,
        ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\"\n", in,
        "      : \"+f\"(acc[j][0]), \"+f\"(acc[j][1]), \"+f\"(acc[j][2]), \"+f\"(acc[j][3])\n", in,
        "      : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"r\"(b0), \"r\"(b1));\n");
    text += in + "}\n" + indent + "}\n";
  };
  if (vectorized) {
    // A ring of stages: the prologue starts slices 0 .. stages-2; iteration kt waits for slice
    // kt (cp.async groups complete in order), then refills the slot slice kt - 1 used, which
    // every warp has finished with once past the barrier. Every iteration commits one group,
    // empty past the end, so the wait count stays stages - 2.
    auto load = [&](const std::string &slot, const std::string &k0, const std::string &indent) {
      text += strCat(indent, "{\n", indent, "  const long long kbase = ", k0, ";\n");
      loadTileAsync(a, BK, threads, slot, indent + "  ");
      loadTileAsync(b, BK, threads, slot, indent + "  ");
      text += indent + "}\n";
    };
    text += strCat("    const long long KT = (K + ", BK - 1, ") / ", BK, ";\n");
    text += strCat("    #pragma unroll\n    for (int p = 0; p < ", stages - 1, "; ++p) {\n");
    text += "      if (p < KT) {\n";
    load("p", strCat("(long long)p * ", BK), "        ");
    text += "      }\n      asm volatile(\"cp.async.commit_group;\");\n    }\n";
    text += "    for (long long kt = 0; kt < KT; ++kt) {\n";
    text += strCat("      asm volatile(\"cp.async.wait_group ", stages - 2, ";\");\n");
    text += "      __syncthreads();\n";
    text += strCat("      if (kt + ", stages - 1, " < KT) {\n");
    load(strCat("(int)((kt + ", stages - 1, ") % ", stages, ")"),
         strCat("(kt + ", stages - 1, ") * ", BK), "        ");
    text += "      }\n      asm volatile(\"cp.async.commit_group;\");\n";
    text += strCat("      const int slot = (int)(kt % ", stages, ");\n");
    compute("slot", "      ");
    text += "    }\n";
    text += "    asm volatile(\"cp.async.wait_group 0;\");\n    __syncthreads();\n";
  } else {
    text += strCat("    for (long long k0 = 0; k0 < K; k0 += ", BK, ") {\n");
    loadTileElements(a, BK, threads, "0", "      ");
    loadTileElements(b, BK, threads, "0", "      ");
    text += "      __syncthreads();\n";
    compute("0", "      ");
    text += "      __syncthreads();\n    }\n";
  }
  // Accumulator j holds rows (g, g + 8) x columns (2 tig, 2 tig + 1) of n-tile j.
  storeTile(node, epilogue, out, "j", "q",
            "        const long long row = m0 + warp * 16 + g + (q >> 1) * 8;\n"
            "        const long long col = n0 + j * 8 + tig * 2 + (q & 1);\n");
  SymInt tiles = ceilDiv(g.m, BM) * ceilDiv(g.n, BN);
  return LaunchConfig{g.batch * tiles, threads};
}

} // namespace tensorc::cuda
