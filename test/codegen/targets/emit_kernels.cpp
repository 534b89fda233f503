// Compiles the shared kernel cases (KernelCases.h) for one CPU target through the compiler's back
// end (O3, object, ld.lld) into a shared object the harness loads:
//   tensorc-emit-test-kernels TARGET OUT.so        (TARGET: x86_64, x86_64-avx512, aarch64)
// Exports `void gemm(a, lda, packedB, c, ldc, m, n, k, tileBegin, tileEnd, bias)`,
// `int64_t gemm_tiles(m, n)`, and per convolution case `void NAME(input, packedWeights, output,
// images, tileBegin, tileEnd, bias)` and `int64_t NAME_tiles(images)`.
#include "KernelCases.h"
#include "ObjectLinker.h"
#include "tensorc/Codegen/CPU/Conv.h"
#include "tensorc/Codegen/CPU/PackedGemm.h"

#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <cstdio>
#include <string>

namespace {

using namespace tensorc::cpu;
using llvm::Value;

llvm::Function *define(llvm::Module &module, const CpuTarget &target, const std::string &name,
                       llvm::Type *result, std::vector<llvm::Type *> params) {
  auto *fn = llvm::Function::Create(llvm::FunctionType::get(result, params, false),
                                    llvm::Function::ExternalLinkage, name, module);
  fn->addFnAttr("target-cpu", target.cpu);
  fn->addFnAttr("target-features", target.features);
  fn->addFnAttr("no-builtins");
  return fn;
}

/// relu(acc + bias[col]) + 0.25 * outer + 0.001 * row, for vectors or scalars.
Value *epilogue(llvm::IRBuilderBase &b, Value *bias, Value *acc, Value *outer, Value *row,
                Value *col) {
  llvm::Type *type = acc->getType();
  Value *x =
      b.CreateFAdd(acc, b.CreateAlignedLoad(type, b.CreateInBoundsGEP(b.getFloatTy(), bias, col),
                                            llvm::Align(4)));
  x = b.CreateMaxNum(x, llvm::Constant::getNullValue(type));
  Value *term = b.CreateFAdd(b.CreateFMul(b.CreateSIToFP(outer, b.getFloatTy()),
                                          llvm::ConstantFP::get(b.getFloatTy(), 0.25)),
                             b.CreateFMul(b.CreateSIToFP(row, b.getFloatTy()),
                                          llvm::ConstantFP::get(b.getFloatTy(), 0.001)));
  if (auto *vector = llvm::dyn_cast<llvm::FixedVectorType>(type))
    term = b.CreateVectorSplat(vector->getNumElements(), term);
  return b.CreateFAdd(x, term);
}

void addGemm(llvm::Module &module, const CpuTarget &target) {
  llvm::LLVMContext &ctx = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(ctx), *i64 = llvm::Type::getInt64Ty(ctx);
  llvm::Function *fn = define(module, target, "gemm", llvm::Type::getVoidTy(ctx),
                              {ptr, i64, ptr, ptr, i64, i64, i64, i64, i64, i64, ptr});
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  PackedGemmTiling tiling{24, 64, 40}; // small blocks: several tiles and K blocks in small cases
  PackedGemmOperands ops;
  ops.a = fn->getArg(0), ops.aRowStride = fn->getArg(1), ops.aColStride = b.getInt64(1);
  ops.packedB = fn->getArg(2), ops.c = fn->getArg(3), ops.cRowStride = fn->getArg(4);
  ops.m = fn->getArg(5), ops.n = fn->getArg(6), ops.k = fn->getArg(7);
  Value *bias = fn->getArg(10);
  emitPackedGemmTiles(b, target, tiling, ops, fn->getArg(8), fn->getArg(9),
                      [bias](llvm::IRBuilderBase &ir, Value *acc, Value *row, Value *col) {
                        return epilogue(ir, bias, acc, ir.getInt64(0), row, col);
                      });
  b.CreateRetVoid();
  llvm::Function *count = define(module, target, "gemm_tiles", i64, {i64, i64});
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", count));
  b.CreateRet(emitPackedGemmTileCount(b, tiling, count->getArg(0), count->getArg(1)));
}

void addConv(llvm::Module &module, const CpuTarget &target, const tensorc::testcases::ConvCase &c) {
  llvm::LLVMContext &ctx = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(ctx), *i64 = llvm::Type::getInt64Ty(ctx);
  llvm::Function *fn = define(module, target, c.name, llvm::Type::getVoidTy(ctx),
                              {ptr, ptr, ptr, i64, i64, i64, ptr});
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  ConvParams p;
  p.c = c.c, p.h = c.h, p.w = c.w, p.oc = c.oc, p.kh = p.kw = c.k;
  p.strideH = p.strideW = c.stride;
  p.padTop = p.padLeft = c.pad;
  p.dilationH = p.dilationW = c.dilation;
  p.groups = c.groups;
  p.oh = c.oh(), p.ow = c.ow();
  Value *bias = fn->getArg(6);
  ConvEpilogue conv = [bias](llvm::IRBuilderBase &ir, Value *acc, Value *image, Value *pixel,
                             Value *channel) {
    return epilogue(ir, bias, acc, image, pixel, channel);
  };
  llvm::Function *count = define(module, target, std::string(c.name) + "_tiles", i64, {i64});
  llvm::IRBuilder<> cb(llvm::BasicBlock::Create(ctx, "entry", count));
  if (c.depthwise()) {
    DepthwiseTiling tiling = chooseDepthwiseTiling(p, 2);
    emitDepthwiseTiles(b, target, p, tiling, fn->getArg(3), fn->getArg(0), fn->getArg(1),
                       fn->getArg(2), fn->getArg(4), fn->getArg(5), conv);
    cb.CreateRet(emitDepthwiseTileCount(cb, p, tiling, count->getArg(0)));
  } else {
    ConvTiling tiling = chooseConvTiling(p, 2);
    emitConvTiles(b, target, p, tiling, fn->getArg(3), fn->getArg(0), fn->getArg(1), fn->getArg(2),
                  fn->getArg(4), fn->getArg(5), conv);
    cb.CreateRet(emitConvTileCount(cb, p, tiling, count->getArg(0)));
  }
  b.CreateRetVoid();
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s TARGET OUT.so\n", argv[0]);
    return 1;
  }
  std::string name = argv[1];
  std::string arch = name.rfind("aarch64", 0) == 0 ? "aarch64" : "x86_64";
  auto targets = targetsForArch(arch);
  const CpuTarget *target = nullptr;
  if (targets)
    for (const CpuTarget &t : *targets)
      if (t.name == name)
        target = &t;
  if (!target) {
    std::fprintf(stderr, "emit-test-kernels: unknown target '%s'\n", argv[1]);
    return 1;
  }
  auto machine = createTargetMachine(*target);
  if (!machine) {
    std::fprintf(stderr, "emit-test-kernels: %s\n", machine.error().message().c_str());
    return 1;
  }
  llvm::LLVMContext ctx;
  llvm::Module module("test_kernels", ctx);
  module.setTargetTriple(target->triple);
  module.setDataLayout((*machine)->createDataLayout());
  addGemm(module, *target);
  for (const auto &c : tensorc::testcases::convCases())
    addConv(module, *target, c);
  std::string ir;
  auto library = optimizeAndLink(module, **machine, *target, {}, ir);
  if (!library) {
    std::fprintf(stderr, "emit-test-kernels: %s\n", library.error().message().c_str());
    return 1;
  }
  FILE *out = std::fopen(argv[2], "wb");
  if (!out || std::fwrite(library->data(), 1, library->size(), out) != library->size()) {
    std::fprintf(stderr, "emit-test-kernels: cannot write %s\n", argv[2]);
    return 1;
  }
  std::fclose(out);
  return 0;
}
