// The CUDA renderer: each scheduled Loop or Template kernel as one __global__ function (element per
// thread, row per block, a kernel library GEMM/convolution with its epilogue, or attention) and
// the launch shape the runtime uses for it. Loop kernels are rendered here.
#include "KernelRenderer.h"

#include "tensorc/Codegen/Common/Legalize.h"
#include "tensorc/Lowering/ExprVisitor.h"

#include <array>
#include <map>
#include <set>

namespace tensorc::cuda {

Status KernelRenderer::loopKernel(const codegen::LoopKernel &loopKernel) {
  start();
  return finish(renderLoop(loopKernel));
}

Status KernelRenderer::gemmKernel(const codegen::TemplateKernel &t) {
  start();
  return finish(renderLibraryGemm(t));
}

Status KernelRenderer::convKernel(const codegen::TemplateKernel &t) {
  start();
  return finish(t.node->conv.channelsLast ? renderLibraryConv(t) : renderNchwConv(t));
}

Status KernelRenderer::attentionKernel(const codegen::TemplateKernel &t) {
  start();
  return finish(renderAttention(*t.node));
}

Status KernelRenderer::finish(Expected<LaunchConfig> rendered) {
  if (!rendered)
    return rendered.takeError();
  config = std::move(*rendered);
  return Status::ok();
}

void KernelRenderer::start() {
  std::vector<std::string> names(program.buffers.size());
  std::set<int> written;
  if (kernel.kind == sched::Kernel::Kind::Template) // its epilogue's last result, or its own
    written.insert(program.nodes[size_t(kernel.nodes.back())].output);
  else
    for (int id : kernel.nodes)
      written.insert(program.nodes[size_t(id)].output);
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

void KernelRenderer::decompose(const std::string &flat, const std::vector<SymInt> &ranges,
                               size_t first, size_t last,
                               const std::function<std::string(size_t)> &varName, Scope &scope,
                               const std::string &indent) {
  if (first >= last)
    return;
  // Indices of dims [from, to) from `source` of C type `type`: the last dims by % and /, the
  // first takes what remains. 32-bit dims get plain int extents (no promotion to 64 bits).
  auto emit = [&](const std::string &source, size_t from, size_t to, bool narrow) {
    const char *type = narrow ? "int" : "long long";
    std::string rest = "tc_rest" + std::to_string(counter++);
    text += strCat(indent, type, " ", rest, " = ", source, ";\n");
    for (size_t d = to; d-- > from;) {
      std::string var = varName(d) + "_" + std::to_string(counter++);
      if (d == from) {
        text += strCat(indent, "const ", type, " ", var, " = ", rest, ";\n");
      } else {
        std::string extent =
            narrow ? std::to_string(*ranges[d].constant()) : ex->index(ranges[d], symbols);
        text += strCat(indent, "const ", type, " ", var, " = ", rest, " % ", extent, ";\n");
        text += strCat(indent, rest, " /= ", extent, ";\n");
      }
      scope[varName(d)] = var;
    }
  };
  // The trailing dims of constant extents whose product stays below 2^31 decompose in 32-bit
  // arithmetic after at most one 64-bit division: 64-bit div/mod by a constant is a long
  // multiply-high sequence on a GPU, and unrolled over a tile's elements it dominated NVRTC's
  // time on convolution epilogues.
  size_t split = last;
  int64_t product = 1;
  for (; split > first; --split) {
    std::optional<int64_t> extent = ranges[split - 1].constant();
    if (!extent || *extent <= 0 || product > (int64_t(1) << 31) / *extent - 1)
      break;
    product *= *extent;
  }
  if (split == last) {
    emit(flat, first, last, false);
  } else if (split == first) {
    emit(strCat("(int)(", flat, ")"), first, last, true);
  } else {
    std::string quotient = "tc_quot" + std::to_string(counter++);
    text += strCat(indent, "const long long ", quotient, " = (", flat, ") / ", product, "ll;\n");
    emit(strCat("(int)((", flat, ") - ", quotient, " * ", product, "ll)"), split, last, true);
    emit(quotient, first, split, false);
  }
}

std::string KernelRenderer::floatElement(int buffer, const std::string &at) const {
  DType dtype = program.buffers[size_t(buffer)].dtype;
  return strCat("(float)(", fromMemory(dtype, strCat("b", buffer, "[", at, "]")), ")");
}

Expected<LaunchConfig> KernelRenderer::renderLoop(const codegen::LoopKernel &loopKernel) {
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
  // Up to four elements of the widest stage per thread: a row kernel at batch 1 is one block per
  // row on idle SMs, latency-bound on each thread's share (H200, LayerNorm f16 rows of 768,
  // 1024, 4096: 4.1-4.9 us with eight per thread, 3.5-4.2 with four, 5.5-6.5 with sixteen).
  int64_t block = 32;
  while (block < 1024 && block * 4 < extent)
    block *= 2;
  blockThreads = block;
  planRegisterRow(stages);
  // Slots 0..63: the warps' partial results; 64: a reduction's result for every thread.
  text += strCat("  __shared__ unsigned long long tc_smem[", rowSlots ? 65 : 64, "];\n");
  text += strCat("  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n");
  text += strCat("  const long long rows = ", range, ";\n");
  text += "  for (long long o = blockIdx.x; o < rows; o += gridDim.x) {\n";
  Scope scope = symbols;
  decompose("o", kernel.outerRanges, 0, k, loopVarName, scope, "    ");
  rowValues.clear();
  for (const LoopNode *node : stages) {
    bool reduction = node->kind == LoopNode::Kind::Reduction;
    bool looped = reduction ? !node->reductionRanges.empty() : node->ranges.size() > k;
    std::string type = memoryType(program.buffers[size_t(node->output)].dtype);
    if (rowSlots && looped) // what later stages read back from registers
      text += strCat("    ", type, " ", rowValueName(*node),
                     reduction ? "" : strCat("[", rowSlots * rowVector, "]"), ";\n");
    text += "    {\n";
    if (reduction)
      renderReductionStage(*node, scope);
    else
      renderPointwiseStage(*node, scope);
    text += "    }\n    __syncthreads();\n";
    if (rowSlots && looped) {
      if (reduction)
        text += strCat("    ", rowValueName(*node), " = *reinterpret_cast<const ", type,
                       " *>(&tc_smem[64]);\n");
      rowValues.push_back(node);
    }
  }
  ex->clearLoadOverrides();
  text += "  }\n";
  return LaunchConfig{rows, blockThreads};
}

void KernelRenderer::planRegisterRow(const std::vector<const LoopNode *> &stages) {
  size_t k = kernel.outerRanges.size();
  rowSlots = rowExtent = 0;
  int64_t extent = 0;
  for (const LoopNode *node : stages) {
    bool reduction = node->kind == LoopNode::Kind::Reduction;
    const std::vector<SymInt> &inner =
        reduction ? node->reductionRanges
                  : std::vector<SymInt>(node->ranges.begin() +
                                            std::ptrdiff_t(std::min(k, node->ranges.size())),
                                        node->ranges.end());
    if (inner.empty())
      continue; // a value per row, computed by one thread
    std::optional<int64_t> e = inner[0].constant();
    if (inner.size() != 1 || !e || *e <= 0 || (extent && *e != extent))
      return;
    extent = *e;
  }
  if (!extent)
    return;
  rowVector = 1;
  if (extent % kRowVector == 0) {
    int64_t threads = (extent / kRowVector + 31) / 32 * 32;
    int64_t block = std::min<int64_t>(threads, 1024);
    int64_t slots = (extent + block * kRowVector - 1) / (block * kRowVector);
    if (slots <= kMaxRowSlots) {
      rowVector = kRowVector, blockThreads = block, rowSlots = slots, rowExtent = extent;
      return;
    }
  }
  int64_t slots = (extent + blockThreads - 1) / blockThreads;
  if (slots <= kMaxRowSlots)
    rowSlots = slots, rowExtent = extent;
}

std::string KernelRenderer::rowValueName(const LoopNode &node) const {
  return strCat(node.kind == LoopNode::Kind::Reduction ? "rv" : "rc", node.output);
}

void KernelRenderer::overrideRowLoads(const std::string &innerVar, const std::string &slot) {
  // A row element's flat index over (outer dims, the inner dim) and a row's over the outer dims.
  SymInt rowFlat = sched::rowMajorFlat(kernel.outerRanges, kernel.outerRanges.size());
  SymInt elementFlat = rowFlat * SymInt(rowExtent) + SymInt::symbol(innerVar);
  ex->clearLoadOverrides();
  for (const LoopNode *node : rowValues) {
    DType dtype = program.buffers[size_t(node->output)].dtype;
    if (node->kind == LoopNode::Kind::Reduction)
      ex->overrideLoad(node->output, rowFlat, fromMemory(dtype, rowValueName(*node)));
    else
      ex->overrideLoad(node->output, elementFlat,
                       fromMemory(dtype, strCat(rowValueName(*node), "[", slot, "]")));
  }
}

std::string KernelRenderer::rowLoopHead(const std::string &indent) {
  std::string head =
      strCat(indent, "#pragma unroll\n", indent, "for (int tc_j = 0; tc_j < ", rowSlots,
             "; ++tc_j) {\n", indent, "  const int tc_base = (threadIdx.x + tc_j * ", blockThreads,
             ")", rowVector > 1 ? strCat(" * ", rowVector) : "", ";\n");
  if (rowExtent % (blockThreads * rowVector))
    head += strCat(indent, "  if (tc_base >= ", rowExtent, ") continue;\n");
  return head;
}

void KernelRenderer::renderRowElements(
    const LoopNode &node, const std::string &innerVar, const std::string &var,
    const std::string &indent, const std::function<void(Scope &)> &bind,
    const std::function<void(const std::string &, const std::string &)> &each) {
  // The row's flat index over the outer dims is the kernel's row `o`.
  SymInt rowFlat = sched::rowMajorFlat(kernel.outerRanges, kernel.outerRanges.size());
  SymInt element = SymInt::symbol(innerVar);
  SymInt inRow = rowFlat * SymInt(rowExtent) + element;
  // Vector operands: buffers read at the element's index in the row (rows) or at its column
  // (columns: a LayerNorm's weight), not computed in this kernel.
  std::set<int> computed;
  for (const LoopNode *value : rowValues)
    computed.insert(value->output);
  // One vector per buffer (a load override is per buffer): the first of its two forms met.
  std::map<int, std::pair<bool, std::string>> vectors; // buffer -> (in the row, local)
  if (rowVector > 1)
    loop::forEachExpr(node.body, [&](const loop::Expr &expr) {
      if (expr.kind != loop::ExprKind::Load || computed.count(expr.buffer) ||
          vectors.count(expr.buffer))
        return;
      bool row = expr.index == inRow;
      if (!row && expr.index != element)
        return;
      std::string type = vectorType(program.buffers[size_t(expr.buffer)].dtype);
      if (type.empty())
        return;
      std::string local = strCat("tc_v", expr.buffer, row ? "r" : "c", "_", counter++);
      text += strCat(indent, "  const ", type, " ", local, " = *reinterpret_cast<const ", type,
                     " *>(&b", expr.buffer, "[", row ? strCat("o * ", rowExtent, " + ") : "",
                     "tc_base]);\n");
      vectors[expr.buffer] = {row, local};
    });
  static const char *lanes[] = {"x", "y", "z", "w"};
  for (int64_t l = 0; l < rowVector; ++l) {
    std::string in = rowVector > 1 ? indent + "  " : indent;
    if (rowVector > 1)
      text += indent + "  {\n";
    text +=
        strCat(in, "  const int ", var, " = tc_base", rowVector > 1 ? strCat(" + ", l) : "", ";\n");
    Scope scope;
    bind(scope);
    std::string slot = rowVector > 1 ? strCat("tc_j * ", rowVector, " + ", l) : "tc_j";
    overrideRowLoads(innerVar, slot);
    for (const auto &[buffer, vector] : vectors)
      ex->overrideLoad(
          buffer, vector.first ? inRow : element,
          fromMemory(program.buffers[size_t(buffer)].dtype, strCat(vector.second, ".", lanes[l])));
    std::string value = ex->body(node.body, scope, text, in + "  ");
    each(value, slot);
    if (rowVector > 1)
      text += indent + "  }\n";
  }
}

std::string KernelRenderer::vectorType(DType dtype) {
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

bool KernelRenderer::renderVectorElementwise(const std::vector<const LoopNode *> &stages,
                                             const std::string &range) {
  size_t k = kernel.outerRanges.size();
  SymInt flat = sched::rowMajorFlat(kernel.outerRanges, k);
  std::map<int, const LoopNode *> producedBy;
  size_t exprNodes = 0;
  for (const LoopNode *node : stages) {
    if (vectorType(program.buffers[size_t(node->output)].dtype).empty())
      return false;
    producedBy[node->output] = node;
    exprNodes += loop::postOrder(node->body).size();
  }
  // Four lanes and the scalar tail render every stage five times: long kernels, which gain
  // little from vector loads, stay scalar and NVRTC reads a fifth of the code.
  if (exprNodes > kMaxVectorizedExprNodes)
    return false;
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
                   " = *reinterpret_cast<const ", vectorType(program.buffers[size_t(buffer)].dtype),
                   " *>(&b", buffer, "[o0]);\n");
  static const char *lanes[] = {"x", "y", "z", "w"};
  std::vector<std::array<std::string, 4>> results(stages.size());
  for (int j = 0; j < 4; ++j) {
    std::string o = strCat("o", j, "_", counter++);
    text += strCat("    const long long ", o, " = o0 + ", j, ";\n");
    Scope scope = symbols;
    decompose(o, kernel.outerRanges, 0, k, loopVarName, scope, "    ");
    ex->clearLoadOverrides();
    for (int buffer : dense)
      ex->overrideLoad(
          buffer, flat,
          fromMemory(program.buffers[size_t(buffer)].dtype, strCat("in", buffer, ".", lanes[j])));
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

void KernelRenderer::renderScalarElementwise(const std::vector<const LoopNode *> &stages,
                                             const std::string &first) {
  text +=
      strCat("  for (long long o = ", first == "0" ? "" : first + " + ", "(long long)blockIdx.x * ",
             kElementwiseBlock, " + threadIdx.x; o < range; o += (long long)gridDim.x * ",
             kElementwiseBlock, ") {\n");
  Scope scope = symbols;
  decompose("o", kernel.outerRanges, 0, kernel.outerRanges.size(), loopVarName, scope, "    ");
  for (const LoopNode *node : stages) {
    std::string value = ex->body(node->body, scope, text, "    ");
    text += "    " + ex->store(node->output, node->body->dtype, value, "o") + "\n";
  }
  text += "  }\n";
}

void KernelRenderer::renderPointwiseStage(const LoopNode &node, const Scope &outer) {
  size_t k = kernel.outerRanges.size(), m = node.ranges.size();
  const std::string indent = "      ";
  if (m == k) {
    text += indent + "if (threadIdx.x == 0) {\n";
    std::string value = ex->body(node.body, outer, text, indent + "  ");
    text += indent + "  " + ex->store(node.output, node.body->dtype, value, "o") + "\n";
    text += indent + "}\n";
    return;
  }
  if (rowSlots) {
    text += rowLoopHead(indent);
    DType dtype = program.buffers[size_t(node.output)].dtype;
    std::string in = rowVector > 1 ? indent + "    " : indent + "  ";
    std::vector<std::string> slots;
    renderRowElements(
        node, loop::loopVar(k), "i", indent,
        [&](Scope &scope) {
          scope = outer;
          decompose("i", node.ranges, k, m, loopVarName, scope, in);
        },
        [&](const std::string &value, const std::string &slot) {
          std::string reg = strCat(rowValueName(node), "[", slot, "]");
          text += strCat(in, reg, " = ", ex->storedValue(value, node.body->dtype, dtype), ";\n");
          if (rowVector == 1)
            text += strCat(in, "b", node.output, "[o * ", rowExtent, " + i] = ", reg, ";\n");
          slots.push_back(reg);
        });
    if (rowVector > 1) {
      std::string type = vectorType(dtype);
      text += strCat(indent, "  *reinterpret_cast<", type, " *>(&b", node.output, "[o * ",
                     rowExtent, " + tc_base]) = ", type, "{", join(slots, ", "), "};\n");
    }
    text += indent + "}\n";
    return;
  }
  std::string inner = ex->index(product(node.ranges, k), symbols);
  text += strCat(indent, "const long long inner = ", inner, ";\n");
  text += noUnroll(m - k);
  text += strCat(indent, "for (long long i = threadIdx.x; i < inner; i += ", blockThreads, ") {\n");
  Scope scope = outer;
  decompose("i", node.ranges, k, m, loopVarName, scope, indent + "  ");
  std::string value = ex->body(node.body, scope, text, indent + "  ");
  text += indent + "  " + ex->store(node.output, node.body->dtype, value, "o * inner + i") + "\n";
  text += indent + "}\n";
}

// NVRTC 13 crashes (SIGSEGV in its optimizer: torchvision ConvNeXt-T's layer-scale reduction)
// unrolling a block-strided loop whose variable is split into several dims by division and
// remainder when the trip count is a small constant; such loops run a few iterations per thread,
// which unrolling gains little on.
std::string KernelRenderer::noUnroll(size_t dims) {
  return dims > 1 ? "      #pragma unroll 1\n" : "";
}

std::string KernelRenderer::identity(ReduceOp op, DType dtype) {
  return ex->constant(*codegen::reductionIdentity(op, dtype));
}

std::string KernelRenderer::combine(ReduceOp op, DType dtype, const std::string &acc,
                                    const std::string &value) {
  return strCat(acc, " = ", codegen::combineReduction<std::string>(*ex, op, dtype, acc, value),
                ";");
}

std::string KernelRenderer::argBetter(ReduceOp op, DType dtype, const std::string &value,
                                      const std::string &index, const std::string &best,
                                      const std::string &bestIndex, bool tieBreak) {
  return codegen::argReductionBetter<std::string>(*ex, op, dtype, value, index, best, bestIndex,
                                                  tieBreak);
}

void KernelRenderer::renderReductionStage(const LoopNode &node, const Scope &outer) {
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
  text +=
      strCat(indent, "const long long extent = ", ex->index(product(node.reductionRanges), symbols),
             ";\n");
  auto accumulate = [&](const std::string &value, const std::string &in) {
    if (isArg)
      text += strCat(in, "if (", argBetter(op, dtype, value, "r", "acc", "acc_i", false),
                     ") { acc = ", value, "; acc_i = r; }\n");
    else
      text += in + combine(op, dtype, "acc", value) + "\n";
  };
  if (rowSlots) {
    text += rowLoopHead(indent);
    std::string in = rowVector > 1 ? indent + "    " : indent + "  ";
    renderRowElements(
        node, loop::reductionVar(0), "r", indent,
        [&](Scope &scope) {
          scope = outer;
          decompose("r", node.reductionRanges, 0, q, reductionVarName, scope, in);
        },
        [&](const std::string &value, const std::string &) { accumulate(value, in); });
  } else {
    Scope scope = outer;
    text += noUnroll(q);
    text +=
        strCat(indent, "for (long long r = threadIdx.x; r < extent; r += ", blockThreads, ") {\n");
    decompose("r", node.reductionRanges, 0, q, reductionVarName, scope, indent + "  ");
    accumulate(ex->body(node.body, scope, text, indent + "  "), indent + "  ");
  }
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
    text +=
        strCat(indent, "  acc = lane < ", warps, " ? tc_vals[lane] : ", identity(op, dtype), ";\n");
    text += strCat(indent, "  acc_i = lane < ", warps, " ? tc_idx[lane] : 0;\n");
    warpReduce(indent + "  ");
    text += indent + "}\n";
  }
  std::string store = isArg ? ex->store(node.output, DType::I64, "acc_i", "o")
                            : ex->store(node.output, dtype, "acc", "o");
  if (rowSlots) { // every thread reads the result after the stage's barrier
    DType out = program.buffers[size_t(node.output)].dtype;
    store = strCat("{ ", store, " *reinterpret_cast<", memoryType(out), " *>(&tc_smem[64]) = ",
                   isArg ? ex->storedValue("acc_i", DType::I64, out)
                         : ex->storedValue("acc", dtype, out),
                   "; }");
  }
  text += indent + "if (threadIdx.x == 0) " + store + "\n";
}

Expected<RenderedKernels> renderKernels(const loop::LoopProgram &program,
                                        const sched::Schedule &schedule,
                                        const RenderOptions &options) {
  RenderedKernels result;
  loop::LoopProgram legal = codegen::legalize(program, {/*nativeFloatPow=*/true});
  for (const sched::Kernel &kernel : schedule.kernels) {
    if (kernel.kind == sched::Kernel::Kind::Extern)
      continue;
    KernelRenderer renderer(legal, kernel, options);
    RenderedKernel &rendered = result.kernels.emplace_back();
    rendered.name = kernel.name;
    Expected<LaunchConfig> config = renderer.render(rendered.text);
    if (!config)
      return config.takeError().withContext("kernel " + kernel.name);
    result.configs[kernel.name] = std::move(*config);
    rendered.usesFlashAttention = renderer.usesFlashAttention;
    rendered.usesKernelLibrary = renderer.usesKernelLibrary;
    rendered.hopper = renderer.hopperForm;
  }
  std::vector<const RenderedKernel *> all;
  for (const RenderedKernel &kernel : result.kernels)
    all.push_back(&kernel);
  result.source = assembleSource(all);
  return result;
}

std::string assembleSource(const std::vector<const RenderedKernel *> &kernels) {
  bool flashAttention = false, kernelLibrary = false;
  size_t bytes = 0;
  for (const RenderedKernel *kernel : kernels) {
    flashAttention = flashAttention || kernel->usesFlashAttention;
    kernelLibrary = kernelLibrary || kernel->usesKernelLibrary;
    bytes += kernel->text.size();
  }
  std::string source = prelude() + "\n" +
                       (flashAttention ? flashAttentionLibrary() + simtAttentionLibrary() + "\n" : "") +
                       (kernelLibrary ? kernels::kernelLibrarySource() + "\n" : "");
  source.reserve(source.size() + bytes);
  for (const RenderedKernel *kernel : kernels)
    source += kernel->text;
  return source;
}

} // namespace tensorc::cuda
