// `tensorc opt FILE.loop`: loop IR text in, the scheduler and the backends run on it (like
// mlir-opt), so tests of fusion and code generation start from loop IR rather than a graph.
#pragma once

#include "tensorc/Support/Status.h"

#include <string>

namespace tensorc {

struct LoopOptOptions {
  /// Comma-separated loop IR passes in order: `verify` (the parser always verifies), `fuse`.
  std::string passes;
  /// What to print: `auto` (the schedule after `fuse`, else the loop IR), `loop`, `schedule`,
  /// `cpu-ll` (the CPU backend's optimized LLVM IR, x86_64 AVX2 baseline) or `cuda` (the CUDA
  /// renderer's source). Backends get each node as its own kernel unless `fuse` ran.
  std::string emit = "auto";
  /// Schedule as for these backends ("cpu", "cuda", "cpu,cuda"): CUDA alone lets GEMM
  /// epilogues store any float dtype.
  std::string target = "cpu";
};

/// Reads the loop IR in `path` (weights by digest from its side .safetensors), runs the passes
/// and returns the text --emit names.
Expected<std::string> runLoopOpt(const std::string &path, const LoopOptOptions &options);

} // namespace tensorc
