// Failure summaries for the conformance runner: what fails most, and which missing ops block most.
#pragma once

#include "TestCases.h"

#include <ostream>
#include <vector>

namespace tensorc::conformance {

/// The most common failure reasons, grouped by their first characters with numbers shown as N
/// (digits right after a letter stay, as in f32), most frequent first.
void printFailureHistogram(const std::vector<TestResult> &results, std::ostream &os);

/// The op types named by the importer's "unsupported op type(s): Foo (2), Bar (1)" reasons, with
/// how many tests need each and how many it alone blocks: what to implement first.
void printUnsupportedOps(const std::vector<TestResult> &results, std::ostream &os);

} // namespace tensorc::conformance
