// The CUDA renderer: each scheduled Loop or Template kernel as one __global__ function (element per
// thread, row per block, a shared-memory tiled GEMM/convolution with its epilogue, or attention)
// and the launch shape the runtime uses for it.
#include "tensorc/Codegen/CUDA/CudaCodegen.h"

#include "ExprRenderer.h"
#include "FlashAttention.h"

#include "tensorc/Codegen/Common/KernelWalker.h"
#include "tensorc/Codegen/Common/Legalize.h"
#include "tensorc/Lowering/ExprVisitor.h"

#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <cstdio>
#include <array>
#include <functional>
#include <set>

namespace tensorc::cuda {

namespace {

using loop::LoopNode;
using loop::ReduceOp;

constexpr int64_t kElementwiseBlock = 256;
// GEMM tiles: BM x BN outputs per block of 256 threads (16 x 16, each 4 x 4), BK-deep panels.
constexpr int64_t kTileM = 64, kTileN = 64, kTileK = 16, kGemmThreads = 256;

SymInt product(const std::vector<SymInt> &dims, size_t from = 0, size_t to = SIZE_MAX) {
  SymInt result(1);
  for (size_t d = from; d < std::min(to, dims.size()); ++d)
    result = result * dims[d];
  return result;
}

SymInt ceilDiv(const SymInt &value, int64_t divisor) {
  return SymInt::floorDiv(value + SymInt(divisor - 1), divisor);
}

/// A size's value when constant; symbolic sizes count as large.
int64_t sizeHint(const SymInt &value) { return value.constant().value_or(1 << 20); }

class KernelRenderer : public codegen::KernelVisitor {
public:
  KernelRenderer(const loop::LoopProgram &program, const sched::Kernel &kernel)
      : program(program), kernel(kernel) {}

  Expected<LaunchConfig> render(std::string &source) {
    TC_RETURN_IF_ERROR(codegen::walkKernel(program, kernel, *this));
    TC_RETURN_IF_ERROR(ex->status());
    source += strCat("extern \"C\" __global__ void __launch_bounds__(", config.block, ") ",
                     kernel.name, "(", join(params, ", "), ") {\n", text, "}\n\n");
    return config;
  }

  Status loopKernel(const codegen::LoopKernel &loopKernel) override {
    start();
    return finish(renderLoop(loopKernel));
  }
  Status gemmKernel(const codegen::TemplateKernel &t) override {
    start();
    return finish(renderGemm(t));
  }
  Status convKernel(const codegen::TemplateKernel &t) override {
    start();
    return finish(renderGemm(t));
  }
  Status attentionKernel(const codegen::TemplateKernel &t) override {
    start();
    return finish(renderAttention(*t.node));
  }

private:
  Status finish(Expected<LaunchConfig> rendered) {
    if (!rendered)
      return rendered.takeError();
    config = std::move(*rendered);
    return Status::ok();
  }

  /// The kernel's parameters (buffers, then shape symbols) and the expression renderer.
  void start() {
    std::vector<std::string> names(program.buffers.size());
    std::set<int> written;
    for (int id : kernel.nodes) {
      const LoopNode &node = program.nodes[size_t(id)];
      if (node.kind == LoopNode::Kind::Template && kernel.nodes.size() > 1)
        continue; // its result is replaced by the epilogue's
      written.insert(node.output);
    }
    for (int buffer : kernel.args) {
      const loop::Buffer &desc = program.buffers[size_t(buffer)];
      names[size_t(buffer)] = strCat("b", buffer);
      // Buffers are distinct (the buffer plan never overlaps a kernel's arguments); read-only
      // ones may go through the non-coherent cache, written ones are re-read after barriers.
      params.push_back(written.count(buffer)
                           ? strCat(memoryType(desc.dtype), " *b", buffer)
                           : strCat("const ", memoryType(desc.dtype), " *__restrict__ b", buffer));
    }
    for (const std::string &symbol : program.symbols) {
      params.push_back("long long sym_" + symbol);
      symbols[symbol] = "sym_" + symbol;
    }
    ex = std::make_unique<ExprRenderer>(program, std::move(names));
  }

  /// Declares x<first>.. over `ranges` [first, last) from the flat `flat` (row-major).
  void decompose(const std::string &flat, const std::vector<SymInt> &ranges, size_t first,
                 size_t last, const std::function<std::string(size_t)> &varName, Scope &scope,
                 const std::string &indent) {
    if (first >= last)
      return;
    std::string rest = "tc_rest" + std::to_string(counter++);
    text += strCat(indent, "long long ", rest, " = ", flat, ";\n");
    for (size_t d = last; d-- > first;) {
      std::string var = varName(d) + "_" + std::to_string(counter++);
      if (d == first) {
        text += strCat(indent, "const long long ", var, " = ", rest, ";\n");
      } else {
        std::string extent = ex->index(ranges[d], symbols);
        text += strCat(indent, "const long long ", var, " = ", rest, " % ", extent, ";\n");
        text += strCat(indent, rest, " /= ", extent, ";\n");
      }
      scope[varName(d)] = var;
    }
  }

