// What the LoopIR printer and parser agree on beyond the grammar: number formatting and where a
// literal's dtype goes without saying.
#pragma once

#include "tensorc/Lowering/LoopIR.h"

#include <optional>
#include <string>

namespace tensorc::loop {

/// The shortest text that reads back as exactly `value` ("0.1", "1e+20", "nan", "-inf").
std::string formatDouble(double value);

/// Whether a literal operand of a `kind` node takes its dtype from where it stands (the
/// line's dtype, the other operand's, i64 for a gather offset), so it is printed without a
/// `:dtype` suffix. `otherIsLiteral`: the other operand of a binary op is a literal too.
bool impliedOperandType(ExprKind kind, UnaryOp unary, BinaryOp binary, bool otherIsLiteral);

/// The dtype a literal body root of `node` has without saying it (none: it always says it).
std::optional<DType> impliedRootType(const LoopProgram &program, const LoopNode &node);

} // namespace tensorc::loop
