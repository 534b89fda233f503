// Reading LoopIR text (what printProgram writes, or a hand-written `.loop` file) back into a
// LoopProgram, and comparing programs structurally: parse(print(p)) == p.
#pragma once

#include "tensorc/Lowering/LoopIR.h"
#include "tensorc/Support/Status.h"

#include <map>
#include <string>
#include <string_view>

namespace tensorc::loop {

/// Parses printProgram's text form. Weights printed with a digest (`data=fnv1a64:...`) take their
/// data from `weights` by buffer name, which must match the digest; small weights print their
/// values (`data=[...]`). The parsed program is verified (verifyProgram). Errors name
/// file:line:column and the offending text.
Expected<LoopProgram> parseProgram(std::string_view text, const std::string &fileName,
                                   const std::map<std::string, Tensor> &weights = {});

/// Reads a `.loop` file; weights printed by digest come from the `.safetensors` file of the same
/// stem next to it, when there is one.
Expected<LoopProgram> loadLoopFile(const std::string &path);

/// The digest a weight prints when its values are too many to print ("fnv1a64:" and 16 hex
/// digits over dtype, shape and bytes).
std::string tensorDigest(const Tensor &tensor);

/// Whether two programs are the same structurally: buffers, weights (data compared), nodes with
/// every field and their bodies (equalExprs), outputs, symbols and fallbacks. `difference`, when
/// given, receives the first difference.
bool equalPrograms(const LoopProgram &a, const LoopProgram &b, std::string *difference = nullptr);

} // namespace tensorc::loop