  static std::string loopVarName(size_t d) { return loop::loopVar(d); }

  /// Element `at` of kernel argument `buffer`, as a float expression (template operands).
  std::string floatElement(int buffer, const std::string &at) const {
    DType dtype = program.buffers[size_t(buffer)].dtype;
    return strCat("(float)(", fromMemory(dtype, strCat("b", buffer, "[", at, "]")), ")");
  }
  static std::string reductionVarName(size_t d) { return loop::reductionVar(d); }

  // ---- Loop kernels ----------------------------------------------------------------------------

  Expected<LaunchConfig> renderLoop(const codegen::LoopKernel &loopKernel) {
    size_t k = kernel.outerRanges.size();
    const std::vector<const LoopNode *> &stages = loopKernel.stages;
    bool elementwise = loopKernel.elementwise;
    SymInt rows = product(kernel.outerRanges);
    std::string range = ex->index(rows, symbols);
    if (elementwise && renderVectorElementwise(stages, range))
      return LaunchConfig{ceilDiv(rows, kElementwiseBlock * 4), kElementwiseBlock};
    if (elementwise) {
      text += strCat("  const long long range = ", range, ";\n");
      renderScalarElementwise(stages, "0");
      return LaunchConfig{ceilDiv(rows, kElementwiseBlock), kElementwiseBlock};
    }

    // One row (outer index) per block: the threads split each stage's reduction or inner loop;
    // a barrier after each stage makes its stores visible to the next.
    int64_t extent = 1;
    for (const LoopNode *node : stages)
      extent = std::max(extent, node->kind == LoopNode::Kind::Reduction
                                    ? sizeHint(product(node->reductionRanges))
                                    : sizeHint(product(node->ranges, k)));
    int64_t block = 32;
    while (block < 1024 && block * 8 < extent)
      block *= 2;
    blockThreads = block;
    text += "  __shared__ unsigned long long tc_smem[64];\n";
    text += strCat("  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n");
    text += strCat("  const long long rows = ", range, ";\n");
    text += "  for (long long o = blockIdx.x; o < rows; o += gridDim.x) {\n";
    Scope scope = symbols;
    decompose("o", kernel.outerRanges, 0, k, loopVarName, scope, "    ");
    for (const LoopNode *node : stages) {
      text += "    {\n";
      if (node->kind == LoopNode::Kind::Reduction)
        renderReductionStage(*node, scope);
      else
        renderPointwiseStage(*node, scope);
      text += "    }\n    __syncthreads();\n";
    }
    text += "  }\n";
    return LaunchConfig{rows, block};
  }

  /// The 4-wide vector type of a dtype's memory form ("float4"), or "" for 8-byte dtypes.
  static std::string vectorType(DType dtype) {
    switch (dtype) {
    case DType::F32:
      return "float4";
    case DType::I32:
      return "int4";
    case DType::U32:
      return "uint4";
    case DType::F16:
    case DType::BF16:
    case DType::U16:
      return "ushort4";
    case DType::I16:
      return "short4";
    case DType::U8:
    case DType::Bool:
      return "uchar4";
    case DType::I8:
      return "char4";
    default:
      return "";
    }
  }

