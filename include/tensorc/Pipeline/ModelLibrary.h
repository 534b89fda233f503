// `tensorc compile --emit=so`: one shared object holding a bundle and the runtime that runs it.
#pragma once

#include "tensorc/Codegen/CPU/EmbedObject.h"
#include "tensorc/Support/Status.h"

#include <string>
#include <vector>

namespace tensorc {

/// Embeds `files` (a complete bundle's files) in an object, links it with the CPU runtime
/// archives through the C++ driver (`cxx`; empty = $TENSORC_CXX, else the compiler tensorc was
/// built with) and writes the result to `outPath` (a compile links inside its staging area and
/// renames the library into place). Temporaries, the driver's included, go to `tempDir` ("" =
/// the system's). The library exports only the C ABI (tc_*; include/tensorc/tensorc.h);
/// tc_model_load(NULL, ...) loads the embedded model. Errors carry the linker's output.
Status linkModelLibrary(const std::vector<cpu::EmbedFile> &files, const std::string &outPath,
                        const std::string &cxx, const std::string &tempDir);

} // namespace tensorc
