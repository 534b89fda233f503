// Running an external tool with its output in a log file, killed when this process is interrupted.
#include "tensorc/Codegen/CPU/RunTool.h"

#include "tensorc/Support/SignalCleanup.h"
#include "tensorc/Support/StrCat.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Program.h>

namespace tensorc::cpu {

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