  /// Elementwise kernels whose dense loads and stores are 4-byte or narrower: four elements per
  /// thread, each dense operand read and each result written as one 4-wide vector (128 bits for
  /// f32), then a scalar loop for the last range % 4 elements. Loads at other indices (broadcast
  /// operands) and indirect loads (gathers) stay scalar; later stages read earlier stages'
  /// results from registers. False (nothing rendered) when some dense operand or result is wider.
  bool renderVectorElementwise(const std::vector<const LoopNode *> &stages,
                               const std::string &range) {
    size_t k = kernel.outerRanges.size();
    SymInt flat(0), stride(1);
    for (size_t d = k; d-- > 0;) {
      flat = flat + SymInt::symbol(loop::loopVar(d)) * stride;
      stride = stride * kernel.outerRanges[d];
    }
    std::map<int, const LoopNode *> producedBy;
    for (const LoopNode *node : stages) {
      if (vectorType(program.buffers[size_t(node->output)].dtype).empty())
        return false;
      producedBy[node->output] = node;
    }
    std::set<int> dense; // read at the flat index from memory
    bool narrow = true;
    for (const LoopNode *node : stages)
      loop::forEachExpr(node->body, [&](const loop::Expr &expr) {
        if (expr.kind == loop::ExprKind::Load && expr.index == flat &&
            !producedBy.count(expr.buffer)) {
          narrow = narrow && !vectorType(program.buffers[size_t(expr.buffer)].dtype).empty();
          dense.insert(expr.buffer);
        }
      });
    if (!narrow)
      return false;
    text += strCat("  const long long range = ", range, ";\n");
    text += "  const long long groups = range / 4;\n";
    text += strCat("  for (long long v = (long long)blockIdx.x * ", kElementwiseBlock,
                   " + threadIdx.x; v < groups; v += (long long)gridDim.x * ", kElementwiseBlock,
                   ") {\n");
    text += "    const long long o0 = v * 4;\n";
    for (int buffer : dense)
      text += strCat("    const ", vectorType(program.buffers[size_t(buffer)].dtype), " in", buffer,
                     " = *reinterpret_cast<const ",
                     vectorType(program.buffers[size_t(buffer)].dtype), " *>(&b", buffer,
                     "[o0]);\n");
    static const char *lanes[] = {"x", "y", "z", "w"};
    std::vector<std::array<std::string, 4>> results(stages.size());
    for (int j = 0; j < 4; ++j) {
      std::string o = strCat("o", j, "_", counter++);
      text += strCat("    const long long ", o, " = o0 + ", j, ";\n");
      Scope scope = symbols;
      decompose(o, kernel.outerRanges, 0, k, loopVarName, scope, "    ");
      ex->clearLoadOverrides();
      for (int buffer : dense)
        ex->overrideLoad(buffer, flat,
                         fromMemory(program.buffers[size_t(buffer)].dtype,
                                    strCat("in", buffer, ".", lanes[j])));
      for (size_t st = 0; st < stages.size(); ++st) {
        const LoopNode &node = *stages[st];
        std::string value = ex->body(node.body, scope, text, "    ");
        DType out = program.buffers[size_t(node.output)].dtype;
        std::string local = strCat("r", st, "_", j, "_", counter++);
        text += strCat("    const ", memoryType(out), " ", local, " = ",
                       ex->storedValue(value, node.body->dtype, out), ";\n");
        results[st][size_t(j)] = local;
        // Later stages read this result as stored (rounded to its dtype), from the register.
        ex->overrideLoad(node.output, flat, fromMemory(out, local));
      }
    }
    ex->clearLoadOverrides();
    for (size_t st = 0; st < stages.size(); ++st) {
      int buffer = stages[st]->output;
      std::string type = vectorType(program.buffers[size_t(buffer)].dtype);
      text += strCat("    *reinterpret_cast<", type, " *>(&b", buffer, "[o0]) = ", type, "{",
                     join(results[st], ", "), "};\n");
    }
    text += "  }\n";
    renderScalarElementwise(stages, "groups * 4"); // the last range % 4 elements
    return true;
  }

  /// Elements [first, range) one per thread, grid-striding; every stage reads earlier stages'
  /// results only at its own element (the scheduler's same-row rule with rows of one element).
  void renderScalarElementwise(const std::vector<const LoopNode *> &stages,
                               const std::string &first) {
    text += strCat("  for (long long o = ", first == "0" ? "" : first + " + ",
                   "(long long)blockIdx.x * ", kElementwiseBlock,
                   " + threadIdx.x; o < range; o += (long long)gridDim.x * ", kElementwiseBlock,
                   ") {\n");
    Scope scope = symbols;
    decompose("o", kernel.outerRanges, 0, kernel.outerRanges.size(), loopVarName, scope, "    ");
    for (const LoopNode *node : stages) {
      std::string value = ex->body(node->body, scope, text, "    ");
      text += "    " + ex->store(node->output, node->body->dtype, value, "o") + "\n";
    }
    text += "  }\n";
  }

  void renderPointwiseStage(const LoopNode &node, const Scope &outer) {
    size_t k = kernel.outerRanges.size(), m = node.ranges.size();
    const std::string indent = "      ";
    if (m == k) {
      text += indent + "if (threadIdx.x == 0) {\n";
      std::string value = ex->body(node.body, outer, text, indent + "  ");
      text += indent + "  " + ex->store(node.output, node.body->dtype, value, "o") + "\n";
      text += indent + "}\n";
      return;
    }
    std::string inner = ex->index(product(node.ranges, k), symbols);
    text += strCat(indent, "const long long inner = ", inner, ";\n");
    text += strCat(indent, "for (long long i = threadIdx.x; i < inner; i += ", blockThreads,
                   ") {\n");
    Scope scope = outer;
    decompose("i", node.ranges, k, m, loopVarName, scope, indent + "  ");
    std::string value = ex->body(node.body, scope, text, indent + "  ");
    text += indent + "  " + ex->store(node.output, node.body->dtype, value, "o * inner + i") + "\n";
    text += indent + "}\n";
  }

  // Reductions: codegen::reductionIdentity and friends, printed by the expression renderer.
  std::string identity(ReduceOp op, DType dtype) {
    return ex->constant(*codegen::reductionIdentity(op, dtype));
  }

