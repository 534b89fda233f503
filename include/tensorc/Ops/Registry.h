// The core op registry: every op of OpList.def with its schema, inference and reference kernel.
#pragma once

#include "tensorc/IR/OpDef.h"

namespace tensorc::ops {

/// Builds the registry of all core ops. Errors only on an internal inconsistency (an op listed
/// in OpList.def but not defined, or defined twice).
Expected<OpRegistry> buildCoreRegistry();

} // namespace tensorc::ops
