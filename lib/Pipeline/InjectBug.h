// TEMPORARY (issue 18): TENSORC_INJECT_BUG planted between scheduling and code generation, until
// the backends' shared legalization layer (Codegen/Common) exists to hold it for both backends.
#pragma once

#include "tensorc/Scheduler/Schedule.h"

namespace tensorc {

/// Testing only. TENSORC_INJECT_BUG=OP:MODE (OP a loop IR unary op: relu, erf, exp...):
/// `compile-error` fails code generation of every kernel computing OP, `crash` makes such kernels
/// read far outside their memory, `accuracy` computes OP(x) + 1. Unset: nothing happens.
Status injectBugForTesting(loop::LoopProgram &program, const sched::Schedule &schedule);

} // namespace tensorc