  /// `acc = combine(acc, value)` as a statement.
  std::string combine(ReduceOp op, DType dtype, const std::string &acc, const std::string &value) {
    return strCat(acc, " = ", codegen::combineReduction<std::string>(*ex, op, dtype, acc, value),
                  ";");
  }

  std::string argBetter(ReduceOp op, DType dtype, const std::string &value,
                        const std::string &index, const std::string &best,
                        const std::string &bestIndex, bool tieBreak) {
    return codegen::argReductionBetter<std::string>(*ex, op, dtype, value, index, best, bestIndex,
                                                    tieBreak);
  }

  void renderReductionStage(const LoopNode &node, const Scope &outer) {
    ReduceOp op = node.reduceOp;
    DType dtype = node.body->dtype;
    bool isArg = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
    std::string type = registerType(dtype);
    const std::string indent = "      ";
    size_t q = node.reductionRanges.size();
    if (q == 0) { // a reduction over nothing is the body itself (index 0 for arg reductions)
      text += indent + "if (threadIdx.x == 0) {\n";
      std::string value = ex->body(node.body, outer, text, indent + "  ");
      text += indent + "  " +
              (isArg ? ex->store(node.output, DType::I64, "0ll", "o")
                     : ex->store(node.output, dtype, value, "o")) +
              "\n" + indent + "}\n";
      return;
    }
    text += strCat(indent, type, " acc = ", identity(op, dtype), ";\n");
    text += strCat(indent, "long long acc_i = 0;\n");
    text += strCat(indent, "const long long extent = ",
                   ex->index(product(node.reductionRanges), symbols), ";\n");
    text += strCat(indent, "for (long long r = threadIdx.x; r < extent; r += ", blockThreads,
                   ") {\n");
    Scope scope = outer;
    decompose("r", node.reductionRanges, 0, q, reductionVarName, scope, indent + "  ");
    std::string value = ex->body(node.body, scope, text, indent + "  ");
    if (isArg)
      text += strCat(indent, "  if (", argBetter(op, dtype, value, "r", "acc", "acc_i", false),
                     ") { acc = ", value, "; acc_i = r; }\n");
    else
      text += indent + "  " + combine(op, dtype, "acc", value) + "\n";
    text += indent + "}\n";

    // Warp, then block: partial results meet in shared memory (one slot per warp).
    auto warpReduce = [&](const std::string &in) {
      text += in + "for (int d = 16; d > 0; d >>= 1) {\n";
      text += strCat(in, "  const ", type, " other = tc_shfl_down(acc, d);\n");
      if (isArg) {
        text += in + "  const long long other_i = tc_shfl_down(acc_i, d);\n";
        text += strCat(in, "  if (", argBetter(op, dtype, "other", "other_i", "acc", "acc_i", true),
                       ") { acc = other; acc_i = other_i; }\n");
      } else {
        text += in + "  " + combine(op, dtype, "acc", "other") + "\n";
      }
      text += in + "}\n";
    };
    warpReduce(indent);
    if (blockThreads > 32) {
      int64_t warps = blockThreads / 32;
      text += strCat(indent, type, " *tc_vals = reinterpret_cast<", type, " *>(tc_smem);\n");
      text += indent + "long long *tc_idx = reinterpret_cast<long long *>(tc_smem + 32);\n";
      text += indent + "if (lane == 0) { tc_vals[warp] = acc; tc_idx[warp] = acc_i; }\n";
      text += indent + "__syncthreads();\n";
      text += indent + "if (warp == 0) {\n";
      text += strCat(indent, "  acc = lane < ", warps, " ? tc_vals[lane] : ", identity(op, dtype),
                     ";\n");
      text += strCat(indent, "  acc_i = lane < ", warps, " ? tc_idx[lane] : 0;\n");
      warpReduce(indent + "  ");
      text += indent + "}\n";
    }
    text += indent + "if (threadIdx.x == 0) " +
            (isArg ? ex->store(node.output, DType::I64, "acc_i", "o")
                   : ex->store(node.output, dtype, "acc", "o")) +
            "\n";
  }

  // ---- Template kernels --------------------------------------------------------------------------

