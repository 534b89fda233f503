// The CUDA backend: the renderer's CUDA C++ (src/kernels.cu), compiled by NVRTC into a cubin per
// arch and PTX for the lowest (cuda/), with each kernel's launch shape.
#include "tensorc/Codegen/Backend.h"

#include "tensorc/Codegen/CUDA/CudaCodegen.h"
#include "tensorc/Support/Log.h"
#include "tensorc/Support/StrCat.h"

namespace tensorc::codegen {

namespace {

/// `data` as a NUL-terminated `extern "C" __device__` byte array the runtime reads back with
/// cuModuleGetGlobal.
std::string deviceConstant(const std::string &symbol, const std::string &data) {
  std::string bytes;
  for (size_t i = 0; i < data.size(); ++i)
    bytes += strCat(i % 24 == 0 ? "\n  " : "", int(static_cast<unsigned char>(data[i])), ",");
  return strCat("\n// Read back by the runtime (the kernels' signatures, checked against the "
                "manifest).\n",
                "extern \"C\" __device__ const unsigned char ", symbol, "[", data.size() + 1,
                "] = {", bytes, "\n  0};\n");
}

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
                                  const sched::Schedule &schedule,
                                  const CompileContext &context) override {
    TC_ASSIGN_OR_RETURN(cuda::RenderedKernels rendered, cuda::renderKernels(program, schedule));
    BackendOutput output;
    for (auto &[kernel, config] : rendered.configs)
      output.launches[kernel] = {config.grid, config.block, config.sharedBytes};
    if (!context.dataSymbol.empty() && context.dataFor) {
      TC_ASSIGN_OR_RETURN(std::string data, context.dataFor(output.launches));
      rendered.source += deviceConstant(context.dataSymbol, data);
    }
    if (!options_.quiet)
      log::info(strCat("compiling ", rendered.configs.size(), " CUDA kernels for ",
                       join(options_.archs, ", "), " with NVRTC"));
    cuda::CompileOptions nvrtc;
    nvrtc.archs = options_.archs;
    nvrtc.cacheDir = options_.cacheDir;
    // Errors about a kernel name the graph nodes fused into it.
    for (const sched::Kernel &kernel : schedule.kernels) {
      std::vector<std::string> nodes;
      for (int id : kernel.nodes)
        nodes.push_back(program.nodes[size_t(id)].name);
      if (nodes.size() > 8)
        nodes.resize(8), nodes.push_back(strCat("... ", kernel.nodes.size() - 8, " more"));
      nvrtc.kernelNotes[kernel.name] = "fused nodes " + join(nodes, ", ");
    }
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
