// CPU code generation's modules: identical kernels found by their canonical LLVM IR and emitted
// once (the others exported as aliases), the distinct ones split into LLVM modules of about equal
// size (independent of -j) that share one module of the micro-kernels they call, compiled on the
// -j pool and linked (ObjectLinker).
#include "tensorc/Codegen/CPU/CpuCodegen.h"

#include "KernelEmitter.h"
#include "MicroKernel.h"
#include "ObjectLinker.h"
#include "tensorc/Codegen/Common/Legalize.h"
#include "tensorc/Support/Parallel.h"
#include "tensorc/Support/StrCat.h"
#include "tensorc/Support/Timing.h"

#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalAlias.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <atomic>
#include <map>
#include <set>
#include <unordered_map>

namespace tensorc::cpu {

namespace {

using MicroKernelShapes = std::vector<std::pair<unsigned, unsigned>>;

/// Kernel `kernel`'s code with every name erased (its own included): two kernels with the same
/// text compute the same thing on their arguments, so one's code serves both. The micro-kernels
/// it calls are declarations (their shapes go to `microKernels`).
std::string canonicalText(const loop::LoopProgram &legal, const CpuTarget &target,
                          const sched::Kernel &kernel, llvm::LLVMContext &context,
                          std::set<std::pair<unsigned, unsigned>> &microKernels) {
  llvm::Module module("kernel", context);
  module.setTargetTriple(target.triple);
  declareMicroKernels(module, target);
  sched::Kernel unnamed = kernel;
  unnamed.name = "kernel";
  if (!emitKernel(module, legal, target, unnamed))
    return "error: " + kernel.name; // unique: the error surfaces when the kernel is emitted
  for (std::pair<unsigned, unsigned> shape : usedMicroKernels(module, target))
    microKernels.insert(shape);
  for (llvm::Function &function : module) {
    for (llvm::Argument &argument : function.args())
      argument.setName("");
    for (llvm::BasicBlock &block : function) {
      block.setName("");
      for (llvm::Instruction &instruction : block)
        instruction.setName("");
    }
  }
  std::string text;
  llvm::raw_string_ostream stream(text);
  module.print(stream, nullptr);
  return text;
}

/// The kernels one LLVM module holds: those it generates code for (`emitted`, in schedule order)
/// and the kernels that are exported as aliases of one of those (name, emitted kernel's name); or
/// the micro-kernels every other module calls (`microKernels`), compiled once.
struct ModulePart {
  std::vector<const sched::Kernel *> emitted;
  std::vector<std::pair<std::string, std::string>> aliases;
  MicroKernelShapes microKernels;
  size_t size = 0; // the emitted kernels' canonical text, bytes: a measure of the work
};

/// Groups identical kernels and splits the distinct ones over at most kMaxModules modules of
/// about equal size, after a module of the micro-kernels they call (first: the largest piece of
/// work). Depends on the schedule only (not on how many threads compile), so the shared object is
/// the same whatever `-j` is.
constexpr size_t kMaxModules = 16;

std::vector<ModulePart> partition(const loop::LoopProgram &legal, const sched::Schedule &schedule,
                                  const CpuTarget &target) {
  llvm::LLVMContext context;
  std::unordered_map<std::string, size_t> firstWithText; // canonical text -> distinct index
  std::vector<const sched::Kernel *> distinct;
  std::vector<size_t> sizes;
  std::vector<std::vector<std::string>> copies; // per distinct kernel: the kernels aliasing it
  std::set<std::pair<unsigned, unsigned>> microKernels;
  for (const sched::Kernel &kernel : schedule.kernels) {
    if (kernel.kind == sched::Kernel::Kind::Extern)
      continue;
    std::string text = canonicalText(legal, target, kernel, context, microKernels);
    auto [it, inserted] = firstWithText.emplace(std::move(text), distinct.size());
    if (inserted) {
      distinct.push_back(&kernel);
      sizes.push_back(it->first.size());
      copies.emplace_back();
    } else {
      copies[it->second].push_back(kernel.name);
    }
  }
  std::vector<ModulePart> parts(std::min(kMaxModules, std::max<size_t>(distinct.size(), 1)));
  // Largest first, each into the smallest part so far (ties: the lowest index).
  std::vector<size_t> order(distinct.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return sizes[a] > sizes[b]; });
  std::vector<std::vector<size_t>> members(parts.size());
  for (size_t index : order) {
    size_t smallest = 0;
    for (size_t p = 1; p < parts.size(); ++p)
      if (parts[p].size < parts[smallest].size)
        smallest = p;
    parts[smallest].size += sizes[index];
    members[smallest].push_back(index);
  }
  for (size_t p = 0; p < parts.size(); ++p) {
    std::sort(members[p].begin(), members[p].end());
    for (size_t index : members[p]) {
      parts[p].emitted.push_back(distinct[index]);
      for (const std::string &copy : copies[index])
        parts[p].aliases.emplace_back(copy, distinct[index]->name);
    }
  }
  if (!microKernels.empty()) {
    ModulePart shared;
    shared.microKernels.assign(microKernels.begin(), microKernels.end());
    parts.insert(parts.begin(), std::move(shared));
  }
  return parts;
}

/// What compiling one module made.
struct PartResult {
  Status status;
  std::string object, ir;
};

void compilePart(const loop::LoopProgram &legal, const CpuTarget &target, const ModulePart &part,
                 const std::vector<std::pair<std::string, std::string>> &data, PartResult &out) {
  Expected<std::unique_ptr<llvm::TargetMachine>> machine = createTargetMachine(target);
  if (!machine) {
    out.status = machine.takeError();
    return;
  }
  llvm::LLVMContext context;
  llvm::Module module("tensorc_kernels", context);
  module.setTargetTriple(target.triple);
  module.setDataLayout((*machine)->createDataLayout());
  std::set<std::string> exported;
  for (const std::string &name : defineMicroKernels(module, target, part.microKernels))
    exported.insert(name);
  if (part.microKernels.empty())
    declareMicroKernels(module, target);
  for (const sched::Kernel *kernel : part.emitted) {
    exported.insert(kernel->name);
    Status status = emitKernel(module, legal, target, *kernel);
    if (!status) {
      out.status = status.takeError().withContext("CPU codegen for " + target.name);
      return;
    }
  }
  usedMicroKernels(module, target); // erases the declarations no kernel calls
  // Only the kernels are exported; anything a generator added stays local to the object.
  for (llvm::Function &function : module)
    if (!function.isDeclaration() && !exported.count(function.getName().str()))
      function.setLinkage(llvm::GlobalValue::InternalLinkage);
  // Identical kernels: one code, several exported names.
  for (const auto &[name, original] : part.aliases) {
    llvm::Function *function = module.getFunction(original);
    llvm::GlobalAlias::create(function->getValueType(), 0, llvm::GlobalValue::ExternalLinkage, name,
                              function, &module);
  }
  Expected<std::string> object = optimizeToObject(module, **machine, target, data, out.ir);
  if (!object) {
    out.status = object.takeError();
    return;
  }
  out.object = std::move(*object);
}

} // namespace

