// A model loaded for Python, from either kind of compiled output: a bundle directory (run by this
// extension's own runtime) or a model library from `tensorc compile --emit=so` (run by the runtime
// inside it, through its C ABI).
#pragma once

#include "Arrays.h"

#include <memory>
#include <string>
#include <vector>

namespace tensorc::python {

/// An input or output of the model's signature. A symbolic dim is -1 in `dims`, with its name in
/// `symbols` where the model knows it (bundles; model libraries report only -1).
struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> dims;
  std::vector<std::string> symbols; // per dim; "" for a constant or an unnamed symbol
};

struct LoadSettings {
  std::string device = "cpu"; // "cpu", "cuda" or "cuda:N"
  int threads = 0;            // 0 = one per core
  std::string variant;        // a CPU variant to force ("x86_64"); empty = the best supported
  int cudaGraphs = -1;        // -1 as compiled, 0 off, 1 on
};

class Model {
public:
  virtual ~Model() = default;

  /// A bundle directory or a model library (any other existing file): errors are LoadError with
  /// the runtime's message.
  static std::shared_ptr<Model> load(const std::string &path, const LoadSettings &settings);

  const std::vector<TensorInfo> &inputs() const { return inputs_; }
  const std::vector<TensorInfo> &outputs() const { return outputs_; }
  /// The CUDA device the kernels run on, -1 for the CPU.
  int cudaDevice() const { return cudaDevice_; }
  /// "cpu (x86_64-avx512)", "NVIDIA H100 ... (sm_90, cubin sm_90)".
  virtual std::string description() const = 0;
  /// The stream runs use when given none (a CUstream), null on the CPU.
  virtual void *ownStream() const = 0;

  /// Runs on host inputs, returning host outputs; `cudaStream` as in rt::Model::run. Called
  /// without the GIL; errors are RunError.
  virtual std::vector<Buffer> runHost(const std::vector<Buffer> &inputs, void *cudaStream) = 0;
  /// Runs on inputs in the memory of the model's GPU, returning outputs there.
  virtual std::vector<Buffer> runOnDevice(const std::vector<Buffer> &inputs, void *cudaStream) = 0;

protected:
  std::vector<TensorInfo> inputs_, outputs_;
  int cudaDevice_ = -1;
};

} // namespace tensorc::python
