// Builds the core registry from the op groups and checks it covers OpList.def.
#include "tensorc/Ops/Registry.h"

#include "OpGroups.h"
#include "tensorc/Support/StrCat.h"

namespace tensorc::ops {

Expected<OpRegistry> buildCoreRegistry() {
  OpRegistry registry;
  TC_RETURN_IF_ERROR(registerElementwiseOps(registry));
  TC_RETURN_IF_ERROR(registerReductionOps(registry));
  TC_RETURN_IF_ERROR(registerLinearAlgebraOps(registry));
  TC_RETURN_IF_ERROR(registerConvolutionOps(registry));
  TC_RETURN_IF_ERROR(registerNormalizationOps(registry));
  TC_RETURN_IF_ERROR(registerAttentionOps(registry));
  TC_RETURN_IF_ERROR(registerViewOps(registry));
  TC_RETURN_IF_ERROR(registerCreationOps(registry));
  TC_RETURN_IF_ERROR(registerScanOps(registry));
  TC_RETURN_IF_ERROR(registerIndexingOps(registry));
  TC_RETURN_IF_ERROR(registerMiscOps(registry));
  TC_RETURN_IF_ERROR(registerGradientRules(registry));
  std::vector<std::string> missing = registry.missingOps();
  if (!missing.empty())
    return makeError("internal: ops listed but not defined: ", join(missing, ", "));
  return registry;
}

} // namespace tensorc::ops