Expected<CompiledKernels> compileKernels(const loop::LoopProgram &program,
                                         const sched::Schedule &schedule, const CpuTarget &target,
                                         const CodegenOptions &options) {
  std::set<std::string> names;
  for (const sched::Kernel &kernel : schedule.kernels)
    if (kernel.kind != sched::Kernel::Kind::Extern && !names.insert(kernel.name).second)
      return makeError("two kernels are named ", kernel.name);
  // The CPU has no libm: pow is expanded into exp and log.
  loop::LoopProgram legal = codegen::legalize(program, {/*nativeFloatPow=*/false});

  timing::Scope partitionTime(target.name + ": find identical kernels, split into modules");
  std::vector<ModulePart> parts = partition(legal, schedule, target);
  partitionTime.stop();
  size_t distinct = 0, microKernels = 0;
  for (const ModulePart &part : parts) {
    distinct += part.emitted.size();
    microKernels += part.microKernels.size();
  }

  // Each module in its own LLVM context on the pool; the data symbols go into the first.
  timing::Scope compileTime(strCat(target.name, ": ", distinct, " distinct kernels of ",
                                   names.size(), " and ", microKernels, " micro-kernels in ",
                                   parts.size(), " modules: emit, O3, object code"));
  std::vector<PartResult> results(parts.size());
  static const std::vector<std::pair<std::string, std::string>> none;
  std::atomic<size_t> done{0};
  parallelFor(parts.size(), options.jobs, [&](size_t i) {
    compilePart(legal, target, parts[i], i == 0 ? options.dataSymbols : none, results[i]);
    size_t finished = ++done;
    if (options.onModuleDone)
      options.onModuleDone(finished, parts.size());
  });
  compileTime.stop();
  CompiledKernels compiled;
  std::vector<std::string> objects;
  for (size_t i = 0; i < results.size(); ++i) {
    TC_RETURN_IF_ERROR(std::move(results[i].status));
    objects.push_back(std::move(results[i].object));
    if (results.size() > 1)
      compiled.llvmIR += strCat("; ---- module ", i + 1, " of ", results.size(), "\n");
    compiled.llvmIR += results[i].ir;
  }
  timing::Scope linkTime(target.name + ": link");
  TC_ASSIGN_OR_RETURN(compiled.sharedObject, linkObjects(objects, target, options));
  return compiled;
}

} // namespace tensorc::cpu
