// costs.json, a bundle's sidecar of static cost estimates per launch (bytes moved, arithmetic
// operations) as size expressions: what the runtime's profiler divides measured times by, without
// the compiler.
#pragma once

#include "tensorc/Bundle/Manifest.h"

namespace tensorc::bundle {

struct LaunchCost {
  std::string name; // the launch's name, as in the manifest (checked on reading)
  SizeExpr bytes;
  SizeExpr flops;
};

struct LaunchCosts {
  /// One per manifest launch, in order.
  std::vector<LaunchCost> launches;

  Json toJson() const;
  /// Validates the format, the expressions, and that the launches are `manifest`'s, in order.
  /// Errors name the field ("costs.json: launches[2].name: ...").
  static Expected<LaunchCosts> fromJson(const Json &json, const Manifest &manifest);
};

/// The sidecar's file name inside a bundle.
constexpr const char *kLaunchCostsFile = "costs.json";

} // namespace tensorc::bundle
