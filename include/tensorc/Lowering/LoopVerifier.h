// The LoopIR verifier: checks a LoopProgram's invariants after lowering (debug builds), in tests,
// and on every program parsed from text.
#pragma once

#include "tensorc/Lowering/LoopIR.h"
#include "tensorc/Support/Status.h"

namespace tensorc::loop {

/// Checks buffers (ids in order, unique names, inputs numbered in order, weights' data matching
/// their buffers), nodes (ids in order, each buffer written once and read only after it is
/// written, a valid output, ranges covering the output), bodies (loads of valid buffers in their
/// dtype, operand dtypes as the constructors require, index variables among the node's ranges
/// and reduction ranges or the program's shape symbols, and, where extents are static, every
/// load's index range inside its buffer), templates' views (valid buffers, rank, in bounds where
/// static) and externs (graph and buffers given). Errors name the node and what is wrong.
Status verifyProgram(const LoopProgram &program);

} // namespace tensorc::loop
