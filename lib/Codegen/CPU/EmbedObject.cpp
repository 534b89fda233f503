// The embedded-bundle object of `--emit=so`: bundle files as LLVM constants plus one accessor.
#include "tensorc/Codegen/CPU/EmbedObject.h"

#include "ObjectLinker.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

namespace tensorc::cpu {

namespace {

/// A private constant holding `bytes`. Large data: x86-64 places it in .lrodata, after the code
/// and the table, so gigabytes of weights never push a RIP-relative reference out of range.
llvm::GlobalVariable *addBlob(llvm::Module &module, std::string_view bytes, unsigned alignment,
                              const std::string &name) {
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *byteType = llvm::Type::getInt8Ty(context);
  llvm::Constant *init = llvm::ConstantDataArray::getRaw(
      llvm::StringRef(bytes.data(), bytes.size()), bytes.size(), byteType);
  auto *global = new llvm::GlobalVariable(module, init->getType(), /*isConstant=*/true,
                                          llvm::GlobalValue::PrivateLinkage, init, name);
  global->setAlignment(llvm::Align(alignment));
  global->setCodeModel(llvm::CodeModel::Large);
  return global;
}

} // namespace

Expected<std::string> emitEmbeddedBundleObject(const std::vector<EmbedFile> &files,
                                               const std::string &triple,
                                               const EmbedTable &embedTable) {
  CpuTarget target;
  target.name = "embedded-bundle";
  target.triple = triple;
  target.cpu = "generic"; // data only: no instruction set beyond the base architecture
  TC_ASSIGN_OR_RETURN(std::unique_ptr<llvm::TargetMachine> machine, createTargetMachine(target));

  llvm::LLVMContext context;
  llvm::Module module("tensorc_embedded_bundle", context);
  module.setTargetTriple(triple);
  module.setDataLayout(machine->createDataLayout());
  llvm::Type *i32 = llvm::Type::getInt32Ty(context);
  llvm::Type *i64 = llvm::Type::getInt64Ty(context);
  llvm::PointerType *ptr = llvm::PointerType::getUnqual(context);

  // The layout EmbedTable describes (bundle::EmbeddedFile and bundle::EmbeddedBundle).
  llvm::StructType *fileType = llvm::StructType::get(context, {ptr, ptr, i64});
  llvm::StructType *bundleType = llvm::StructType::get(context, {i32, i32, ptr});
  std::vector<llvm::Constant *> entries;
  for (size_t i = 0; i < files.size(); ++i) {
    const EmbedFile &file = files[i];
    if (file.alignment == 0 || (file.alignment & (file.alignment - 1)) != 0)
      return makeError("embedded file '", file.name, "': alignment ", file.alignment,
                       " is not a power of two");
    llvm::Constant *nameInit = llvm::ConstantDataArray::getString(context, file.name);
    auto *name = new llvm::GlobalVariable(module, nameInit->getType(), true,
                                          llvm::GlobalValue::PrivateLinkage, nameInit,
                                          "tensorc_embedded_name_" + std::to_string(i));
    llvm::GlobalVariable *data =
        addBlob(module, file.bytes, file.alignment, "tensorc_embedded_data_" + std::to_string(i));
    entries.push_back(llvm::ConstantStruct::get(
        fileType, {name, data, llvm::ConstantInt::get(i64, file.bytes.size())}));
  }
  llvm::ArrayType *filesType = llvm::ArrayType::get(fileType, entries.size());
  auto *fileTable = new llvm::GlobalVariable(
      module, filesType, true, llvm::GlobalValue::PrivateLinkage,
      llvm::ConstantArray::get(filesType, entries), "tensorc_embedded_files");
  auto *table = new llvm::GlobalVariable(
      module, bundleType, true, llvm::GlobalValue::PrivateLinkage,
      llvm::ConstantStruct::get(bundleType,
                                {llvm::ConstantInt::get(i32, embedTable.version),
                                 llvm::ConstantInt::get(i32, entries.size()), fileTable}),
      "tensorc_embedded_table");

  // Hidden: the runtime linked beside it binds to it, but the library never exports it.
  auto *accessor =
      llvm::Function::Create(llvm::FunctionType::get(ptr, false),
                             llvm::GlobalValue::ExternalLinkage, embedTable.symbol, module);
  accessor->setVisibility(llvm::GlobalValue::HiddenVisibility);
  accessor->addFnAttr(llvm::Attribute::NoUnwind);
  llvm::IRBuilder<> builder(llvm::BasicBlock::Create(context, "entry", accessor));
  builder.CreateRet(table);

  std::string verifierMessage;
  llvm::raw_string_ostream verifierStream(verifierMessage);
  if (llvm::verifyModule(module, &verifierStream))
    return makeError("the embedded-bundle module is invalid: ", verifierMessage);
  llvm::SmallVector<char, 0> object;
  llvm::raw_svector_ostream objectStream(object);
  llvm::legacy::PassManager codegen;
  if (machine->addPassesToEmitFile(codegen, objectStream, nullptr,
                                   llvm::CodeGenFileType::ObjectFile))
    return makeError("target ", triple, " cannot emit object files");
  codegen.run(module);
  return std::string(object.begin(), object.end());
}

} // namespace tensorc::cpu
