// Test helper: JIT-compiles an LLVM module for the host CPU with ORC LLJIT and looks up functions.
//
// API (kept small and stable; other codegen tests use it):
//   auto jit = tensorc::test::HostJit::create(std::move(module), std::move(context));
//   if (!jit) FAIL() << llvm::toString(jit.takeError());
//   auto fn = (*jit)->lookup<void(const float *, float *, int64_t)>("f");  // Expected<Fn *>
//   if (!fn) FAIL() << llvm::toString(fn.takeError());
// HostJit::create initializes the native target on first use and compiles for the host CPU with
// all of its features (AVX2/FMA on x86-64), so functions without target attributes use them.
// The module's data layout is set to the host's when empty. The HostJit owns the compiled code:
// keep it alive while calling the functions.
#pragma once

#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/TargetSelect.h>

#include <memory>
#include <mutex>

namespace tensorc::test {

class HostJit {
public:
  static llvm::Expected<std::unique_ptr<HostJit>>
  create(std::unique_ptr<llvm::Module> module, std::unique_ptr<llvm::LLVMContext> context) {
    static std::once_flag initOnce;
    std::call_once(initOnce, [] {
      llvm::InitializeNativeTarget();
      llvm::InitializeNativeTargetAsmPrinter();
    });
    auto machine = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!machine)
      return machine.takeError();
    auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*machine)).create();
    if (!jit)
      return jit.takeError();
    if (module->getDataLayout().isDefault())
      module->setDataLayout((*jit)->getDataLayout());
    llvm::orc::ThreadSafeModule safeModule(std::move(module), std::move(context));
    if (auto err = (*jit)->addIRModule(std::move(safeModule)))
      return err;
    return std::unique_ptr<HostJit>(new HostJit(std::move(*jit)));
  }

  /// Address of a compiled function, typed as Fn (a function type, e.g. `void(float *)`).
  template <typename Fn> llvm::Expected<Fn *> lookup(llvm::StringRef name) {
    auto address = jit->lookup(name);
    if (!address)
      return address.takeError();
    return address->toPtr<Fn *>();
  }

private:
  explicit HostJit(std::unique_ptr<llvm::orc::LLJIT> jit) : jit(std::move(jit)) {}
  std::unique_ptr<llvm::orc::LLJIT> jit;
};

} // namespace tensorc::test
