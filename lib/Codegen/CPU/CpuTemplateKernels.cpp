// CPU template kernels (GEMM, convolution) with fused epilogues: the KernelEmitter's GEMM and
// convolution entries, emitted as LLVM IR over the micro-kernels of Gemm.cpp, PackedGemm.cpp and
// Conv.cpp.
#include "IRLoops.h"
#include "KernelEmitter.h"
#include "tensorc/Codegen/CPU/Conv.h"
#include "tensorc/Codegen/CPU/Gemm.h"
#include "tensorc/Codegen/CPU/PackGemmWeights.h"
#include "tensorc/Codegen/CPU/PackedGemm.h"
#include "tensorc/Support/StrCat.h"

#include <llvm/IR/Constants.h>

#include <array>
#include <map>

namespace tensorc::cpu {

using llvm::Value;
using loop::LoopNode;

GemmEpilogue KernelEmitter::templateEpilogue(const LoopNode &templateNode,
                                             const LoopNode &epilogueNode, size_t columnDims,
                                             Value *outer, Value *rowBase) {
  codegen::EpilogueLayout layout = codegen::epilogueLayout(templateNode, epilogueNode, columnDims);
  std::vector<Value *> outerRanges, columnRanges;
  for (const SymInt &range : layout.outerRanges)
    outerRanges.push_back(ex->emitIndex(range, symbols));
  for (const SymInt &range : layout.columnRanges)
    columnRanges.push_back(ex->emitIndex(range, symbols));
  const std::vector<std::string> &columnVars = layout.columnVars;
  const std::string &rowVar = layout.rowVar;
  EmitScope base = symbols;
  decompose(outer, outerRanges, layout.outerVars.size(), base);

  // Vector epilogues bind the column dims by their flat position (all but the last at 0, the last
  // to the column); that is exact when every index reads the column dims only through it.
  bool flatColumns = true;
  if (columnVars.size() > 1) {
    std::map<std::string, SymInt> flat;
    for (const std::string &name : columnVars)
      flat[name] = SymInt(0);
    SymInt position(0), stride(1);
    for (size_t i = columnVars.size(); i-- > 0;) {
      position = position + SymInt::symbol(columnVars[i]) * stride;
      stride = stride * layout.columnRanges[i];
    }
    flat[columnVars.back()] = position;
    loop::forEachExpr(epilogueNode.body, [&](const loop::Expr &expr) {
      if (expr.kind == loop::ExprKind::Load || expr.kind == loop::ExprKind::IndirectLoad ||
          expr.kind == loop::ExprKind::Index)
        flatColumns = flatColumns && expr.index.substitute(flat) == expr.index;
    });
  }

  int result = templateNode.output;
  const loop::ExprRef &body = epilogueNode.body;
  DType dtype = body->dtype;
  return [this, base, rowVar, rowBase, columnVars, columnRanges, flatColumns, result, body,
          dtype](llvm::IRBuilderBase &, Value *acc, Value *row, Value *col) -> Value * {
    EmitScope scope = base;
    if (!rowVar.empty())
      scope.vars[rowVar] = rowBase ? b.CreateAdd(rowBase, row) : row;
    unsigned width = lanesOf(acc);
    auto emitAt = [&](const EmitScope &at, Value *value) {
      ex->setLoadOverride(result, value);
      Value *out = ex->emitBody(body, at);
      ex->setLoadOverride(-1, nullptr);
      return ex->convert(out, dtype, DType::F32);
    };
    if (columnVars.empty() ? width == 1 : flatColumns) {
      for (size_t i = 0; i + 1 < columnVars.size(); ++i)
        scope.vars[columnVars[i]] = i64(0);
      if (!columnVars.empty()) {
        scope.vars[columnVars.back()] = col;
        if (width > 1) {
          scope.vectorVar = columnVars.back();
          scope.lanes = width;
        }
      }
      return emitAt(scope, acc);
    }
    // Column dims read some other way: one element at a time with its own coordinates.
    Value *outVector = llvm::PoisonValue::get(acc->getType());
    for (unsigned lane = 0; lane < width; ++lane) {
      EmitScope at = scope;
      Value *rest = b.CreateAdd(col, i64(lane));
      for (size_t i = columnVars.size(); i-- > 0;) {
        at.vars[columnVars[i]] = i ? b.CreateURem(rest, columnRanges[i]) : rest;
        if (i)
          rest = b.CreateUDiv(rest, columnRanges[i]);
      }
      Value *value = emitAt(at, width > 1 ? b.CreateExtractElement(acc, i64(lane)) : acc);
      if (width == 1)
        return value;
      outVector = b.CreateInsertElement(outVector, value, i64(lane));
    }
    return outVector;
  };
}

Status KernelEmitter::checkTemplateBuffers(const codegen::TemplateKernel &t,
                                           std::vector<int> buffers) {
  buffers.insert(buffers.begin(), t.output);
  for (int buffer : buffers) {
    const loop::Buffer &desc = program.buffers[size_t(buffer)];
    if (desc.dtype != DType::F32)
      return makeError("kernel ", kernel.name, ": template buffer ", desc.name, " is ",
                       dtypeName(desc.dtype), "; only f32 is supported");
    if (!bufferPtrs[size_t(buffer)])
      return makeError("kernel ", kernel.name, ": template buffer ", desc.name,
                       " is not among its args");
  }
  return Status::ok();
}

Status KernelEmitter::attentionKernel(const codegen::TemplateKernel &) {
  return makeError("kernel ", kernel.name,
                   ": attention templates exist for CUDA only "
                   "(--target cuda); CPU bundles run attention on its reference kernel");
}

Status KernelEmitter::gemmKernel(const codegen::TemplateKernel &t) {
  createFunctions();
  const LoopNode &gemmNode = *t.node;
  const LoopNode *epilogueNode = t.epilogue;
  int outBuffer = t.output;
  const LoopNode::Gemm &gemm = gemmNode.gemm;
  TC_RETURN_IF_ERROR(checkTemplateBuffers(t, {gemm.a.buffer, gemm.b.buffer}));

  auto eval = [&](const SymInt &value) { return ex->emitIndex(value, symbols); };
  Value *m = eval(gemm.m), *n = eval(gemm.n), *k = eval(gemm.k), *batch = eval(gemm.batch);
  // Each batch's tasks: tiles of C (for packed B, the grid's shares of them).
  sched::GemmTaskTile task = sched::gemmTaskTile(gemm);
  GemmTiling tiling{task.rows, task.cols};
  Value *tiles = emitGemmTileCount(b, tiling, m, n);
  // Empty matrices have no tiles; a divisor of 1 keeps the batch arithmetic defined.
  Value *safeTiles = smax(tiles, i64(1));
  Value *firstBatch = b.CreateUDiv(begin, safeTiles);
  Value *lastBatch =
      smin(batch, b.CreateUDiv(b.CreateAdd(end, b.CreateSub(safeTiles, i64(1))), safeTiles));
  auto viewStrides = [&](const loop::StridedView &view) {
    size_t base = view.strides.size() - 2;
    return std::array<Value *, 3>{base ? eval(view.strides[0]) : i64(0), eval(view.strides[base]),
                                  eval(view.strides[base + 1])};
  };
  std::array<Value *, 3> aStrides = viewStrides(gemm.a), bStrides = viewStrides(gemm.b);
  Value *aOffset = eval(gemm.a.offset), *bOffset = eval(gemm.b.offset);

  emitFor(firstBatch, lastBatch, 1, "batch", [&](Value *bi) {
    Value *tileBase = b.CreateMul(bi, tiles);
    Value *tileBegin = smax(b.CreateSub(begin, tileBase), i64(0));
    Value *tileEnd = smin(b.CreateSub(end, tileBase), tiles);
    llvm::Type *f32 = b.getFloatTy();
    GemmOperands ops;
    Value *aBase = b.CreateAdd(aOffset, b.CreateMul(bi, aStrides[0]));
    Value *bBase = b.CreateAdd(bOffset, b.CreateMul(bi, bStrides[0]));
    ops.a = b.CreateGEP(f32, bufferPtrs[size_t(gemm.a.buffer)], aBase);
    ops.aRowStride = aStrides[1];
    ops.aColStride = aStrides[2];
    ops.b = b.CreateGEP(f32, bufferPtrs[size_t(gemm.b.buffer)], bBase);
    ops.bRowStride = bStrides[1];
    ops.bColStride = bStrides[2];
    ops.c = b.CreateGEP(f32, bufferPtrs[size_t(outBuffer)], b.CreateMul(bi, b.CreateMul(m, n)));
    ops.cRowStride = n;
    ops.m = m;
    ops.n = n;
    ops.k = k;
    GemmEpilogue epilogue;
    if (epilogueNode)
      epilogue = templateEpilogue(gemmNode, *epilogueNode, 1, bi, nullptr);
    if (!gemm.packedB)
      return emitGemmTiles(b, target, tiling, ops, tileBegin, tileEnd, epilogue);
    // B packed at compile time (packGemmWeights): the micro-kernels read A in place and B's strips,
    // over the scheduler's task grid split into equal shares.
    PackedGemmOperands packed;
    packed.a = ops.a;
    packed.aRowStride = ops.aRowStride;
    packed.aColStride = ops.aColStride;
    packed.packedB =
        b.CreateGEP(f32, bufferPtrs[size_t(gemm.b.buffer)], b.CreateMul(bi, bStrides[0]));
    packed.c = ops.c;
    packed.cRowStride = n;
    packed.m = m;
    packed.n = n;
    packed.k = k;
    int64_t kc = packedGemmKBlock(gemm.k.constant().value_or(-1));
    emitPackedGemmGrid(b, target, kc, packed, emitCeilDiv(b, m, task.rows),
                       emitCeilDiv(b, n, task.cols), tileBegin, tileEnd, epilogue);
  });
  return Status::ok();
}

// Implicit GEMM: per image and group, C (OC/groups x OH*OW, rows of the dense NCHW output) is
// the group's weights (OC/groups x C/groups*KH*KW) times the patch matrix, which packing reads
// straight from the input through a loader (zero outside it), so no im2col buffer exists.
Status KernelEmitter::convKernel(const codegen::TemplateKernel &t) {
  if (t.node->conv.channelsLast)
    return channelsLastConvKernel(t);
  createFunctions();
  const LoopNode &convNode = *t.node;
  const LoopNode *epilogueNode = t.epilogue;
  int outBuffer = t.output;
  const LoopNode::Conv &cv = convNode.conv;
  TC_RETURN_IF_ERROR(checkTemplateBuffers(t, {cv.input, cv.weight.buffer}));
  int64_t cg = cv.c / cv.groups, ocg = cv.oc / cv.groups, taps = cv.kh * cv.kw;
  int64_t plane = cv.h * cv.w, positions = cv.oh * cv.ow;
  Value *images = ex->emitIndex(cv.n, symbols);
  GemmTiling tiling{sched::kGemmTileM, sched::kGemmTileN};
  Value *tiles = emitGemmTileCount(b, tiling, i64(ocg), i64(positions));
  Value *firstGemm = b.CreateUDiv(begin, tiles);
  Value *lastGemm = smin(b.CreateMul(images, i64(cv.groups)),
                         b.CreateUDiv(b.CreateAdd(end, b.CreateSub(tiles, i64(1))), tiles));
  Value *weightOffset = ex->emitIndex(cv.weight.offset, symbols);
  Value *ocStride = ex->emitIndex(cv.weight.strides[0], symbols);
  Value *kStride = ex->emitIndex(cv.weight.strides[3], symbols);
  llvm::Type *f32 = b.getFloatTy();

  emitFor(firstGemm, lastGemm, 1, "conv.gemm", [&](Value *gi) {
    Value *image = b.CreateUDiv(gi, i64(cv.groups));
    Value *group = b.CreateURem(gi, i64(cv.groups));
    Value *tileBase = b.CreateMul(gi, tiles);
    Value *tileBegin = smax(b.CreateSub(begin, tileBase), i64(0));
    Value *tileEnd = smin(b.CreateSub(end, tileBase), tiles);
    Value *firstChannel = b.CreateMul(group, i64(ocg));
    GemmOperands ops;
    ops.a = b.CreateGEP(f32, bufferPtrs[size_t(cv.weight.buffer)],
                        b.CreateAdd(weightOffset, b.CreateMul(firstChannel, ocStride)));
    ops.aRowStride = ocStride;
    ops.aColStride = kStride;
    ops.c = b.CreateGEP(f32, bufferPtrs[size_t(outBuffer)], b.CreateMul(gi, i64(ocg * positions)));
    ops.cRowStride = i64(positions);
    ops.m = i64(ocg);
    ops.n = i64(positions);
    ops.k = i64(cg * taps);
    // The group's input channels of this image; every patch element is inside this block.
    Value *input = b.CreateGEP(
        f32, bufferPtrs[size_t(cv.input)],
        b.CreateMul(b.CreateAdd(b.CreateMul(image, i64(cv.c)), b.CreateMul(group, i64(cg))),
                    i64(plane)));
    // Patch row k = (c, kh, kw), column n = (oh, ow): input (c, ih, iw) or 0 in the padding.
    auto coordinates = [&cv, taps](llvm::IRBuilderBase &ir, Value *k, Value *n) {
      Value *c = ir.CreateUDiv(k, ir.getInt64(taps));
      Value *tap = ir.CreateURem(k, ir.getInt64(taps));
      Value *kh = ir.CreateUDiv(tap, ir.getInt64(cv.kw));
      Value *kw = ir.CreateURem(tap, ir.getInt64(cv.kw));
      Value *oh = ir.CreateUDiv(n, ir.getInt64(cv.ow));
      Value *ow = ir.CreateURem(n, ir.getInt64(cv.ow));
      Value *ih = ir.CreateAdd(
          ir.CreateMul(oh, ir.getInt64(cv.strideH)),
          ir.CreateSub(ir.CreateMul(kh, ir.getInt64(cv.dilationH)), ir.getInt64(cv.padH)));
      Value *iw = ir.CreateAdd(
          ir.CreateMul(ow, ir.getInt64(cv.strideW)),
          ir.CreateSub(ir.CreateMul(kw, ir.getInt64(cv.dilationW)), ir.getInt64(cv.padW)));
      return std::array<Value *, 4>{c, ih, iw, ow};
    };
    ops.loadB = [&, input](llvm::IRBuilderBase &ir, Value *k, Value *n) -> Value * {
      auto [c, ih, iw, ow] = coordinates(ir, k, n);
      // Unsigned compares also reject negative coordinates.
      Value *inside = ir.CreateAnd(ir.CreateICmpULT(ih, ir.getInt64(cv.h)),
                                   ir.CreateICmpULT(iw, ir.getInt64(cv.w)));
      Value *index = ir.CreateAdd(ir.CreateMul(c, ir.getInt64(plane)),
                                  ir.CreateAdd(ir.CreateMul(ih, ir.getInt64(cv.w)), iw));
      index = ir.CreateSelect(inside, index, ir.getInt64(0));
      Value *x = ir.CreateAlignedLoad(f32, ir.CreateInBoundsGEP(f32, input, index), llvm::Align(4));
      return ir.CreateSelect(inside, x, llvm::ConstantFP::getZero(f32));
    };
    if (cv.strideW == 1)
      ops.loadBRow = [&, input](llvm::IRBuilderBase &ir, Value *k, Value *n0,
                                unsigned count) -> std::pair<Value *, Value *> {
        // Contiguous when the columns stay in one output row and the input row is inside.
        auto [c, ih, iw, ow] = coordinates(ir, k, n0);
        Value *last = ir.getInt64(count - 1);
        Value *ok = ir.CreateICmpULT(ih, ir.getInt64(cv.h));
        ok = ir.CreateAnd(ok, ir.CreateICmpSGE(iw, ir.getInt64(0)));
        ok = ir.CreateAnd(ok, ir.CreateICmpSLT(ir.CreateAdd(iw, last), ir.getInt64(cv.w)));
        ok = ir.CreateAnd(ok, ir.CreateICmpSLT(ir.CreateAdd(ow, last), ir.getInt64(cv.ow)));
        Value *index = ir.CreateAdd(ir.CreateMul(c, ir.getInt64(plane)),
                                    ir.CreateAdd(ir.CreateMul(ih, ir.getInt64(cv.w)), iw));
        return {ir.CreateGEP(f32, input, index), ok};
      };
    GemmEpilogue epilogue;
    if (epilogueNode)
      epilogue = templateEpilogue(convNode, *epilogueNode, 2, image, firstChannel);
    emitGemmTiles(b, target, tiling, ops, tileBegin, tileEnd, epilogue);
  });
  return Status::ok();
}

// Channels-last: the NHWC kernels of Conv.h on weights packed at compile time, over the tiles
// packConvTemplates chose (the launch range); the epilogue runs per stored vector, at the
// template's [N, OH, OW, OC] index of (image, pixel, channel).
Status KernelEmitter::channelsLastConvKernel(const codegen::TemplateKernel &t) {
  const LoopNode &convNode = *t.node;
  const LoopNode::Conv &cv = convNode.conv;
  if (!cv.packedWeights)
    return makeError("kernel ", convNode.name,
                     ": a channels-last convolution on the CPU needs its weights packed at "
                     "compile time (a constant weight, CPU-only inference)");
  createFunctions();
  TC_RETURN_IF_ERROR(checkTemplateBuffers(t, {cv.input, cv.weight.buffer}));
  const LoopNode *epilogueNode = t.epilogue;
  ConvParams params = convParamsOf(cv);
  Value *images = ex->emitIndex(cv.n, symbols);
  Value *input = bufferPtrs[size_t(cv.input)];
  Value *weights = bufferPtrs[size_t(cv.weight.buffer)];
  Value *output = bufferPtrs[size_t(t.output)];
  ConvEpilogue epilogue;
  if (epilogueNode)
    epilogue = [this, &convNode, epilogueNode, &cv](llvm::IRBuilderBase &ir, Value *acc,
                                                    Value *image, Value *pixel, Value *channel) {
      // Outer dims [N, OH], row OW, column OC.
      Value *oh = ir.CreateUDiv(pixel, i64(cv.ow)), *ow = ir.CreateURem(pixel, i64(cv.ow));
      Value *outer = ir.CreateAdd(ir.CreateMul(image, i64(cv.oh)), oh);
      GemmEpilogue at = templateEpilogue(convNode, *epilogueNode, 1, outer, nullptr);
      return at(ir, acc, ow, channel);
    };
  if (cv.depthwise() || cv.channelwise) {
    if (cv.channelwise && (!channelwiseFits(params) || cv.tileN % 16 != 0))
      return makeError(
          "kernel ", convNode.name, ": a channelwise convolution needs NHWC groups ",
          "of 2, 4 or 8 channels in and out, channels in multiples of 16 and tiles of ",
          "whole 16-channel blocks (tiles=[", cv.tileM, ", ", cv.tileN, "])");
    DepthwiseTiling tiling{cv.tileM, cv.tileN};
    emitDepthwiseTiles(b, target, params, tiling, images, input, weights, output, begin, end,
                       epilogue);
  } else if (cv.winograd) {
    ConvTiling tiling{cv.tileM, cv.tileN};
    if (!winogradTilingFits(params, tiling))
      return makeError("kernel ", convNode.name, ": a Winograd convolution needs a 3x3 stride-1 ",
                       "kernel without groups, channels in multiples of 16 and tasks of at most ",
                       "64 output channels (tiles=[", cv.tileM, ", ", cv.tileN, "])");
    emitWinogradTiles(b, target, params, tiling, images, input, weights, output, begin, end,
                      epilogue);
  } else {
    ConvTiling tiling{cv.tileM, cv.tileN};
    emitConvTiles(b, target, params, tiling, images, input, weights, output, begin, end, epilogue);
  }
  return Status::ok();
}

} // namespace tensorc::cpu
