// What lowering does with each op: a rule that emits loop IR, or a fallback to the op's reference
// kernel with the reason (the rules live in lib/Lowering/Rules, one file per op family).
#pragma once

#include "tensorc/IR/OpDef.h"
#include "tensorc/Support/Status.h"

#include <string>
#include <vector>

namespace tensorc::loop {

struct LoweringRuleInfo {
  OpId op = OpId::Constant;
  std::string family;         // "pointwise", "views", ... (the file holding it)
  bool lowered = false;       // a rule (which may still fall back for cases it does not handle)
  std::string fallbackReason; // no rule: why the op runs on its reference kernel
};

/// One entry per op of OpList.def, in its order. Errors when an op has no entry or two.
Expected<std::vector<LoweringRuleInfo>> describeLoweringRules();

} // namespace tensorc::loop
