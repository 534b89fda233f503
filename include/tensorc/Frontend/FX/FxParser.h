// FX-text parser (DESIGN.md §3) and .fx file loading/saving with side weights.
#pragma once

#include "tensorc/IR/Graph.h"

#include <string>
#include <string_view>

namespace tensorc::fx {

/// Parses FX-text into a verified Graph, resolving op names through `registry`. Errors read
/// "file:line:col: error: message (at 'token')".
Expected<Graph> parseFx(std::string_view text, const OpRegistry &registry,
                        const std::string &fileName = "<input>");

/// The side weights file of an .fx path: same stem, .safetensors.
std::string weightsPathFor(const std::string &fxPath);

/// Reads `path` and binds the tensors of its side .safetensors (if it exists) to the placeholders
/// of the same name, which become parameters. A weight with no placeholder, or with a dtype or
/// shape other than the placeholder's, is an error.
Expected<Graph> loadFxFile(const std::string &path, const OpRegistry &registry);

/// Writes `graph` as FX-text to `path` and its weights (if any) to the side .safetensors.
Status saveFxFile(const Graph &graph, const std::string &path);

} // namespace tensorc::fx
