// `tensorc opt` on loop IR text: parse (and verify), the named loop passes, then the schedule or a
// backend's output.
#include "tensorc/Pipeline/LoopOpt.h"

#include "tensorc/Codegen/Backend.h"
#include "tensorc/Lowering/LoopParser.h"
#include "tensorc/Pipeline/Pipeline.h"
#include "tensorc/Scheduler/Schedule.h"
#include "tensorc/Support/StrCat.h"

#include <sstream>

namespace tensorc {

Expected<std::string> runLoopOpt(const std::string &path, const LoopOptOptions &options) {
  TC_ASSIGN_OR_RETURN(TargetSet targets, parseTargets(options.target));
  bool fused = false;
  std::stringstream passes(options.passes);
  for (std::string pass; std::getline(passes, pass, ',');) {
    if (pass == "fuse")
      fused = true;
    else if (pass != "verify" && !pass.empty())
      return makeError("unknown loop IR pass '", pass, "' (loop IR passes: verify, fuse)");
  }
  TC_ASSIGN_OR_RETURN(loop::LoopProgram program, loop::loadLoopFile(path));
  std::string emit = options.emit == "auto" ? (fused ? "schedule" : "loop") : options.emit;
  if (emit == "loop")
    return loop::printProgram(program);
  sched::ScheduleOptions scheduling;
  scheduling.fuse = fused;
  scheduling.anyFloatEpilogue = targets.cuda && !targets.cpu;
  scheduling.permutedEpilogue = targets.cuda && !targets.cpu;
  TC_ASSIGN_OR_RETURN(sched::Schedule schedule, sched::schedule(program, scheduling));
  if (emit == "schedule")
    return sched::printSchedule(program, schedule);
  std::unique_ptr<codegen::Backend> backend;
  if (emit == "cpu-ll") {
    codegen::CpuBackendOptions cpu;
    cpu.variants = {"x86_64"}; // the AVX2 baseline
    TC_ASSIGN_OR_RETURN(backend, codegen::createCpuBackend(cpu));
  } else if (emit == "cuda") {
    codegen::CudaBackendOptions cuda;
    cuda.validate = false; // rendering needs no NVRTC
    TC_ASSIGN_OR_RETURN(backend, codegen::createCudaBackend(cuda));
  }
  if (backend)
    return backend->source(program, schedule);
  return makeError("unknown --emit '", options.emit, "' (auto, loop, schedule, cpu-ll, cuda)");
}

} // namespace tensorc
