// FX-text printer: the textual form of a Graph (DESIGN.md §3) that the FX parser reads back.
#pragma once

#include "tensorc/IR/Graph.h"

#include <string>

namespace tensorc {

/// Prints `graph` as FX-text. Parameter data is not printed (it lives in the side .safetensors);
/// parse(print(g)) == g for every graph.
std::string printGraph(const Graph &graph);

/// One node's line, without indentation or newline (for logs and error messages).
std::string printNode(const Node &node);

} // namespace tensorc
