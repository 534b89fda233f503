// The CUDA backend: the renderer's CUDA C++ (src/kernels.cu), compiled by NVRTC into a cubin per
// arch and PTX for the lowest (cuda/), with each kernel's launch shape.
#include "tensorc/Codegen/Backend.h"

#include "tensorc/Codegen/CUDA/CudaCodegen.h"
#include "tensorc/Support/Log.h"
#include "tensorc/Support/StrCat.h"

namespace tensorc::codegen {

namespace {

class CudaBackend final : public Backend {
public:
  explicit CudaBackend(const CudaBackendOptions &options) : options_(options) {}

  const char *name() const override { return "cuda"; }

  Expected<std::string> source(const loop::LoopProgram &program,
                               const sched::Schedule &schedule) override {
    TC_ASSIGN_OR_RETURN(cuda::RenderedKernels rendered, cuda::renderKernels(program, schedule));
    return std::move(rendered.source);
  }

  Expected<BackendOutput> compile(const loop::LoopProgram &program,
                                  const sched::Schedule &schedule) override {
    TC_ASSIGN_OR_RETURN(cuda::RenderedKernels rendered, cuda::renderKernels(program, schedule));
    BackendOutput output;
    for (auto &[kernel, config] : rendered.configs)
      output.launches[kernel] = {config.grid, config.block, config.sharedBytes};
    if (!options_.quiet)
      log::info(strCat("compiling ", rendered.configs.size(), " CUDA kernels for ",
                       join(options_.archs, ", "), " with NVRTC"));
    cuda::CompileOptions nvrtc;
    nvrtc.archs = options_.archs;
    nvrtc.cacheDir = options_.cacheDir;
    TC_ASSIGN_OR_RETURN(cuda::CompiledModule module,
                        cuda::compileSource(rendered.source, "kernels", nvrtc));
    for (auto &[arch, cubin] : module.cubins) {
      KernelImage image;
      image.kind = KernelImage::Kind::CudaCubin;
      image.name = arch;
      image.file = "cuda/" + arch + ".cubin";
      output.files.push_back({image.file, std::move(cubin)});
      output.images.push_back(std::move(image));
    }
    KernelImage ptx;
    ptx.kind = KernelImage::Kind::CudaPtx;
    ptx.name = module.ptxArch;
    ptx.file = "cuda/kernels.ptx";
    output.files.push_back({ptx.file, std::move(module.ptx)});
    output.images.push_back(std::move(ptx));
    output.files.push_back({"src/kernels.cu", std::move(rendered.source)});
    return output;
  }

private:
  CudaBackendOptions options_;
};

} // namespace

Expected<std::unique_ptr<Backend>> createCudaBackend(const CudaBackendOptions &options) {
  if (options.validate)
    TC_RETURN_IF_ERROR(cuda::validateArchs(options.archs));
  return std::unique_ptr<Backend>(new CudaBackend(options));
}

} // namespace tensorc::codegen
