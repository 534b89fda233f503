// Verifier: checks a Graph's invariants (SSA order, arity, attribute kinds, types, weights).
#pragma once

#include "tensorc/IR/Graph.h"

namespace tensorc {

/// Checks that every operand is defined before use, every node's arity and attribute kinds match
/// its schema, every result type equals what inference gives now, outputs are values of the
/// graph, and every weight matches its placeholder's type. Errors name the node or value.
Status verifyGraph(const Graph &graph);

} // namespace tensorc
