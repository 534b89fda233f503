// Builds the core registry from the op groups and checks it covers OpList.def.
#include "tensorc/Ops/Registry.h"

#include "OpGroups.h"
#include "tensorc/Support/StrCat.h"

namespace tensorc::ops {

const std::vector<RegisterFn> &allOpGroups() {
  static const std::vector<RegisterFn> groups = {
      registerElementwiseOps, registerElementwiseBinaryOps, registerReductionOps,
      registerLinearAlgebraOps, registerConvolutionOps, registerNormalizationOps,
      registerAttentionOps, registerViewOps, registerPadOps, registerCreationOps, registerScanOps,
      registerIndexingOps, registerMiscOps, registerSamplingOps,
      // Gradient rules last: they attach to ops defined above.
      registerGradientRules, registerNNGradientRules};
  return groups;
}

Expected<OpRegistry> buildCoreRegistry() {
  OpRegistry registry;
  for (RegisterFn group : allOpGroups())
    TC_RETURN_IF_ERROR(group(registry));
  std::vector<std::string> missing = registry.missingOps();
  if (!missing.empty())
    return makeError("internal: ops listed but not defined: ", join(missing, ", "));
  return registry;
}

} // namespace tensorc::ops