  /// Binds the epilogue's loop variables for the output element (outer, rowBase + row, col).
  void bindEpilogue(const LoopNode &templateNode, const LoopNode &epilogue, size_t columnDims,
                    const std::string &outer, const std::string &row, const std::string &col,
                    Scope &scope, const std::string &indent) {
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

  /// GEMM and convolution templates (an implicit GEMM per image and group).
  Expected<LaunchConfig> renderGemm(const codegen::TemplateKernel &t) {
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
      std::string patch = strCat(
          "((image * ", cv.c, "ll + group * ", cg, "ll + gk / ", taps, "ll) * ", cv.h * cv.w,
          "ll + ih * ", cv.w, "ll + iw)");
      loadB = "tc_patch(image, group, gk, gn)";
      // A device lambda keeps the coordinate arithmetic in one place.
      text += strCat(
          "  auto tc_patch = [&](long long image, long long group, long long gk, long long gn) "
          "-> float {\n",
          "    const long long tap = gk % ", taps, "ll, kh = tap / ", cv.kw, "ll, kw = tap % ",
          cv.kw, "ll;\n", "    const long long ih = (gn / ", cv.ow, "ll) * ", cv.strideH,
          "ll + kh * ", cv.dilationH, "ll - ", cv.padH, "ll;\n", "    const long long iw = (gn % ",
          cv.ow, "ll) * ", cv.strideW, "ll + kw * ", cv.dilationW, "ll - ", cv.padW, "ll;\n",
          "    if ((unsigned long long)ih >= ", cv.h, "ull || (unsigned long long)iw >= ", cv.w,
          "ull) return 0.0f;\n", "    return ", floatElement(cv.input, patch), ";\n  };\n");
    }
    tiles = ceilDiv(m, kTileM) * ceilDiv(n, kTileN);
    text += strCat("  const long long M = ", ex->index(m, symbols), ", N = ", ex->index(n, symbols),
                   ", K = ", ex->index(k, symbols), ";\n");
    text += strCat("  const long long tilesN = (N + ", kTileN - 1, ") / ", kTileN,
                   ", tiles = ((M + ", kTileM - 1, ") / ", kTileM, ") * tilesN;\n");
    text += strCat("  const long long total = ", ex->index(batches, symbols), " * tiles;\n");
    text += strCat("  __shared__ float As[", kTileK, "][", kTileM, " + 4];\n");
    text += strCat("  __shared__ float Bs[", kTileK, "][", kTileN, " + 4];\n");
    text += "  const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;\n";
    text += "  for (long long t = blockIdx.x; t < total; t += gridDim.x) {\n";
    text += "    const long long bi = t / tiles, tile = t % tiles;\n";
    text += strCat("    const long long m0 = (tile / tilesN) * ", kTileM, ", n0 = (tile % tilesN) * ",
                   kTileN, ";\n");
    if (conv)
      text += strCat("    const long long image = bi / ", node.conv.groups,
                     "ll, group = bi % ", node.conv.groups, "ll;\n");
    text += "    float acc[4][4];\n";
    text += "    #pragma unroll\n    for (int i = 0; i < 4; ++i)\n"
            "      #pragma unroll\n      for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;\n";
    text += strCat("    for (long long k0 = 0; k0 < K; k0 += ", kTileK, ") {\n");
    text += strCat("      for (int e = threadIdx.x; e < ", kTileM * kTileK, "; e += ", kGemmThreads,
                   ") {\n");
    text += strCat("        const long long gm = m0 + e / ", kTileK, ", gk = k0 + e % ", kTileK,
                   ";\n");
    text += strCat("        As[e % ", kTileK, "][e / ", kTileK, "] = (gm < M && gk < K) ? ", loadA,
                   " : 0.0f;\n      }\n");
    text += strCat("      for (int e = threadIdx.x; e < ", kTileK * kTileN, "; e += ", kGemmThreads,
                   ") {\n");
    text += strCat("        const long long gk = k0 + e / ", kTileN, ", gn = n0 + e % ", kTileN,
                   ";\n");
    text += strCat("        Bs[e / ", kTileN, "][e % ", kTileN, "] = (gk < K && gn < N) ? ", loadB,
                   " : 0.0f;\n      }\n");
    text += "      __syncthreads();\n";
    text += strCat("      #pragma unroll\n      for (int kk = 0; kk < ", kTileK, "; ++kk) {\n");
    text += "        float a[4], b[4];\n";
    text += "        #pragma unroll\n        for (int i = 0; i < 4; ++i) { a[i] = As[kk][ty + 16 * i]; "
            "b[i] = Bs[kk][tx + 16 * i]; }\n";
    text += "        #pragma unroll\n        for (int i = 0; i < 4; ++i)\n"
            "          #pragma unroll\n          for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * "
            "b[j];\n      }\n";
    text += "      __syncthreads();\n    }\n";
    text += "    #pragma unroll\n    for (int i = 0; i < 4; ++i) {\n";
    text += "      #pragma unroll\n      for (int j = 0; j < 4; ++j) {\n";
    text += "        const long long row = m0 + ty + 16 * i, col = n0 + tx + 16 * j;\n";
    text += "        if (row >= M || col >= N) continue;\n";
    storeElement(node, epilogue, out, "acc[i][j]", "        ");
    text += "      }\n    }\n  }\n";
    return LaunchConfig{batches * tiles, kGemmThreads};
  }

