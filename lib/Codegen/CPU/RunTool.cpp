// Running an external tool: temporary files, and a run with its output in a log file, killed when
// this process is interrupted.
#include "tensorc/Codegen/CPU/RunTool.h"

#include "tensorc/Support/SignalCleanup.h"
#include "tensorc/Support/StrCat.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/Program.h>
#include <llvm/Support/raw_ostream.h>

namespace tensorc::cpu {

TempFiles::~TempFiles() {
  for (const std::string &path : paths_)
    llvm::sys::fs::remove(path);
}

Expected<std::string> TempFiles::create(const std::string &suffix) {
  llvm::SmallString<256> model;
  if (dir_.empty())
    llvm::sys::path::system_temp_directory(/*ErasedOnReboot=*/true, model);
  else
    model = dir_;
  llvm::sys::path::append(model, prefix_ + "-%%%%%%%%" + suffix);
  llvm::SmallString<256> path;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(model, path))
    return makeError("cannot create a temporary file in ", model.str().str(), ": ", ec.message());
  paths_.push_back(path.str().str());
  return paths_.back();
}

Status writeFile(const std::string &path, std::string_view bytes) {
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec);
  if (ec)
    return makeError("cannot write ", path, ": ", ec.message());
  out.write(bytes.data(), bytes.size());
  out.close();
  if (out.has_error())
    return makeError("cannot write ", path, ": ", out.error().message());
  return Status::ok();
}

Status runTool(const std::string &program, const std::vector<std::string> &args,
               const std::optional<std::vector<std::string>> &environment,
               const std::string &logPath, const std::string &what) {
  std::vector<llvm::StringRef> argRefs(args.begin(), args.end());
  std::optional<std::vector<llvm::StringRef>> envRefs;
  if (environment)
    envRefs.emplace(environment->begin(), environment->end());
  std::optional<llvm::ArrayRef<llvm::StringRef>> env;
  if (envRefs)
    env = *envRefs;
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(logPath),
                                                llvm::StringRef(logPath)};
  std::string execError;
  int rc = -1;
  llvm::sys::ProcessInfo child =
      llvm::sys::ExecuteNoWait(program, argRefs, env, redirects, 0, &execError);
  if (child.Pid > 0) {
    // An interrupted compile kills the tool before removing its output directory.
    cleanup::ScopedChild killOnSignal(child.Pid);
    child = llvm::sys::Wait(child, std::nullopt, &execError);
    rc = child.ReturnCode;
  }
  if (rc == 0)
    return Status::ok();
  std::string log;
  if (auto text = llvm::MemoryBuffer::getFile(logPath))
    log = (*text)->getBuffer().str();
  return makeError(what, " with ", program, " failed (exit ", rc, ")",
                   execError.empty() ? "" : ": " + execError, log.empty() ? "" : ":\n" + log);
}

} // namespace tensorc::cpu
