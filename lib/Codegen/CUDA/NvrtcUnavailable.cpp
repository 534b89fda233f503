// The CUDA compiler of a tensorc built without the CUDA toolkit: rendering works, compiling says
// what is missing.
#include "tensorc/Codegen/CUDA/CudaCodegen.h"

namespace tensorc::cuda {

namespace {

Error unavailable() {
  return makeError("target cuda: this tensorc was built without the CUDA toolkit (NVRTC); "
                   "rebuild with it at /usr/local/cuda to compile CUDA kernels");
}

} // namespace

Status validateArchs(const std::vector<std::string> &) { return unavailable(); }

Expected<CompiledModule> compileSource(const std::string &, const std::string &,
                                       const CompileOptions &) {
  return unavailable();
}

Expected<std::vector<CompiledModule>> compileSources(const std::vector<SourcePart> &,
                                                     const CompileOptions &) {
  return unavailable();
}

} // namespace tensorc::cuda
