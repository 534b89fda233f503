// Atomic bundle directories: filled in a temporary sibling, then renamed into place.
#pragma once

#include "tensorc/Support/Status.h"

#include <functional>
#include <string>

namespace tensorc::bundle {

/// Creates a temporary directory next to `outDir`, lets `fill` write the bundle's files into it,
/// then renames it to `outDir`. An existing `outDir` is replaced only when it is a bundle (it has
/// a manifest.json) or empty; anything else is refused. On any failure the temporary directory is
/// removed and `outDir` is left as it was, so a failed or killed compile never leaves a partial
/// bundle.
Status writeBundleDirectory(const std::string &outDir,
                            const std::function<Status(const std::string &tempDir)> &fill);

/// Writes `bytes` to `path` (creating parent directories), with a clear error naming the file.
Status writeFile(const std::string &path, const std::string &bytes);

} // namespace tensorc::bundle