  /// Stores the accumulator `acc` (a float expression) of output element (row, col) of batch `bi`
  /// (convolutions: `image`, `group`), through the epilogue when there is one.
  void storeElement(const LoopNode &node, const LoopNode *epilogue, int out, const std::string &acc,
                    const std::string &indent) {
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

  /// Declares `tc_mask_base`, the offset of batch entry `bi`'s mask (over the attention's batch
  /// dims, 0 where the mask broadcasts), and returns its name; "0ll" when it broadcasts over all.
  std::string maskBase(const LoopNode::Attention &a, const std::string &bi,
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

  /// Attention: f16/bf16 with head dims that are multiples of 16 up to 128 on the flash kernel
  /// (FlashAttention.cpp: 64 query rows per block on tensor cores); the rest one warp per query
  /// row.
  Expected<LaunchConfig> renderAttention(const LoopNode &node) {
    const LoopNode::Attention &a = node.attention;
    text += strCat("  const long long L = ", ex->index(a.l, symbols),
                   ", S = ", ex->index(a.s, symbols), ";\n");
    if (flashAttentionFits(program, node))
      return renderFlashAttention(node);
    return renderRowAttention(node);
  }

  Expected<LaunchConfig> renderFlashAttention(const LoopNode &node) {
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
    text +=
        strCat("    const long long bi = t / qTiles, row0 = (t % qTiles) * ", kFlashRows, ";\n");
    std::string mask = "nullptr", maskRow = "0ll", maskCol = "0ll";
    if (maskKind) {
      mask = strCat("b", a.mask.buffer, " + ", maskBase(a, "bi", "    "));
      maskRow = ex->index(a.mask.strides[rank - 2], symbols);
      maskCol = ex->index(a.mask.strides[rank - 1], symbols);
    }
    text += strCat("    tc_flash_attention<", a.e, ", ", a.ev, ", ", bf16 ? "true" : "false", ", ",
                   maskKind, ">(b", a.q, " + bi * L * ", a.e, "ll, b", a.k, " + bi * S * ", a.e,
                   "ll, b", a.v, " + bi * S * ", a.ev, "ll, b", node.output, " + bi * L * ", a.ev,
                   "ll, ", mask, ", ", maskRow, ", ", maskCol, ", L, S, row0, ", scaleLog2,
                   ", tc_fa_smem);\n");
    text += "  }\n";
    return LaunchConfig{a.batch * ceilDiv(a.l, kFlashRows), kFlashThreads};
  }

  /// Attention, one warp per query row (four rows per block): the lanes split the head dims,
  /// each key's score is a warp sum, and an online softmax (running max and sum, rescaling the
  /// accumulators) folds the values in as the keys stream by, so the L x S scores never exist.
  Expected<LaunchConfig> renderRowAttention(const LoopNode &node) {
    const LoopNode::Attention &a = node.attention;
    constexpr int64_t warps = 4;
    blockThreads = warps * 32;
    size_t rank = a.batchDims.size() + 2;
    int64_t qPerLane = (a.e + 31) / 32, vPerLane = (a.ev + 31) / 32;
    char scale[64];
    std::snprintf(scale, sizeof scale, "%af", double(float(a.scale)));
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
    text += strCat("    #pragma unroll\n    for (int i = 0; i < ", vPerLane,
                   "; ++i) acc[i] = 0.0f;\n");
    text += "    float best = __int_as_float((int)0xff800000u), total = 0.0f;\n";
    text += "    for (long long j = 0; j < S; ++j) {\n";
    text += "      const long long key = bi * S + j;\n";
    text += "      float score = 0.0f;\n";
    text += strCat("      #pragma unroll\n      for (int i = 0; i < ", qPerLane, "; ++i) {\n",
                   "        const int d = lane + 32 * i;\n", "        if (d < ", a.e,
                   ") score += qv[i] * ", floatElement(a.k, strCat("key * ", a.e, "ll + d")), ";\n",
                   "      }\n");
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
    text += strCat("      #pragma unroll\n      for (int i = 0; i < ", vPerLane, "; ++i) {\n",
                   "        const int d = lane + 32 * i;\n", "        if (d < ", a.ev,
                   ") acc[i] = acc[i] * rescale + p * ",
                   floatElement(a.v, strCat("key * ", a.ev, "ll + d")), ";\n", "      }\n");
    text += "      best = next;\n    }\n";
    text += strCat("    #pragma unroll\n    for (int i = 0; i < ", vPerLane, "; ++i) {\n",
                   "      const int d = lane + 32 * i;\n", "      if (d < ", a.ev, ") ",
                   ex->store(node.output, DType::F32, "acc[i] / total",
                             strCat("row * ", a.ev, "ll + d")),
                   "\n    }\n  }\n");
    return LaunchConfig{ceilDiv(a.batch * a.l, warps), blockThreads};
  }

  /// How one operand tile moves from global to shared memory: `rows` x BK elements of an
  /// operand whose element (row, k) is at `index` (a C expression over `rowVar` and `gk`).
  struct OperandTile {
    int buffer = -1;
    std::string smem, rowVar, rowLimit, index;
    int64_t rows = 0;
    bool kContiguous = false; // k has stride 1: threads walk k, else they walk rows
    bool kMajor = false;      // shared memory holds [k][row] (B with n contiguous), else [row][k]
  };

  std::string smemAt(const OperandTile &tile, const std::string &stage, const std::string &row,
                     const std::string &k) {
    return tile.kMajor ? strCat(tile.smem, "[", stage, "][", k, "][", row, "]")
                       : strCat(tile.smem, "[", stage, "][", row, "][", k, "]");
  }

  /// Element-wise loads into smem[row][k] (16-bit patterns), coalesced along the operand's
  /// contiguous dim; out-of-range elements are zero.
  void loadTileElements(const OperandTile &tile, int64_t BK, int64_t threads,
                        const std::string &stage, const std::string &indent) {
    text += strCat(indent, "#pragma unroll\n", indent, "for (int e = threadIdx.x; e < ",
                   tile.rows * BK, "; e += ", threads, ") {\n");
    if (tile.kContiguous)
      text += strCat(indent, "  const int tr = e / ", BK, ", tk = e % ", BK, ";\n");
    else
      text += strCat(indent, "  const int tr = e % ", tile.rows, ", tk = e / ", tile.rows, ";\n");
    text += strCat(indent, "  const long long ", tile.rowVar, " = ", tile.rowVar, "0 + tr, gk = k0 + tk;\n");
    text += strCat(indent, "  ", smemAt(tile, stage, "tr", "tk"), " = (", tile.rowVar, " < ",
                   tile.rowLimit, " && gk < K) ? b", tile.buffer, "[", tile.index,
                   "] : (unsigned short)0;\n");
    text += indent + "}\n";
  }

  /// 16-byte cp.async copies of 8 elements along the contiguous dim (the caller proved the
  /// alignment, and that the dim's extent is a multiple of 8).
  void loadTileAsync(const OperandTile &tile, int64_t BK, int64_t threads,
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
    text += strCat(indent, "  const long long ", tile.rowVar, " = ", tile.rowVar, "0 + tr, gk = kbase + tk;\n");
    text += strCat(indent, "  unsigned short *dst = &", smemAt(tile, stage, "tr", "tk"), ";\n");
    text += strCat(indent, "  if (", tile.rowVar, " < ", tile.rowLimit, " && gk < K) {\n");
    text += strCat(indent, "    const unsigned short *src = &b", tile.buffer, "[", tile.index, "];\n");
    text += strCat(indent, "    asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16;\" :: "
                   "\"r\"((unsigned)__cvta_generic_to_shared(dst)), \"l\"(src));\n");
    text += strCat(indent, "  } else {\n", indent,
                   "    *reinterpret_cast<uint4 *>(dst) = uint4{0u, 0u, 0u, 0u};\n", indent, "  }\n");
    text += indent + "}\n";
  }

  /// f16/bf16 GEMM on tensor cores (mma.sync m16n8k16, f32 accumulators, sm_80+): blocks of
  /// 64 x 32 outputs, four warps of 16 x 32. Operands whose contiguous dim is 16-byte aligned
  /// (linear layers) stream through a ring of three shared-memory stages with cp.async, so later
  /// K slices load while one multiplies; others load element-wise, coalesced along their
  /// contiguous dim. A is kept [m][k] in shared memory and B [n][k] (one 32-bit load per fragment
  /// register) or, when n is contiguous, [k][n] (two 16-bit loads).
  Expected<LaunchConfig> renderMmaGemm(const LoopNode &node, const LoopNode *epilogue, int out,
                                       const std::string &aIndex, const std::string &bIndex,
                                       DType dtype) {
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
    bool bVector = (bKContiguous ? isConstMultiple(g.k, 8) && isConstMultiple(bN, 8)
                                 : bNContiguous && isConstMultiple(g.n, 8) &&
                                       isConstMultiple(bK, 8)) &&
                   isConstMultiple(g.b.offset, 8) && isConstMultiple(batchStride(g.b), 8);
    bool vectorized = aVector && bVector;
    OperandTile a{g.a.buffer, "As", "gm", "M", aIndex, BM, aKContiguous, false};
    OperandTile b{g.b.buffer, "Bs", "gn", "N", bIndex, BN, bKContiguous, !bKContiguous};
    // Three stages: two K slices are in flight while one multiplies (43 KB of shared memory
    // for 64 x 32 x 64 tiles, under the 48 KB a block gets without opting in to more).
    int64_t stages = vectorized ? 3 : 1;

    text += strCat("  const long long M = ", ex->index(g.m, symbols), ", N = ",
                   ex->index(g.n, symbols), ", K = ", ex->index(g.k, symbols), ";\n");
    text += strCat("  const long long tilesN = (N + ", BN - 1, ") / ", BN, ", tiles = ((M + ",
                   BM - 1, ") / ", BM, ") * tilesN;\n");
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
    text += strCat("    const long long gm0 = (tile / tilesN) * ", BM, ", gn0 = (tile % tilesN) * ", BN,
                   ", m0 = gm0, n0 = gn0;\n");
    text += "    float acc[4][4];\n";
    text += "    #pragma unroll\n    for (int i = 0; i < 4; ++i)\n"
            "      #pragma unroll\n      for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;\n";
    // The multiply of one staged K slice.
    auto compute = [&](const std::string &stage, const std::string &indent) {
      text += strCat(indent, "#pragma unroll\n", indent, "for (int kk = 0; kk < ", BK, "; kk += 16) {\n");
      std::string in = indent + "  ";
      text += in + "const int r = warp * 16 + g, c = kk + tig * 2;\n";
      auto word = [&](const std::string &smem, const std::string &row, const std::string &col) {
        return strCat("*reinterpret_cast<const unsigned *>(&", smem, "[", stage, "][", row, "][", col,
                      "])");
      };
      text += strCat(in, "const unsigned a0 = ", word("As", "r", "c"), ", a1 = ", word("As", "r + 8", "c"),
                     ", a2 = ", word("As", "r", "c + 8"), ", a3 = ", word("As", "r + 8", "c + 8"), ";\n");
      text += strCat(in, "#pragma unroll\n", in, "for (int j = 0; j < 4; ++j) {\n");
      if (b.kMajor) {
        // k pairs of one column sit in two rows: two 16-bit loads per register.
        auto pair = [&](const std::string &k) {
          return strCat("((unsigned)Bs[", stage, "][", k, "][j * 8 + g] | ((unsigned)Bs[", stage,
                        "][", k, " + 1][j * 8 + g] << 16))");
        };
        text += strCat(in, "  const unsigned b0 = ", pair("c"), ", b1 = ", pair("c + 8"), ";\n");
      } else {
        text += strCat(in, "  const unsigned b0 = ", word("Bs", "j * 8 + g", "c"), ", b1 = ",
                       word("Bs", "j * 8 + g", "c + 8"), ";\n");
      }
      text += strCat(in, "  asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.", type, ".", type,
                     ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\"\n", in,
                     "      : \"+f\"(acc[j][0]), \"+f\"(acc[j][1]), \"+f\"(acc[j][2]), \"+f\"(acc[j][3])\n",
                     in, "      : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"r\"(b0), \"r\"(b1));\n");
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
    text += "    #pragma unroll\n    for (int j = 0; j < 4; ++j) {\n";
    text += "      #pragma unroll\n      for (int q = 0; q < 4; ++q) {\n";
    text += "        const long long row = m0 + warp * 16 + g + (q >> 1) * 8;\n";
    text += "        const long long col = n0 + j * 8 + tig * 2 + (q & 1);\n";
    text += "        if (row >= M || col >= N) continue;\n";
    storeElement(node, epilogue, out, "acc[j][q]", "        ");
    text += "      }\n    }\n  }\n";
    SymInt tiles = ceilDiv(g.m, BM) * ceilDiv(g.n, BN);
    return LaunchConfig{g.batch * tiles, threads};
  }

public:
  /// Whether the kernel calls the flash-attention device code (flashAttentionLibrary()).
  bool usesFlashAttention = false;

private:
  const loop::LoopProgram &program;
  const sched::Kernel &kernel;
  std::vector<std::string> params;
  LaunchConfig config;
  std::unique_ptr<ExprRenderer> ex;
  Scope symbols;
  std::string text;
  int64_t blockThreads = 32;
  int counter = 0;
};

} // namespace

Expected<RenderedKernels> renderKernels(const loop::LoopProgram &program,
                                        const sched::Schedule &schedule) {
  RenderedKernels result;
  std::string kernels;
  bool flashAttention = false;
  loop::LoopProgram legal = codegen::legalize(program, {/*nativeFloatPow=*/true});
  for (const sched::Kernel &kernel : schedule.kernels) {
    if (kernel.kind == sched::Kernel::Kind::Extern)
      continue;
    KernelRenderer renderer(legal, kernel);
    Expected<LaunchConfig> config = renderer.render(kernels);
    if (!config)
      return config.takeError().withContext("kernel " + kernel.name);
    result.configs[kernel.name] = std::move(*config);
    flashAttention = flashAttention || renderer.usesFlashAttention;
  }
  result.source =
      prelude() + "\n" + (flashAttention ? flashAttentionLibrary() + "\n" : "") + kernels;
  return result;
}

} // namespace tensorc::cuda
