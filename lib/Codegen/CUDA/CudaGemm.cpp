// GEMM templates as CUDA: the kernel library's GEMM (tensor cores for f16/bf16, strict f32 SIMT or
// TF32 tensor cores for f32) on the operands' strided views, configured by the library's
// heuristic (split-K included), with the scheduled epilogue rendered into its epilogue hook. Also
// the epilogue hook shared with the channels-last convolutions, and the NCHW convolution of
// CPU-and-CUDA compiles (f32, shared-memory tiles).
#include "KernelRenderer.h"

#include "tensorc/Bundle/Manifest.h"

#include <array>

namespace tensorc::cuda {

namespace kl = kernels;

kl::GpuInfo KernelRenderer::targetGpu() { return kl::GpuInfo{}; }

std::optional<kl::GemmConfig> KernelRenderer::hopperConfig(const kl::GemmSpec &s, int64_t m,
                                                           int64_t n, int64_t k, int64_t batch,
                                                           const kl::GpuInfo &gpu) const {
  // Big problems only: tiles of 128 rows that give every SM a block unsplit. There the wgmma
  // kernel multiplies at 2-2.5x mma.sync's rate (bench/cuda_kernels/NOTES.md: mm4096 f16 665
  // against 276 TFLOP/s); on smaller ones its split-K clusters and per-block ingest made it
  // slower than mma.sync (run 2 there), so they keep mma.sync alone. The mma.sync form must be
  // unsplit too: both forms take the same parameters (no split-K workspaces).
  if (!options.hopper || s.math == kl::MathMode::SimtF32 || s.config.splitK != 1 ||
      !s.a.kContiguous || !s.b.kContiguous || !s.a.aligned16 || !s.b.aligned16)
    return std::nullopt;
  kl::GpuInfo hopper = gpu;
  hopper.sm90a = true;
  kl::GemmConfig c = kl::chooseGemmConfig(m, n, k, batch, s.type, s.math, hopper,
                                          /*tmaOperands=*/true);
  int64_t tiles = std::max<int64_t>(batch, 1) * ((std::max<int64_t>(m, 1) + c.bm - 1) / c.bm) *
                  ((std::max<int64_t>(n, 1) + c.bn - 1) / c.bn);
  if (c.kernel != kl::GemmKernel::Wgmma || c.splitK != 1 || c.bm != 128 || tiles < gpu.sms)
    return std::nullopt;
  return c;
}

kl::MathMode KernelRenderer::mathFor(DType dtype) const {
  if (dtype != DType::F32)
    return kl::MathMode::Tensor16;
  return options.matmulPrecision == MatmulPrecision::High ? kl::MathMode::TF32
                                                          : kl::MathMode::SimtF32;
}

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

std::string KernelRenderer::libraryEpilogue(const codegen::TemplateKernel &t,
                                            const kl::EpilogueSite &site) {
  const LoopNode &node = *t.node;
  const LoopNode *epilogue = t.epilogue;
  bool conv = node.templateKind == LoopNode::TemplateKind::Conv2d;
  std::string saved;
  std::swap(saved, text); // ex->body, bindEpilogue and decompose append to `text`
  const std::string &in = site.indent;
  size_t count = site.acc.size();
  // The output (or the epilogue's) buffer is dense over the template's dims: a GEMM's element
  // (batch, row, col) is at (batch * M + row) * N + col (tk_M, tk_N: the library kernel's sizes),
  // a channels-last convolution's (pixel, channel) at pixel * OC + channel.
  SymInt pitch = conv ? SymInt(node.conv.oc) : node.gemm.n;
  auto at = [&](const std::string &col) {
    return conv ? strCat("(", site.row, ") * ", node.conv.oc, "ll + ", col)
                : strCat("((", site.batch, ") * tk_M + (", site.row, ")) * tk_N + ", col);
  };
  // The site's columns start at a multiple of `count`: with rows a whole number of such groups,
  // its elements are one aligned run of whole 16-byte vectors, stored as such from registers.
  DType outType = program.buffers[size_t(t.output)].dtype;
  size_t bytes = count * dtypeSize(outType);
  std::optional<int64_t> rows = pitch.constant();
  // An epilogue reading the product at a permutation of its own index (a head split) runs over
  // the product's elements and stores each at its own index, one at a time.
  std::optional<std::vector<SymInt>> permuted;
  if (epilogue && !conv)
    permuted = permutedRead(node, *epilogue);
  bool vector = count > 1 && bytes % 16 == 0 && rows && *rows % int64_t(count) == 0 && !permuted;
  std::string out = strCat("tc_out", counter++);
  text += strCat(in, "const float tc_acc[", count, "] = {", join(site.acc, ", "), "};\n");
  if (vector)
    text += strCat(in, "__align__(16) ", memoryType(outType), " ", out, "[", count, "];\n");
  text += strCat(in, "#pragma unroll\n", in, "for (int tc_e = 0; tc_e < ", count, "; ++tc_e) {\n");
  std::string flat = strCat("tc_flat", counter++);
  std::string col = strCat("(", site.col, ") + tc_e");
  text += strCat(in, "  const long long ", flat, " = ", at(col), ";\n");
  DType valueType = DType::F32;
  std::string value = "tc_acc[tc_e]";
  std::string storeAt = flat;
  if (epilogue) {
    Scope scope = symbols;
    if (conv) { // the epilogue's own flat index is the buffer's
      decompose(flat, epilogue->ranges, 0, epilogue->ranges.size(), loopVarName, scope, in + "  ");
    } else if (permuted) {
      for (size_t i = 0; i < epilogue->ranges.size(); ++i) {
        std::string var = strCat(loopVarName(i), "_", counter++);
        std::string bound = "0ll";
        if ((*permuted)[i] != SymInt(0))
          bound = strCat("(", flat, " / ", ex->index((*permuted)[i], symbols), ") % ",
                         ex->index(epilogue->ranges[i], symbols));
        text += strCat(in, "  const long long ", var, " = ", bound, ";\n");
        scope[loopVarName(i)] = var;
      }
      storeAt = ex->index(sched::rowMajorFlat(epilogue->ranges, epilogue->ranges.size()), scope);
    } else {
      bindEpilogue(node, *epilogue, 1, site.batch, site.row, col, scope, in + "  ");
    }
    value = ex->body(epilogue->body, scope, text, in + "  ", node.output, "tc_acc[tc_e]");
    valueType = epilogue->body->dtype;
  }
  if (vector)
    text += strCat(in, "  (void)", flat, ";\n", in, "  ", out,
                   "[tc_e] = ", ex->storedValue(value, valueType, outType), ";\n");
  else
    text += strCat(in, "  ", ex->store(t.output, valueType, value, storeAt), "\n");
  text += in + "}\n";
  if (vector)
    for (size_t v = 0; v < bytes / 16; ++v)
      text += strCat(in, "reinterpret_cast<uint4 *>(&b", t.output, "[", at(site.col), "])[", v,
                     "] = reinterpret_cast<const uint4 *>(", out, ")[", v, "];\n");
  std::swap(saved, text);
  return saved;
}

std::optional<std::vector<SymInt>> KernelRenderer::permutedRead(const LoopNode &templateNode,
                                                                const LoopNode &epilogue) {
  SymInt own = sched::rowMajorFlat(epilogue.ranges, epilogue.ranges.size());
  std::optional<SymInt> index;
  loop::forEachExpr(epilogue.body, [&](const loop::Expr &expr) {
    if (expr.kind == loop::ExprKind::Load && expr.buffer == templateNode.output)
      index = expr.index;
  });
  if (!index || *index == own)
    return std::nullopt;
  return sched::permutedStrides(*index, epilogue.ranges);
}

std::optional<int> KernelRenderer::biasOnly(const loop::LoopProgram &program,
                                            const LoopNode &templateNode,
                                            const LoopNode &epilogue) {
  using loop::ExprKind;
  DType dtype = program.buffers[size_t(templateNode.output)].dtype;
  if (epilogue.kind != LoopNode::Kind::Pointwise || epilogue.ranges.empty() ||
      program.buffers[size_t(epilogue.output)].dtype != dtype ||
      epilogue.ranges.back() != templateNode.gemm.n || permutedRead(templateNode, epilogue))
    return std::nullopt;
  // f16/bf16 arithmetic is legalized to f32: loads of such buffers yield f32 values, and the
  // store rounds the sum.
  const loop::Expr *sum = epilogue.body.get();
  if (sum->kind != ExprKind::Binary || sum->binary != loop::BinaryOp::Add ||
      (sum->dtype != dtype && sum->dtype != DType::F32))
    return std::nullopt;
  auto load = [&](const loop::Expr *e) -> const loop::Expr * {
    return e->kind == ExprKind::Load && (e->dtype == dtype || e->dtype == DType::F32) ? e : nullptr;
  };
  const loop::Expr *product = load(sum->operands[0].get()), *bias = load(sum->operands[1].get());
  if (bias && bias->buffer == templateNode.output)
    std::swap(product, bias);
  SymInt column = SymInt::symbol(loop::loopVar(epilogue.ranges.size() - 1));
  if (!product || !bias || product->buffer != templateNode.output ||
      bias->buffer == templateNode.output || bias->index != column ||
      program.buffers[size_t(bias->buffer)].dtype != dtype)
    return std::nullopt;
  return bias->buffer;
}

LaunchConfig KernelRenderer::libraryLaunch(kl::KernelSource source, SymInt grid) {
  librarySource = std::move(source.source);
  usesKernelLibrary = true;
  return LaunchConfig{std::move(grid), source.threads, source.smemBytes};
}

LaunchConfig KernelRenderer::gemmLaunch(kl::KernelSource source, const kl::GemmConfig &config,
                                        SymInt tiles) {
  LaunchConfig launch = libraryLaunch(std::move(source), tiles * SymInt(config.splitK));
  if (config.splitK > 1) {
    // Workspaces (kernel parameters tk_partials, tk_counters after the symbols): a float per
    // output of each part of each tile, a counter per tile.
    launch.partialFloats = tiles * SymInt(int64_t(config.splitK) * config.bm * config.bn);
    launch.counterCount = tiles;
  }
  return launch;
}

Expected<kl::ElemType> KernelRenderer::libraryType(DType a, DType b, const std::string &what,
                                                   const char *operands, const char *kernel) {
  if (b != a)
    return makeError(what, ": ", operands, " differ in dtype");
  if (a != DType::F32 && a != DType::F16 && a != DType::BF16)
    return makeError(what, ": no ", kernel, " for ", dtypeName(a));
  return a == DType::F16    ? kl::ElemType::F16
         : a == DType::BF16 ? kl::ElemType::BF16
                            : kl::ElemType::F32;
}

Expected<LaunchConfig> KernelRenderer::renderLibraryGemm(const codegen::TemplateKernel &t) {
  const LoopNode &node = *t.node;
  const LoopNode::Gemm &g = node.gemm;
  if (g.packedB)
    return makeError("GEMM ", node.name, ": B is packed for the CPU");
  DType dtype = program.buffers[size_t(g.a.buffer)].dtype;
  TC_ASSIGN_OR_RETURN(kl::ElemType type,
                      libraryType(dtype, program.buffers[size_t(g.b.buffer)].dtype,
                                  "GEMM " + node.name, "A and B", "kernel"));
  kl::MathMode math = mathFor(dtype);
  int64_t vector = dtype == DType::F32 ? 4 : 8; // elements per 16 bytes
  auto isOne = [](const SymInt &v) { return v.constant() == std::optional<int64_t>(1); };
  // Whether a size is a whole number of 16-byte vectors at any symbol values: every term's
  // coefficient is (the terms' atoms are integers).
  auto multiple = [&](const SymInt &v) {
    for (const auto &[monomial, coefficient] : v.termList())
      if (coefficient % vector)
        return false;
    return true;
  };
  bool batched = !isOne(g.batch);
  // A [batch][M][K] and B [batch][K][N] as the library's operands: lines along the unit-stride
  // dim (K: A row-major, B column-major), `ld` apart; a size-1 dim's stride never matters.
  auto operand = [&](const loop::StridedView &view, const char *name, const SymInt &rows,
                     size_t rowDim, std::string &base,
                     GemmCall::Operand &call) -> Expected<kl::MatrixOperand> {
    size_t first = view.strides.size() - 2;
    const SymInt &rowStride = view.strides[first + rowDim],
                 &kStride = view.strides[first + 1 - rowDim];
    SymInt batchStride = batched && view.strides.size() == 3 ? view.strides[0] : SymInt(0);
    kl::MatrixOperand o;
    SymInt ld;
    if (isOne(kStride) || isOne(g.k)) {
      o.kContiguous = true;
      ld = rowStride;
    } else if (isOne(rowStride) || isOne(rows)) {
      o.kContiguous = false;
      ld = kStride;
    } else {
      return makeError("GEMM ", node.name, ": operand ", name, " has no unit-stride dim");
    }
    o.ld = ex->index(ld, symbols);
    o.batchStride = ex->index(batchStride, symbols);
    call.arg = int64_t(std::find(kernel.args.begin(), kernel.args.end(), view.buffer) -
                       kernel.args.begin());
    call.offset = view.offset, call.ld = ld, call.batchStride = batchStride;
    call.kContiguous = o.kContiguous;
    // Buffers start 16-byte aligned (the runtime's and the arena's): so does the operand when
    // its offset and the strides between its lines are whole 16-byte vectors.
    o.aligned16 = multiple(view.offset) && multiple(ld) && multiple(batchStride);
    base = strCat("(b", view.buffer, " + ", ex->index(view.offset, symbols), ")");
    return o;
  };
  kl::GemmSpec s;
  s.name = kernel.name;
  s.type = type;
  s.math = math;
  GemmCall call;
  TC_ASSIGN_OR_RETURN(s.a, operand(g.a, "A", g.m, 0, s.aExpr, call.a));
  TC_ASSIGN_OR_RETURN(s.b, operand(g.b, "B", g.n, 1, s.bExpr, call.b));
  s.m = ex->index(g.m, symbols), s.n = ex->index(g.n, symbols), s.k = ex->index(g.k, symbols);
  s.batch = ex->index(g.batch, symbols);
  s.params = params;
  s.epilogue.render = [&](const kl::EpilogueSite &site) { return libraryEpilogue(t, site); };
  kl::GpuInfo gpu = targetGpu();
  kl::GemmConfig &c = s.config;
  c = kl::chooseGemmConfig(sizeHint(g.m), sizeHint(g.n), sizeHint(g.k), sizeHint(g.batch), type,
                           math, gpu);
  // The tensor-core kernel reads an M-contiguous A through 32-row transposing loads: tiles of
  // 16 rows take 32.
  if (math == kl::MathMode::Tensor16 && !s.a.kContiguous && c.bm < 32)
    c.bm = 32, c.warpsM = 1, c.warpsN = 4;
  // The same for an N-contiguous B under a narrow tile (16 columns, for N <= 16).
  if (math == kl::MathMode::Tensor16 && !s.b.kContiguous && c.bn < 32)
    c.bn = 32;
  // K must be known: a K of 0 has no tensor map (the mma.sync form writes the epilogue of 0s).
  std::optional<kl::GemmConfig> hopper;
  if (g.k.constant().value_or(0) > 0)
    hopper = hopperConfig(s, sizeHint(g.m), sizeHint(g.n), sizeHint(g.k), sizeHint(g.batch), gpu);
  std::string error;
  kl::KernelSource hopperSource;
  if (hopper) {
    // Both forms take the two tensor maps first (the mma.sync one ignores them), then the
    // kernel's own parameters.
    kl::GemmSpec h = s;
    h.config = *hopper;
    h.epilogue.params = s.params;
    h.params.clear();
    // The library reads an operand shared by the batch entries from its batch stride's text
    // "0" (its tensor map then has one entry, as the runtime encodes it), not "0ll".
    if (call.a.batchStride == SymInt(0))
      h.a.batchStride = "0";
    if (call.b.batchStride == SymInt(0))
      h.b.batchStride = "0";
    hopperSource = kl::renderGemm(h, error);
    if (!error.empty())
      return makeError("GEMM ", node.name, " (Hopper form): ", error);
    s.params.insert(s.params.begin(), hopperSource.params.begin(), hopperSource.params.begin() + 2);
  }
  kl::KernelSource source = kl::renderGemm(s, error);
  if (!error.empty())
    return makeError("GEMM ", node.name, ": ", error);
  TC_RETURN_IF_ERROR(ex->status());
  if (hopper) {
    // One function per image: NVRTC defines __CUDA_ARCH_FEAT_SM90_ALL compiling for sm_90a.
    source.source = strCat("#if defined(__CUDA_ARCH_FEAT_SM90_ALL)\n", hopperSource.source,
                           "#else\n", source.source, "#endif\n");
  }
  LaunchConfig launch =
      gemmLaunch(std::move(source), c, g.batch * ceilDiv(g.m, c.bm) * ceilDiv(g.n, c.bn));
  if (hopper) {
    HopperGemm form;
    form.dtype = dtype;
    form.tf32 = math == kl::MathMode::TF32;
    form.k = g.k, form.batch = g.batch;
    form.units = g.batch * ceilDiv(g.m, hopper->bm) * ceilDiv(g.n, hopper->bn);
    form.blocksPerSm = std::max(1, hopper->gridLimit / gpu.sms);
    form.block = hopperSource.threads;
    form.sharedBytes = hopperSource.smemBytes;
    auto map = [&](const GemmCall::Operand &o, const SymInt &rows, int64_t box) {
      return HopperGemm::Map{o.arg, o.offset, rows, o.ld, o.batchStride, box};
    };
    form.a = map(call.a, g.m, hopper->bm);
    form.b = map(call.b, g.n, hopper->bn);
    launch.hopper = std::move(form);
    hopperForm = true;
  }
  if (options.gemmCalls) {
    call.dtype = dtype;
    call.tf32 = math == kl::MathMode::TF32;
    call.m = g.m, call.n = g.n, call.k = g.k, call.batch = g.batch;
    call.output =
        int64_t(std::find(kernel.args.begin(), kernel.args.end(), t.output) - kernel.args.begin());
    // Without an epilogue the output is the dense product in the output's dtype, which a library
    // writes itself: no epilogue function, no product scratch.
    DType out = program.buffers[size_t(t.output)].dtype;
    call.direct = !t.epilogue && (out == DType::F32 || out == DType::F16 || out == DType::BF16);
    // A bias-only epilogue is the library's too: it adds the bias to the f32 product and rounds
    // once to the output dtype, as torch's addmm does through cuBLASLt (this kernel rounds the
    // product to f16/bf16 before adding: results may differ in the last bit).
    if (std::optional<int> bias =
            t.epilogue ? biasOnly(program, *t.node, *t.epilogue) : std::nullopt) {
      call.direct = true;
      call.bias =
          int64_t(std::find(kernel.args.begin(), kernel.args.end(), *bias) - kernel.args.begin());
    }
    call.epilogueGrid = call.direct ? SymInt(0) : renderProductEpilogue(t, s.m, s.n, s.batch);
    TC_RETURN_IF_ERROR(ex->status());
    launch.gemm = std::move(call);
  }
  return launch;
}

SymInt KernelRenderer::renderProductEpilogue(const codegen::TemplateKernel &t, const std::string &m,
                                             const std::string &n, const std::string &batch) {
  const LoopNode::Gemm &g = t.node->gemm;
  // A thread per `count` adjacent outputs of a row: one 16-byte store where the epilogue's
  // output rows are whole vectors (libraryEpilogue decides), else one output per thread.
  DType outType = program.buffers[size_t(t.output)].dtype;
  int64_t count = 16 / int64_t(dtypeSize(outType));
  std::optional<int64_t> columns = g.n.constant();
  if (!columns || *columns % count != 0)
    count = 1;
  kl::EpilogueSite site;
  site.batch = "tk_batch", site.row = "tk_row", site.col = "tk_col";
  site.indent = "    ";
  for (int64_t e = 0; e < count; ++e)
    site.acc.push_back(strCat("tk_p[", e, "]"));
  std::string body = libraryEpilogue(t, site);
  std::string name = kernel.name + bundle::kGemmEpilogueSuffix;
  int64_t block = bundle::kGemmEpilogueBlock;
  std::string &out = librarySource;
  out += strCat("\n// The epilogue of ", kernel.name,
                " on a product computed elsewhere (a GEMM library): tk_product is the dense\n"
                "// f32 [batch][M][N] product.\n");
  out += strCat("extern \"C\" __global__ void __launch_bounds__(", block, ") ", name, "(",
                join(params, ", "), ", const float *__restrict__ tk_product) {\n",
                kl::kGridDependencyWaitCall);
  out += strCat("  const long long tk_M = ", m, ", tk_N = ", n, ", tk_groups = tk_N / ", count,
                ";\n  const long long tk_total = (", batch, ") * tk_M * tk_groups;\n");
  out += strCat("  for (long long tk_i = blockIdx.x * (long long)blockDim.x + threadIdx.x; tk_i < "
                "tk_total; tk_i += (long long)gridDim.x * blockDim.x) {\n");
  out += "    const long long tk_batch = tk_i / (tk_M * tk_groups), tk_row = (tk_i / tk_groups) % "
         "tk_M,\n";
  out += strCat("                    tk_col = (tk_i % tk_groups) * ", count, ";\n");
  out += strCat("    __align__(16) float tk_p[", count, "];\n");
  if (count % 4 == 0) { // 16-byte loads of the product
    for (int64_t v = 0; v < count / 4; ++v)
      out += strCat("    reinterpret_cast<float4 *>(tk_p)[", v,
                    "] = reinterpret_cast<const float4 *>(tk_product + tk_i * ", count, ")[", v,
                    "];\n");
  } else {
    for (int64_t e = 0; e < count; ++e)
      out += strCat("    tk_p[", e, "] = tk_product[tk_i * ", count, " + ", e, "];\n");
  }
  out += body + "  }\n}\n";
  return ceilDiv(g.batch * g.m * SymInt::floorDiv(g.n, count), block);
}

// ---- NCHW convolutions (CPU-and-CUDA compiles): f32 shared-memory tiles ------------------------

void KernelRenderer::storeConvElement(const LoopNode &node, const LoopNode *epilogue, int out,
                                      const std::string &acc, const std::string &indent) {
  const LoopNode::Conv &cv = node.conv;
  // The output (or the epilogue's, same elements) is dense [N, OC, OH, OW].
  std::string at =
      strCat("(image * ", cv.oc, "ll + group * ", cv.oc / cv.groups, "ll + row) * N + col");
  if (!epilogue) {
    text += indent + ex->store(out, DType::F32, acc, at) + "\n";
    return;
  }
  text += indent + "{\n";
  Scope scope = symbols;
  bindEpilogue(node, *epilogue, 2, "image", strCat("group * ", cv.oc / cv.groups, "ll + row"),
               "col", scope, indent + "  ");
  std::string value = ex->body(epilogue->body, scope, text, indent + "  ", node.output, acc);
  text += indent + "  " + ex->store(out, epilogue->body->dtype, value, at) + "\n";
  text += indent + "}\n";
}

Expected<LaunchConfig> KernelRenderer::renderNchwConv(const codegen::TemplateKernel &t) {
  // BM x BN outputs per block of 256 threads (16 x 16, each 4 x 4), BK-deep panels.
  constexpr int64_t kTileM = 64, kTileN = 64, kTileK = 16, kThreads = 256;
  const LoopNode &node = *t.node;
  blockThreads = kThreads;
  const LoopNode::Conv &cv = node.conv;
  int64_t cg = cv.c / cv.groups, ocg = cv.oc / cv.groups, taps = cv.kh * cv.kw;
  SymInt m(ocg), n(cv.oh * cv.ow), k(cg * taps), batches = cv.n * SymInt(cv.groups);
  // Batch bi is (image, group); A is the group's weights, B the patch matrix read in place.
  std::string loadA = floatElement(cv.weight.buffer,
                                   strCat(ex->index(cv.weight.offset, symbols), " + (group * ", ocg,
                                          "ll + gm) * ", ex->index(cv.weight.strides[0], symbols),
                                          " + gk * ", ex->index(cv.weight.strides[3], symbols)));
  text += strCat("  // patch row gk = (c, kh, kw), column gn = (oh, ow); zero in the padding\n");
  std::string patch = strCat("((image * ", cv.c, "ll + group * ", cg, "ll + gk / ", taps, "ll) * ",
                             cv.h * cv.w, "ll + ih * ", cv.w, "ll + iw)");
  std::string loadB = "tc_patch(image, group, gk, gn)";
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
  SymInt tiles = ceilDiv(m, kTileM) * ceilDiv(n, kTileN);
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
  text += strCat("    const long long image = bi / ", cv.groups, "ll, group = bi % ", cv.groups,
                 "ll;\n");
  text += "    float acc[4][4];\n";
  text += "    #pragma unroll\n    for (int i = 0; i < 4; ++i)\n"
          "      #pragma unroll\n      for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;\n";
  text += strCat("    for (long long k0 = 0; k0 < K; k0 += ", kTileK, ") {\n");
  // A tile of rows x cols elements of an operand into shared memory, zero outside [0, bound):
  // element e is row (first var) e / cols, column (second var) e % cols of the tile.
  struct Dim {
    const char *var, *base, *bound;
    int64_t size;
  };
  auto loadTile = [&](Dim r, Dim c, const std::string &slot, const std::string &load) {
    text +=
        strCat("      for (int e = threadIdx.x; e < ", r.size * c.size, "; e += ", kThreads,
               ") {\n        const long long ", r.var, " = ", r.base, " + e / ", c.size, ", ",
               c.var, " = ", c.base, " + e % ", c.size, ";\n        ", slot, " = (", r.var, " < ",
               r.bound, " && ", c.var, " < ", c.bound, ") ? ", load, " : 0.0f;\n      }\n");
  };
  loadTile({"gm", "m0", "M", kTileM}, {"gk", "k0", "K", kTileK},
           strCat("As[e % ", kTileK, "][e / ", kTileK, "]"), loadA); // stored k-major
  loadTile({"gk", "k0", "K", kTileK}, {"gn", "n0", "N", kTileN},
           strCat("Bs[e / ", kTileN, "][e % ", kTileN, "]"), loadB);
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
  text += "    #pragma unroll\n    for (int i = 0; i < 4; ++i) {\n"
          "      #pragma unroll\n      for (int j = 0; j < 4; ++j) {\n"
          "        const long long row = m0 + ty + 16 * i, col = n0 + tx + 16 * j;\n"
          "        if (row >= M || col >= N) continue;\n";
  storeConvElement(node, t.epilogue, t.output, "acc[i][j]", "        ");
  text += "      }\n    }\n  }\n";
  return LaunchConfig{batches * tiles, kThreads};
}

} // namespace tensorc::cuda
