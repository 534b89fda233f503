// Shared setup of the libFuzzer harnesses: the op registry, a scratch directory, the limits.
#pragma once

#include "tensorc/Ops/Registry.h"

#include <cstdint>
#include <cstdlib>
#include <string>

namespace tensorc::fuzz {

/// The core op registry, built once.
const OpRegistry &registry();

/// An empty directory private to this process (removed at exit): external data and scratch files
/// resolve here, never in the corpus or the source tree.
const std::string &scratchDir();

/// Lowers the tensor size limit for fuzzing (a hostile shape must fail on the limit, not on
/// libFuzzer's RSS limit) unless the environment already sets one.
void limitTensorBytes();

/// Aborts with `what` when `condition` does not hold: a finding libFuzzer reports as a crash.
void check(bool condition, const std::string &what);

} // namespace tensorc::fuzz
