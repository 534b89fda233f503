// The compile cache: finished bundles stored by a hash of everything that decides their bytes, so
// a repeated compile copies the bundle instead of compiling (`$TENSORC_CACHE_DIR`, --no-cache).
#pragma once

#include "tensorc/Pipeline/Compile.h"
#include "tensorc/Support/Status.h"

#include <optional>
#include <string>

namespace tensorc {

/// The directory the caches live in: options.cacheDir, else $TENSORC_CACHE_DIR, else
/// ~/.cache/tensorc; "" when caching is off (cacheDir "-", or no home).
std::string compileCacheDir(const CompileOptions &options);

/// The cache key of compiling `modelPath` with `options`: a hash of tensorc's version, the model's
/// file name and bytes, this build (the executable's bytes), its weight files (an .fx model's side
/// .safetensors, an ONNX model's external data files), every option that changes the output (not
/// -j, -q or the output path) and the environment variables that do (TENSORC_LD_LLD, TENSORC_CXX).
/// `modelHash` is the model file's own ContentHash (the manifest's source hash); `key` is empty (no
/// caching) when this build cannot identify itself. Errors name an unreadable file.
struct CompileCacheKey {
  std::string key, modelHash;
};
Expected<CompileCacheKey> compileCacheKey(const std::string &modelPath,
                                          const CompileOptions &options);

/// On a hit, writes the cached bundle to options.outDir (through a staging area, as compile
/// does) and returns what compile returned for it; nullopt on a miss. An entry that is
/// unreadable or does not match its checksums, or that cannot be copied (another compile's
/// trimming removed it meanwhile), is a miss with a warning (and is replaced by the next store). A
/// hit marks the entry as used now.
Expected<std::optional<CompileSummary>> restoreFromCache(const std::string &cacheDir,
                                                         const std::string &key,
                                                         const CompileOptions &options);

/// Stores the compile output just written to options.outDir (a bundle's files, or the model
/// library) under `key` (copies), then trims the cache directory to its size limit
/// (cache::trimToLimit; an output larger than the limit is not stored). Best effort: failures only
/// warn. Concurrent stores of one key each build a complete entry; one of them stays.
void storeInCache(const std::string &cacheDir, const std::string &key,
                  const CompileOptions &options, const CompileSummary &summary);

} // namespace tensorc
